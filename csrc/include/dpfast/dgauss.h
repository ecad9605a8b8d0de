/* Exact discrete Gaussian by blocks (csrc/dgauss.c): rejection from a step-function
 * envelope on blocks of width m = 2^bits, the block chosen by one uniform word against
 * certified cumulative thresholds.  The algorithm, its proof and its references are beside
 * the code.  Internal to the prepared sampler of prepared.h, which uses it for
 * t = floor(sigma) + 1 >= DPF_DGBLOCK_TMIN, i.e. at every sigma (measured faster than
 * [CKS] Algorithm 3 from sigma 0.5 to 1e8: bench/bench_discrete.py). */
#ifndef DPFAST_DGAUSS_H
#define DPFAST_DGAUSS_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/tables.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_DGBLOCK_TMIN 1 /* every sigma: faster than [CKS] Algorithm 3 throughout */
#define DPF_DGBLOCK_SPAN2 70 /* blocks cover |y| < J m, (J m)^2 >= 70 sigma^2 */

typedef struct dpf_dgblock {
    uint64_t a, b, t; /* sigma^2 = a/b in lowest terms; t = floor(sigma) + 1 */
    uint64_t m; /* block width 2^bits, t/32 <= m <= t/16 (or 1) */
    uint32_t bits;
    uint32_t nblk; /* J: blocks 0..J-1 of the table; block J is the tail */
    uint32_t ubits; /* the word's top bits that are the block's uniform U */
    uint32_t shift, cshift; /* 64 - min(fast_bits, ubits), 64 - fast_bits */
    uint32_t ks; /* E 2^54 = P K, K = 2^53 b/a in [kf, kf + 1) / 2^ks */
    uint64_t kf;
    dpf_thr_t thr[DPF_XT_MAX]; /* C_j = P(block <= j), j < J */
    uint16_t guide[1 << DPF_XT_GUIDE_BITS];
} dpf_dgblock_t;

/* sigma^2 = a/b (lowest terms), t = floor(sigma) + 1 >= DPF_DGBLOCK_TMIN; span2 >= 1 (tests
 * use small values to visit the tail; DPF_DGBLOCK_SPAN2 otherwise).  DPF_E_PARAM or
 * DPF_E_RANGE when the block sampler does not apply (the caller keeps [CKS] Algorithm 3). */
int dpf_dgblock_prepare(dpf_dgblock_t *k, uint64_t a, uint64_t b, uint64_t t,
                        unsigned fast_bits, unsigned span2);
/* e_tab: the certified table of 2^63 exp(-i/32) (dpf_dgauss_exact_t.e_tab). */
int dpf_dgblock_fill(dpf_rng_t *r, const dpf_dgblock_t *k, const uint64_t (*e_tab)[2],
                     int64_t *out, size_t n);

/* Test hooks, reached through the dpf_dgauss_block_* hooks of prepared.h (DPF_E_PARAM
 * when k is NULL or j, u are out of range): *plo <= 2^64 p <= *phi for the block coin
 * p = exp(-u (2 j m + u) / (2 sigma^2)) (crude: the first, wider enclosure); n draws of
 * that coin by the fill's own code (V from a fresh word's top bits); the stored bounds of
 * the threshold C_j (64 - shift bits). */
int dpf_dgblock_coin_bounds(const dpf_dgblock_t *k, const uint64_t (*e_tab)[2], uint64_t j,
                            uint64_t u, int crude, uint64_t *plo, uint64_t *phi);
int dpf_dgblock_coin_fill(dpf_rng_t *r, const dpf_dgblock_t *k, const uint64_t (*e_tab)[2],
                          uint64_t j, uint64_t u, int64_t *out, size_t n);
int dpf_dgblock_threshold(const dpf_dgblock_t *k, uint64_t j, uint64_t *lo, uint64_t *hi);

#ifdef __cplusplus
}
#endif
#endif
