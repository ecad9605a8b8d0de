/* Exact discrete samplers with no set-up ([CKS] loops): scalars and short arrays.
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
 * with the multi-word routines of certified.c; a result outside int64 gives DPF_E_RANGE.
 *
 * This file: the exact samplers with no set-up ([CKS] loops).  The prepared ones are in
 * prepared.c, the constant-time ones in consttime.c, the arithmetic in certified.c; the
 * choice between the loops here and the prepared samplers for an array is in discrete.c,
 * the layer above both.
 */
#include <stdlib.h>
#include <string.h>
#include "dpfast/arith.h"
#include "dpfast/certified.h"
#include "dpfast/exact.h"

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
    uint64_t P[DPF_BIGW + 2];
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
            uint64_t R[DPF_BIGW + 2];
            for (i = 0; i <= n; i++) {
                uint64_t s = i ? N[i - 1] : 0;
                uint64_t d = s - P[i], b1 = s < P[i];
                uint64_t d2 = d - borrow, b2 = d < borrow;
                R[i] = d2;
                borrow = b1 | b2;
            }
            if (R[n] != 0 || dpf_big_cmp(R, n, D, n) >= 0) return 1;
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

static int dpf_big_args(const uint64_t *num, const uint64_t *den, size_t limbs)
{
    if (limbs == 0 || limbs > DPF_BIG_MAX_LIMBS) return DPF_E_PARAM;
    if (dpf_big_len(den, (int)limbs) == 0) return DPF_E_PARAM;
    (void)num;
    return DPF_OK;
}

int dpf_bernoulli_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den, size_t limbs)
{
    uint64_t N[DPF_BIGW];
    int n = (int)limbs;
    if (dpf_big_args(num, den, limbs) != DPF_OK) return -DPF_E_PARAM;
    if (dpf_big_cmp(num, n, den, n) >= 0) return 1;
    if (dpf_big_len(num, n) == 0) return 0;
    memcpy(N, num, limbs * sizeof(uint64_t));
    return bern_lt_big(r, N, den, n);
}

int dpf_bernoulli_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                           size_t limbs, int64_t *out, size_t n)
{
    size_t i;
    if (dpf_big_args(num, den, limbs) != DPF_OK) return DPF_E_PARAM;
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
int dpf_bern_exp_le1(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    uint64_t k;
    if (num == 0) return 1;
    if (num == den) return bern_exp1(r);
    for (k = 1;; k++) {
        /* Bernoulli(gamma/k) = Bernoulli(num/(den k)) */
        uint64_t hi, dk = dpf_mul64(den, k, &hi);
        int a;
        if (DPF_LIKELY(hi == 0)) {
            a = bern_lt64(r, num, dk);
        } else {
            uint64_t N[2], D[2];
            N[0] = num;
            N[1] = 0;
            D[0] = dk;
            D[1] = hi;
            a = bern_lt_big(r, N, D, 2);
        }
        if (!a) return (int)(k & 1);
    }
}

/* exp(-g_int - g_frac/den) = exp(-1)^g_int exp(-g_frac/den): independent coins ([CKS]
 * Prop. 5), stopping at the first 0.  The loop counter is exact for any 64-bit g_int. */
int dpf_bern_exp_split(dpf_rng_t *r, uint64_t g_int, uint64_t g_frac, uint64_t den)
{
    uint64_t i;
    for (i = 0; i < g_int; i++)
        if (!bern_exp1(r)) return 0;
    return dpf_bern_exp_le1(r, g_frac, den);
}

int dpf_bernoulli_exp(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    if (den == 0) return -DPF_E_PARAM;
    return dpf_bern_exp_split(r, num / den, num % den, den);
}

int dpf_bernoulli_exp_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out, size_t n)
{
    size_t i;
    uint64_t gi, gf;
    if (den == 0) return DPF_E_PARAM;
    gi = num / den;
    gf = num % den;
    for (i = 0; i < n; i++) out[i] = dpf_bern_exp_split(r, gi, gf, den);
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
    uint64_t S[DPF_BIGW + 2], T[DPF_BIGW + 2];
    uint64_t k;
    int j, sn, tn, i;
    nn = dpf_big_len(N, nn);
    dn = dpf_big_len(D, dn);
    if (dpf_big_cmp(N, nn, D, dn) >= 0) {
        for (j = dpf_big_bitlen(N, nn) - dpf_big_bitlen(D, dn); j >= 0; j--) {
            sn = dpf_big_shl(S, D, dn, j);
            if (dpf_big_cmp(N, nn, S, sn) >= 0) {
                int st;
                dpf_big_sub(N, nn, S, sn > nn ? nn : sn);
                st = bern_exp1_pow2(r, j);
                if (st != 1) return st;
            }
        }
        nn = dpf_big_len(N, nn);
    }
    if (nn == 0) return 1;
    /* now 0 < N/D < 1: Algorithm 1 with Bernoulli(N/(D k)) */
    for (k = 1;; k++) {
        tn = dpf_big_len(T, dpf_big_mul_u64(T, D, dn, k));
        for (i = 0; i < tn; i++) S[i] = i < nn ? N[i] : 0;
        if (!bern_lt_big(r, S, T, tn)) return (int)(k & 1);
    }
}

int dpf_bernoulli_exp_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                          size_t limbs)
{
    uint64_t N[DPF_BIGW];
    if (dpf_big_args(num, den, limbs) != DPF_OK) return -DPF_E_PARAM;
    memcpy(N, num, limbs * sizeof(uint64_t));
    return bern_exp_ratio(r, N, (int)limbs, den, (int)limbs);
}

int dpf_bernoulli_exp_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                               size_t limbs, int64_t *out, size_t n)
{
    size_t i;
    if (dpf_big_args(num, den, limbs) != DPF_OK) return DPF_E_PARAM;
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
    c = dpf_gcd64(s_num, s_den);
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
        while (dpf_bern_exp_split(r, g->g_int, g->g_frac, g->s_num))
            if (DPF_UNLIKELY(++v > (uint64_t)INT64_MAX)) return DPF_E_RANGE;
        *out = v;
        return DPF_OK;
    }
    while (dpf_bern_exp_le1(r, g->beta_num, g->s_num))
        if (DPF_UNLIKELY(++v > (uint64_t)INT64_MAX)) return DPF_E_RANGE;
    if (g->block > 1) {
        do u = dpf_uniform_below(r, g->block);
        while (!dpf_bern_exp_le1(r, u * g->s_den, g->s_num));
    }
    lo = dpf_mul64(g->block, v, &hi);
    if (DPF_UNLIKELY(hi != 0 || lo > (uint64_t)INT64_MAX - u)) return DPF_E_RANGE;
    *out = lo + u;
    return DPF_OK;
}

/* Sign bits come one at a time from a reservoir word (dpf_bits_t, exact.h) in the fills; a
 * scalar draw uses one word. */

/* [CKS] Algorithm 2, last steps: a fair sign; (negative, 0) is rejected so that 0 is not
 * counted twice.  P(x) = (1-q)/(1+q) q^|x|. */
static int dlap_draw(dpf_rng_t *r, const geo_t *g, dpf_bits_t *b, int64_t *out)
{
    for (;;) {
        uint64_t y;
        int neg, st = geo_draw(r, g, &y);
        if (st != DPF_OK) return st;
        neg = dpf_next_bit(r, b);
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

int dpf_geometric_cks_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                           size_t n)
{
    geo_t g;
    size_t i;
    int st;
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
    dpf_bits_t b = {0, 0};
    int st = geo_init(&g, s_num, s_den);
    if (st != DPF_OK) return st;
    return dlap_draw(r, &g, &b, out);
}

int dpf_discrete_laplace_cks_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den,
                                  int64_t *out, size_t n)
{
    geo_t g;
    dpf_bits_t b = {0, 0};
    size_t i;
    int st;
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
int dpf_dg_setup(uint64_t *a, uint64_t *b, uint64_t *t, uint64_t bt[2], uint64_t D[6],
                 int *dn)
{
    uint64_t c, lo = 0, hi = (uint64_t)1 << 32, ab[2], tt[2], abtt[4];
    if (*a == 0 || *b == 0) return DPF_E_PARAM;
    c = dpf_gcd64(*a, *b);
    *a /= c;
    *b /= c;
    /* floor(sigma) = the largest s with s^2 b <= a; invariant lo^2 b <= a < hi^2 b */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_le(mid, *b, *a)) lo = mid;
        else hi = mid;
    }
    *t = lo + 1;
    bt[0] = dpf_mul64(*b, *t, &bt[1]);
    ab[0] = dpf_mul64(*a, *b, &ab[1]);
    tt[0] = dpf_mul64(*t, *t, &tt[1]);
    dpf_big_mul(abtt, ab, 2, tt, 2);
    memset(D, 0, 6 * sizeof(uint64_t));
    *dn = dpf_big_len(D, dpf_big_shl(D, abtt, 4, 1));
    return DPF_OK;
}

/* The acceptance coin of |y| = x: p(x) = exp(-d^2/D), d = |x b t - a| (3 limbs). */
void dpf_dg_square(uint64_t N[6], uint64_t a, const uint64_t bt[2], uint64_t x)
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
        dpf_big_sub(P, 3, A, 1);
    }
    dpf_big_mul(N, P, 3, P, 3);
}

/* Accept the proposal y with probability exp(-(|y| b t - a)^2 / (2 a b t^2)).  Returns 1, 0
 * or -DPF_E_RANGE. */
int dpf_dg_accept(dpf_rng_t *r, uint64_t a, const uint64_t bt[2], const uint64_t *D, int dn,
                  int64_t y)
{
    uint64_t N[6];
    dpf_dg_square(N, a, bt, y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y);
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
    st = dpf_dg_setup(&g->a, &g->b, &g->t, g->bt, g->D, &g->dn);
    if (st != DPF_OK) return st;
    return geo_init(&g->prop, g->t, 1);
}

static int dg_draw(dpf_rng_t *r, const dg_t *g, dpf_bits_t *b, int64_t *out)
{
    for (;;) {
        int64_t y;
        int acc, st = dlap_draw(r, &g->prop, b, &y);
        if (st != DPF_OK) return st;
        acc = dpf_dg_accept(r, g->a, g->bt, g->D, g->dn, y);
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
    dpf_bits_t b = {0, 0};
    int st = dg_init(&g, sigma2_num, sigma2_den);
    if (st != DPF_OK) return st;
    return dg_draw(r, &g, &b, out);
}

int dpf_discrete_gaussian_cks_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                                   int64_t *out, size_t n)
{
    dg_t g;
    dpf_bits_t b = {0, 0};
    size_t i;
    int st;
    st = dg_init(&g, sigma2_num, sigma2_den);
    if (st != DPF_OK) return st;
    for (i = 0; i < n; i++) {
        st = dg_draw(r, &g, &b, out + i);
        if (st != DPF_OK) return st;
    }
    return DPF_OK;
}
