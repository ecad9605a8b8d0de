/* Discrete samplers: exact (Canonne, Kamath, Steinke 2020) and constant time (certified).
 *
 * Every kernel takes a dpf_rng_t first and reads 64-bit words from it; exactness assumes
 * those words are independent and uniform.  No function here calls libm.
 *
 * Exact samplers (their output law is the stated one, with no approximation; the
 * prepared *_exact_fill versions below draw the same laws several times faster):
 *   dpf_uniform_below        uniform on [0, n)                    Lemire (2019)
 *   dpf_bernoulli_rational   Bernoulli(num/den)                   lazy comparison
 *   dpf_bernoulli_big        Bernoulli(num/den), multi-word       lazy comparison
 *   dpf_bernoulli_exp        Bernoulli(exp(-num/den))             CKS 2020, Alg. 1 / Prop. 5
 *   dpf_bernoulli_exp_big    same, multi-word num and den
 *   dpf_geometric            P(k) = (1-q) q^k, q = exp(-s_den/s_num), k >= 0
 *   dpf_discrete_laplace     P(x) ∝ exp(-|x| s_den/s_num)        CKS 2020, Alg. 2
 *   dpf_discrete_gaussian    P(x) ∝ exp(-x^2 den/(2 num))         CKS 2020, Alg. 3
 * Their running time depends on the value drawn.  A result that does not fit in int64
 * (or a loop that would need more than 2^62 iterations, which never happens in practice)
 * gives DPF_E_RANGE instead of a wrong value.
 *
 * Constant-time samplers (certified, with a reported slack):
 *   dpf_discrete_laplace_ct, dpf_geometric_ct   bitwise geometric: two digits per 64-bit
 *                                               word, 3 compares per word, no branch on data
 *   dpf_discrete_gaussian_ct                    full scan of a cumulative table, 2 words
 * Each *_prepare computes the thresholds once from public parameters with rigorous
 * interval arithmetic (192-bit fixed point) and stores `slack`: a certified upper bound on
 * the total variation distance between one output and the exact law.  A mechanism that is
 * (eps, delta)-DP with exact noise is (eps, delta + k (1 + e^eps) slack)-DP when it uses k
 * draws from the constant-time sampler instead.
 *
 * Return conventions: functions returning int either return a status (DPF_OK, DPF_E_*) and
 * write the value through a pointer, or (the Bernoulli samplers) return 0 or 1, or
 * -DPF_E_PARAM / -DPF_E_RANGE on error.
 */
#ifndef DPFAST_DISCRETE_H
#define DPFAST_DISCRETE_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_BIG_MAX_LIMBS 20          /* multi-word rationals: at most 1280 bits */
#define DPF_DLAP_CT_MAX_DIGITS 62     /* bitwise geometric: |value| < 2^62 */
#define DPF_DGAUSS_CT_MAX 4096        /* cumulative table entries (sigma up to ~410) */

/* ---------------------------------------------------------------- exact */

/* Uniform on [0, n); n = 0 means 2^64 (one raw word). */
uint64_t dpf_uniform_below(dpf_rng_t *r, uint64_t n);
/* n in [1, 2^63]; DPF_E_PARAM otherwise. */
int dpf_uniform_below_fill(dpf_rng_t *r, uint64_t n, int64_t *out, size_t count);

/* 1 with probability num/den (den >= 1; num >= den gives 1). */
int dpf_bernoulli_rational(dpf_rng_t *r, uint64_t num, uint64_t den);
int dpf_bernoulli_rational_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out,
                                size_t n);
/* num and den: `limbs` little-endian words each, den > 0, limbs <= DPF_BIG_MAX_LIMBS. */
int dpf_bernoulli_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den, size_t limbs);
int dpf_bernoulli_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                           size_t limbs, int64_t *out, size_t n);

/* 1 with probability exp(-num/den) (den >= 1). */
int dpf_bernoulli_exp(dpf_rng_t *r, uint64_t num, uint64_t den);
int dpf_bernoulli_exp_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out, size_t n);
int dpf_bernoulli_exp_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                          size_t limbs);
int dpf_bernoulli_exp_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                               size_t limbs, int64_t *out, size_t n);

/* Scale t = s_num/s_den > 0 (both >= 1).  Geometric: P(k) ∝ exp(-k/t), k >= 0.
 * Discrete Laplace: P(x) ∝ exp(-|x|/t), x in Z. */
int dpf_geometric(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out);
int dpf_geometric_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out, size_t n);
int dpf_discrete_laplace(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out);
int dpf_discrete_laplace_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                              size_t n);

/* sigma^2 = sigma2_num/sigma2_den > 0: P(x) ∝ exp(-x^2 / (2 sigma^2)), x in Z. */
int dpf_discrete_gaussian(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                          int64_t *out);
int dpf_discrete_gaussian_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                               int64_t *out, size_t n);

/* ---------------------------------------------------------------- exact, prepared
 *
 * The same laws as dpf_geometric, dpf_discrete_laplace and dpf_discrete_gaussian, exactly,
 * several times faster on arrays, after a set-up (~0.1 ms) that depends only on the
 * public parameters.  A Geometric(exp(-1/t)) value is Y = B V + U: for t >= 32, B =
 * floor(t/4) and U (∝ exp(-u/t) on [0, B)) is drawn by [CKS]-style rejection; otherwise
 * B = 1.  V ~ Geometric(exp(-beta)), beta = B/t, is drawn by its binary digits, which are
 * independent Bernoulli(exp(-2^j beta)/(1 + exp(-2^j beta))) coins, up to the first j with
 * 2^j beta >= 6; one more coin, Bernoulli(exp(-2^D beta)), tells whether V >= 2^D (then
 * floor(V/2^D) is completed by [CKS] coins).  The sign of a discrete Laplace value is a
 * Bernoulli(q/(1+q)) coin: negative values are -(Y+1).
 *
 * The coins are drawn up to three per word (dpf_coin_group_t): a discrete Laplace value
 * costs 2 words at scale 1 (was 5) and 3 at large scales (was 7), plus U.
 * Each coin compares one uniform word w with a 64-bit interval [lo, hi] that certifiedly
 * contains 2^64 p: w < lo gives 1 and w > hi gives 0, exactly, since the uniform real in
 * [w, w+1)/2^64 is then certainly below or above p.  Otherwise (probability about 2^-64)
 * the comparison continues exactly with further words against a 704-bit certified
 * interval of p, computed on first need; only if that is still undecided (probability
 * below 2^-600 per draw) does the fill return DPF_E_RANGE rather than a value.
 * fast_bits < 64 makes the first comparison coarser (tests use it to exercise the exact
 * continuation); use 64. */
typedef struct dpf_coin {
    uint64_t y_int, y_num;        /* y = y_int + y_num / s_num */
    uint64_t lo, hi;              /* floor(2^fast_bits p) over the certified interval of p */
    uint32_t ratio;               /* 1: p = e^-y/(1 + e^-y); 0: p = e^-y */
} dpf_coin_t;

/* Up to three independent coins decided by one word: their joint outcome m (bit i = coin
 * first + i) is #{j : U >= C_j} for the cumulative probabilities C_j of m <= j (j < 2^count
 * - 1), each certified as [lo_j, hi_j] like a single coin's p.  The intervals of one group
 * are disjoint (checked when it is built, else the group is smaller), so a word ties with
 * at most one C_j, finished exactly like a single coin. */
#define DPF_COIN_GROUP 3
typedef struct dpf_coin_group {
    uint32_t first, count;
    uint64_t lo[(1 << DPF_COIN_GROUP) - 1], hi[(1 << DPF_COIN_GROUP) - 1];
} dpf_coin_group_t;

typedef struct dpf_dlap_exact {
    uint64_t s_num, s_den;        /* the scale t, in lowest terms */
    uint64_t block;               /* B */
    uint32_t digits;              /* D: coin[0..D) digits, coin[D] high part, coin[D+1] sign */
    uint32_t shift;               /* 64 - fast_bits */
    dpf_coin_t coin[DPF_DLAP_CT_MAX_DIGITS + 2];
    uint32_t n_geo, n_lap;        /* groups of coins 0..D (geometric), 0..D+1 (Laplace) */
    dpf_coin_group_t geo[DPF_DLAP_CT_MAX_DIGITS + 1];
    dpf_coin_group_t lap[DPF_DLAP_CT_MAX_DIGITS + 2];
} dpf_dlap_exact_t;

int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                           unsigned fast_bits);
int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out, size_t n);
int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                    size_t n);

/* [CKS] Algorithm 3 with the prepared exact DLap(t) as its proposal.  For t <= 1024 the
 * acceptance coin Bernoulli(exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))) of each |y| <= 16 t is
 * a certified one-word coin like those above (table: lo, hi per |y|; a tie continues
 * exactly against a 704-bit interval); other |y| use the multi-word exact coin. */
typedef struct dpf_dgauss_exact {
    uint64_t sigma2_num, sigma2_den;  /* sigma^2, in lowest terms */
    uint64_t t;                   /* floor(sigma) + 1 */
    uint64_t bt[2];               /* sigma2_den t */
    uint64_t D[6];                /* 2 sigma2_num sigma2_den t^2 */
    int dn;
    uint64_t ymax;                /* the table covers |y| <= ymax */
    uint64_t *table;              /* 2 (ymax + 1) words, or NULL; owned */
    dpf_dlap_exact_t proposal;
} dpf_dgauss_exact_t;

/* DPF_E_NOMEM if the table cannot be allocated.  Release with dpf_dgauss_exact_free. */
int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num, uint64_t sigma2_den,
                             unsigned fast_bits);
void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g);
int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, int64_t *out,
                                     size_t n);

/* The unprepared fills (dpf_geometric_fill, dpf_discrete_laplace_fill,
 * dpf_discrete_gaussian_fill) prepare and use these when n >= DPF_EXACT_FILL_MIN. */
#define DPF_EXACT_FILL_MIN 16384

/* ---------------------------------------------------------------- constant time */

/* Bitwise geometric.  With q = exp(-s_den/s_num), digit j of a Geometric(q) variable is an
 * independent Bernoulli(p_j), p_j = q^(2^j) / (1 + q^(2^j)); the sign is Bernoulli(q/(1+q))
 * (negative values are -(M+1)).  `digits` D is the least j with s_den 2^j / s_num >= 45 (so
 * q^(2^D) < 2^-64.9); it is at most 62.  The digits are drawn in pairs, one uniform word w
 * per pair: with a = p_2k, b = p_2k+1 and the joint law of m = d_2k + 2 d_2k+1 (cumulative
 * C_0 = (1-a)(1-b), C_1 = 1-b, C_2 = 1-ab), m = #{i < 3 : w >= threshold[k][i]} where
 * threshold[k][i] = C_i 2^64 rounded.  An odd last digit is a pair of one: m = [w >=
 * threshold[k][0]], threshold[k][0] = (1 - p) 2^64 rounded.  The sign is [w <
 * sign_threshold].  Work: 1 + ceil(D/2) words (ceil(D/2) for the geometric) and at most
 * 3 compares per word, none followed by a branch.
 *   slack_geometric = sum over all thresholds |threshold/2^64 - C| + q^(2^D)
 *   slack           = slack_geometric + |sign_threshold/2^64 - q/(1+q)|
 * each term replaced by a certified upper bound (see discrete.c). */
#define DPF_DLAP_CT_MAX_PAIRS ((DPF_DLAP_CT_MAX_DIGITS + 1) / 2)
typedef struct dpf_dlap_ct {
    uint64_t s_num, s_den;                            /* the scale, in lowest terms */
    uint32_t digits;
    uint64_t threshold[DPF_DLAP_CT_MAX_PAIRS][3];
    uint64_t sign_threshold;
    double slack_geometric;
    double slack;
} dpf_dlap_ct_t;

/* DPF_E_PARAM for a zero argument; DPF_E_RANGE when more than 62 digits would be needed
 * (t > 2^62/45, about 1.0e17).  The constant-time fills cannot fail; they return DPF_OK. */
int dpf_dlap_ct_prepare(dpf_dlap_ct_t *t, uint64_t s_num, uint64_t s_den);
int64_t dpf_discrete_laplace_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t);
int dpf_discrete_laplace_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out,
                                  size_t n);
int64_t dpf_geometric_ct(dpf_rng_t *r, const dpf_dlap_ct_t *t);
int dpf_geometric_ct_fill(dpf_rng_t *r, const dpf_dlap_ct_t *t, int64_t *out, size_t n);

/* Cumulative table of |X| for the discrete Gaussian: the magnitude is the number of
 * thresholds k < size with w >= threshold[k] (a scan of the whole table), the sign one
 * random bit.  threshold[k] = P(|X| <= k) * 2^64 rounded; size M is the least M >= 1 whose
 * certified tail bound sum_{m>M} exp(-m^2/(2 sigma^2)) <= sigma^2/M exp(-M^2/(2 sigma^2))
 * is <= 2^-66, or k + 1 for the first threshold[k] = 2^64 - 1 if that comes earlier.
 *   slack = sum_{k<M} |threshold[k]/2^64 - P(|X| <= k)| + P(|X| > M)
 * each term replaced by a certified upper bound. */
typedef struct dpf_dgauss_ct {
    uint64_t sigma2_num, sigma2_den;                  /* sigma^2, in lowest terms */
    uint32_t size;
    double slack;
    uint64_t threshold[DPF_DGAUSS_CT_MAX];
} dpf_dgauss_ct_t;

/* DPF_E_PARAM for a zero argument; DPF_E_RANGE when the table would need more than
 * DPF_DGAUSS_CT_MAX entries; DPF_E_NOMEM if scratch memory is unavailable. */
int dpf_dgauss_ct_prepare(dpf_dgauss_ct_t *t, uint64_t sigma2_num, uint64_t sigma2_den);
int64_t dpf_discrete_gaussian_ct(dpf_rng_t *r, const dpf_dgauss_ct_t *t);
int dpf_discrete_gaussian_ct_fill(dpf_rng_t *r, const dpf_dgauss_ct_t *t, int64_t *out,
                                   size_t n);

/* ---------------------------------------------------------------- certified arithmetic */

/* A certified interval [lo, hi] / 2^(64 (prec-1)) containing exp(-num/den), for num and den
 * of `limbs` little-endian words (den > 0, limbs <= 6) at a precision of prec limbs
 * (3 <= prec <= 12: 64 (prec-1) fractional bits).  lo and hi receive prec words each.
 * The thresholds of the samplers above are computed by the same code. */
int dpf_exp_neg_interval(const uint64_t *num, const uint64_t *den, size_t limbs, unsigned prec,
                         uint64_t *lo, uint64_t *hi);

#ifdef __cplusplus
}
#endif
#endif
