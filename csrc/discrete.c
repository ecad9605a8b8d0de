/* Exact and constant-time discrete samplers.
 *
 * References
 *   [CKS]  C. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for Differential
 *          Privacy", NeurIPS 2020 (arXiv:2004.00010): Algorithm 1 (Bernoulli(exp(-gamma))),
 *          Algorithm 2 (discrete Laplace), Algorithm 3 (discrete Gaussian).
 *   [L19]  D. Lemire, "Fast Random Integer Generation in an Interval", ACM TOMACS 2019.
 *   [vN51] J. von Neumann, "Various techniques used in connection with random digits", 1951.
 *
 * Building blocks, all exact:
 *   - A uniform U in [0,1) is never materialised.  [U < num/den] is decided from the first
 *     64 bits W of U: U*den lies in [W*den, W*den + den) / 2^64, so comparing W*den with
 *     num*2^64 decides unless num*2^64 falls inside that interval (probability < 2^-64);
 *     then, conditionally on W, U' = 2^64 U - W is again uniform and
 *     [U < num/den] = [U' < (num*2^64 - W*den)/den]: the same test with a smaller
 *     numerator.  No division, no modulo, and the law is exactly Bernoulli(num/den).
 *   - Bernoulli(exp(-gamma)), 0 <= gamma <= 1, by [CKS] Algorithm 1 (von Neumann's trick):
 *     draw A_k ~ Bernoulli(gamma/k) for k = 1, 2, ... until the first A_K = 0 and return
 *     [K odd]; P(K > k) = gamma^k/k!, so P(K odd) = sum_k (-gamma)^k/k! = exp(-gamma).
 *     For gamma > 1, exp(-gamma) is a product of exp(-1) factors and exp(-frac(gamma))
 *     ([CKS] Prop. 5); each factor is an independent coin and the first 0 stops.
 *
 * Overflow: every product that can exceed 64 bits is computed with mul64 (64x64->128) or
 * with the small multi-word routines below; a result outside int64 gives DPF_E_RANGE.
 *
 * The file, in order:
 *   1. small multi-word integers (64x64/128-bit primitives: dpfast/arith.h);
 *   2. exact samplers with no set-up ([CKS] loops): scalars and short arrays;
 *   3. certified fixed-point interval arithmetic (exp of a rational, thresholds);
 *   4. exact prepared samplers: one-word certified coins with an exact continuation on
 *      ties, the fast path for arrays;
 *   5. constant-time samplers (bitwise geometric, cumulative table) and their slack.
 * No floating point is used to sample; the only doubles are the reported slacks.
 */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/discrete.h"

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return a;
}

/* ---------------------------------------------------------------- small multi-word ints
 * Little-endian arrays of 64-bit limbs with explicit lengths; lengths never exceed BIGW. */

#define BIGW (DPF_BIG_MAX_LIMBS + 4)

static int big_len(const uint64_t *a, int n)
{
    while (n > 0 && a[n - 1] == 0) n--;
    return n;
}

static int big_cmp(const uint64_t *a, int an, const uint64_t *b, int bn)
{
    an = big_len(a, an);
    bn = big_len(b, bn);
    if (an != bn) return an < bn ? -1 : 1;
    while (an-- > 0)
        if (a[an] != b[an]) return a[an] < b[an] ? -1 : 1;
    return 0;
}

/* a -= b; requires a >= b and bn <= an. */
static void big_sub(uint64_t *a, int an, const uint64_t *b, int bn)
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
static int big_mul_u64(uint64_t *out, const uint64_t *a, int an, uint64_t k)
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
static int big_mul(uint64_t *out, const uint64_t *a, int an, const uint64_t *b, int bn)
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
static int big_shl(uint64_t *out, const uint64_t *a, int an, int s)
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

static int big_bitlen(const uint64_t *a, int an)
{
    an = big_len(a, an);
    return an ? 64 * (an - 1) + dpf_bitlen64(a[an - 1]) : 0;
}

/* ================================================================ exact samplers */

/* [L19]: m = W n; the high word of m is uniform on [0, n) once the low word is at least
 * 2^64 mod n.  The rejection probability (2^64 mod n)/2^64 depends only on n. */
uint64_t dpf_uniform_below(dpf_rng_t *r, uint64_t n)
{
    uint64_t hi, lo;
    if (n == 0) return dpf_next_u64(r);
    lo = dpf_mul64(dpf_next_u64(r), n, &hi);
    if (DPF_UNLIKELY(lo < n)) {
        uint64_t thresh = (0 - n) % n;   /* 2^64 mod n */
        while (lo < thresh) lo = dpf_mul64(dpf_next_u64(r), n, &hi);
    }
    return hi;
}

int dpf_uniform_below_fill(dpf_rng_t *r, uint64_t n, int64_t *out, size_t count)
{
    size_t i;
    if (n == 0 || n > ((uint64_t)1 << 63)) return DPF_E_PARAM;
    for (i = 0; i < count; i++) out[i] = (int64_t)dpf_uniform_below(r, n);
    return DPF_OK;
}

/* [U < num/den] by the lazy comparison described at the top (den >= 1). */
static DPF_INLINE int bern_lt64(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    for (;;) {
        uint64_t hi, lo = dpf_mul64(dpf_next_u64(r), den, &hi);
        /* hi >= num: U den >= num.  hi <= num - 2: U den < (W den + den)/2^64 <= num. */
        if (DPF_LIKELY(hi != num - 1)) return hi < num;
        /* hi = num - 1: decided (U < num/den) iff lo + den <= 2^64 */
        if (lo <= (uint64_t)0 - den) return 1;
        num = (uint64_t)0 - lo;   /* num 2^64 - W den = 2^64 - lo, in [1, den) */
    }
}

/* The same comparison with multi-word N and D of n limbs each (N is overwritten). */
static int bern_lt_big(dpf_rng_t *r, uint64_t *N, const uint64_t *D, int n)
{
    uint64_t P[BIGW + 2];
    int i;
    for (;;) {
        uint64_t w = dpf_next_u64(r), c = 0, borrow = 0;
        int cmp = 0;
        for (i = 0; i < n; i++) {
            uint64_t hi, lo = dpf_mul64(w, D[i], &hi);
            lo += c;
            hi += lo < c;
            P[i] = lo;
            c = hi;
        }
        P[n] = c;
        /* compare P = W D with S = N 2^64 (S[0] = 0, S[i+1] = N[i]) from the top */
        for (i = n; i >= 1 && cmp == 0; i--)
            if (P[i] != N[i - 1]) cmp = P[i] < N[i - 1] ? -1 : 1;
        if (cmp == 0) cmp = P[0] != 0;   /* S[0] = 0 */
        if (cmp >= 0) return 0;          /* U D >= W D / 2^64 >= N */
        /* R = S - P > 0; decided (return 1) iff R >= D */
        {
            uint64_t R[BIGW + 2];
            for (i = 0; i <= n; i++) {
                uint64_t s = i ? N[i - 1] : 0;
                uint64_t d = s - P[i], b1 = s < P[i];
                uint64_t d2 = d - borrow, b2 = d < borrow;
                R[i] = d2;
                borrow = b1 | b2;
            }
            if (R[n] != 0 || big_cmp(R, n, D, n) >= 0) return 1;
            for (i = 0; i < n; i++) N[i] = R[i];
        }
    }
}

int dpf_bernoulli_rational(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    if (den == 0) return -DPF_E_PARAM;
    if (num >= den) return 1;
    if (num == 0) return 0;
    return bern_lt64(r, num, den);
}

int dpf_bernoulli_rational_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out,
                                size_t n)
{
    size_t i;
    if (den == 0) return DPF_E_PARAM;
    if (num == 0 || num >= den) {
        for (i = 0; i < n; i++) out[i] = num != 0;
        return DPF_OK;
    }
    for (i = 0; i < n; i++) out[i] = bern_lt64(r, num, den);
    return DPF_OK;
}

static int big_args(const uint64_t *num, const uint64_t *den, size_t limbs)
{
    if (limbs == 0 || limbs > DPF_BIG_MAX_LIMBS) return DPF_E_PARAM;
    if (big_len(den, (int)limbs) == 0) return DPF_E_PARAM;
    (void)num;
    return DPF_OK;
}

int dpf_bernoulli_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den, size_t limbs)
{
    uint64_t N[BIGW];
    int n = (int)limbs;
    if (big_args(num, den, limbs) != DPF_OK) return -DPF_E_PARAM;
    if (big_cmp(num, n, den, n) >= 0) return 1;
    if (big_len(num, n) == 0) return 0;
    memcpy(N, num, limbs * sizeof(uint64_t));
    return bern_lt_big(r, N, den, n);
}

int dpf_bernoulli_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                           size_t limbs, int64_t *out, size_t n)
{
    size_t i;
    if (big_args(num, den, limbs) != DPF_OK) return DPF_E_PARAM;
    for (i = 0; i < n; i++) out[i] = dpf_bernoulli_big(r, num, den, limbs);
    return DPF_OK;
}

/* ---------------------------------------------------------------- Bernoulli(exp(-gamma)) */

/* gamma = 1: the first coin of Algorithm 1 is Bernoulli(1) = 1, so start at k = 2. */
static int bern_exp1(dpf_rng_t *r)
{
    uint64_t k;
    for (k = 2;; k++)
        if (!bern_lt64(r, 1, k)) return (int)(k & 1);
}

/* [CKS] Algorithm 1 for gamma = num/den in [0, 1] (num <= den). */
static int bern_exp_le1(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    uint64_t k;
    if (num == 0) return 1;
    if (num == den) return bern_exp1(r);
    for (k = 1;; k++) {
        uint64_t hi, dk = dpf_mul64(den, k, &hi);   /* Bernoulli(gamma/k) = Bernoulli(num/(den k)) */
        int a;
        if (DPF_LIKELY(hi == 0)) {
            a = bern_lt64(r, num, dk);
        } else {
            uint64_t N[2], D[2];
            N[0] = num; N[1] = 0; D[0] = dk; D[1] = hi;
            a = bern_lt_big(r, N, D, 2);
        }
        if (!a) return (int)(k & 1);
    }
}

/* exp(-g_int - g_frac/den) = exp(-1)^g_int exp(-g_frac/den): independent coins ([CKS]
 * Prop. 5), stopping at the first 0.  The loop counter is exact for any 64-bit g_int. */
static int bern_exp_split(dpf_rng_t *r, uint64_t g_int, uint64_t g_frac, uint64_t den)
{
    uint64_t i;
    for (i = 0; i < g_int; i++)
        if (!bern_exp1(r)) return 0;
    return bern_exp_le1(r, g_frac, den);
}

int dpf_bernoulli_exp(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    if (den == 0) return -DPF_E_PARAM;
    return bern_exp_split(r, num / den, num % den, den);
}

int dpf_bernoulli_exp_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out, size_t n)
{
    size_t i;
    uint64_t gi, gf;
    if (den == 0) return DPF_E_PARAM;
    gi = num / den;
    gf = num % den;
    for (i = 0; i < n; i++) out[i] = bern_exp_split(r, gi, gf, den);
    return DPF_OK;
}

/* 2^j independent Bernoulli(exp(-1)) coins, all 1.  For j >= 63 the count is capped at
 * 2^63 and reaching it returns -DPF_E_RANGE (probability exp(-2^63): never in practice,
 * but never a wrong value either). */
static int bern_exp1_pow2(dpf_rng_t *r, int j)
{
    uint64_t i, n = j < 63 ? (uint64_t)1 << j : (uint64_t)1 << 63;
    for (i = 0; i < n; i++)
        if (!bern_exp1(r)) return 0;
    return j < 63 ? 1 : -DPF_E_RANGE;
}

/* Bernoulli(exp(-N/D)) for multi-word N (nn limbs, overwritten) and D (dn limbs, > 0).
 * The integer part of N/D is found by binary long division; each quotient bit j
 * contributes a factor exp(-2^j).  Returns 1, 0 or -DPF_E_RANGE. */
static int bern_exp_ratio(dpf_rng_t *r, uint64_t *N, int nn, const uint64_t *D, int dn)
{
    uint64_t S[BIGW + 2], T[BIGW + 2];
    uint64_t k;
    int j, sn, tn, i;
    nn = big_len(N, nn);
    dn = big_len(D, dn);
    if (big_cmp(N, nn, D, dn) >= 0) {
        for (j = big_bitlen(N, nn) - big_bitlen(D, dn); j >= 0; j--) {
            sn = big_shl(S, D, dn, j);
            if (big_cmp(N, nn, S, sn) >= 0) {
                int st;
                big_sub(N, nn, S, sn > nn ? nn : sn);
                st = bern_exp1_pow2(r, j);
                if (st != 1) return st;
            }
        }
        nn = big_len(N, nn);
    }
    if (nn == 0) return 1;
    /* now 0 < N/D < 1: Algorithm 1 with Bernoulli(N/(D k)) */
    for (k = 1;; k++) {
        tn = big_len(T, big_mul_u64(T, D, dn, k));
        for (i = 0; i < tn; i++) S[i] = i < nn ? N[i] : 0;
        if (!bern_lt_big(r, S, T, tn)) return (int)(k & 1);
    }
}

int dpf_bernoulli_exp_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                          size_t limbs)
{
    uint64_t N[BIGW];
    if (big_args(num, den, limbs) != DPF_OK) return -DPF_E_PARAM;
    memcpy(N, num, limbs * sizeof(uint64_t));
    return bern_exp_ratio(r, N, (int)limbs, den, (int)limbs);
}

int dpf_bernoulli_exp_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                               size_t limbs, int64_t *out, size_t n)
{
    size_t i;
    if (big_args(num, den, limbs) != DPF_OK) return DPF_E_PARAM;
    for (i = 0; i < n; i++) {
        int v = dpf_bernoulli_exp_big(r, num, den, limbs);
        if (v < 0) return -v;
        out[i] = v;
    }
    return DPF_OK;
}

/* ---------------------------------------------------------------- geometric, Laplace */

/* Geometric with q = exp(-gamma), gamma = s_den/s_num = 1/t.
 *
 * [CKS] Algorithm 2 draws X = U + s_num V with U ∝ exp(-u/s_num) on [0, s_num) and
 * V ~ Geometric(exp(-1)), then Y = floor(X/s_den).  We use the same decomposition with the
 * block B = floor(t) instead of s_num, which removes the per-sample division: for a
 * geometric Y, V = floor(Y/B) and U = Y mod B are independent, V ~ Geometric(q^B) and
 * U ∝ q^u on [0, B).  q^B = exp(-beta) with beta = B s_den/s_num in (1/2, 1], and U is
 * drawn by rejection: u uniform on [0, B), accepted with probability exp(-u s_den/s_num).
 * Every product here fits in 64 bits: u s_den < B s_den <= s_num.
 * For t < 1 (B = 0) Y counts successes of Bernoulli(exp(-gamma)), gamma > 1. */
typedef struct {
    uint64_t s_num, s_den;
    uint64_t block;            /* B = floor(t), or 0 */
    uint64_t beta_num;         /* B s_den (beta = beta_num / s_num) */
    uint64_t g_int, g_frac;    /* B = 0: gamma = g_int + g_frac / s_num */
} geo_t;

static int geo_init(geo_t *g, uint64_t s_num, uint64_t s_den)
{
    uint64_t c;
    if (s_num == 0 || s_den == 0) return DPF_E_PARAM;
    c = gcd64(s_num, s_den);
    g->s_num = s_num / c;
    g->s_den = s_den / c;
    g->block = g->s_num / g->s_den;
    g->beta_num = g->block * g->s_den;
    g->g_int = g->s_den / g->s_num;
    g->g_frac = g->s_den % g->s_num;
    return DPF_OK;
}

static int geo_draw(dpf_rng_t *r, const geo_t *g, uint64_t *out)
{
    uint64_t v = 0, u = 0, hi, lo;
    if (g->block == 0) {
        while (bern_exp_split(r, g->g_int, g->g_frac, g->s_num))
            if (DPF_UNLIKELY(++v > (uint64_t)INT64_MAX)) return DPF_E_RANGE;
        *out = v;
        return DPF_OK;
    }
    while (bern_exp_le1(r, g->beta_num, g->s_num))
        if (DPF_UNLIKELY(++v > (uint64_t)INT64_MAX)) return DPF_E_RANGE;
    if (g->block > 1) {
        do u = dpf_uniform_below(r, g->block);
        while (!bern_exp_le1(r, u * g->s_den, g->s_num));
    }
    lo = dpf_mul64(g->block, v, &hi);
    if (DPF_UNLIKELY(hi != 0 || lo > (uint64_t)INT64_MAX - u)) return DPF_E_RANGE;
    *out = lo + u;
    return DPF_OK;
}

/* One sign bit at a time from a reservoir word (fills); a scalar draw uses one word. */
typedef struct {
    uint64_t bits;
    int left;
} bits_t;

static DPF_INLINE int next_bit(dpf_rng_t *r, bits_t *b)
{
    int v;
    if (b->left == 0) {
        b->bits = dpf_next_u64(r);
        b->left = 64;
    }
    v = (int)(b->bits & 1);
    b->bits >>= 1;
    b->left--;
    return v;
}

/* [CKS] Algorithm 2, last steps: a fair sign; (negative, 0) is rejected so that 0 is not
 * counted twice.  P(x) = (1-q)/(1+q) q^|x|. */
static int dlap_draw(dpf_rng_t *r, const geo_t *g, bits_t *b, int64_t *out)
{
    for (;;) {
        uint64_t y;
        int neg, st = geo_draw(r, g, &y);
        if (st != DPF_OK) return st;
        neg = next_bit(r, b);
        if (neg && y == 0) continue;
        *out = neg ? -(int64_t)y : (int64_t)y;
        return DPF_OK;
    }
}

int dpf_geometric(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out)
{
    geo_t g;
    uint64_t y;
    int st = geo_init(&g, s_num, s_den);
    if (st != DPF_OK) return st;
    st = geo_draw(r, &g, &y);
    if (st == DPF_OK) *out = (int64_t)y;
    return st;
}

int dpf_geometric_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out, size_t n)
{
    geo_t g;
    size_t i;
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        dpf_dlap_exact_t x;
        st = dpf_dlap_exact_prepare(&x, s_num, s_den, 64);
        if (st != DPF_OK) return st;
        return dpf_geometric_exact_fill(r, &x, out, n);
    }
    st = geo_init(&g, s_num, s_den);
    if (st != DPF_OK) return st;
    for (i = 0; i < n; i++) {
        uint64_t y;
        st = geo_draw(r, &g, &y);
        if (st != DPF_OK) return st;
        out[i] = (int64_t)y;
    }
    return DPF_OK;
}

int dpf_discrete_laplace(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out)
{
    geo_t g;
    bits_t b = {0, 0};
    int st = geo_init(&g, s_num, s_den);
    if (st != DPF_OK) return st;
    return dlap_draw(r, &g, &b, out);
}

int dpf_discrete_laplace_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                              size_t n)
{
    geo_t g;
    bits_t b = {0, 0};
    size_t i;
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        dpf_dlap_exact_t x;
        st = dpf_dlap_exact_prepare(&x, s_num, s_den, 64);
        if (st != DPF_OK) return st;
        return dpf_discrete_laplace_exact_fill(r, &x, out, n);
    }
    st = geo_init(&g, s_num, s_den);
    if (st != DPF_OK) return st;
    for (i = 0; i < n; i++) {
        st = dlap_draw(r, &g, &b, out + i);
        if (st != DPF_OK) return st;
    }
    return DPF_OK;
}

/* ---------------------------------------------------------------- discrete Gaussian */

/* [CKS] Algorithm 3 with sigma^2 = a/b: t = floor(sigma) + 1; propose Y ~ DLap(t); accept
 * with probability exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2)).  Over a common denominator the
 * exponent is N/D with N = (|Y| b t - a)^2 and D = 2 a b t^2, computed exactly:
 * a, b < 2^64 and t <= 2^32 give |Y| b t < 2^159, N < 2^318 (5 limbs), D < 2^194. */
/* s^2 b <= a ? */
static int sq_le(uint64_t s, uint64_t b, uint64_t a)
{
    uint64_t h1, l1 = dpf_mul64(s, s, &h1), h2, l2;
    if (h1 != 0) return 0;
    l2 = dpf_mul64(l1, b, &h2);
    return h2 == 0 && l2 <= a;
}

/* sigma^2 = *a / *b is put in lowest terms; t = floor(sigma) + 1, bt = b t, D = 2 a b t^2. */
static int dg_setup(uint64_t *a, uint64_t *b, uint64_t *t, uint64_t bt[2], uint64_t D[6],
                    int *dn)
{
    uint64_t c, lo = 0, hi = (uint64_t)1 << 32, ab[2], tt[2], abtt[4];
    if (*a == 0 || *b == 0) return DPF_E_PARAM;
    c = gcd64(*a, *b);
    *a /= c;
    *b /= c;
    /* floor(sigma) = the largest s with s^2 b <= a; invariant lo^2 b <= a < hi^2 b */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_le(mid, *b, *a)) lo = mid; else hi = mid;
    }
    *t = lo + 1;
    bt[0] = dpf_mul64(*b, *t, &bt[1]);
    ab[0] = dpf_mul64(*a, *b, &ab[1]);
    tt[0] = dpf_mul64(*t, *t, &tt[1]);
    big_mul(abtt, ab, 2, tt, 2);
    memset(D, 0, 6 * sizeof(uint64_t));
    *dn = big_len(D, big_shl(D, abtt, 4, 1));
    return DPF_OK;
}

/* The acceptance coin of |y| = x: p(x) = exp(-d^2/D), d = |x b t - a| (3 limbs). */
static void dg_square(uint64_t N[6], uint64_t a, const uint64_t bt[2], uint64_t x)
{
    uint64_t P[3], c, hi, lo;
    P[0] = dpf_mul64(x, bt[0], &c);
    lo = dpf_mul64(x, bt[1], &hi);
    P[1] = lo + c;
    P[2] = hi + (P[1] < lo);
    if (P[1] == 0 && P[2] == 0 && P[0] < a) {
        P[0] = a - P[0];
    } else {
        uint64_t A[1];
        A[0] = a;
        big_sub(P, 3, A, 1);
    }
    big_mul(N, P, 3, P, 3);
}

/* Accept the proposal y with probability exp(-(|y| b t - a)^2 / (2 a b t^2)).  Returns 1, 0
 * or -DPF_E_RANGE. */
static int dg_accept(dpf_rng_t *r, uint64_t a, const uint64_t bt[2], const uint64_t *D, int dn,
                     int64_t y)
{
    uint64_t N[6];
    dg_square(N, a, bt, y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y);
    return bern_exp_ratio(r, N, 6, D, dn);
}

typedef struct {
    geo_t prop;           /* the DLap(t) proposal: scale t/1, [CKS] Algorithm 2 */
    uint64_t a, b, t;
    uint64_t bt[2];
    uint64_t D[6];
    int dn;
} dg_t;

static int dg_init(dg_t *g, uint64_t a, uint64_t b)
{
    int st;
    g->a = a;
    g->b = b;
    st = dg_setup(&g->a, &g->b, &g->t, g->bt, g->D, &g->dn);
    if (st != DPF_OK) return st;
    return geo_init(&g->prop, g->t, 1);
}

static int dg_draw(dpf_rng_t *r, const dg_t *g, bits_t *b, int64_t *out)
{
    for (;;) {
        int64_t y;
        int acc, st = dlap_draw(r, &g->prop, b, &y);
        if (st != DPF_OK) return st;
        acc = dg_accept(r, g->a, g->bt, g->D, g->dn, y);
        if (acc == 1) {
            *out = y;
            return DPF_OK;
        }
        if (acc < 0) return -acc;
    }
}

int dpf_discrete_gaussian(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                          int64_t *out)
{
    dg_t g;
    bits_t b = {0, 0};
    int st = dg_init(&g, sigma2_num, sigma2_den);
    if (st != DPF_OK) return st;
    return dg_draw(r, &g, &b, out);
}

int dpf_discrete_gaussian_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                               int64_t *out, size_t n)
{
    dg_t g;
    bits_t b = {0, 0};
    size_t i;
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        dpf_dgauss_exact_t x;
        st = dpf_dgauss_exact_prepare(&x, sigma2_num, sigma2_den, 64);
        if (st == DPF_OK) st = dpf_discrete_gaussian_exact_fill(r, &x, out, n);
        dpf_dgauss_exact_free(&x);
        return st;
    }
    st = dg_init(&g, sigma2_num, sigma2_den);
    if (st != DPF_OK) return st;
    for (i = 0; i < n; i++) {
        st = dg_draw(r, &g, &b, out + i);
        if (st != DPF_OK) return st;
    }
    return DPF_OK;
}

/* ================================================================ certified arithmetic
 *
 * The constant-time samplers compare one uniform word with fixed thresholds.  Those are
 * computed once, from public parameters, with interval arithmetic on nonnegative
 * fixed-point numbers of n limbs: the value of x is x.w / 2^(64 (n-1)), i.e. one integer
 * limb and 64 (n-1) fractional bits (192 for the constant-time tables, CTN = 4; up to 704,
 * FXMAX = 12, for the exact samplers' tie-breaking).  Each operation returns a lower bound (rounded
 * down) or an upper bound (rounded up) of the exact result, so every [lo, hi] pair below
 * contains the exact real number.  No floating point is used anywhere in this part except
 * the final conversion of the slack to a double, which is rounded up.
 */

#define FXMAX 12    /* at most 704 fractional bits */
#define CTN 4       /* precision of the constant-time tables: 192 fractional bits */
typedef struct { uint64_t w[FXMAX]; } fx_t;

static void fx_zero(fx_t *x) { memset(x, 0, sizeof *x); }

static void fx_int(fx_t *x, uint64_t v, int n)
{
    fx_zero(x);
    x->w[n - 1] = v;
}

static int fx_cmp(const fx_t *x, const fx_t *y, int n)
{
    int i;
    for (i = n - 1; i >= 0; i--)
        if (x->w[i] != y->w[i]) return x->w[i] < y->w[i] ? -1 : 1;
    return 0;
}

/* z = x + y; returns the carry out (an overflow). */
static int fx_add(fx_t *z, const fx_t *x, const fx_t *y, int n)
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
static void fx_sub(fx_t *z, const fx_t *x, const fx_t *y, int n)
{
    fx_t t = *x;
    big_sub(t.w, n, y->w, n);
    *z = t;
}

/* z += 2^(64 limb) units of the last place (limb 0 is the last place). */
static int fx_add_at(fx_t *z, int limb, int n)
{
    int i;
    for (i = limb; i < n; i++)
        if (++z->w[i] != 0) return 0;
    return 1;
}

static int fx_add_ulp(fx_t *z, int n) { return fx_add_at(z, 0, n); }

/* z = x y rounded down (up = 0) or up (up = 1); returns nonzero on overflow. */
static int fx_mul(fx_t *z, const fx_t *x, const fx_t *y, int up, int n)
{
    uint64_t p[2 * FXMAX];
    int i, sticky = 0;
    big_mul(p, x->w, n, y->w, n);
    for (i = 0; i < n - 1; i++) sticky |= p[i] != 0;
    for (i = 0; i < n; i++) z->w[i] = p[i + n - 1];
    if (p[2 * n - 1] != 0) return 1;
    if (up && sticky) return fx_add_ulp(z, n);
    return 0;
}

/* z = x k exactly; nonzero on overflow. */
static int fx_mul_u64(fx_t *z, const fx_t *x, uint64_t k, int n)
{
    uint64_t p[FXMAX + 1];
    big_mul_u64(p, x->w, n, k);
    memcpy(z->w, p, (size_t)n * sizeof(uint64_t));
    return p[n] != 0;
}

/* z = x / d rounded down or up (d >= 1). */
static void fx_div_u64(fx_t *z, const fx_t *x, uint64_t d, int up, int n)
{
    uint64_t rem = 0;
    int i;
    for (i = n - 1; i >= 0; i--) z->w[i] = dpf_div128(rem, x->w[i], d, &rem);
    if (up && rem) fx_add_ulp(z, n);
}

/* z = (nhi 2^64 + nlo) / d rounded down or up; requires nhi < d (the value is < 2^64). */
static void fx_ratio(fx_t *z, uint64_t nhi, uint64_t nlo, uint64_t d, int up, int n)
{
    uint64_t rem;
    int i;
    fx_zero(z);
    /* the dividend's limbs: nhi at 2^64, nlo at 2^0 (the integer limb), zeros below */
    z->w[n - 1] = dpf_div128(nhi, nlo, d, &rem);
    for (i = n - 2; i >= 0; i--) z->w[i] = dpf_div128(rem, 0, d, &rem);
    if (up && rem) fx_add_ulp(z, n);
}

/* z = x / 2 rounded down or up. */
static void fx_half(fx_t *z, const fx_t *x, int up, int n)
{
    int i, lost = (int)(x->w[0] & 1);
    for (i = 0; i < n - 1; i++) z->w[i] = (x->w[i] >> 1) | (x->w[i + 1] << 63);
    z->w[n - 1] = x->w[n - 1] >> 1;
    if (up && lost) fx_add_ulp(z, n);
}

/* z = x / y rounded down or up (y > 0, x/y < 2^64): restoring division of x 2^(64(n-1))
 * by y, one quotient bit at a time.  Set-up only. */
static void fx_div(fx_t *z, const fx_t *x, const fx_t *y, int up, int n)
{
    uint64_t rem[FXMAX + 1], yy[FXMAX + 1];
    int bit, i;
    fx_t q;
    memset(rem, 0, sizeof rem);
    memset(yy, 0, sizeof yy);
    memcpy(yy, y->w, (size_t)n * sizeof(uint64_t));
    fx_zero(&q);
    /* the dividend has limbs x.w[i] at positions i + n - 1 */
    for (bit = 64 * (2 * n - 1) - 1; bit >= 0; bit--) {
        int limb = bit / 64 - (n - 1);
        uint64_t in = limb >= 0 ? (x->w[limb] >> (bit % 64)) & 1 : 0;
        for (i = n; i > 0; i--) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | in;
        if (big_cmp(rem, n + 1, yy, n + 1) >= 0) {
            big_sub(rem, n + 1, yy, n + 1);
            if (bit < 64 * n) q.w[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    if (up && big_len(rem, n + 1) != 0) fx_add_ulp(&q, n);
    *z = q;
}

/* |x - y| */
static void fx_absdiff(fx_t *z, const fx_t *x, const fx_t *y, int n)
{
    if (fx_cmp(x, y, n) >= 0) fx_sub(z, x, y, n); else fx_sub(z, y, x, n);
}

/* An upper bound of x as a double: the limbs are summed in double (each step rounds to
 * nearest, relative error <= 2^-53 per step), then inflated by 2^-48. */
static double fx_to_double_up(const fx_t *x, int n)
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
static void fx_exp_pos(fx_t *lo, fx_t *hi, const fx_t *flo, const fx_t *fhi, int n)
{
    fx_t tl, th, ulp;
    uint64_t k;
    fx_int(&tl, 1, n);
    fx_int(&th, 1, n);
    fx_int(lo, 1, n);
    fx_int(hi, 1, n);
    fx_zero(&ulp);
    ulp.w[0] = 1;
    for (k = 1; k < 1000; k++) {
        fx_mul(&tl, &tl, flo, 0, n);
        fx_div_u64(&tl, &tl, k, 0, n);
        fx_mul(&th, &th, fhi, 1, n);
        fx_div_u64(&th, &th, k, 1, n);
        fx_add(lo, lo, &tl, n);
        fx_add(hi, hi, &th, n);
        if (k >= 2 && fx_cmp(&th, &ulp, n) <= 0) break;
    }
    fx_add(hi, hi, &th, n);
}

typedef struct { fx_t lo, hi; } fxi_t;

/* [exp(-1)] */
static void fx_exp_m1(fxi_t *e1, int n)
{
    fx_t one, slo, shi;
    fx_int(&one, 1, n);
    fx_exp_pos(&slo, &shi, &one, &one, n);
    fx_div(&e1->lo, &one, &shi, 0, n);
    fx_div(&e1->hi, &one, &slo, 1, n);
}

/* [exp(-(k + f))] for an integer k and f in [flo, fhi] within [0, 1), given [exp(-1)]. */
static void fx_exp_neg(fxi_t *res, uint64_t k, const fx_t *flo, const fx_t *fhi,
                       const fxi_t *e1, int n)
{
    fx_t one, slo, shi, elo, ehi, plo, phi, blo, bhi;
    if (k >= 45 * (uint64_t)(n - 1)) {   /* exp(-k) < 2^(-64 (n-1)): [0, 1 ulp] holds it */
        fx_zero(&res->lo);
        fx_zero(&res->hi);
        res->hi.w[0] = 1;
        return;
    }
    fx_int(&one, 1, n);
    fx_exp_pos(&slo, &shi, flo, fhi, n);
    fx_div(&elo, &one, &shi, 0, n);   /* exp(-f) = 1 / exp(f) */
    fx_div(&ehi, &one, &slo, 1, n);
    /* exp(-1)^k by binary powering, bounds rounded outwards */
    fx_int(&plo, 1, n);
    fx_int(&phi, 1, n);
    blo = e1->lo;
    bhi = e1->hi;
    while (k) {
        if (k & 1) {
            fx_mul(&plo, &plo, &blo, 0, n);
            fx_mul(&phi, &phi, &bhi, 1, n);
        }
        k >>= 1;
        if (k) {
            fx_mul(&blo, &blo, &blo, 0, n);
            fx_mul(&bhi, &bhi, &bhi, 1, n);
        }
    }
    fx_mul(&res->lo, &plo, &elo, 0, n);
    fx_mul(&res->hi, &phi, &ehi, 1, n);
}

/* [p] for p = exp(-y) (ratio = 0) or exp(-y)/(1 + exp(-y)) (ratio = 1), y = k + num/den
 * with num < den. */
static void fx_coin_p(fxi_t *p, uint64_t k, uint64_t num, uint64_t den, int ratio,
                      const fxi_t *e1, int n)
{
    fx_t flo, fhi, one, d;
    fxi_t a;
    fx_ratio(&flo, 0, num, den, 0, n);
    fx_ratio(&fhi, 0, num, den, 1, n);
    fx_exp_neg(&a, k, &flo, &fhi, e1, n);
    if (!ratio) {
        *p = a;
        return;
    }
    fx_int(&one, 1, n);
    /* x/(1+x) is increasing in x */
    fx_add(&d, &one, &a.lo, n);
    fx_div(&p->lo, &a.lo, &d, 0, n);
    fx_add(&d, &one, &a.hi, n);
    fx_div(&p->hi, &a.hi, &d, 1, n);
}

/* N/D for multi-word N, D (D > 0): the integer part *k (UINT64_MAX if it does not fit,
 * which only makes exp(-N/D) a value below one ulp) and [flo, fhi] around the fraction, by
 * restoring division over the bits of N 2^(64 (n-1)).  Set-up and ties only. */
static void big_ratio_split(const uint64_t *N, int nn, const uint64_t *D, int dn, uint64_t *k,
                            fx_t *flo, fx_t *fhi, int n)
{
    uint64_t rem[BIGW + 2], q = 0;
    int bit, i, rn = dn + 1, sat = 0;
    memset(rem, 0, sizeof rem);
    fx_zero(flo);
    for (bit = 64 * nn + 64 * (n - 1) - 1; bit >= 0; bit--) {
        int pos = bit - 64 * (n - 1);   /* >= 0: a bit of N; < 0: the fraction's zeros */
        uint64_t in = pos >= 0 ? (N[pos / 64] >> (pos % 64)) & 1 : 0;
        int one;
        for (i = rn - 1; i > 0; i--) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | in;
        one = big_cmp(rem, rn, D, dn) >= 0;
        if (one) big_sub(rem, rn, D, dn);
        if (pos >= 0) {
            sat |= (int)(q >> 63);
            q = (q << 1) | (uint64_t)one;
        } else if (one) {
            int fb = bit;   /* fraction bit index: limb fb/64 of the n-1 fractional limbs */
            flo->w[fb / 64] |= (uint64_t)1 << (fb % 64);
        }
    }
    *k = sat ? UINT64_MAX : q;
    *fhi = *flo;
    if (big_len(rem, rn) != 0) fx_add_ulp(fhi, n);
}

/* [exp(-N/D)] for multi-word N, D. */
static void fx_exp_neg_big(fxi_t *res, const uint64_t *N, int nn, const uint64_t *D, int dn,
                           const fxi_t *e1, int n)
{
    fx_t flo, fhi;
    uint64_t k;
    big_ratio_split(N, nn, D, dn, &k, &flo, &fhi, n);
    fx_exp_neg(res, k, &flo, &fhi, e1, n);
}

/* The 64-bit threshold nearest to the lower bound of p in [0, 1], and a certified bound
 * err >= |T/2^64 - p| = max over the interval's ends.  n >= 3. */
static uint64_t fx_threshold(const fxi_t *p, fx_t *err, int n)
{
    fx_t tf, e2;
    uint64_t t;
    if (p->lo.w[n - 1] != 0) {
        t = UINT64_MAX;
    } else {
        t = p->lo.w[n - 2];
        if ((p->lo.w[n - 3] >> 63) && t != UINT64_MAX) t++;
    }
    fx_zero(&tf);
    tf.w[n - 2] = t;
    fx_absdiff(err, &tf, &p->lo, n);
    fx_absdiff(&e2, &tf, &p->hi, n);
    if (fx_cmp(&e2, err, n) > 0) *err = e2;
    return t;
}

/* ================================================================ exact, prepared
 *
 * See discrete.h.  Exactness: Y = B V + U with V = floor(Y/B), U = Y mod B independent,
 * V ~ Geometric(q^B) and U ∝ q^u on [0, B) (the decomposition of Algorithm 2 above).  The
 * binary digits of V are independent, digit j being 1 with probability
 * p_j = q_B^(2^j)/(1 + q_B^(2^j)), q_B = exp(-beta): P(V = v) = (1 - q_B) prod_j q_B^(d_j 2^j)
 * factorises over the digits.  floor(V/2^D) is Geometric(q_B^(2^D)); the coin
 * "V >= 2^D" has probability q_B^(2^D), and given it the rest is memoryless.  Every coin
 * is exact (see groups_draw / group_tie), so the law of the output is exact.
 */

/* Tuned on x86-64 (bench/bench_discrete.py): a block of t/4 keeps the rejection for U
 * mostly predictable (acceptance >= 0.88); the digits of V stop at the first
 * 2^j beta >= 6, so P(V >= 2^D) <= e^-6 and that rare case is finished by [CKS] coins. */
#define XB_DIV 4
#define XY_STOP 6

static void coin_set(dpf_coin_t *c, uint64_t k, uint64_t num, uint64_t s_num, int ratio,
                     const fxi_t *e1, uint32_t shift)
{
    fxi_t p;
    c->y_int = k;
    c->y_num = num;
    c->ratio = (uint32_t)ratio;
    fx_coin_p(&p, k, num, s_num, ratio, e1, CTN);
    /* p < 1 here (p <= 1/2 for ratio coins, p <= e^-6 for the high coin): limb CTN-2 of p
     * is floor(2^64 p) */
    c->lo = p.lo.w[CTN - 2] >> shift;
    c->hi = p.hi.w[CTN - 2] >> shift;
    if (p.hi.w[CTN - 1] != 0) c->hi = UINT64_MAX >> shift;
}

/* [C_m] = [P(joint outcome <= m)] of `count` independent coins with probabilities [p]
 * (outcome bit i = coin first + i is 1 with probability p_(first+i)): a sum of products
 * of nonnegative intervals, rounded outwards. */
static void group_cumulative(fxi_t *C, const fxi_t *p, uint32_t first, uint32_t count,
                             uint32_t m, int n)
{
    fx_t one;
    uint32_t o, i;
    fx_int(&one, 1, n);
    fx_zero(&C->lo);
    fx_zero(&C->hi);
    for (o = 0; o <= m; o++) {
        fxi_t prod;
        prod.lo = one;
        prod.hi = one;
        for (i = 0; i < count; i++) {
            const fxi_t *q = &p[first + i];
            fx_t flo, fhi;
            if ((o >> i) & 1) {
                flo = q->lo;
                fhi = q->hi;
            } else {                      /* 1 - p: [1 - hi, 1 - lo] */
                fx_sub(&flo, &one, &q->hi, n);
                fx_sub(&fhi, &one, &q->lo, n);
            }
            fx_mul(&prod.lo, &prod.lo, &flo, 0, n);
            fx_mul(&prod.hi, &prod.hi, &fhi, 1, n);
        }
        fx_add(&C->lo, &C->lo, &prod.lo, n);
        fx_add(&C->hi, &C->hi, &prod.hi, n);
    }
}

/* The thresholds of one group; 0 if two of its certified intervals touch (a word could
 * then tie with two of them), in which case the caller makes the group smaller. */
static int group_set(dpf_coin_group_t *g, const fxi_t *p, uint32_t first, uint32_t count,
                     uint32_t shift)
{
    uint32_t j, nt = (1u << count) - 1;
    g->first = first;
    g->count = count;
    for (j = 0; j < nt; j++) {
        fxi_t C;
        group_cumulative(&C, p, first, count, j, CTN);
        g->lo[j] = C.lo.w[CTN - 1] ? UINT64_MAX >> shift : C.lo.w[CTN - 2] >> shift;
        g->hi[j] = C.hi.w[CTN - 1] ? UINT64_MAX >> shift : C.hi.w[CTN - 2] >> shift;
        if (j > 0 && g->lo[j] <= g->hi[j - 1]) return 0;
    }
    return 1;
}

/* Coins 0..ncoins-1 in groups of up to DPF_COIN_GROUP; returns the number of groups. */
static uint32_t groups_build(dpf_coin_group_t *g, const fxi_t *p, uint32_t ncoins,
                             uint32_t shift)
{
    uint32_t ng = 0, first = 0, k;
    while (first < ncoins) {
        k = ncoins - first < DPF_COIN_GROUP ? ncoins - first : DPF_COIN_GROUP;
        while (k > 1 && !group_set(&g[ng], p, first, k, shift)) k--;
        if (k == 1) group_set(&g[ng], p, first, 1, shift);
        first += k;
        ng++;
    }
    return ng;
}

int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                           unsigned fast_bits)
{
    fxi_t e1;
    uint64_t c, bnum, k, rr;
    uint32_t j, shift;
    if (s_num == 0 || s_den == 0 || fast_bits < 1 || fast_bits > 64) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    shift = 64 - fast_bits;
    t->s_num = s_num;
    t->s_den = s_den;
    t->shift = shift;
    /* B = floor(t/4) for t >= 32 (then beta = B s_den / s_num is in (7/32, 1/4] and
     * B s_den <= s_num/4 fits), else B = 1 (beta = 1/t) */
    t->block = s_num / s_den >= 8 * XB_DIV ? s_num / s_den / XB_DIV : 1;
    bnum = t->block * s_den;
    fx_exp_m1(&e1, CTN);
    /* y_j = 2^j beta = k + rr/s_num exactly */
    k = bnum / s_num;
    rr = bnum % s_num;
    for (j = 0; k < XY_STOP && j < DPF_DLAP_CT_MAX_DIGITS; j++) {
        int carry;
        coin_set(&t->coin[j], k, rr, s_num, 1, &e1, shift);
        carry = rr >= s_num - rr;
        rr = carry ? rr - (s_num - rr) : 2 * rr;
        k = 2 * k + (uint64_t)carry;
    }
    t->digits = j;
    coin_set(&t->coin[j], k, rr, s_num, 0, &e1, shift);                        /* V >= 2^D */
    coin_set(&t->coin[j + 1], s_den / s_num, s_den % s_num, s_num, 1, &e1, shift);   /* sign */
    {
        fxi_t p[DPF_DLAP_CT_MAX_DIGITS + 2];
        uint32_t i;
        for (i = 0; i < j + 2; i++)
            fx_coin_p(&p[i], t->coin[i].y_int, t->coin[i].y_num, s_num,
                      (int)t->coin[i].ratio, &e1, CTN);
        t->n_geo = groups_build(t->geo, p, j + 1, shift);
        t->n_lap = groups_build(t->lap, p, j + 2, shift);
    }
    return DPF_OK;
}

/* Certified 704-bit intervals of the coins' p, computed on first need, per fill call (the
 * prepared table stays read-only and shareable between threads). */
typedef struct {
    uint64_t have;
    int have_e1;
    fxi_t e1;
    fxi_t p[DPF_DLAP_CT_MAX_DIGITS + 2];
} tie_cache_t;

/* [U < p] for the uniform real U whose first 64 bits are w, when the fast test could not
 * decide: U lies in [u, u + 2^(-64 nw)) after nw words; 1 once that interval is below the
 * certified 704-bit interval of p, 0 once it is at or above it, else one more word. */
static int lazy_vs_interval(dpf_rng_t *r, uint64_t w, const fxi_t *p, int *err)
{
    const int n = FXMAX;
    uint64_t words[FXMAX];
    fx_t u, uhi;
    int nw = 1, j;
    words[0] = w;
    for (;;) {
        fx_zero(&u);
        for (j = 0; j < nw; j++) u.w[n - 2 - j] = words[j];
        uhi = u;
        fx_add_at(&uhi, n - 1 - nw, n);
        if (fx_cmp(&uhi, &p->lo, n) <= 0) return 1;
        if (fx_cmp(&u, &p->hi, n) >= 0) return 0;
        if (nw == n - 1) {   /* undecided after 704 bits: probability < 2^-600 */
            *err = DPF_E_RANGE;
            return 0;
        }
        words[nw++] = dpf_next_u64(r);
    }
}

/* The 704-bit interval of coin i's p, computed on first need. */
static const fxi_t *coin_p_cached(const dpf_dlap_exact_t *t, uint32_t i, tie_cache_t *tc)
{
    const dpf_coin_t *c = &t->coin[i];
    if (!((tc->have >> i) & 1)) {
        if (!tc->have_e1) {
            fx_exp_m1(&tc->e1, FXMAX);
            tc->have_e1 = 1;
        }
        fx_coin_p(&tc->p[i], c->y_int, c->y_num, t->s_num, (int)c->ratio, &tc->e1, FXMAX);
        tc->have |= (uint64_t)1 << i;
    }
    return &tc->p[i];
}

/* A word tied with threshold j of group g (the thresholds below it are certainly below
 * U, those above certainly above): the outcome is j if U < C_j, else j + 1, decided
 * exactly against the 704-bit interval of C_j. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static uint64_t group_tie(dpf_rng_t *r, const dpf_dlap_exact_t *t, const dpf_coin_group_t *g,
                          uint32_t j, uint64_t w, tie_cache_t *tc, int *err)
{
    fxi_t C;
    uint32_t i;
    for (i = 0; i < g->count; i++) coin_p_cached(t, g->first + i, tc);
    group_cumulative(&C, tc->p, g->first, g->count, j, FXMAX);
    return lazy_vs_interval(r, w, &C, err) ? j : j + 1;
}

/* All coins of a layout, one word per group: bit i of the result is coin i.  Each
 * threshold is compared without a branch; the counts below and above agree except on a
 * tie (probability about 2^-64 per threshold). */
static DPF_INLINE uint64_t groups_draw(dpf_rng_t *r, const dpf_dlap_exact_t *t,
                                       const dpf_coin_group_t *g, uint32_t ng,
                                       tie_cache_t *tc, int *err)
{
    uint64_t bits = 0;
    uint32_t k, j;
    for (k = 0; k < ng; k++) {
        const uint64_t w = dpf_next_u64(r), wk = w >> t->shift;
        const uint32_t nt = (1u << g[k].count) - 1;
        uint64_t below = 0, maybe = 0;
        for (j = 0; j < nt; j++) {
            below += (uint64_t)(wk > g[k].hi[j]);
            maybe += (uint64_t)(wk >= g[k].lo[j]);
        }
        if (DPF_UNLIKELY(below != maybe)) below = group_tie(r, t, &g[k], (uint32_t)below, w, tc, err);
        bits |= below << g[k].first;
    }
    return bits;
}

/* Y = B V + U from the coins' bits (digits of V, then the coin "V >= 2^D"). */
static int xgeo_finish(dpf_rng_t *r, const dpf_dlap_exact_t *t, uint64_t bits, uint64_t *out)
{
    const int D = (int)t->digits;
    uint64_t v = bits & (((uint64_t)1 << D) - 1), u = 0, hi, lo;
    if (DPF_UNLIKELY((bits >> D) & 1)) {
        /* V >= 2^D: floor(V/2^D) = 1 + Geometric(exp(-y_D)) (memoryless), by [CKS] coins */
        const dpf_coin_t *c = &t->coin[D];
        uint64_t h = 1;
        while (bern_exp_split(r, c->y_int, c->y_num, t->s_num))
            if (++h > ((uint64_t)INT64_MAX >> D)) return DPF_E_RANGE;
        if (h > (((uint64_t)INT64_MAX - v) >> D)) return DPF_E_RANGE;
        v += h << D;
    }
    if (t->block > 1) {
        do u = dpf_uniform_below(r, t->block);
        while (!bern_exp_le1(r, u * t->s_den, t->s_num));
    }
    lo = dpf_mul64(t->block, v, &hi);
    if (DPF_UNLIKELY(hi != 0 || lo > (uint64_t)INT64_MAX - u)) return DPF_E_RANGE;
    *out = lo + u;
    return DPF_OK;
}

static int xgeo(dpf_rng_t *r, const dpf_dlap_exact_t *t, tie_cache_t *tc, uint64_t *out)
{
    int err = 0;
    const uint64_t bits = groups_draw(r, t, t->geo, t->n_geo, tc, &err);
    if (DPF_UNLIKELY(err)) return err;
    return xgeo_finish(r, t, bits, out);
}

/* X = Y or -(Y+1) with a Bernoulli(q/(1+q)) sign (coin D+1): P(X = x) = (1-q)/(1+q) q^|x|. */
static int xdlap(dpf_rng_t *r, const dpf_dlap_exact_t *t, tie_cache_t *tc, int64_t *out)
{
    uint64_t y, neg;
    int err = 0, st;
    const uint64_t bits = groups_draw(r, t, t->lap, t->n_lap, tc, &err);
    if (DPF_UNLIKELY(err)) return err;
    neg = (bits >> (t->digits + 1)) & 1;
    st = xgeo_finish(r, t, bits, &y);
    if (st != DPF_OK) return st;
    *out = (int64_t)(y ^ ((uint64_t)0 - neg));
    return DPF_OK;
}

int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out, size_t n)
{
    tie_cache_t tc;
    size_t i;
    tc.have = 0;
    tc.have_e1 = 0;
    for (i = 0; i < n; i++) {
        uint64_t y;
        int st = xgeo(r, t, &tc, &y);
        if (st != DPF_OK) return st;
        out[i] = (int64_t)y;
    }
    return DPF_OK;
}

int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                    size_t n)
{
    tie_cache_t tc;
    size_t i;
    tc.have = 0;
    tc.have_e1 = 0;
    for (i = 0; i < n; i++) {
        int st = xdlap(r, t, &tc, out + i);
        if (st != DPF_OK) return st;
    }
    return DPF_OK;
}

#define DG_TABLE_TMAX 1024
#define DG_TABLE_SPAN 16   /* the table covers |y| <= 16 t: P(|Y| > 16 t) < e^-16 */

/* Acceptance table: A(x) = exp(-(x - mu)^2 / (2 sigma^2)), mu = sigma^2/t, by the exact
 * recurrence A(0) = exp(-sigma^2/(2 t^2)) = exp(-a/(2 b t^2)),
 * A(x+1) = A(x) exp(1/t) E(x), E(x) = exp(-(2x+1) c) = E(x-1) exp(-2c), c = b/(2a)
 * (since (x+1-mu)^2 - (x-mu)^2 = 2x + 1 - 2 mu and 2 mu c = 1/t), with outward rounding.
 * Each factor is certified, every product is rounded down (lower bounds) or up (upper
 * bounds); A stays below e^(1/2) times its start, so the absolute error stays within a
 * few ulp per step (192-bit precision, at most 16385 steps). */
static int dg_table(dpf_dgauss_exact_t *g, uint32_t shift)
{
    const int n = CTN;
    fxi_t e1, A, E, G, Q2;
    fx_t flo, fhi;
    uint64_t Nn[6], Dd[6], x, ymax;
    int dn2;
    g->table = NULL;
    g->ymax = 0;
    if (g->t > DG_TABLE_TMAX) return DPF_OK;
    ymax = DG_TABLE_SPAN * g->t;
    g->table = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)(ymax + 1));
    if (g->table == NULL) return DPF_E_NOMEM;
    g->ymax = ymax;
    fx_exp_m1(&e1, n);
    /* A(0) = exp(-a / (2 b t^2)): 2 b t^2 = D / a */
    {
        uint64_t tt[2], btt[4];
        tt[0] = dpf_mul64(g->t, g->t, &tt[1]);
        Nn[0] = g->sigma2_den;
        big_mul(btt, Nn, 1, tt, 2);          /* b t^2 */
        dn2 = big_len(Dd, big_shl(Dd, btt, 3, 1));
        Nn[0] = g->sigma2_num;
        fx_exp_neg_big(&A, Nn, 1, Dd, dn2, &e1, n);
    }
    /* G = exp(1/t): the series at 1/t rounded down and up */
    fx_ratio(&flo, 0, 1, g->t, 0, n);
    fx_ratio(&fhi, 0, 1, g->t, 1, n);
    fx_exp_pos(&G.lo, &G.hi, &flo, &fhi, n);
    /* E(0) = exp(-c) = exp(-b/(2a)), Q2 = exp(-2c) = exp(-b/a) */
    Nn[0] = g->sigma2_den;
    Dd[0] = g->sigma2_num;
    fx_exp_neg_big(&Q2, Nn, 1, Dd, 1, &e1, n);
    Dd[1] = g->sigma2_num >> 63;             /* 2a, two limbs */
    Dd[0] = g->sigma2_num << 1;
    fx_exp_neg_big(&E, Nn, 1, Dd, 2, &e1, n);
    for (x = 0; x <= ymax; x++) {
        uint64_t lo = A.lo.w[n - 1] ? UINT64_MAX : A.lo.w[n - 2];
        uint64_t hi = A.hi.w[n - 1] ? UINT64_MAX : A.hi.w[n - 2];
        g->table[2 * x] = lo >> shift;
        g->table[2 * x + 1] = hi >> shift;
        fx_mul(&A.lo, &A.lo, &G.lo, 0, n);
        fx_mul(&A.lo, &A.lo, &E.lo, 0, n);
        fx_mul(&A.hi, &A.hi, &G.hi, 1, n);
        fx_mul(&A.hi, &A.hi, &E.hi, 1, n);
        fx_mul(&E.lo, &E.lo, &Q2.lo, 0, n);
        fx_mul(&E.hi, &E.hi, &Q2.hi, 1, n);
    }
    return DPF_OK;
}

int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num, uint64_t sigma2_den,
                             unsigned fast_bits)
{
    int st;
    memset(g, 0, sizeof *g);
    g->sigma2_num = sigma2_num;
    g->sigma2_den = sigma2_den;
    st = dg_setup(&g->sigma2_num, &g->sigma2_den, &g->t, g->bt, g->D, &g->dn);
    if (st != DPF_OK) return st;
    st = dpf_dlap_exact_prepare(&g->proposal, g->t, 1, fast_bits);
    if (st != DPF_OK) return st;
    return dg_table(g, g->proposal.shift);
}

void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g)
{
    free(g->table);
    g->table = NULL;
    g->ymax = 0;
}

/* 704-bit intervals of the acceptance coins of |y| < 256, computed on first need per call. */
#define DG_TIE_CACHE 256
typedef struct {
    int have_e1;
    fxi_t e1;
    unsigned char *have;
    fxi_t *p;
} acc_cache_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int dg_accept_tie(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t x, uint64_t w,
                         acc_cache_t *ac, int *err)
{
    uint64_t N[6];
    fxi_t p, *pp = &p;
    if (!ac->have_e1) {
        fx_exp_m1(&ac->e1, FXMAX);
        ac->have_e1 = 1;
    }
    if (x < DG_TIE_CACHE && ac->p == NULL) {
        ac->p = (fxi_t *)malloc(sizeof(fxi_t) * DG_TIE_CACHE);
        ac->have = (unsigned char *)calloc(DG_TIE_CACHE, 1);
        if (ac->p == NULL || ac->have == NULL) {
            free(ac->p);
            free(ac->have);
            ac->p = NULL;
            ac->have = NULL;
        }
    }
    if (x < DG_TIE_CACHE && ac->p != NULL) {
        pp = &ac->p[x];
        if (ac->have[x]) return lazy_vs_interval(r, w, pp, err);
        ac->have[x] = 1;
    }
    dg_square(N, g->sigma2_num, g->bt, x);
    fx_exp_neg_big(pp, N, 6, g->D, g->dn, &ac->e1, FXMAX);
    return lazy_vs_interval(r, w, pp, err);
}

int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, int64_t *out,
                                     size_t n)
{
    tie_cache_t tc;
    acc_cache_t ac;
    size_t i;
    int st = DPF_OK;
    const uint32_t shift = g->proposal.shift;
    tc.have = 0;
    tc.have_e1 = 0;
    ac.have_e1 = 0;
    ac.have = NULL;
    ac.p = NULL;
    for (i = 0; i < n && st == DPF_OK; i++) {
        for (;;) {
            int64_t y;
            uint64_t x;
            int acc, err = 0;
            st = xdlap(r, &g->proposal, &tc, &y);
            if (st != DPF_OK) break;
            x = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
            if (DPF_LIKELY(x <= g->ymax && g->table != NULL)) {
                uint64_t w = dpf_next_u64(r), wk = w >> shift;
                uint64_t lo = g->table[2 * x], hi = g->table[2 * x + 1];
                if (DPF_LIKELY(wk - lo > hi - lo)) acc = wk < lo;
                else acc = dg_accept_tie(r, g, x, w, &ac, &err);
                if (err) {
                    st = err;
                    break;
                }
            } else {
                acc = dg_accept(r, g->sigma2_num, g->bt, g->D, g->dn, y);
                if (acc < 0) {
                    st = -acc;
                    break;
                }
            }
            if (acc) {
                out[i] = y;
                break;
            }
        }
    }
    free(ac.p);
    free(ac.have);
    return st;
}

/* ================================================================ constant time: Laplace
 *
 * Bitwise geometric.  For M ~ Geometric(q), P(M = sum_j d_j 2^j) = (1-q) prod_j q^(d_j 2^j),
 * which factorises: the digits d_j are independent with P(d_j = 1) = p_j = q^(2^j)/(1 +
 * q^(2^j)).  Two digits are drawn from one uniform word w by inverting their joint law:
 * m = d_2k + 2 d_2k+1 = #{i < 3 : w >= T_i}, which is exactly m with probability
 * (T_m - T_(m-1))/2^64 (T_-1 = 0, T_3 = 2^64).  Digits j >= D are dropped: the result is
 * M mod 2^D, which differs from M only when M >= 2^D, an event of probability q^(2^D).
 * The sign: X >= 0 with probability 1/(1+q) and, given X < 0, -X-1 is again
 * Geometric(q); so X = M or ~M = -M-1 with a Bernoulli(q/(1+q)) coin (= p_0), and
 * P(X = x) = (1-q)/(1+q) q^|x| exactly.
 *
 * Slack: coupling each pair with its exact pair (TV of a pair <= the sum of its three
 * threshold errors, as for any inverted cumulative table: 1/2 sum_m |dP(m)| <=
 * 1/2 sum_m (eps_m + eps_(m-1))), the sign with the exact sign, and M mod 2^D with M:
 *   TV(output, exact) <= sum_thresholds |T/2^64 - C| + q^(2^D) (+ the sign's error).
 * Each |T/2^64 - C| is bounded from the certified interval of C (fx_threshold).
 *
 * Work per draw: 1 + ceil(D/2) words (ceil(D/2) for the geometric), 3 unsigned compares
 * per word summed without a branch; D depends only on the scale.
 */

/* 1 - x for x in [0, 1] */
static void fx_one_minus(fx_t *z, const fx_t *x, int n)
{
    fx_t one;
    fx_int(&one, 1, n);
    fx_sub(z, &one, x, n);
}

/* Threshold of a cumulative probability C, kept >= the previous threshold (a table must
 * be monotone for the count of thresholds <= w to invert it); err >= |T/2^64 - C|. */
static uint64_t ct_threshold(const fxi_t *C, uint64_t prev, fx_t *err, int n)
{
    uint64_t T = fx_threshold(C, err, n);
    if (T < prev) {
        fx_t tf, e2;
        T = prev;
        fx_zero(&tf);
        tf.w[n - 2] = T;
        fx_absdiff(err, &tf, &C->lo, n);
        fx_absdiff(&e2, &tf, &C->hi, n);
        if (fx_cmp(&e2, err, n) > 0) *err = e2;
    }
    return T;
}

int dpf_dlap_ct_prepare(dpf_dlap_ct_t *t, uint64_t s_num, uint64_t s_den)
{
    const int n = CTN;
    fxi_t e1, p, dig[DPF_DLAP_CT_MAX_DIGITS];
    fx_t sum, err;
    uint64_t c, k, rr;
    uint32_t j, D;
    if (s_num == 0 || s_den == 0) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    t->s_num = s_num;
    t->s_den = s_den;
    fx_exp_m1(&e1, n);
    fx_zero(&sum);
    /* y_j = 2^j s_den / s_num = k + rr/s_num, exactly; q^(2^j) = exp(-y_j) */
    k = s_den / s_num;
    rr = s_den % s_num;
    for (j = 0; k < 45; j++) {
        int carry;
        if (j == DPF_DLAP_CT_MAX_DIGITS) return DPF_E_RANGE;
        fx_coin_p(&dig[j], k, rr, s_num, 1, &e1, n);
        carry = rr >= s_num - rr;   /* 2 rr >= s_num, without overflow */
        rr = carry ? rr - (s_num - rr) : 2 * rr;
        k = 2 * k + (uint64_t)carry;
    }
    t->digits = D = j;
    /* pairs of digits: cumulative law of m = d_2k + 2 d_2k+1, outward rounded */
    for (j = 0; j < D; j += 2) {
        uint64_t *T = t->threshold[j / 2];
        fxi_t C, na, nb, ab;
        fx_one_minus(&na.lo, &dig[j].hi, n);          /* 1 - a */
        fx_one_minus(&na.hi, &dig[j].lo, n);
        if (j + 1 == D) {                             /* a pair of one: C_0 = 1 - a */
            T[0] = ct_threshold(&na, 0, &err, n);
            fx_add(&sum, &sum, &err, n);
            T[1] = T[2] = UINT64_MAX;                 /* unused */
            break;
        }
        fx_one_minus(&nb.lo, &dig[j + 1].hi, n);      /* 1 - b */
        fx_one_minus(&nb.hi, &dig[j + 1].lo, n);
        fx_mul(&C.lo, &na.lo, &nb.lo, 0, n);          /* C_0 = (1-a)(1-b) */
        fx_mul(&C.hi, &na.hi, &nb.hi, 1, n);
        T[0] = ct_threshold(&C, 0, &err, n);
        fx_add(&sum, &sum, &err, n);
        T[1] = ct_threshold(&nb, T[0], &err, n);      /* C_1 = 1 - b */
        fx_add(&sum, &sum, &err, n);
        fx_mul(&ab.hi, &dig[j].hi, &dig[j + 1].hi, 1, n);
        fx_mul(&ab.lo, &dig[j].lo, &dig[j + 1].lo, 0, n);
        fx_one_minus(&C.lo, &ab.hi, n);               /* C_2 = 1 - ab */
        fx_one_minus(&C.hi, &ab.lo, n);
        T[2] = ct_threshold(&C, T[1], &err, n);
        fx_add(&sum, &sum, &err, n);
    }
    /* truncation: q^(2^D) = exp(-y_D) */
    fx_coin_p(&p, k, rr, s_num, 0, &e1, n);
    fx_add(&sum, &sum, &p.hi, n);
    t->slack_geometric = fx_to_double_up(&sum, n);
    /* sign coin: q/(1+q) = p_0 */
    fx_coin_p(&p, s_den / s_num, s_den % s_num, s_num, 1, &e1, n);
    t->sign_threshold = fx_threshold(&p, &err, n);
    fx_add(&sum, &sum, &err, n);
    t->slack = fx_to_double_up(&sum, n);
    return DPF_OK;
}

/* The geometric value from ceil(D/2) words: pair k gives digits 2k and 2k+1. */
static DPF_INLINE uint64_t geo_ct_words(const dpf_dlap_ct_t *t, const uint64_t *w)
{
    const uint32_t D = t->digits, full = D / 2;
    uint64_t v = 0;
    uint32_t k;
    for (k = 0; k < full; k++) {
        const uint64_t *T = t->threshold[k];
        uint64_t x = w[k];
        uint64_t m = (uint64_t)(x >= T[0]) + (uint64_t)(x >= T[1]) + (uint64_t)(x >= T[2]);
        v |= m << (2 * k);
    }
    if (D & 1) v |= (uint64_t)(w[full] >= t->threshold[full][0]) << (D - 1);
    return v;
}

int64_t dpf_geometric_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t w[DPF_DLAP_CT_MAX_PAIRS], v;
    uint32_t k, words = (t->digits + 1) / 2;
    for (k = 0; k < words; k++) w[k] = dpf_next_u64(r);
    v = geo_ct_words(t, w);
    dpf_secure_zero(w, sizeof w);
    return (int64_t)v;
}

int64_t dpf_discrete_laplace_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t neg = (uint64_t)(dpf_next_u64(r) < t->sign_threshold);
    uint64_t m = (uint64_t)dpf_geometric_ct(r, t);
    return (int64_t)(m ^ ((uint64_t)0 - neg));   /* neg: ~m = -m - 1 */
}

/* The fills take their words in blocks (one bulk copy from the ChaCha20 buffer, or one
 * call per word for a foreign generator) sized to whole draws, so the number of words, the
 * compares and the memory accesses depend only on n and the table. */
#define CT_BLOCK 256

static void ct_words(dpf_rng_t *r, uint64_t *buf, size_t k)
{
    size_t i;
    if (r->cc != NULL) {
        dpf_chacha_fill(r->cc, buf, k);
        return;
    }
    for (i = 0; i < k; i++) buf[i] = r->next_u64(r->state);
}

static void dlap_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n,
                         int sign)
{
    uint64_t buf[CT_BLOCK];
    const uint32_t words = (t->digits + 1) / 2, per = words + (uint32_t)sign;
    const size_t batch = per ? CT_BLOCK / per : CT_BLOCK;
    size_t i = 0;
    while (i < n) {
        size_t m = n - i < batch ? n - i : batch, l;
        const uint64_t *w = buf;
        ct_words(r, buf, m * per);
        for (l = 0; l < m; l++) {
            uint64_t neg = 0, v;
            if (sign) neg = (uint64_t)(*w++ < t->sign_threshold);
            v = geo_ct_words(t, w);
            w += words;
            out[i + l] = (int64_t)(v ^ ((uint64_t)0 - neg));
        }
        i += m;
    }
    dpf_secure_zero(buf, sizeof buf);
}

int dpf_geometric_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n)
{
    dlap_ct_fill(r, t, out, n, 0);
    return DPF_OK;
}

int dpf_discrete_laplace_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out,
                                 size_t n)
{
    dlap_ct_fill(r, t, out, n, 1);
    return DPF_OK;
}

/* ================================================================ constant time: Gaussian
 *
 * Inversion of the law of |X| by a full table scan.  With sigma^2 = a/b, c = b/(2a) and
 * e_m = exp(-c m^2), P(|X| = 0) = 1/N, P(|X| = m) = 2 e_m / N, N = 1 + 2 sum_{m>=1} e_m.
 * The e_m are computed as e_{m+1} = e_m r_m, r_m = exp(-c(2m+1)) = r_{m-1} exp(-2c), with
 * outward rounding (all factors are in [0, 1], so the error grows by at most 2 ulp per
 * step).  The table stops at the least M with the certified tail bound
 *   sum_{m>M} e_m <= int_M^inf exp(-c x^2) dx <= exp(-c M^2) / (2 c M) = e_M a/(b M)
 * at most 2^-66 (the sum N goes on until that bound is below 2^-160).  threshold[k] ≈ 2^64 P(|X| <= k) for k < M; the magnitude is
 * #{k < M : w >= threshold[k]} for one uniform word w, so P(m) = (T_m - T_{m-1})/2^64 with
 * T_{-1} = 0 and T_M = 2^64 (the table ends at its first entry equal to 2^64 - 1, which can
 * only happen when P(|X| > k) < 2^-65).  The sign is one fair bit (X = -m or m; m = 0 is unaffected).
 *
 * Slack: with eps_k >= |T_k/2^64 - P(|X| <= k)| and tau = P(|X| > M) <= 2 tail / N,
 *   TV = 1/2 sum_m |P~(m) - P(m)| <= sum_{k<M} eps_k + tau.
 * Work per draw: 2 words and M compares, the same for every value drawn; the table is read
 * in order, so no memory address depends on the value either.
 */

int dpf_dgauss_ct_prepare(dpf_dgauss_ct_t *t, uint64_t sigma2_num, uint64_t sigma2_den)
{
    fxi_t e1, r, q, e, rest, *S = NULL;
    fx_t one, flo, fhi, tail, lim, lim2, beyond, Nlo, Nhi, ilo, ihi, err, sum, tmp;
    uint64_t a, b, g, h, l, Q, R, m, M = 0, Mtab;
    int status = DPF_OK;
    if (sigma2_num == 0 || sigma2_den == 0) return DPF_E_PARAM;
    g = gcd64(sigma2_num, sigma2_den);
    a = sigma2_num / g;
    b = sigma2_den / g;
    t->sigma2_num = a;
    t->sigma2_den = b;
    t->size = 0;
    t->slack = 1.0;
    S = (fxi_t *)malloc(sizeof(fxi_t) * (DPF_DGAUSS_CT_MAX + 1));
    if (S == NULL) return DPF_E_NOMEM;
    fx_exp_m1(&e1, CTN);
    fx_int(&one, 1, CTN);
    fx_zero(&lim);
    lim.w[CTN - 3] = (uint64_t)1 << 62;   /* 2^-66 */
    fx_zero(&lim2);
    lim2.w[0] = (uint64_t)1 << 32;        /* 2^-160 */
    /* c k = n + f exactly for k = 1 (r_0) and k = 2 (q): c k = k b / (2a).  k b < 2^65,
     * Q = floor(k b / a), c k = floor(Q/2) + ((Q mod 2) a + R) / (2a). */
    {
        uint64_t k;
        for (k = 1; k <= 2; k++) {
            fxi_t *dst = k == 1 ? &r : &q;
            l = dpf_mul64(k, b, &h);
            if (h >= a) {   /* c k >= 2^64: exp(-c k) is below one ulp */
                fx_zero(&dst->lo);
                fx_zero(&dst->hi);
                dst->hi.w[0] = 1;
                continue;
            }
            Q = dpf_div128(h, l, a, &R);
            l = dpf_mul64(Q & 1, a, &h);
            l += R;
            h += l < R;
            fx_ratio(&flo, h, l, a, 0, CTN);   /* ((Q mod 2) a + R)/a in [0, 2) */
            fx_ratio(&fhi, h, l, a, 1, CTN);
            fx_half(&flo, &flo, 0, CTN);
            fx_half(&fhi, &fhi, 1, CTN);
            fx_exp_neg(dst, Q >> 1, &flo, &fhi, &e1, CTN);
        }
    }
    /* e_0 = 1; S_k = 1 + 2 sum_{1<=m<=k} e_m for k <= M (the table).  The sum goes on to
     * M2, where the tail bound is <= 2^-160, so that N (and every threshold) is known to
     * about 2^-150; rest = sum_{M<m<=M2} e_m. */
    e.lo = one;
    e.hi = one;
    S[0].lo = one;
    S[0].hi = one;
    fx_zero(&rest.lo);
    fx_zero(&rest.hi);
    for (m = 1;; m++) {
        fx_mul(&e.lo, &e.lo, &r.lo, 0, CTN);   /* e_m = e_{m-1} r_{m-1} */
        fx_mul(&e.hi, &e.hi, &r.hi, 1, CTN);
        fx_mul(&r.lo, &r.lo, &q.lo, 0, CTN);   /* r_m = r_{m-1} exp(-2c) */
        fx_mul(&r.hi, &r.hi, &q.hi, 1, CTN);
        if (M == 0) {
            fx_add(&S[m].lo, &S[m - 1].lo, &e.lo, CTN);
            fx_add(&S[m].lo, &S[m].lo, &e.lo, CTN);
            fx_add(&S[m].hi, &S[m - 1].hi, &e.hi, CTN);
            fx_add(&S[m].hi, &S[m].hi, &e.hi, CTN);
        } else {
            fx_add(&rest.lo, &rest.lo, &e.lo, CTN);
            fx_add(&rest.hi, &rest.hi, &e.hi, CTN);
        }
        /* tail bound sum_{m' > m} e_m' <= e_m a / (b m) */
        if (!fx_mul_u64(&tail, &e.hi, a, CTN)) {
            fx_div_u64(&tail, &tail, b, 1, CTN);
            fx_div_u64(&tail, &tail, m, 1, CTN);
            if (M == 0 && fx_cmp(&tail, &lim, CTN) <= 0) M = m;
            if (M != 0 && fx_cmp(&tail, &lim2, CTN) <= 0) break;
        }
        if (M == 0 && m == DPF_DGAUSS_CT_MAX) {
            status = DPF_E_RANGE;
            goto done;
        }
        if (m == 3 * (uint64_t)DPF_DGAUSS_CT_MAX) {   /* cannot happen once M <= MAX */
            status = DPF_E_RANGE;
            goto done;
        }
    }
    /* N in [S_M.lo + 2 rest.lo, S_M.hi + 2 rest.hi + 2 tail] */
    Mtab = M;
    fx_add(&Nlo, &S[M].lo, &rest.lo, CTN);
    fx_add(&Nlo, &Nlo, &rest.lo, CTN);
    fx_add(&beyond, &rest.hi, &tail, CTN);     /* >= sum_{m>M} e_m */
    fx_add(&Nhi, &S[M].hi, &beyond, CTN);
    fx_add(&Nhi, &Nhi, &beyond, CTN);
    fx_div(&ilo, &one, &Nhi, 0, CTN);
    fx_div(&ihi, &one, &Nlo, 1, CTN);
    fx_zero(&sum);
    for (m = 0; m < M; m++) {
        fxi_t C;
        uint64_t T;
        fx_mul(&C.lo, &S[m].lo, &ilo, 0, CTN);
        fx_mul(&C.hi, &S[m].hi, &ihi, 1, CTN);
        T = fx_threshold(&C, &err, CTN);
        if (m > 0 && T < t->threshold[m - 1]) {   /* keep the table monotone */
            fx_t tf, e2;
            T = t->threshold[m - 1];
            fx_zero(&tf);
            tf.w[CTN - 2] = T;
            fx_absdiff(&err, &tf, &C.lo, CTN);
            fx_absdiff(&e2, &tf, &C.hi, CTN);
            if (fx_cmp(&e2, &err, CTN) > 0) err = e2;
        }
        t->threshold[m] = T;
        fx_add(&sum, &sum, &err, CTN);
        if (T == UINT64_MAX) {   /* later entries could only repeat 2^64 - 1: stop here */
            M = m + 1;
            break;
        }
    }
    /* tau = P(|X| > M) = (N - S_M)/N <= (S_max.hi - S_M.lo + 2 beyond) ihi, where S_max is
     * the last stored partial sum (beyond bounds everything after it) */
    fx_add(&tmp, &S[Mtab].hi, &beyond, CTN);
    fx_add(&tmp, &tmp, &beyond, CTN);
    fx_sub(&tmp, &tmp, &S[M].lo, CTN);
    fx_mul(&tmp, &tmp, &ihi, 1, CTN);
    fx_add(&sum, &sum, &tmp, CTN);
    t->size = (uint32_t)M;
    t->slack = fx_to_double_up(&sum, CTN);
done:
    free(S);
    return status;
}

static DPF_INLINE uint64_t dg_scan(const uint64_t *T, uint32_t M, uint64_t w)
{
    uint64_t m = 0;
    uint32_t k;
    for (k = 0; k < M; k++) m += (uint64_t)(w >= T[k]);
    return m;
}

int64_t dpf_discrete_gaussian_ct(dpf_rng_t *r, const dpf_dgauss_ct_t *t)
{
    uint64_t w = dpf_next_u64(r);
    uint64_t s = dpf_next_u64(r) & 1;
    uint64_t m = dg_scan(t->threshold, t->size, w);
    return (int64_t)((m ^ ((uint64_t)0 - s)) + s);   /* s: -m */
}

/* Eight draws per pass over the table: m[l] = #{k < M : w[l] >= T[k]}.  The vector
 * versions (chosen by the CPU, never by the data) compare all eight words with one
 * broadcast threshold per step; every version does the same M steps for any words. */
typedef void (*dg_scan8_fn)(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m);

static void dg_scan8_scalar(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m)
{
    uint32_t k, l;
    for (l = 0; l < 8; l++) m[l] = 0;
    for (k = 0; k < M; k++)
        for (l = 0; l < 8; l++) m[l] += (uint64_t)(w[l] >= T[k]);
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define DPF_DG_VEC 1
typedef uint64_t dg_v8 __attribute__((vector_size(64)));
#define DEFINE_DG_SCAN8(NAME, ATTR)                                                     \
    ATTR static void NAME(const uint64_t *T, uint32_t M, const uint64_t *w, uint64_t *m) \
    {                                                                                   \
        dg_v8 W, acc = {0, 0, 0, 0, 0, 0, 0, 0};                                        \
        uint32_t k;                                                                     \
        memcpy(&W, w, sizeof W);                                                        \
        for (k = 0; k < M; k++) acc -= (dg_v8)(W >= ((dg_v8){0, 0, 0, 0, 0, 0, 0, 0} + T[k])); \
        memcpy(m, &acc, sizeof acc);                                                    \
    }
DEFINE_DG_SCAN8(dg_scan8_avx2, __attribute__((target("avx2"))))
DEFINE_DG_SCAN8(dg_scan8_avx512, __attribute__((target("avx512f"))))
#endif

static dg_scan8_fn dg_scan8_pick(void)
{
#if defined(DPF_DG_VEC)
    if (dpf_chacha_impl_available(DPF_IMPL_AVX512)) return dg_scan8_avx512;
    if (dpf_chacha_impl_available(DPF_IMPL_AVX2)) return dg_scan8_avx2;
#endif
    return dg_scan8_scalar;
}

/* One word of sign bits per 64 draws. */
int dpf_discrete_gaussian_ct_fill(dpf_rng_t *r, const dpf_dgauss_ct_t *t, int64_t *out,
                                  size_t n)
{
    size_t i = 0;
    uint64_t signs = 0;
    int left = 0;
    const dg_scan8_fn scan = dg_scan8_pick();
    while (i < n) {
        uint64_t w[8], m[8];
        size_t l, cnt = n - i < 8 ? n - i : 8;
        for (l = 0; l < 8; l++) w[l] = l < cnt ? dpf_next_u64(r) : 0;
        scan(t->threshold, t->size, w, m);
        for (l = 0; l < cnt; l++) {
            uint64_t s;
            if (left == 0) {
                signs = dpf_next_u64(r);
                left = 64;
            }
            s = signs & 1;
            signs >>= 1;
            left--;
            out[i + l] = (int64_t)((m[l] ^ ((uint64_t)0 - s)) + s);
        }
        i += cnt;
    }
    return DPF_OK;
}

/* ================================================================ certified exp (API) */

int dpf_exp_neg_interval(const uint64_t *num, const uint64_t *den, size_t limbs, unsigned prec,
                         uint64_t *lo, uint64_t *hi)
{
    fxi_t e1, res;
    int n = (int)prec;
    if (limbs == 0 || limbs > 6 || prec < 3 || prec > FXMAX) return DPF_E_PARAM;
    if (big_len(den, (int)limbs) == 0) return DPF_E_PARAM;
    fx_exp_m1(&e1, n);
    fx_exp_neg_big(&res, num, (int)limbs, den, (int)limbs, &e1, n);
    memcpy(lo, res.lo.w, (size_t)n * sizeof(uint64_t));
    memcpy(hi, res.hi.w, (size_t)n * sizeof(uint64_t));
    return DPF_OK;
}
