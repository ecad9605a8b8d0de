/* Multi-word integers and certified fixed-point interval arithmetic: every threshold of
 * the discrete samplers is computed here from public parameters, with outward rounding.
 * See certified.h; split out of discrete.c. */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"

uint64_t dpf_gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---------------------------------------------------------------- small multi-word ints
 * Little-endian arrays of 64-bit limbs with explicit lengths; lengths never exceed
 * DPF_BIGW. */

int dpf_big_len(const uint64_t *a, int n)
{
    while (n > 0 && a[n - 1] == 0) n--;
    return n;
}

int dpf_big_cmp(const uint64_t *a, int an, const uint64_t *b, int bn)
{
    an = dpf_big_len(a, an);
    bn = dpf_big_len(b, bn);
    if (an != bn) return an < bn ? -1 : 1;
    while (an-- > 0)
        if (a[an] != b[an]) return a[an] < b[an] ? -1 : 1;
    return 0;
}

/* a -= b; requires a >= b and bn <= an. */
void dpf_big_sub(uint64_t *a, int an, const uint64_t *b, int bn)
{
    uint64_t borrow = 0;
    int i;
    for (i = 0; i < an; i++) {
        uint64_t bi = i < bn ? b[i] : 0;
        uint64_t d = a[i] - bi, b1 = a[i] < bi;
        uint64_t d2 = d - borrow, b2 = d < borrow;
        a[i] = d2;
        borrow = b1 | b2;
    }
}

/* out[0..an] = a * k; returns an + 1. */
int dpf_big_mul_u64(uint64_t *out, const uint64_t *a, int an, uint64_t k)
{
    uint64_t c = 0;
    int i;
    for (i = 0; i < an; i++) {
        uint64_t hi, lo = dpf_mul64(a[i], k, &hi);
        lo += c;
        hi += lo < c;
        out[i] = lo;
        c = hi;
    }
    out[an] = c;
    return an + 1;
}

/* out[0..an+bn) = a * b. */
int dpf_big_mul(uint64_t *out, const uint64_t *a, int an, const uint64_t *b, int bn)
{
    int i, j;
    for (i = 0; i < an + bn; i++) out[i] = 0;
    for (i = 0; i < an; i++) {
        uint64_t c = 0;
        for (j = 0; j < bn; j++) {
            uint64_t hi, lo = dpf_mul64(a[i], b[j], &hi), s;
            lo += c;
            hi += lo < c;
            s = out[i + j] + lo;
            hi += s < lo;   /* a_i b_j + c + out <= 2^128 - 1: no overflow of hi */
            out[i + j] = s;
            c = hi;
        }
        out[i + bn] = c;
    }
    return an + bn;
}

/* out = a << s (s >= 0); returns the length used. */
int dpf_big_shl(uint64_t *out, const uint64_t *a, int an, int s)
{
    int w = s / 64, b = s % 64, i;
    for (i = 0; i < w; i++) out[i] = 0;
    if (b == 0) {
        for (i = 0; i < an; i++) out[w + i] = a[i];
        return an + w;
    }
    out[w] = a[0] << b;
    for (i = 1; i < an; i++) out[w + i] = (a[i] << b) | (a[i - 1] >> (64 - b));
    out[w + an] = a[an - 1] >> (64 - b);
    return an + w + 1;
}

int dpf_big_bitlen(const uint64_t *a, int an)
{
    an = dpf_big_len(a, an);
    return an ? 64 * (an - 1) + dpf_bitlen64(a[an - 1]) : 0;
}

/* ================================================================ certified arithmetic
 *
 * The constant-time samplers compare one uniform word with fixed thresholds.  Those are
 * computed once, from public parameters, with interval arithmetic on nonnegative
 * fixed-point numbers of n limbs: the value of x is x.w / 2^(64 (n-1)), i.e. one integer
 * limb and 64 (n-1) fractional bits (192 for the constant-time tables, DPF_CTN = 4; up to
 * 704, DPF_FXMAX = 12, for the exact samplers' tie-breaking).  Each operation returns a
 * lower bound (rounded down) or an upper bound (rounded up) of the exact result, so every
 * [lo, hi] pair below contains the exact real number.  No floating point is used anywhere
 * in this part except the final conversion of the slack to a double, which is rounded up.
 */

void dpf_fx_zero(dpf_fx_t *x)
{
    memset(x, 0, sizeof *x);
}

void dpf_fx_int(dpf_fx_t *x, uint64_t v, int n)
{
    dpf_fx_zero(x);
    x->w[n - 1] = v;
}

int dpf_fx_cmp(const dpf_fx_t *x, const dpf_fx_t *y, int n)
{
    int i;
    for (i = n - 1; i >= 0; i--)
        if (x->w[i] != y->w[i]) return x->w[i] < y->w[i] ? -1 : 1;
    return 0;
}

/* z = x + y; returns the carry out (an overflow). */
int dpf_fx_add(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n)
{
    uint64_t c = 0;
    int i;
    for (i = 0; i < n; i++) {
        uint64_t s = x->w[i] + c, c1 = s < c;
        uint64_t t = s + y->w[i], c2 = t < s;
        z->w[i] = t;
        c = c1 | c2;
    }
    return (int)c;
}

/* z = x - y for x >= y. */
void dpf_fx_sub(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n)
{
    dpf_fx_t t = *x;
    dpf_big_sub(t.w, n, y->w, n);
    *z = t;
}

/* z += 2^(64 limb) units of the last place (limb 0 is the last place). */
int dpf_fx_add_at(dpf_fx_t *z, int limb, int n)
{
    int i;
    for (i = limb; i < n; i++)
        if (++z->w[i] != 0) return 0;
    return 1;
}

static int dpf_fx_add_ulp(dpf_fx_t *z, int n)
{
    return dpf_fx_add_at(z, 0, n);
}

/* z = x y rounded down (up = 0) or up (up = 1); returns nonzero on overflow. */
int dpf_fx_mul(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int up, int n)
{
    uint64_t p[2 * DPF_FXMAX];
    int i, sticky = 0;
    dpf_big_mul(p, x->w, n, y->w, n);
    for (i = 0; i < n - 1; i++) sticky |= p[i] != 0;
    for (i = 0; i < n; i++) z->w[i] = p[i + n - 1];
    if (p[2 * n - 1] != 0) return 1;
    if (up && sticky) return dpf_fx_add_ulp(z, n);
    return 0;
}

/* z = x k exactly; nonzero on overflow. */
int dpf_fx_mul_u64(dpf_fx_t *z, const dpf_fx_t *x, uint64_t k, int n)
{
    uint64_t p[DPF_FXMAX + 1];
    dpf_big_mul_u64(p, x->w, n, k);
    memcpy(z->w, p, (size_t)n * sizeof(uint64_t));
    return p[n] != 0;
}

/* z = x / d rounded down or up (d >= 1). */
void dpf_fx_div_u64(dpf_fx_t *z, const dpf_fx_t *x, uint64_t d, int up, int n)
{
    uint64_t rem = 0;
    int i;
    for (i = n - 1; i >= 0; i--) z->w[i] = dpf_div128(rem, x->w[i], d, &rem);
    if (up && rem) dpf_fx_add_ulp(z, n);
}

/* z = (nhi 2^64 + nlo) / d rounded down or up; requires nhi < d (the value is < 2^64). */
void dpf_fx_ratio(dpf_fx_t *z, uint64_t nhi, uint64_t nlo, uint64_t d, int up, int n)
{
    uint64_t rem;
    int i;
    dpf_fx_zero(z);
    /* the dividend's limbs: nhi at 2^64, nlo at 2^0 (the integer limb), zeros below */
    z->w[n - 1] = dpf_div128(nhi, nlo, d, &rem);
    for (i = n - 2; i >= 0; i--) z->w[i] = dpf_div128(rem, 0, d, &rem);
    if (up && rem) dpf_fx_add_ulp(z, n);
}

/* z = x / 2 rounded down or up. */
void dpf_fx_half(dpf_fx_t *z, const dpf_fx_t *x, int up, int n)
{
    int i, lost = (int)(x->w[0] & 1);
    for (i = 0; i < n - 1; i++) z->w[i] = (x->w[i] >> 1) | (x->w[i + 1] << 63);
    z->w[n - 1] = x->w[n - 1] >> 1;
    if (up && lost) dpf_fx_add_ulp(z, n);
}

/* z = x / y rounded down or up (y > 0, x/y < 2^64): restoring division of x 2^(64(n-1))
 * by y, one quotient bit at a time.  Set-up only. */
void dpf_fx_div(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int up, int n)
{
    uint64_t rem[DPF_FXMAX + 1], yy[DPF_FXMAX + 1];
    int bit, i;
    dpf_fx_t q;
    memset(rem, 0, sizeof rem);
    memset(yy, 0, sizeof yy);
    memcpy(yy, y->w, (size_t)n * sizeof(uint64_t));
    dpf_fx_zero(&q);
    /* the dividend has limbs x.w[i] at positions i + n - 1 */
    for (bit = 64 * (2 * n - 1) - 1; bit >= 0; bit--) {
        int limb = bit / 64 - (n - 1);
        uint64_t in = limb >= 0 ? (x->w[limb] >> (bit % 64)) & 1 : 0;
        for (i = n; i > 0; i--) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | in;
        if (dpf_big_cmp(rem, n + 1, yy, n + 1) >= 0) {
            dpf_big_sub(rem, n + 1, yy, n + 1);
            if (bit < 64 * n) q.w[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    if (up && dpf_big_len(rem, n + 1) != 0) dpf_fx_add_ulp(&q, n);
    *z = q;
}

/* |x - y| */
void dpf_fx_absdiff(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n)
{
    if (dpf_fx_cmp(x, y, n) >= 0) dpf_fx_sub(z, x, y, n);
    else dpf_fx_sub(z, y, x, n);
}

/* An upper bound of x as a double: the limbs are summed in double (each step rounds to
 * nearest, relative error <= 2^-53 per step), then inflated by 2^-48. */
double dpf_fx_to_double_up(const dpf_fx_t *x, int n)
{
    double v = 0.0, scale = 1.0;
    int i;
    for (i = n - 1; i >= 0; i--) {
        v += (double)x->w[i] * scale;
        scale *= 1.0 / 18446744073709551616.0;
    }
    return v * (1.0 + 1.0 / 281474976710656.0);
}

/* exp(f) for f in [flo, fhi] within [0, 1]: the Taylor sum with terms rounded down (lower
 * bound) or up (upper bound), up to the first K whose upper term is one unit in the last
 * place; the tail sum_{k>K} f^k/k! <= (f^K/K!)/K is then at most that term, which is added
 * to the upper bound. */
void dpf_fx_exp_pos(dpf_fx_t *lo, dpf_fx_t *hi, const dpf_fx_t *flo, const dpf_fx_t *fhi,
                    int n)
{
    dpf_fx_t tl, th, ulp;
    uint64_t k;
    dpf_fx_int(&tl, 1, n);
    dpf_fx_int(&th, 1, n);
    dpf_fx_int(lo, 1, n);
    dpf_fx_int(hi, 1, n);
    dpf_fx_zero(&ulp);
    ulp.w[0] = 1;
    for (k = 1; k < 1000; k++) {
        dpf_fx_mul(&tl, &tl, flo, 0, n);
        dpf_fx_div_u64(&tl, &tl, k, 0, n);
        dpf_fx_mul(&th, &th, fhi, 1, n);
        dpf_fx_div_u64(&th, &th, k, 1, n);
        dpf_fx_add(lo, lo, &tl, n);
        dpf_fx_add(hi, hi, &th, n);
        if (k >= 2 && dpf_fx_cmp(&th, &ulp, n) <= 0) break;
    }
    dpf_fx_add(hi, hi, &th, n);
}

/* [exp(-1)] */
void dpf_fx_exp_m1(dpf_fxi_t *e1, int n)
{
    dpf_fx_t one, slo, shi;
    dpf_fx_int(&one, 1, n);
    dpf_fx_exp_pos(&slo, &shi, &one, &one, n);
    dpf_fx_div(&e1->lo, &one, &shi, 0, n);
    dpf_fx_div(&e1->hi, &one, &slo, 1, n);
}

/* [exp(-(k + f))] for an integer k and f in [flo, fhi] within [0, 1), given [exp(-1)]. */
void dpf_fx_exp_neg(dpf_fxi_t *res, uint64_t k, const dpf_fx_t *flo, const dpf_fx_t *fhi,
                    const dpf_fxi_t *e1, int n)
{
    dpf_fx_t one, slo, shi, elo, ehi, plo, phi, blo, bhi;
    if (k >= 45 * (uint64_t)(n - 1)) { /* exp(-k) < 2^(-64 (n-1)): [0, 1 ulp] holds it */
        dpf_fx_zero(&res->lo);
        dpf_fx_zero(&res->hi);
        res->hi.w[0] = 1;
        return;
    }
    dpf_fx_int(&one, 1, n);
    dpf_fx_exp_pos(&slo, &shi, flo, fhi, n);
    dpf_fx_div(&elo, &one, &shi, 0, n); /* exp(-f) = 1 / exp(f) */
    dpf_fx_div(&ehi, &one, &slo, 1, n);
    /* exp(-1)^k by binary powering, bounds rounded outwards */
    dpf_fx_int(&plo, 1, n);
    dpf_fx_int(&phi, 1, n);
    blo = e1->lo;
    bhi = e1->hi;
    while (k) {
        if (k & 1) {
            dpf_fx_mul(&plo, &plo, &blo, 0, n);
            dpf_fx_mul(&phi, &phi, &bhi, 1, n);
        }
        k >>= 1;
        if (k) {
            dpf_fx_mul(&blo, &blo, &blo, 0, n);
            dpf_fx_mul(&bhi, &bhi, &bhi, 1, n);
        }
    }
    dpf_fx_mul(&res->lo, &plo, &elo, 0, n);
    dpf_fx_mul(&res->hi, &phi, &ehi, 1, n);
}

/* [p] for p = exp(-y) (ratio = 0) or exp(-y)/(1 + exp(-y)) (ratio = 1), y = k + num/den
 * with num < den. */
void dpf_fx_coin_p(dpf_fxi_t *p, uint64_t k, uint64_t num, uint64_t den, int ratio,
                   const dpf_fxi_t *e1, int n)
{
    dpf_fx_t flo, fhi, one, d;
    dpf_fxi_t a;
    dpf_fx_ratio(&flo, 0, num, den, 0, n);
    dpf_fx_ratio(&fhi, 0, num, den, 1, n);
    dpf_fx_exp_neg(&a, k, &flo, &fhi, e1, n);
    if (!ratio) {
        *p = a;
        return;
    }
    dpf_fx_int(&one, 1, n);
    /* x/(1+x) is increasing in x */
    dpf_fx_add(&d, &one, &a.lo, n);
    dpf_fx_div(&p->lo, &a.lo, &d, 0, n);
    dpf_fx_add(&d, &one, &a.hi, n);
    dpf_fx_div(&p->hi, &a.hi, &d, 1, n);
}

/* N/D for multi-word N, D (D > 0): the integer part *k (UINT64_MAX if it does not fit,
 * which only makes exp(-N/D) a value below one ulp) and [flo, fhi] around the fraction, by
 * restoring division over the bits of N 2^(64 (n-1)).  Set-up and ties only. */
static void dpf_big_ratio_split(const uint64_t *N, int nn, const uint64_t *D, int dn,
                                uint64_t *k, dpf_fx_t *flo, dpf_fx_t *fhi, int n)
{
    uint64_t rem[DPF_BIGW + 2], q = 0;
    int bit, i, rn = dn + 1, sat = 0;
    memset(rem, 0, sizeof rem);
    dpf_fx_zero(flo);
    for (bit = 64 * nn + 64 * (n - 1) - 1; bit >= 0; bit--) {
        int pos = bit - 64 * (n - 1); /* >= 0: a bit of N; < 0: the fraction's zeros */
        uint64_t in = pos >= 0 ? (N[pos / 64] >> (pos % 64)) & 1 : 0;
        int one;
        for (i = rn - 1; i > 0; i--) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | in;
        one = dpf_big_cmp(rem, rn, D, dn) >= 0;
        if (one) dpf_big_sub(rem, rn, D, dn);
        if (pos >= 0) {
            sat |= (int)(q >> 63);
            q = (q << 1) | (uint64_t)one;
        } else if (one) {
            int fb = bit; /* fraction bit index: limb fb/64 of the n-1 fractional limbs */
            flo->w[fb / 64] |= (uint64_t)1 << (fb % 64);
        }
    }
    *k = sat ? UINT64_MAX : q;
    *fhi = *flo;
    if (dpf_big_len(rem, rn) != 0) dpf_fx_add_ulp(fhi, n);
}

/* [exp(-N/D)] for multi-word N, D. */
void dpf_fx_exp_neg_big(dpf_fxi_t *res, const uint64_t *N, int nn, const uint64_t *D,
                        int dn, const dpf_fxi_t *e1, int n)
{
    dpf_fx_t flo, fhi;
    uint64_t k;
    dpf_big_ratio_split(N, nn, D, dn, &k, &flo, &fhi, n);
    dpf_fx_exp_neg(res, k, &flo, &fhi, e1, n);
}

/* The 64-bit threshold nearest to the lower bound of p in [0, 1], and a certified bound
 * err >= |T/2^64 - p| = max over the interval's ends.  n >= 3. */
uint64_t dpf_fx_threshold(const dpf_fxi_t *p, dpf_fx_t *err, int n)
{
    dpf_fx_t tf, e2;
    uint64_t t;
    if (p->lo.w[n - 1] != 0) {
        t = UINT64_MAX;
    } else {
        t = p->lo.w[n - 2];
        if ((p->lo.w[n - 3] >> 63) && t != UINT64_MAX) t++;
    }
    dpf_fx_zero(&tf);
    tf.w[n - 2] = t;
    dpf_fx_absdiff(err, &tf, &p->lo, n);
    dpf_fx_absdiff(&e2, &tf, &p->hi, n);
    if (dpf_fx_cmp(&e2, err, n) > 0) *err = e2;
    return t;
}

/* ================================================================ certified exp (API) */

int dpf_exp_neg_interval(const uint64_t *num, const uint64_t *den, size_t limbs,
                         unsigned prec, uint64_t *lo, uint64_t *hi)
{
    dpf_fxi_t e1, res;
    int n = (int)prec;
    if (limbs == 0 || limbs > 6 || prec < 3 || prec > DPF_FXMAX) return DPF_E_PARAM;
    if (dpf_big_len(den, (int)limbs) == 0) return DPF_E_PARAM;
    dpf_fx_exp_m1(&e1, n);
    dpf_fx_exp_neg_big(&res, num, (int)limbs, den, (int)limbs, &e1, n);
    memcpy(lo, res.lo.w, (size_t)n * sizeof(uint64_t));
    memcpy(hi, res.hi.w, (size_t)n * sizeof(uint64_t));
    return DPF_OK;
}
