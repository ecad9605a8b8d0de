/* Prepared exact samplers (csrc/prepared.c): the same laws as exact.h, several times faster
 * on arrays, after a set-up from public parameters. */
#ifndef DPFAST_PREPARED_H
#define DPFAST_PREPARED_H

#include "dpfast/exact.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
