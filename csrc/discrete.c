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
 * Constant-time samplers: see the second half of this file (certified thresholds).
 */
#include <stdlib.h>
#include <string.h>
#include "dpfast/discrete.h"

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#endif

/* ================================================================ portable arithmetic */

/* 64x64 -> 128: returns the low word, *hi the high word.  DPF_PORTABLE_ARITH forces the
 * plain-C versions (used to test them on a compiler that has the fast ones). */
static inline uint64_t mul64(uint64_t a, uint64_t b, uint64_t *hi)
{
#if defined(__SIZEOF_INT128__) && !defined(DPF_PORTABLE_ARITH)
    __extension__ unsigned __int128 p = (unsigned __int128)a * b;
    *hi = (uint64_t)(p >> 64);
    return (uint64_t)p;
#elif defined(_MSC_VER) && defined(_M_X64) && !defined(__clang__) && !defined(DPF_PORTABLE_ARITH)
    return _umul128(a, b, hi);
#elif defined(_MSC_VER) && defined(_M_ARM64) && !defined(__clang__) && !defined(DPF_PORTABLE_ARITH)
    *hi = __umulh(a, b);
    return a * b;
#else
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
    return (mid << 32) | (p00 & 0xffffffffu);
#endif
}

/* (hi*2^64 + lo) / d for hi < d (so the quotient fits); *rem gets the remainder.
 * Only the set-up code (prepare functions) divides; the samplers never do. */
static uint64_t div128(uint64_t hi, uint64_t lo, uint64_t d, uint64_t *rem)
{
#if defined(__SIZEOF_INT128__) && !defined(DPF_PORTABLE_ARITH)
    __extension__ unsigned __int128 n = ((unsigned __int128)hi << 64) | lo;
    *rem = (uint64_t)(n % d);
    return (uint64_t)(n / d);
#elif defined(_MSC_VER) && _MSC_VER >= 1920 && defined(_M_X64) && !defined(__clang__) && !defined(DPF_PORTABLE_ARITH)
    return _udiv128(hi, lo, d, rem);
#else
    /* Restoring division, one quotient bit at a time; hi < d throughout. */
    uint64_t q = 0;
    int i;
    for (i = 63; i >= 0; i--) {
        uint64_t top = hi >> 63;
        hi = (hi << 1) | (lo >> 63);
        lo <<= 1;
        if (top || hi >= d) {
            hi -= d;   /* modulo 2^64: the true value 2^64*top + hi - d is < d */
            q |= (uint64_t)1 << i;
        }
    }
    *rem = hi;
    return q;
#endif
}

static inline int bitlen64(uint64_t x)
{
#if (defined(__GNUC__) || defined(__clang__)) && !defined(DPF_PORTABLE_ARITH)
    return x ? 64 - __builtin_clzll(x) : 0;
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_ARM64)) && !defined(DPF_PORTABLE_ARITH)
    unsigned long i;
    return _BitScanReverse64(&i, x) ? (int)i + 1 : 0;
#else
    int n = 0;
    while (x) { n++; x >>= 1; }
    return n;
#endif
}

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
        uint64_t hi, lo = mul64(a[i], k, &hi);
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
            uint64_t hi, lo = mul64(a[i], b[j], &hi), s;
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
    return an ? 64 * (an - 1) + bitlen64(a[an - 1]) : 0;
}

/* ================================================================ exact samplers */

/* [L19]: m = W n; the high word of m is uniform on [0, n) once the low word is at least
 * 2^64 mod n.  The rejection probability (2^64 mod n)/2^64 depends only on n. */
uint64_t dpf_uniform_below(dpf_rng_t *r, uint64_t n)
{
    uint64_t hi, lo;
    if (n == 0) return dpf_next_u64(r);
    lo = mul64(dpf_next_u64(r), n, &hi);
    if (DPF_UNLIKELY(lo < n)) {
        uint64_t thresh = (0 - n) % n;   /* 2^64 mod n */
        while (lo < thresh) lo = mul64(dpf_next_u64(r), n, &hi);
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
static inline int bern_lt64(dpf_rng_t *r, uint64_t num, uint64_t den)
{
    for (;;) {
        uint64_t hi, lo = mul64(dpf_next_u64(r), den, &hi);
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
            uint64_t hi, lo = mul64(w, D[i], &hi);
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
        uint64_t hi, dk = mul64(den, k, &hi);   /* Bernoulli(gamma/k) = Bernoulli(num/(den k)) */
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
    lo = mul64(g->block, v, &hi);
    if (DPF_UNLIKELY(hi != 0 || lo > (uint64_t)INT64_MAX - u)) return DPF_E_RANGE;
    *out = lo + u;
    return DPF_OK;
}

/* One sign bit at a time from a reservoir word (fills); a scalar draw uses one word. */
typedef struct {
    uint64_t bits;
    int left;
} bits_t;

static inline int next_bit(dpf_rng_t *r, bits_t *b)
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
    int st = geo_init(&g, s_num, s_den);
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
    int st = geo_init(&g, s_num, s_den);
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
typedef struct {
    geo_t prop;           /* the DLap(t) proposal: scale t/1 */
    uint64_t a;
    uint64_t bt[2];       /* b t */
    uint64_t D[6];
    int dn;
} dg_t;

/* s^2 b <= a ? */
static int sq_le(uint64_t s, uint64_t b, uint64_t a)
{
    uint64_t h1, l1 = mul64(s, s, &h1), h2, l2;
    if (h1 != 0) return 0;
    l2 = mul64(l1, b, &h2);
    return h2 == 0 && l2 <= a;
}

static int dg_init(dg_t *g, uint64_t a, uint64_t b)
{
    uint64_t c, lo = 0, hi = (uint64_t)1 << 32, t, ab[2], tt[2], abtt[4];
    if (a == 0 || b == 0) return DPF_E_PARAM;
    c = gcd64(a, b);
    a /= c;
    b /= c;
    /* floor(sigma) = the largest s with s^2 b <= a; invariant lo^2 b <= a < hi^2 b */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (sq_le(mid, b, a)) lo = mid; else hi = mid;
    }
    t = lo + 1;
    geo_init(&g->prop, t, 1);
    g->a = a;
    g->bt[0] = mul64(b, t, &g->bt[1]);
    ab[0] = mul64(a, b, &ab[1]);
    tt[0] = mul64(t, t, &tt[1]);
    big_mul(abtt, ab, 2, tt, 2);
    g->dn = big_len(g->D, big_shl(g->D, abtt, 4, 1));
    return DPF_OK;
}

static int dg_draw(dpf_rng_t *r, const dg_t *g, bits_t *b, int64_t *out)
{
    for (;;) {
        int64_t y;
        uint64_t x, P[3], N[6], c, hi, lo;
        int st = dlap_draw(r, &g->prop, b, &y), acc;
        if (st != DPF_OK) return st;
        x = y < 0 ? (uint64_t)0 - (uint64_t)y : (uint64_t)y;
        /* P = x b t (3 limbs), then |P - a| */
        P[0] = mul64(x, g->bt[0], &c);
        lo = mul64(x, g->bt[1], &hi);
        P[1] = lo + c;
        P[2] = hi + (P[1] < lo);
        if (P[1] == 0 && P[2] == 0 && P[0] < g->a) {
            P[0] = g->a - P[0];
        } else {
            uint64_t A[1];
            A[0] = g->a;
            big_sub(P, 3, A, 1);
        }
        big_mul(N, P, 3, P, 3);
        acc = bern_exp_ratio(r, N, 6, g->D, g->dn);
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
    int st = dg_init(&g, sigma2_num, sigma2_den);
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
 * fixed-point numbers of FXN limbs: the value of x is x.w / 2^(64 (FXN-1)), i.e. one
 * integer limb and 192 fractional bits.  Each operation returns a lower bound (rounded
 * down) or an upper bound (rounded up) of the exact result, so every [lo, hi] pair below
 * contains the exact real number.  No floating point is used anywhere in this part except
 * the final conversion of the slack to a double, which is rounded up.
 */

#define FXN 4
typedef struct { uint64_t w[FXN]; } fx_t;

static void fx_zero(fx_t *x) { memset(x, 0, sizeof *x); }

static void fx_int(fx_t *x, uint64_t v)
{
    fx_zero(x);
    x->w[FXN - 1] = v;
}

static int fx_cmp(const fx_t *x, const fx_t *y)
{
    int i;
    for (i = FXN - 1; i >= 0; i--)
        if (x->w[i] != y->w[i]) return x->w[i] < y->w[i] ? -1 : 1;
    return 0;
}

/* z = x + y; returns the carry out (an overflow). */
static int fx_add(fx_t *z, const fx_t *x, const fx_t *y)
{
    uint64_t c = 0;
    int i;
    for (i = 0; i < FXN; i++) {
        uint64_t s = x->w[i] + c, c1 = s < c;
        uint64_t t = s + y->w[i], c2 = t < s;
        z->w[i] = t;
        c = c1 | c2;
    }
    return (int)c;
}

/* z = x - y for x >= y. */
static void fx_sub(fx_t *z, const fx_t *x, const fx_t *y)
{
    fx_t t = *x;
    big_sub(t.w, FXN, y->w, FXN);
    *z = t;
}

/* z += one unit in the last place. */
static int fx_add_ulp(fx_t *z)
{
    int i;
    for (i = 0; i < FXN; i++)
        if (++z->w[i] != 0) return 0;
    return 1;
}

/* z = x y rounded down (up = 0) or up (up = 1); returns nonzero on overflow. */
static int fx_mul(fx_t *z, const fx_t *x, const fx_t *y, int up)
{
    uint64_t p[2 * FXN];
    int i, sticky = 0;
    big_mul(p, x->w, FXN, y->w, FXN);
    for (i = 0; i < FXN - 1; i++) sticky |= p[i] != 0;
    for (i = 0; i < FXN; i++) z->w[i] = p[i + FXN - 1];
    if (p[2 * FXN - 1] != 0) return 1;
    if (up && sticky) return fx_add_ulp(z);
    return 0;
}

/* z = x k exactly; nonzero on overflow. */
static int fx_mul_u64(fx_t *z, const fx_t *x, uint64_t k)
{
    uint64_t p[FXN + 1];
    big_mul_u64(p, x->w, FXN, k);
    memcpy(z->w, p, sizeof z->w);
    return p[FXN] != 0;
}

/* z = x / d rounded down or up (d >= 1). */
static void fx_div_u64(fx_t *z, const fx_t *x, uint64_t d, int up)
{
    uint64_t rem = 0;
    int i;
    for (i = FXN - 1; i >= 0; i--) z->w[i] = div128(rem, x->w[i], d, &rem);
    if (up && rem) fx_add_ulp(z);
}

/* z = (nhi 2^64 + nlo) / d rounded down or up; requires nhi < d (the value is < 2^64). */
static void fx_ratio(fx_t *z, uint64_t nhi, uint64_t nlo, uint64_t d, int up)
{
    uint64_t rem;
    int i;
    /* the dividend's limbs: nhi at 2^64, nlo at 2^0 (the integer limb), zeros below */
    z->w[FXN - 1] = div128(nhi, nlo, d, &rem);
    for (i = FXN - 2; i >= 0; i--) z->w[i] = div128(rem, 0, d, &rem);
    if (up && rem) fx_add_ulp(z);
}

/* z = x / 2 rounded down or up. */
static void fx_half(fx_t *z, const fx_t *x, int up)
{
    int i, lost = (int)(x->w[0] & 1);
    for (i = 0; i < FXN - 1; i++) z->w[i] = (x->w[i] >> 1) | (x->w[i + 1] << 63);
    z->w[FXN - 1] = x->w[FXN - 1] >> 1;
    if (up && lost) fx_add_ulp(z);
}

/* z = x / y rounded down or up (y > 0, x/y < 2^64): restoring division of x 2^192 by y,
 * one quotient bit at a time.  Set-up only. */
static void fx_div(fx_t *z, const fx_t *x, const fx_t *y, int up)
{
    uint64_t rem[FXN + 1], yy[FXN + 1];
    int bit, i, nonzero;
    fx_t q;
    memset(rem, 0, sizeof rem);
    memcpy(yy, y->w, sizeof y->w);
    yy[FXN] = 0;
    fx_zero(&q);
    /* the dividend x 2^(64 (FXN-1)) has limbs x.w[i] at positions i + FXN - 1 */
    for (bit = 64 * (2 * FXN - 1) - 1; bit >= 0; bit--) {
        int limb = bit / 64 - (FXN - 1);
        uint64_t in = limb >= 0 ? (x->w[limb] >> (bit % 64)) & 1 : 0;
        for (i = FXN; i > 0; i--) rem[i] = (rem[i] << 1) | (rem[i - 1] >> 63);
        rem[0] = (rem[0] << 1) | in;
        if (big_cmp(rem, FXN + 1, yy, FXN + 1) >= 0) {
            big_sub(rem, FXN + 1, yy, FXN + 1);
            if (bit < 64 * FXN) q.w[bit / 64] |= (uint64_t)1 << (bit % 64);
        }
    }
    nonzero = big_len(rem, FXN + 1) != 0;
    if (up && nonzero) fx_add_ulp(&q);
    *z = q;
}

/* |x - y| */
static void fx_absdiff(fx_t *z, const fx_t *x, const fx_t *y)
{
    if (fx_cmp(x, y) >= 0) fx_sub(z, x, y); else fx_sub(z, y, x);
}

/* An upper bound of x as a double: the limbs are summed in double (each step rounds to
 * nearest, relative error <= 2^-53 per step, FXN steps), then inflated by 2^-48. */
static double fx_to_double_up(const fx_t *x)
{
    double v = 0.0, scale = 1.0;
    int i;
    for (i = FXN - 1; i >= 0; i--) {
        v += (double)x->w[i] * scale;
        scale *= 1.0 / 18446744073709551616.0;
    }
    return v * (1.0 + 1.0 / 281474976710656.0);
}

/* exp(f) for f in [flo, fhi] within [0, 1]: the Taylor sum to k = 64 with terms rounded
 * down (lower bound) or up (upper bound), plus the tail sum_{k>64} f^k/k! <= f^64/64!,
 * which the last upper term bounds. */
static void fx_exp_pos(fx_t *lo, fx_t *hi, const fx_t *flo, const fx_t *fhi)
{
    fx_t tl, th;
    uint64_t k;
    fx_int(&tl, 1);
    fx_int(&th, 1);
    fx_int(lo, 1);
    fx_int(hi, 1);
    for (k = 1; k <= 64; k++) {
        fx_mul(&tl, &tl, flo, 0);
        fx_div_u64(&tl, &tl, k, 0);
        fx_mul(&th, &th, fhi, 1);
        fx_div_u64(&th, &th, k, 1);
        fx_add(lo, lo, &tl);
        fx_add(hi, hi, &th);
    }
    fx_add(hi, hi, &th);
}

typedef struct { fx_t lo, hi; } fxi_t;

/* [exp(-1)] */
static void fx_exp_m1(fxi_t *e1)
{
    fx_t one, slo, shi;
    fx_int(&one, 1);
    fx_exp_pos(&slo, &shi, &one, &one);
    fx_div(&e1->lo, &one, &shi, 0);
    fx_div(&e1->hi, &one, &slo, 1);
}

/* [exp(-(n + f))] for an integer n and f in [flo, fhi] within [0, 1), given [exp(-1)]. */
static void fx_exp_neg(fxi_t *res, uint64_t n, const fx_t *flo, const fx_t *fhi,
                       const fxi_t *e1)
{
    fx_t one, slo, shi, elo, ehi, plo, phi, blo, bhi;
    if (n >= 140) {   /* exp(-140) < 2^-201: [0, one ulp] contains it */
        fx_zero(&res->lo);
        fx_zero(&res->hi);
        res->hi.w[0] = 1;
        return;
    }
    fx_int(&one, 1);
    fx_exp_pos(&slo, &shi, flo, fhi);
    fx_div(&elo, &one, &shi, 0);   /* exp(-f) = 1 / exp(f) */
    fx_div(&ehi, &one, &slo, 1);
    /* exp(-1)^n by binary powering, bounds rounded outwards */
    fx_int(&plo, 1);
    fx_int(&phi, 1);
    blo = e1->lo;
    bhi = e1->hi;
    while (n) {
        if (n & 1) {
            fx_mul(&plo, &plo, &blo, 0);
            fx_mul(&phi, &phi, &bhi, 1);
        }
        n >>= 1;
        if (n) {
            fx_mul(&blo, &blo, &blo, 0);
            fx_mul(&bhi, &bhi, &bhi, 1);
        }
    }
    fx_mul(&res->lo, &plo, &elo, 0);
    fx_mul(&res->hi, &phi, &ehi, 1);
}

/* The 64-bit threshold nearest to the lower bound of p in [0, 1], and a certified bound
 * err >= |T/2^64 - p| = max over the interval's ends. */
static uint64_t fx_threshold(const fxi_t *p, fx_t *err)
{
    fx_t tf, e2;
    uint64_t t;
    if (p->lo.w[FXN - 1] != 0) {
        t = UINT64_MAX;
    } else {
        t = p->lo.w[FXN - 2];
        if ((p->lo.w[FXN - 3] >> 63) && t != UINT64_MAX) t++;
    }
    fx_zero(&tf);
    tf.w[FXN - 2] = t;
    fx_absdiff(err, &tf, &p->lo);
    fx_absdiff(&e2, &tf, &p->hi);
    if (fx_cmp(&e2, err) > 0) *err = e2;
    return t;
}

/* ================================================================ constant time: Laplace
 *
 * Bitwise geometric.  For M ~ Geometric(q), P(M = sum_j d_j 2^j) = (1-q) prod_j q^(d_j 2^j),
 * which factorises: the digits d_j are independent with P(d_j = 1) = p_j = q^(2^j)/(1 +
 * q^(2^j)).  Digit j is [w_j < T_j] for a fresh uniform word w_j, which is exactly
 * Bernoulli(T_j / 2^64).  Digits j >= D are dropped: the result is M mod 2^D, which differs
 * from M only when M >= 2^D, an event of probability q^(2^D).  The sign: X >= 0 with
 * probability 1/(1+q) and, given X < 0, -X-1 is again Geometric(q); so X = M or ~M = -M-1
 * with a Bernoulli(q/(1+q)) coin (= p_0), and P(X = x) = (1-q)/(1+q) q^|x| exactly.
 *
 * Slack: coupling each rounded coin with its exact coin and M mod 2^D with M,
 *   TV(output, exact) <= sum_{j<D} |T_j/2^64 - p_j| + q^(2^D) (+ |T_s/2^64 - p_0| for the sign).
 * Each |T/2^64 - p| is bounded by fx_threshold from the certified interval of p.
 *
 * Work per draw: D + 1 words (D for the geometric), one unsigned compare and one shift/or
 * per word, no branch on any random value.  D depends only on the scale.
 */

/* [q^(2^j)/(1+q^(2^j))] for y = n + rr/s_num (q^(2^j) = exp(-y)). */
static void dlap_digit_p(fxi_t *p, fx_t *tail_hi, uint64_t n, uint64_t rr, uint64_t s_num,
                         const fxi_t *e1)
{
    fx_t flo, fhi, one, den;
    fxi_t a;
    fx_ratio(&flo, 0, rr, s_num, 0);
    fx_ratio(&fhi, 0, rr, s_num, 1);
    fx_exp_neg(&a, n, &flo, &fhi, e1);
    if (tail_hi) *tail_hi = a.hi;
    fx_int(&one, 1);
    /* x/(1+x) is increasing in x */
    fx_add(&den, &one, &a.lo);
    fx_div(&p->lo, &a.lo, &den, 0);
    fx_add(&den, &one, &a.hi);
    fx_div(&p->hi, &a.hi, &den, 1);
}

int dpf_dlap_ct_prepare(dpf_dlap_ct_t *t, uint64_t s_num, uint64_t s_den)
{
    fxi_t e1, p;
    fx_t sum, err, tail;
    uint64_t c, n, rr;
    uint32_t j;
    if (s_num == 0 || s_den == 0) return DPF_E_PARAM;
    memset(t, 0, sizeof *t);
    c = gcd64(s_num, s_den);
    s_num /= c;
    s_den /= c;
    t->s_num = s_num;
    t->s_den = s_den;
    fx_exp_m1(&e1);
    fx_zero(&sum);
    /* y_j = 2^j s_den / s_num = n + rr/s_num, exactly */
    n = s_den / s_num;
    rr = s_den % s_num;
    for (j = 0; n < 45; j++) {
        int carry;
        if (j == DPF_DLAP_CT_MAX_DIGITS) return DPF_E_RANGE;
        dlap_digit_p(&p, NULL, n, rr, s_num, &e1);
        t->threshold[j] = fx_threshold(&p, &err);
        fx_add(&sum, &sum, &err);
        carry = rr >= s_num - rr;   /* 2 rr >= s_num, without overflow */
        rr = carry ? rr - (s_num - rr) : 2 * rr;
        n = 2 * n + (uint64_t)carry;
    }
    t->digits = j;
    /* truncation: q^(2^D) = exp(-y_D) */
    dlap_digit_p(&p, &tail, n, rr, s_num, &e1);
    fx_add(&sum, &sum, &tail);
    t->slack_geometric = fx_to_double_up(&sum);
    /* sign coin: q/(1+q) = p_0 */
    dlap_digit_p(&p, NULL, s_den / s_num, s_den % s_num, s_num, &e1);
    t->sign_threshold = fx_threshold(&p, &err);
    fx_add(&sum, &sum, &err);
    t->slack = fx_to_double_up(&sum);
    return DPF_OK;
}

static inline uint64_t geo_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t m = 0;
    uint32_t j;
    for (j = 0; j < t->digits; j++) m |= (uint64_t)(dpf_next_u64(r) < t->threshold[j]) << j;
    return m;
}

int64_t dpf_geometric_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    return (int64_t)geo_ct(r, t);
}

int64_t dpf_discrete_laplace_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t)
{
    uint64_t neg = (uint64_t)(dpf_next_u64(r) < t->sign_threshold);
    uint64_t m = geo_ct(r, t);
    return (int64_t)(m ^ ((uint64_t)0 - neg));   /* neg: ~m = -m - 1 */
}

void dpf_geometric_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = (int64_t)geo_ct(r, t);
}

void dpf_discrete_laplace_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out,
                                  size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) out[i] = dpf_discrete_laplace_ct(r, t);
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
    fx_exp_m1(&e1);
    fx_int(&one, 1);
    fx_zero(&lim);
    lim.w[FXN - 3] = (uint64_t)1 << 62;   /* 2^-66 */
    fx_zero(&lim2);
    lim2.w[0] = (uint64_t)1 << 32;        /* 2^-160 */
    /* c k = n + f exactly for k = 1 (r_0) and k = 2 (q): c k = k b / (2a).  k b < 2^65,
     * Q = floor(k b / a), c k = floor(Q/2) + ((Q mod 2) a + R) / (2a). */
    {
        uint64_t k;
        for (k = 1; k <= 2; k++) {
            fxi_t *dst = k == 1 ? &r : &q;
            l = mul64(k, b, &h);
            if (h >= a) {   /* c k >= 2^64: exp(-c k) is below one ulp */
                fx_zero(&dst->lo);
                fx_zero(&dst->hi);
                dst->hi.w[0] = 1;
                continue;
            }
            Q = div128(h, l, a, &R);
            l = mul64(Q & 1, a, &h);
            l += R;
            h += l < R;
            fx_ratio(&flo, h, l, a, 0);   /* ((Q mod 2) a + R)/a in [0, 2) */
            fx_ratio(&fhi, h, l, a, 1);
            fx_half(&flo, &flo, 0);
            fx_half(&fhi, &fhi, 1);
            fx_exp_neg(dst, Q >> 1, &flo, &fhi, &e1);
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
        fx_mul(&e.lo, &e.lo, &r.lo, 0);   /* e_m = e_{m-1} r_{m-1} */
        fx_mul(&e.hi, &e.hi, &r.hi, 1);
        fx_mul(&r.lo, &r.lo, &q.lo, 0);   /* r_m = r_{m-1} exp(-2c) */
        fx_mul(&r.hi, &r.hi, &q.hi, 1);
        if (M == 0) {
            fx_add(&S[m].lo, &S[m - 1].lo, &e.lo);
            fx_add(&S[m].lo, &S[m].lo, &e.lo);
            fx_add(&S[m].hi, &S[m - 1].hi, &e.hi);
            fx_add(&S[m].hi, &S[m].hi, &e.hi);
        } else {
            fx_add(&rest.lo, &rest.lo, &e.lo);
            fx_add(&rest.hi, &rest.hi, &e.hi);
        }
        /* tail bound sum_{m' > m} e_m' <= e_m a / (b m) */
        if (!fx_mul_u64(&tail, &e.hi, a)) {
            fx_div_u64(&tail, &tail, b, 1);
            fx_div_u64(&tail, &tail, m, 1);
            if (M == 0 && fx_cmp(&tail, &lim) <= 0) M = m;
            if (M != 0 && fx_cmp(&tail, &lim2) <= 0) break;
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
    fx_add(&Nlo, &S[M].lo, &rest.lo);
    fx_add(&Nlo, &Nlo, &rest.lo);
    fx_add(&beyond, &rest.hi, &tail);     /* >= sum_{m>M} e_m */
    fx_add(&Nhi, &S[M].hi, &beyond);
    fx_add(&Nhi, &Nhi, &beyond);
    fx_div(&ilo, &one, &Nhi, 0);
    fx_div(&ihi, &one, &Nlo, 1);
    fx_zero(&sum);
    for (m = 0; m < M; m++) {
        fxi_t C;
        uint64_t T;
        fx_mul(&C.lo, &S[m].lo, &ilo, 0);
        fx_mul(&C.hi, &S[m].hi, &ihi, 1);
        T = fx_threshold(&C, &err);
        if (m > 0 && T < t->threshold[m - 1]) {   /* keep the table monotone */
            fx_t tf, e2;
            T = t->threshold[m - 1];
            fx_zero(&tf);
            tf.w[FXN - 2] = T;
            fx_absdiff(&err, &tf, &C.lo);
            fx_absdiff(&e2, &tf, &C.hi);
            if (fx_cmp(&e2, &err) > 0) err = e2;
        }
        t->threshold[m] = T;
        fx_add(&sum, &sum, &err);
        if (T == UINT64_MAX) {   /* later entries could only repeat 2^64 - 1: stop here */
            M = m + 1;
            break;
        }
    }
    /* tau = P(|X| > M) = (N - S_M)/N <= (S_max.hi - S_M.lo + 2 beyond) ihi, where S_max is
     * the last stored partial sum (beyond bounds everything after it) */
    fx_add(&tmp, &S[Mtab].hi, &beyond);
    fx_add(&tmp, &tmp, &beyond);
    fx_sub(&tmp, &tmp, &S[M].lo);
    fx_mul(&tmp, &tmp, &ihi, 1);
    fx_add(&sum, &sum, &tmp);
    t->size = (uint32_t)M;
    t->slack = fx_to_double_up(&sum);
done:
    free(S);
    return status;
}

static inline uint64_t dg_scan(const uint64_t *T, uint32_t M, uint64_t w)
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

/* Eight draws per pass over the table (the table is loaded once per eight draws), one
 * word of sign bits per 64 draws. */
void dpf_discrete_gaussian_ct_fill(dpf_rng_t *r, const dpf_dgauss_ct_t *t, int64_t *out,
                                   size_t n)
{
    size_t i = 0;
    uint64_t signs = 0;
    int left = 0;
    while (i < n) {
        uint64_t w[8], m[8];
        size_t l, cnt = n - i < 8 ? n - i : 8;
        uint32_t k;
        for (l = 0; l < 8; l++) {
            w[l] = l < cnt ? dpf_next_u64(r) : 0;
            m[l] = 0;
        }
        for (k = 0; k < t->size; k++) {
            uint64_t T = t->threshold[k];
            for (l = 0; l < 8; l++) m[l] += (uint64_t)(w[l] >= T);
        }
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
}
