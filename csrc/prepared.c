/* Exact prepared samplers (see prepared.h): table inversion against certified thresholds,
 * with an exact continuation on ties.  References as in exact.c. */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"
#include "dpfast/exact.h"
#include "dpfast/expfix.h"
#include "dpfast/tables.h"
#include "dpfast/dgauss.h"
#include "dpfast/prepared.h"

/* ================================================================ exact, prepared
 *
 * Discrete Laplace and geometric: quotient/remainder decomposition + table inversion.
 *
 * Claim 1 (decomposition).  Let Y ~ Geometric(q), P(Y = y) = (1-q) q^y, and s >= 0.  Then
 * G = floor(Y/2^s) and L = Y mod 2^s are independent, G ~ Geometric(rho) with rho = q^(2^s),
 * and P(L = l) = (1-q) q^l / (1 - rho) on [0, 2^s).
 * Proof: P(G = g, L = l) = (1-q) q^(2^s g + l) = [(1 - rho) rho^g] [(1-q) q^l / (1 - rho)],
 * a product of a function of g and one of l, each summing to 1.  (The quotient/remainder
 * split Y = mG + L with m = 2^s; [CKS] Algorithm 2 uses the same split with m = s_num.)
 *
 * Claim 2 (G by inversion).  With U uniform on [0, 1) and C_g = P(G <= g) = 1 - rho^(g+1),
 * G = #{g : C_g <= U} has the law of G.  A table holds C_0..C_(m-1), each as a certified
 * 64-bit interval; the first word w of U is located by a guide table (cell w >> 52 starts
 * past every threshold certainly below the cell) and a short scan.  If U >= C_(m-1), i.e.
 * G >= m, then G - m is again Geometric(rho) (memorylessness: P(G >= m + j | G >= m) =
 * rho^j), drawn afresh.  m <= 512; rho^m <= e^-8 when s > 0, <= e^-2 when s = 0 (t < 256,
 * where a restart costs one more word and beats the two-word path).
 *
 * Claim 3 (L by rejection, s > 0).  Propose l uniform on [0, 2^s) and accept with
 * probability q^l = exp(-l/t); an accepted l has P(l) proportional to q^l, the law of L.
 * Here l/t < 2^s/t <= 1/32.  For x >= 0 Taylor's theorem with the remainder's sign gives
 *   1 - x + x^2/2 - x^3/6  <=  exp(-x)  <=  1 - x + x^2/2 - x^3/6 + x^4/24,
 * and both polynomials decrease on [0, 1]; evaluated with directed rounding at the ends of
 * a 2-ulp enclosure of 2^64 l/t they give integers P_lo <= 2^64 exp(-l/t) <= P_hi, about
 * 2^-25 apart.  The coin's uniform V is compared first through the bits of L's word left
 * over by l and the sign (8 bits when the word is shared with G, Claim 5; else
 * 63 - s >= 6 bits), then through a fresh word (V's next bits),
 * then, in the rare undecided case, exactly against a 704-bit interval of exp(-l/t).
 * The sign bit, from the same word, is independent of the decision (which depends on l and
 * V only), so it stays a fair coin given acceptance.
 *
 * Claim 4 (discrete Laplace).  s > 0: X = +-Y with a fair sign, the pair (-, 0) rejected
 * and everything redrawn ([CKS] Algorithm 2): P(x) proportional to q^|x|, probability of a
 * redraw (1-q)/2 < 1/(2t).  s = 0: |X| is drawn by Claim 2's inversion against its own
 * cumulative law P(|X| <= k) = 1 - 2 q^(k+1)/(1+q) (from P(x) = (1-q)/(1+q) q^|x|); if
 * |X| >= m, |X| - m ~ Geometric(q) (P(|X| = m + j | |X| >= m) = (1-q) q^j); the sign of a
 * nonzero |X| is a fair bit: the lowest bit of |X|'s word, which its uniform does not read
 * (U takes the top 63 bits, then fresh words on a tie; the same for G when s = 0).
 *
 * Claim 5 (one word for G and L's first proposal, 1 <= s <= 31).  The bits of a uniform
 * word are independent fair bits.  G's uniform U takes the top ubits = 64 - (s + 9) >= 24
 * bits of its word (then, on a tie, the bits of fresh words); the low s + 9 bits, which U
 * never reads, are L's first proposal (s bits), the sign and the first 8 bits of the
 * proposal's coin uniform V (V's further bits come from a fresh word when those 8 do not
 * decide).  So G, L's proposals, the sign and V are functions of disjoint sets of
 * independent bits: the joint law is the one of Claims 1-4.  (After a restart of G only
 * the last word's low bits are used; each word's low bits are independent of every U.)
 * A tie of U against a threshold now has probability about m 2^-ubits <= 2^-15 per value,
 * finished exactly as before.
 *
 * Exactness of every comparison: see tables.h.  The thresholds are computed from the
 * public scale only (certified.c, 192 bits, outward rounding); nothing here uses libm.
 */

#define XT_GUIDE_SHIFT (64 - DPF_XT_GUIDE_BITS)
#define XT_PB 8        /* bits of L's coin uniform taken from G's word (one-word path) */

/* floor(2^64 v) of a certified fixed-point value v in [0, 1], saturated at 2^64 - 1. */
static uint64_t fx_word(const dpf_fx_t *v, int n)
{
    return v->w[n - 1] ? UINT64_MAX : v->w[n - 2];
}

/* [2 / (1 + rho)] from [rho]. */
static void two_over_one_plus(dpf_fxi_t *b, const dpf_fxi_t *rho, int n)
{
    dpf_fx_t one, two, d;
    dpf_fx_int(&one, 1, n);
    dpf_fx_int(&two, 2, n);
    dpf_fx_add(&d, &one, &rho->hi, n);
    dpf_fx_div(&b->lo, &two, &d, 0, n);
    dpf_fx_add(&d, &one, &rho->lo, n);
    dpf_fx_div(&b->hi, &two, &d, 1, n);
}

/* [1 - A] (mag = 0) or [1 - A B] (mag = 1, B = [2/(1+rho)]) for A = [rho^(g+1)]. */
static void cumulative(dpf_fxi_t *c, const dpf_fxi_t *a, const dpf_fxi_t *b, int mag, int n)
{
    dpf_fx_t one, plo, phi;
    dpf_fx_int(&one, 1, n);
    plo = a->lo;
    phi = a->hi;
    if (mag) {
        dpf_fx_mul(&plo, &a->lo, &b->lo, 0, n);
        dpf_fx_mul(&phi, &a->hi, &b->hi, 1, n);
        if (dpf_fx_cmp(&phi, &one, n) > 0) phi = one;
    }
    dpf_fx_sub(&c->lo, &one, &phi, n);
    dpf_fx_sub(&c->hi, &one, &plo, n);
}

/* gamma = 2^s s_den / s_num as a multi-word fraction N (k + 1 times it: mult) / s_num. */
static int gamma_num(uint64_t N[3], const dpf_dlap_exact_t *t, uint64_t mult)
{
    uint64_t base[2];
    int n = dpf_big_shl(base, &t->s_den, 1, (int)t->digits);
    memset(N, 0, 3 * sizeof(uint64_t));
    return dpf_big_len(N, dpf_big_mul_u64(N, base, n, mult));
}

/* The table of one law; returns m.  Entries stop at DPF_XT_MAX, once the tail rho^(g+1)
 * is below 2^-56, or where two certified intervals would touch (not expected: adjacent
 * thresholds differ by at least P(G = g) = (1 - rho) rho^g >= 2^-57 before the tail stop,
 * the intervals are about 2^-180 wide). */
static uint32_t table_build(dpf_thr_t *thr, uint16_t *guide, const dpf_fxi_t *rho,
                            const dpf_fxi_t *b, int mag, uint32_t shift)
{
    const int n = DPF_CTN;
    dpf_fxi_t a = *rho, c;
    uint64_t prev_hi = 0;
    uint32_t g;
    for (g = 0; g < DPF_XT_MAX; g++) {
        uint64_t lo, hi;
        cumulative(&c, &a, b, mag, n);
        lo = fx_word(&c.lo, n);
        hi = fx_word(&c.hi, n);
        if (g > 0 && lo <= prev_hi) break;
        thr[g].lo = lo >> shift;
        thr[g].hi = hi >> shift;
        prev_hi = hi;
        if (a.hi.w[n - 1] == 0 && a.hi.w[n - 2] < ((uint64_t)1 << 8)) {
            g++;
            break;
        }
        dpf_fx_mul(&a.lo, &a.lo, &rho->lo, 0, n);
        dpf_fx_mul(&a.hi, &a.hi, &rho->hi, 1, n);
    }
    dpf_guide_build(thr, g, guide, shift);
    return g;
}

int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                           unsigned fast_bits)
{
    const int n = DPF_CTN;
    dpf_fxi_t e1, rho, b;
    uint64_t c, N[3], hi, lo;
    uint32_t s = 0;
    if (s_num == 0 || s_den == 0 || fast_bits < 1 || fast_bits > 64) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = dpf_gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    t->s_num = s_num;
    t->s_den = s_den;
    /* the largest s with 2^(s+5) s_den <= s_num, i.e. 2^s / t <= 1/32; s = 0 below t = 256
     * (one word per value and a few restarts are cheaper than the two-word path there) */
    lo = dpf_mul64(s_den, 256, &hi);
    if (hi == 0 && lo <= s_num) {
        for (;;) {
            lo = dpf_mul64(s_den, (uint64_t)1 << (s + 6), &hi);
            if (s >= 57 || hi != 0 || lo > s_num) break;
            s++;
        }
    }
    t->digits = s;
    t->block = (uint64_t)1 << s;
    /* one word per value while G keeps at least 24 bits of its word (s <= 31); for s = 0
     * the word's lowest bit is the sign (so that no state links one value to the next) */
    t->ubits = s == 0 ? 63 : s + 1 + XT_PB <= 40 ? 64 - (s + 1 + XT_PB) : 64;
    t->shift = 64 - (fast_bits < t->ubits ? fast_bits : t->ubits);
    t->cshift = 64 - fast_bits;
    if (s > 0) {   /* s_den < s_num: the 64.64 fixed point of 2^64 / t */
        uint64_t rem;
        t->r_int = dpf_div128(s_den, 0, s_num, &rem);
        t->r_frac = dpf_div128(rem, 0, s_num, &rem);
    }
    dpf_fx_exp_m1(&e1, n);
    dpf_fx_exp_neg_big(&rho, N, gamma_num(N, t, 1), &s_num, 1, &e1, n);
    two_over_one_plus(&b, &rho, n);
    t->m_geo = table_build(t->geo, t->guide_geo, &rho, &b, 0, t->shift);
    if (s == 0) t->m_mag = table_build(t->mag, t->guide_mag, &rho, &b, 1, t->shift);
    t->n_geo = t->ubits == 64 && s > 0 ? 2 : 1;
    t->n_lap = t->n_geo;
    return t->m_geo > 0 && (s > 0 || t->m_mag > 0) ? DPF_OK : DPF_E_RANGE;
}

/* ---------------------------------------------------------------- exact continuation
 * Per fill call: 704-bit intervals of the thresholds met by a tie, computed on first need
 * (the prepared tables stay read-only and shareable between threads).  They change no
 * output: a fill's values are the same whatever the slices it is called on. */
typedef struct {
    int have_e1, have_b;
    dpf_fxi_t e1, b;              /* exp(-1) and 2/(1+rho) at 704 bits */
    dpf_fxi_t *p[3];              /* [geo, mag] thresholds, DPF_XT_MAX each, and the coins
                                     exp(-l/t) of l < DPF_XT_MAX; or NULL */
    unsigned char *have[3];
} xt_state_t;

static void xt_init(xt_state_t *x)
{
    memset(x, 0, sizeof *x);
}

static void xt_free(xt_state_t *x)
{
    int i;
    for (i = 0; i < 3; i++) {
        free(x->p[i]);
        free(x->have[i]);
    }
}

static const dpf_fxi_t *xt_e1(xt_state_t *x)
{
    if (!x->have_e1) {
        dpf_fx_exp_m1(&x->e1, DPF_FXMAX);
        x->have_e1 = 1;
    }
    return &x->e1;
}

static int lazy_vs_interval(dpf_rng_t *r, uint64_t w, const dpf_fxi_t *p, int *err)
{
    uint64_t words[DPF_FXMAX];
    int nw = 1;
    words[0] = w;
    return dpf_u_below(r, words, &nw, p, err);
}

/* Where the 704-bit interval number i (< DPF_XT_MAX) of cache c goes: *dst, which is
 * already computed when the function returns 1; tmp when memory is short. */
static int xt_slot(xt_state_t *x, int c, uint64_t i, dpf_fxi_t *tmp, dpf_fxi_t **dst)
{
    *dst = tmp;
    if (i >= DPF_XT_MAX) return 0;
    if (x->p[c] == NULL) {
        x->p[c] = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * DPF_XT_MAX);
        x->have[c] = (unsigned char *)calloc(DPF_XT_MAX, 1);
        if (x->p[c] == NULL || x->have[c] == NULL) {
            free(x->p[c]);
            free(x->have[c]);
            x->p[c] = NULL;
            x->have[c] = NULL;
        }
    }
    if (x->p[c] == NULL) return 0;
    *dst = &x->p[c][i];
    if (x->have[c][i]) return 1;
    x->have[c][i] = 1;
    return 0;
}

/* The 704-bit interval of threshold g of table `mag`, cached when memory allows. */
static const dpf_fxi_t *xt_threshold(const dpf_dlap_exact_t *t, xt_state_t *x, int mag,
                                     uint32_t g, dpf_fxi_t *tmp)
{
    const int n = DPF_FXMAX;
    uint64_t N[3];
    dpf_fxi_t a, *dst;
    if (xt_slot(x, mag, g, tmp, &dst)) return dst;
    if (mag && !x->have_b) {
        dpf_fx_exp_neg_big(&a, N, gamma_num(N, t, 1), &t->s_num, 1, xt_e1(x), n);
        two_over_one_plus(&x->b, &a, n);
        x->have_b = 1;
    }
    /* A = rho^(g+1) = exp(-(g+1) gamma) */
    dpf_fx_exp_neg_big(&a, N, gamma_num(N, t, (uint64_t)g + 1), &t->s_num, 1, xt_e1(x), n);
    cumulative(dst, &a, &x->b, mag, n);
    return dst;
}

/* Claim 2: #{g < m : C_g <= U} for one uniform U (m: G >= m). */
static DPF_INLINE uint32_t table_draw(dpf_rng_t *r, const dpf_dlap_exact_t *t, int mag,
                                      xt_state_t *x, int *err, uint64_t *rest)
{
    const dpf_thr_t *thr = mag ? t->mag : t->geo;
    const uint32_t m = mag ? t->m_mag : t->m_geo;
    const uint64_t w = dpf_next_u64(r), wk = w >> t->shift;
    uint32_t g = (mag ? t->guide_mag : t->guide_geo)[w >> XT_GUIDE_SHIFT];
    *rest = w;                                     /* the low 64 - ubits bits: not U's */
    while (g < m && wk > thr[g].hi) g++;           /* U >= C_g certainly */
    if (DPF_LIKELY(g == m || wk < thr[g].lo)) return g;   /* U < C_g certainly */
    {
        /* a tie: compare U exactly, its words kept from one threshold to the next; U's
         * first 64 bits are w's top ubits, then a fresh word's */
        uint64_t words[DPF_FXMAX];
        int nw = 1;
        dpf_fxi_t tmp;
        words[0] = t->ubits == 64 ? w
                                  : (w >> (64 - t->ubits) << (64 - t->ubits)) |
                                        (dpf_next_u64(r) >> t->ubits);
        for (; g < m; g++) {
            if (wk < thr[g].lo) break;
            if (wk > thr[g].hi) continue;
            if (dpf_u_below(r, words, &nw, xt_threshold(t, x, mag, g, &tmp), err) || *err)
                break;
        }
        return g;
    }
}

/* G ~ Geometric(rho): Claim 2 with memoryless restarts. */
static DPF_INLINE int geo_quotient(dpf_rng_t *r, const dpf_dlap_exact_t *t, xt_state_t *x,
                                   uint64_t *out, uint64_t *rest)
{
    uint64_t base = 0;
    int err = 0;
    for (;;) {
        uint32_t g = table_draw(r, t, 0, x, &err, rest);
        if (DPF_UNLIKELY(err)) return err;
        if (DPF_LIKELY(g < t->m_geo)) {
            *out = base + g;
            return DPF_OK;
        }
        base += t->m_geo;
        if (DPF_UNLIKELY(base > (uint64_t)INT64_MAX)) return DPF_E_RANGE;
    }
}

/* Claim 3's coin for l >= 1, given the first `pb` bits v of its uniform V (pb <= 63 - s, or
 * 0): 1 if V < exp(-l/t). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int low_coin(dpf_rng_t *r, const dpf_dlap_exact_t *t, xt_state_t *x, uint64_t l,
                    uint64_t v, int pb, int *err)
{
    uint64_t hi, xl, xh, plo, phi, w, wk, words[DPF_FXMAX];
    int nw = 1;
    /* 2^64 l/t in [xl, xh]: l (r_int + (r_frac + theta)/2^64), 0 <= theta < 1 */
    xl = l * t->r_int + (dpf_mul64(l, t->r_frac, &hi), hi);
    xh = xl + 2;
    plo = dpf_exp_small_lo(xh);
    phi = dpf_exp_small_hi(xl);
    if (pb > 0 && t->cshift == 0) {
        const uint64_t cmin = v << (64 - pb), cmax = cmin | (UINT64_MAX >> pb);
        if (cmax < plo) return 1;
        if (cmin > phi) return 0;
    }
    /* V's first 64 bits: the pb known ones, then a fresh word's */
    w = pb > 0 ? (v << (64 - pb)) | (dpf_next_u64(r) >> pb) : dpf_next_u64(r);
    wk = w >> t->cshift;
    if (wk < plo >> t->cshift) return 1;
    if (wk > phi >> t->cshift) return 0;
    {
        dpf_fxi_t tmp, *p;
        uint64_t N[2], D[1];
        if (!xt_slot(x, 2, l, &tmp, &p)) {
            N[0] = dpf_mul64(l, t->s_den, &N[1]);
            D[0] = t->s_num;
            dpf_fx_exp_neg_big(p, N, 2, D, 1, xt_e1(x), DPF_FXMAX);
        }
        words[0] = w;
        return dpf_u_below(r, words, &nw, p, err);
    }
}

/* Claim 3: L, and a fair sign bit from the same word. */
static DPF_INLINE int geo_low(dpf_rng_t *r, const dpf_dlap_exact_t *t, xt_state_t *x,
                              uint64_t first, uint64_t *out, int *neg)
{
    const uint32_t s = t->digits;
    const uint64_t mask = t->block - 1;
    /* the first proposal from G's word when ubits < 64 (its low s + 1 + XT_PB bits),
     * the next ones from fresh words (V's first 63 - s bits) */
    int pb = t->ubits < 64 ? XT_PB : 63 - (int)s, err = 0;
    uint64_t w = t->ubits < 64 ? first : dpf_next_u64(r);
    for (;; w = dpf_next_u64(r), pb = 63 - (int)s) {
        const uint64_t l = w & mask, v = (w >> (s + 1)) & (UINT64_MAX >> (64 - pb));
        /* the common case, decided by 1 - x <= exp(-x) and V's leading bits */
        const uint64_t crude = 0 - l * (t->r_int + 1);     /* <= 2^64 (1 - l/t) */
        const uint64_t cmax = (v << (64 - pb)) | (UINT64_MAX >> pb);
        /* evaluated without short-circuit: l == 0 is a coin flip when s = 1 */
        const int sure = (l == 0) | ((t->cshift == 0) & (cmax < crude));
        *neg = (int)((w >> s) & 1);
        if (DPF_LIKELY(sure)) {
            *out = l;
            return DPF_OK;
        }
        if (low_coin(r, t, x, l, v, pb, &err)) {
            *out = l;
            return err;
        }
        if (DPF_UNLIKELY(err)) return err;
    }
}

/* Y = 2^s G + L (Claim 1); *neg: a fair bit (s > 0: from L's word). */
static DPF_INLINE int xgeo(dpf_rng_t *r, const dpf_dlap_exact_t *t, xt_state_t *x,
                           uint64_t *out, int *neg)
{
    uint64_t g, l = 0, rest;
    int st = geo_quotient(r, t, x, &g, &rest);
    if (DPF_UNLIKELY(st != DPF_OK)) return st;
    if (t->digits == 0) {
        *out = g;
        return DPF_OK;
    }
    st = geo_low(r, t, x, rest, &l, neg);
    if (DPF_UNLIKELY(st != DPF_OK)) return st;
    if (DPF_UNLIKELY(g > ((uint64_t)INT64_MAX >> t->digits))) return DPF_E_RANGE;
    *out = (g << t->digits) | l;
    return DPF_OK;
}

/* Claim 4. */
static DPF_INLINE int xdlap(dpf_rng_t *r, const dpf_dlap_exact_t *t, xt_state_t *x,
                            int64_t *out)
{
    uint64_t y;
    int neg = 0, st, err = 0;
    if (t->digits == 0) {
        uint64_t rest, sign;
        uint32_t k = table_draw(r, t, 1, x, &err, &rest);
        sign = rest & 1; /* the bit of |X|'s word that U does not read */
        if (DPF_UNLIKELY(err)) return err;
        y = k;
        if (DPF_UNLIKELY(k == t->m_mag)) {
            st = geo_quotient(r, t, x, &y, &rest);
            if (st != DPF_OK) return st;
            if (y > (uint64_t)INT64_MAX - k) return DPF_E_RANGE;
            y += k;
        }
        neg = (int)sign & (y != 0);
    } else {
        do {
            st = xgeo(r, t, x, &y, &neg);
            if (DPF_UNLIKELY(st != DPF_OK)) return st;
        } while (DPF_UNLIKELY((neg & (y == 0)) != 0));
    }
    *out = (int64_t)((y ^ ((uint64_t)0 - (uint64_t)neg)) + (uint64_t)neg);
    return DPF_OK;
}

int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                             size_t n)
{
    xt_state_t x;
    size_t i;
    int st = DPF_OK, neg;
    xt_init(&x);
    for (i = 0; i < n && st == DPF_OK; i++) {
        uint64_t y = 0;
        st = xgeo(r, t, &x, &y, &neg);
        out[i] = (int64_t)y;
    }
    xt_free(&x);
    return st;
}

int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                    size_t n)
{
    xt_state_t x;
    size_t i;
    int st = DPF_OK;
    xt_init(&x);
    for (i = 0; i < n && st == DPF_OK; i++) st = xdlap(r, t, &x, out + i);
    xt_free(&x);
    return st;
}

#define DG_TABLE_TMAX 1024
#define DG_TABLE_SPAN 16 /* the table covers |y| <= 16 t: P(|Y| > 16 t) < e^-16 */

/* Acceptance table: A(x) = exp(-(x - mu)^2 / (2 sigma^2)), mu = sigma^2/t, by the exact
 * recurrence A(0) = exp(-sigma^2/(2 t^2)) = exp(-a/(2 b t^2)),
 * A(x+1) = A(x) exp(1/t) E(x), E(x) = exp(-(2x+1) c) = E(x-1) exp(-2c), c = b/(2a)
 * (since (x+1-mu)^2 - (x-mu)^2 = 2x + 1 - 2 mu and 2 mu c = 1/t), with outward rounding.
 * Each factor is certified, every product is rounded down (lower bounds) or up (upper
 * bounds); A stays below e^(1/2) times its start, so the absolute error stays within a
 * few ulp per step (192-bit precision, at most 16385 steps). */
static int dg_table(dpf_dgauss_exact_t *g, uint32_t shift)
{
    const int n = DPF_CTN;
    dpf_fxi_t e1, A, E, G, Q2;
    dpf_fx_t flo, fhi;
    uint64_t Nn[6], Dd[6], x, ymax;
    int dn2;
    g->table = NULL;
    g->ymax = 0;
    if (g->t > DG_TABLE_TMAX) return DPF_OK;
    ymax = DG_TABLE_SPAN * g->t;
    g->table = (uint64_t *)malloc(sizeof(uint64_t) * 2 * (size_t)(ymax + 1));
    if (g->table == NULL) return DPF_E_NOMEM;
    g->ymax = ymax;
    dpf_fx_exp_m1(&e1, n);
    /* A(0) = exp(-a / (2 b t^2)): 2 b t^2 = D / a */
    {
        uint64_t tt[2], btt[4];
        tt[0] = dpf_mul64(g->t, g->t, &tt[1]);
        Nn[0] = g->sigma2_den;
        dpf_big_mul(btt, Nn, 1, tt, 2); /* b t^2 */
        dn2 = dpf_big_len(Dd, dpf_big_shl(Dd, btt, 3, 1));
        Nn[0] = g->sigma2_num;
        dpf_fx_exp_neg_big(&A, Nn, 1, Dd, dn2, &e1, n);
    }
    /* G = exp(1/t): the series at 1/t rounded down and up */
    dpf_fx_ratio(&flo, 0, 1, g->t, 0, n);
    dpf_fx_ratio(&fhi, 0, 1, g->t, 1, n);
    dpf_fx_exp_pos(&G.lo, &G.hi, &flo, &fhi, n);
    /* E(0) = exp(-c) = exp(-b/(2a)), Q2 = exp(-2c) = exp(-b/a) */
    Nn[0] = g->sigma2_den;
    Dd[0] = g->sigma2_num;
    dpf_fx_exp_neg_big(&Q2, Nn, 1, Dd, 1, &e1, n);
    Dd[1] = g->sigma2_num >> 63; /* 2a, two limbs */
    Dd[0] = g->sigma2_num << 1;
    dpf_fx_exp_neg_big(&E, Nn, 1, Dd, 2, &e1, n);
    for (x = 0; x <= ymax; x++) {
        uint64_t lo = A.lo.w[n - 1] ? UINT64_MAX : A.lo.w[n - 2];
        uint64_t hi = A.hi.w[n - 1] ? UINT64_MAX : A.hi.w[n - 2];
        g->table[2 * x] = lo >> shift;
        g->table[2 * x + 1] = hi >> shift;
        dpf_fx_mul(&A.lo, &A.lo, &G.lo, 0, n);
        dpf_fx_mul(&A.lo, &A.lo, &E.lo, 0, n);
        dpf_fx_mul(&A.hi, &A.hi, &G.hi, 1, n);
        dpf_fx_mul(&A.hi, &A.hi, &E.hi, 1, n);
        dpf_fx_mul(&E.lo, &E.lo, &Q2.lo, 0, n);
        dpf_fx_mul(&E.hi, &E.hi, &Q2.hi, 1, n);
    }
    return DPF_OK;
}

/* ---------------------------------------------------------------- computed coin
 *
 * For t >= 64 the acceptance probability p = exp(-E), E = (|y| - mu)^2 / (2 sigma^2),
 * mu = sigma^2/t = a/(b t), is enclosed per draw with 64-bit integer arithmetic only:
 *   - |delta| = ||y| - mu| in units of 2^-k: [Dlo, Dhi] from |y| 2^k and the 128-bit floor
 *     of 2^k mu (true value within +2 of it).  k = 64 - bitlen(dmax), dmax the least
 *     integer with dmax^2 >= 128 sigma^2: if |delta| >= dmax, E >= 64, p 2^64 < 1;
 *   - E 2^54 = K (Delta^2 / 2^64), Delta = |delta| 2^k < 2^64, K = 2^(118-2k)/(2 sigma^2)
 *     in (1/16, 1/4 (1 + 1/dmax)^2] (from 2^(63-k) <= dmax < 2^(64-k)), so K < 1 and its
 *     floor kf = floor(2^64 K) gives [floor(kf Zlo/2^64), floor((kf+1) Zhi/2^64) + 1] with
 *     Zlo = floor(Dlo^2/2^64), Zhi = floor(Dhi^2/2^64) + 1;
 *   - exp(-E) = exp(-i/32) exp(-x), E = i/32 + x, 0 <= x < 1/32: a table of certified
 *     2^63-scaled intervals of exp(-i/32), i < 45 * 32 (set-up, 192-bit arithmetic), and
 *     Claim 3's polynomial enclosure of exp(-x), multiplied with truncation (lower bound)
 *     or truncation + 1 (upper bound); E >= 45 gives the enclosure [0, 1] of 2^64 p.
 *     The fill first tries the cruder 1 - x <= exp(-x) <= 1 (one product, a shorter chain
 *     of dependent multiplications); only a word within that ~2^-5 p wide band computes
 *     the polynomial.
 * Width about 2^-24 p (the polynomial's x^4/24), so a tie (then the exact 704-bit
 * continuation of dg_accept_tie) has probability below 2^-24 per coin. */

/* d^2 b >= 128 a ? */
static int sq_ge128(uint64_t d, uint64_t b, uint64_t a)
{
    uint64_t D2[2], P[3], A[2];
    D2[0] = dpf_mul64(d, d, &D2[1]);
    dpf_big_mul(P, D2, 2, &b, 1);
    A[0] = a << 7;
    A[1] = a >> 57;
    return dpf_big_cmp(P, 3, A, 2) >= 0;
}

/* floor(2^63 v) and an upper bound of 2^63 v', v <= v' <= 1 certified fx values. */
static void to63(uint64_t out[2], const dpf_fxi_t *v, int n)
{
    out[0] = (v->lo.w[n - 1] << 63) | (v->lo.w[n - 2] >> 1);
    out[1] = ((v->hi.w[n - 1] << 63) | (v->hi.w[n - 2] >> 1)) + 1;
}

static int dg_coin_setup(dpf_dgauss_exact_t *g)
{
    const int n = DPF_CTN;
    const uint64_t a = g->sigma2_num, b = g->sigma2_den;
    uint64_t lo = 0, hi = (uint64_t)1 << 40, Nb[6], q, rem;
    dpf_fx_t z;
    int k, len, i;
    g->fast = 0;
    if (g->t < 64) return DPF_OK;
    while (hi - lo > 1) { /* invariant: lo fails, hi holds */
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_ge128(mid, b, a)) hi = mid;
        else lo = mid;
    }
    k = 64 - dpf_bitlen64(hi);
    if (k < 1 || k > 59) return DPF_OK;
    g->dk = (uint32_t)k;
    g->dmaxk = hi << k;
    /* 2^k mu from below: a/b, then / t, both rounded down */
    dpf_fx_ratio(&z, 0, a, b, 0, n);
    dpf_fx_div_u64(&z, &z, g->t, 0, n);
    g->mk[0] = (z.w[n - 2] >> (64 - k)) | (z.w[n - 1] << k);
    g->mk[1] = z.w[n - 1] >> (64 - k);
    /* kf = floor(b 2^(181-2k) / a) */
    len = dpf_big_shl(Nb, &b, 1, 181 - 2 * k);
    rem = 0;
    q = 0;
    for (i = len - 1; i >= 0; i--) {
        q = dpf_div128(rem, Nb[i], a, &rem);
        if (i > 0 && q != 0) return DPF_OK; /* K >= 1: cannot happen (see above) */
    }
    g->kf = q;
    g->fast = 1;
    return DPF_OK;
}

/* The certified table of exp(-i/32), i < DPF_EXP54_TAB, shared by the computed coin and the
 * block sampler (dgauss.c). */
static void dg_etab(dpf_dgauss_exact_t *g)
{
    const int n = DPF_CTN;
    dpf_fxi_t e1, e32, p;
    dpf_fx_t f;
    int i;
    dpf_fx_exp_m1(&e1, n);
    dpf_fx_ratio(&f, 0, 1, 32, 0, n); /* 1/32, exact */
    dpf_fx_exp_neg(&e32, 0, &f, &f, &e1, n);
    dpf_fx_int(&p.lo, 1, n);
    p.hi = p.lo;
    for (i = 0; i < DPF_EXP54_TAB; i++) {
        to63(g->e_tab[i], &p, n);
        dpf_fx_mul(&p.lo, &p.lo, &e32.lo, 0, n);
        dpf_fx_mul(&p.hi, &p.hi, &e32.hi, 1, n);
    }
}

/* [2^64 p] for the proposal |y| = x: *lo <= 2^64 p <= *hi; crude: about 2^-5 p wide,
 * from a shorter chain of products (the fill tries it first). */
static DPF_INLINE void dg_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t x,
                                      uint64_t *plo, uint64_t *phi, int crude)
{
    const int k = (int)g->dk;
    const uint64_t yh = x >> (64 - k), yl = x << k;
    /* D = |2^k |y| - mk| by a 128-bit difference and a masked negation (|y| - mu has a
     * random sign: no branch on it); 2^k mu lies in [mk, mk + 2], so |delta| 2^k lies in
     * [D - 2, D] when 2^k |y| >= mk (and in [0, 2] when D < 2), in [D, D + 2] otherwise */
    const uint64_t l0 = yl - g->mk[0], h0 = yh - g->mk[1] - (uint64_t)(yl < g->mk[0]);
    const uint64_t neg = h0 >> 63, m = (uint64_t)0 - neg;
    const uint64_t dl = (l0 ^ m) - m, dh = (h0 ^ m) + (neg & (uint64_t)(l0 == 0));
    const uint64_t off_lo = 2 & ~m, off_hi = 2 & m;
    uint64_t dlo = dl > off_lo ? dl - off_lo : 0, dhi = dl + off_hi, zlo, zhi, elo, ehi;
    dhi = dhi < 2 ? 2 : dhi;
    if (dh != 0 || dlo >= g->dmaxk) { /* E >= 64 */
        *plo = 0;
        *phi = 1;
        return;
    }
    dpf_mul64(dlo, dlo, &zlo);
    dpf_mul64(dhi, dhi, &zhi);
    zhi += 1;
    dpf_mul64(g->kf, zlo, &elo);
    dpf_mul64(g->kf + 1, zhi, &ehi);
    ehi += 1;
    if (crude) {
        *plo = dpf_exp54_crude(g->e_tab, ehi, 0);
        *phi = dpf_exp54_crude(g->e_tab, elo, 1);
    } else {
        *plo = dpf_exp54(g->e_tab, ehi, 0);
        *phi = dpf_exp54(g->e_tab, elo, 1);
    }
}

int dpf_dgauss_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t x, int crude,
                           uint64_t *plo, uint64_t *phi)
{
    if (!g->fast) return DPF_E_PARAM;
    dg_coin_bounds(g, x, plo, phi, crude != 0);
    return DPF_OK;
}

void dpf_exp_small_bounds(uint64_t xl, uint64_t xh, uint64_t *plo, uint64_t *phi)
{
    *plo = dpf_exp_small_lo(xh);
    *phi = dpf_exp_small_hi(xl);
}

int dpf_dgauss_exact_prepare_ex(dpf_dgauss_exact_t *g, uint64_t sigma2_num,
                                uint64_t sigma2_den, unsigned fast_bits, unsigned span2)
{
    int st;
    memset(g, 0, sizeof *g);
    g->sigma2_num = sigma2_num;
    g->sigma2_den = sigma2_den;
    st = dpf_dg_setup(&g->sigma2_num, &g->sigma2_den, &g->t, g->bt, g->D, &g->dn);
    if (st != DPF_OK) return st;
    dg_etab(g);
    st = dg_coin_setup(g);
    if (st != DPF_OK) return st;
    if (g->t >= DPF_DGBLOCK_TMIN && span2 > 0) {
        g->blk = (struct dpf_dgblock *)malloc(sizeof(dpf_dgblock_t));
        if (g->blk == NULL) return DPF_E_NOMEM;
        st = dpf_dgblock_prepare(g->blk, g->sigma2_num, g->sigma2_den, g->t, fast_bits,
                                 span2);
        if (st == DPF_OK) return DPF_OK;
        free(g->blk);
        g->blk = NULL;
        if (st == DPF_E_NOMEM || (st == DPF_E_PARAM && (fast_bits < 1 || fast_bits > 64)))
            return st;
        /* DPF_E_RANGE (sigma beyond the block sampler's words): Algorithm 3 below */
    }
    st = dpf_dlap_exact_prepare(&g->proposal, g->t, 1, fast_bits);
    if (st != DPF_OK) return st;
    return dg_table(g, g->proposal.cshift);
}

int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num,
                             uint64_t sigma2_den, unsigned fast_bits)
{
    return dpf_dgauss_exact_prepare_ex(g, sigma2_num, sigma2_den, fast_bits,
                                       DPF_DGBLOCK_SPAN2);
}

int dpf_dgauss_block_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t u,
                                 int crude, uint64_t *plo, uint64_t *phi)
{
    return dpf_dgblock_coin_bounds(g->blk, g->e_tab, j, u, crude, plo, phi);
}

int dpf_dgauss_block_coin_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t j,
                               uint64_t u, int64_t *out, size_t n)
{
    return dpf_dgblock_coin_fill(r, g->blk, g->e_tab, j, u, out, n);
}

int dpf_dgauss_block_threshold(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t *lo,
                               uint64_t *hi)
{
    return dpf_dgblock_threshold(g->blk, j, lo, hi);
}

void dpf_dgauss_block_info(const dpf_dgauss_exact_t *g, uint64_t *m, uint64_t *nblk)
{
    *m = g->blk ? g->blk->m : 0;
    *nblk = g->blk ? g->blk->nblk : 0;
}

void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g)
{
    free(g->table);
    free(g->blk);
    g->table = NULL;
    g->blk = NULL;
    g->ymax = 0;
}

/* 704-bit intervals of the acceptance coins of |y| < 256, computed on first need per call. */
#define DG_TIE_CACHE 256
typedef struct {
    int have_e1;
    dpf_fxi_t e1;
    unsigned char *have;
    dpf_fxi_t *p;
} acc_cache_t;

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int dg_accept_tie(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t x, uint64_t w,
                         acc_cache_t *ac, int *err)
{
    uint64_t N[6];
    dpf_fxi_t p, *pp = &p;
    if (!ac->have_e1) {
        dpf_fx_exp_m1(&ac->e1, DPF_FXMAX);
        ac->have_e1 = 1;
    }
    if (x < DG_TIE_CACHE && ac->p == NULL) {
        ac->p = (dpf_fxi_t *)malloc(sizeof(dpf_fxi_t) * DG_TIE_CACHE);
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
    dpf_dg_square(N, g->sigma2_num, g->bt, x);
    dpf_fx_exp_neg_big(pp, N, 6, g->D, g->dn, &ac->e1, DPF_FXMAX);
    return lazy_vs_interval(r, w, pp, err);
}

int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g,
                                     int64_t *out, size_t n)
{
    xt_state_t xt;
    acc_cache_t ac;
    size_t i;
    int st = DPF_OK;
    const uint32_t shift = g->proposal.cshift;
    if (g->blk != NULL) return dpf_dgblock_fill(r, g->blk, g->e_tab, out, n);
    xt_init(&xt);
    ac.have_e1 = 0;
    ac.have = NULL;
    ac.p = NULL;
    /* Every proposal is written to out[i] and i advances by the coin's outcome: the
     * accept/reject decision (probability ~0.25 of a rejection) is data, not a branch.  A
     * rejected proposal is overwritten by a later one; on an error the caller discards
     * the buffer. */
    for (i = 0; i < n;) {
        int64_t y;
        uint64_t x;
        int acc, err = 0;
        st = xdlap(r, &g->proposal, &xt, &y);
        if (DPF_UNLIKELY(st != DPF_OK)) break;
        x = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        if (DPF_LIKELY(x <= g->ymax && g->table != NULL)) {
            uint64_t w = dpf_next_u64(r), wk = w >> shift;
            uint64_t lo = g->table[2 * x], hi = g->table[2 * x + 1];
            acc = wk < lo;
            if (DPF_UNLIKELY(wk - lo <= hi - lo))
                acc = dg_accept_tie(r, g, x, w, &ac, &err);
        } else if (g->fast) {
            uint64_t plo, phi, w, wk;
            dg_coin_bounds(g, x, &plo, &phi, 1);
            w = dpf_next_u64(r);
            wk = w >> shift;
            acc = wk < plo >> shift;
            if (DPF_UNLIKELY(!acc & (wk <= phi >> shift))) {
                dg_coin_bounds(g, x, &plo, &phi, 0);
                if (wk < plo >> shift) acc = 1;
                else if (wk > phi >> shift) acc = 0;
                else acc = dg_accept_tie(r, g, x, w, &ac, &err);
            }
        } else {
            acc = dpf_dg_accept(r, g->sigma2_num, g->bt, g->D, g->dn, y);
            if (acc < 0) err = -acc;
        }
        if (DPF_UNLIKELY(err)) {
            st = err;
            break;
        }
        out[i] = y;
        i += (size_t)(acc != 0);
    }
    free(ac.p);
    free(ac.have);
    xt_free(&xt);
    return st;
}
