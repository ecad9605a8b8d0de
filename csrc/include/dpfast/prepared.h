/* Prepared exact samplers (csrc/prepared.c): the same laws as exact.h, several times faster
 * on arrays, after a set-up from public parameters. */
#ifndef DPFAST_PREPARED_H
#define DPFAST_PREPARED_H

#include "dpfast/certified.h"
#include "dpfast/exact.h"
#include "dpfast/tables.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- exact, prepared
 *
 * The same laws as dpf_geometric, dpf_discrete_laplace and dpf_discrete_gaussian, exactly,
 * several times faster on arrays, after a set-up (~0.1 ms) that depends only on the
 * public parameters (the algorithm and its proof are beside the code in prepared.c).
 *
 * A Geometric(q) value, q = exp(-1/t), is Y = 2^s G + L with G = floor(Y / 2^s) and
 * L = Y mod 2^s independent; s is the largest with 2^s / t <= 1/32 (s = 0 below t = 256):
 *   - G ~ Geometric(rho), rho = q^(2^s), by inversion of one uniform word against a table
 *     of certified cumulative thresholds C_g = 1 - rho^(g+1), g < m (a guide table indexed
 *     by the word's top bits finds the cell); G >= m (probability rho^m <= e^-8 for s > 0,
 *     at most e^-2 for s = 0) restarts
 *     with G - m ~ Geometric(rho), by memorylessness;
 *   - L (s > 0) is proposed uniform on [0, 2^s) and accepted with probability q^L, decided
 *     by a certified polynomial enclosure of exp(-L/t) (L/t <= 1/32: acceptance >= 0.97).
 * A discrete Laplace value is +-Y with a fair sign, (-, 0) rejected ([CKS] Algorithm 2);
 * for s = 0 it is |X| from its own cumulative table (P(|X| <= k) = 1 - 2 q^(k+1)/(1+q))
 * and a fair sign bit for |X| > 0 (the word's lowest bit).  About one word per value for
 * t < 256; also one for 2^8 <= t < 2^36, where the low s + 9 bits of G's word are L's
 * first proposal, the sign and the first 8 bits of its coin's uniform (G is decided by the
 * other 64 - s - 9 >= 24 bits, continued exactly by fresh words on a tie); two above (G's
 * word; L's word, which also holds the sign).
 *
 * Every comparison of a uniform word with a certified threshold or coin is exact, by the
 * discipline of tables.h: one its first word leaves undecided (probability about 2^-64 per
 * threshold; below 2^-24 for the polynomial enclosure) continues exactly, and only one still
 * undecided after 704 bits returns DPF_E_RANGE.  fast_bits < 64 makes the first comparison
 * coarser (tests use it to exercise the exact continuation); use 64. */

typedef struct dpf_dlap_exact {
    uint64_t s_num, s_den; /* the scale t, in lowest terms */
    uint64_t block; /* 2^s */
    uint32_t digits; /* s: the low digits L drawn by rejection */
    uint32_t shift; /* 64 - min(fast_bits, ubits): the tables' */
    uint32_t cshift; /* 64 - fast_bits: L's coin's */
    uint32_t ubits; /* bits of G's word that belong to its uniform (below 64:
                                     the others start L's word, see prepared.c) */
    uint32_t n_geo, n_lap; /* words per value on the common path */
    uint32_t m_geo, m_mag; /* table sizes (m_mag = 0 when s > 0) */
    uint64_t r_int, r_frac; /* 2^64 s_den / s_num as 64.64 fixed point (s > 0) */
    dpf_thr_t geo[DPF_XT_MAX]; /* C_g = P(G <= g) */
    dpf_thr_t mag[DPF_XT_MAX]; /* s = 0: P(|X| <= k) of the discrete Laplace */
    uint16_t guide_geo[1 << DPF_XT_GUIDE_BITS], guide_mag[1 << DPF_XT_GUIDE_BITS];
} dpf_dlap_exact_t;

int dpf_dlap_exact_prepare(dpf_dlap_exact_t *t, uint64_t s_num, uint64_t s_den,
                           unsigned fast_bits);
int dpf_geometric_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                             size_t n);
int dpf_discrete_laplace_exact_fill(dpf_rng_t *r, const dpf_dlap_exact_t *t, int64_t *out,
                                    size_t n);

/* [CKS] Algorithm 3 with the prepared exact DLap(t) as its proposal.  For t <= 1024 the
 * acceptance coin Bernoulli(exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))) of each |y| <= 16 t is
 * a certified one-word coin like those above (table: lo, hi per |y|; a tie continues
 * exactly against a 704-bit interval).  Other |y| (and every |y| for t > 1024) use, when
 * t >= 64, a one-word coin against a certified enclosure of the exponential computed per
 * draw in 64-bit fixed point (tie: the same exact continuation), else the multi-word exact
 * coin. */
typedef struct dpf_dgauss_exact {
    uint64_t sigma2_num, sigma2_den; /* sigma^2, in lowest terms */
    uint64_t t; /* floor(sigma) + 1 */
    uint64_t bt[2]; /* sigma2_den t */
    uint64_t D[6]; /* 2 sigma2_num sigma2_den t^2 */
    int dn;
    uint64_t ymax; /* the table covers |y| <= ymax */
    uint64_t *table; /* 2 (ymax + 1) words, or NULL; owned */
    /* the computed acceptance coin (t >= 64; prepared.c, "computed coin") */
    int fast;
    uint32_t dk; /* k: |y| - mu is handled in units of 2^-k */
    uint64_t mk[2]; /* floor(2^k mu) from below, 128 bits little-endian */
    uint64_t dmaxk; /* dmax 2^k: |y - mu| >= dmax gives an exponent >= 64 */
    uint64_t kf; /* floor(2^64 K), K = 2^(118-2k) / (2 sigma^2) < 1 */
    uint64_t e_tab[45 * 32][2]; /* [lo, hi] of 2^63 exp(-i/32) (t >= 64) */
    dpf_dlap_exact_t proposal;
    struct dpf_dgblock *blk; /* t >= DPF_DGBLOCK_TMIN: the block sampler (dgauss.h),
                                     used instead of Algorithm 3; owned */
} dpf_dgauss_exact_t;

/* DPF_E_NOMEM if the table cannot be allocated.  Release with dpf_dgauss_exact_free.
 * From t = floor(sigma) + 1 >= DPF_DGBLOCK_TMIN the fill uses the block sampler of
 * dgauss.c (the same law, fewer words and proposals); _ex with span2 = 0 keeps Algorithm 3
 * at every sigma (tests and benchmarks compare the two), span2 > 0 sets the blocks' span
 * (tests: a small one visits the block sampler's tail), DPF_DGBLOCK_SPAN2 by default. */
int dpf_dgauss_exact_prepare(dpf_dgauss_exact_t *g, uint64_t sigma2_num,
                             uint64_t sigma2_den, unsigned fast_bits);
int dpf_dgauss_exact_prepare_ex(dpf_dgauss_exact_t *g, uint64_t sigma2_num,
                                uint64_t sigma2_den, unsigned fast_bits, unsigned span2);
/* Block width m and block count J of the block sampler, or 0 and 0 (Algorithm 3). */
void dpf_dgauss_block_info(const dpf_dgauss_exact_t *g, uint64_t *m, uint64_t *nblk);
void dpf_dgauss_exact_free(dpf_dgauss_exact_t *g);
int dpf_discrete_gaussian_exact_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g,
                                     int64_t *out, size_t n);

/* Test hooks for the certified enclosures of prepared.c: *plo <= 2^64 p <= *phi for the
 * acceptance probability p of the proposal |y| = x (crude: the first, wider enclosure;
 * DPF_E_PARAM if g has no computed coin), and for p = exp(-x), xl/2^64 <= x <= xh/2^64 <= 1/32. */
int dpf_dgauss_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t x, int crude,
                           uint64_t *plo, uint64_t *phi);
void dpf_exp_small_bounds(uint64_t xl, uint64_t xh, uint64_t *plo, uint64_t *phi);

/* Test hooks of the block sampler (dgauss.h; DPF_E_PARAM without a block sampler or out of
 * range): *plo <= 2^64 p <= *phi for the block coin p = exp(-u (2 j m + u) / (2 sigma^2))
 * (crude: the first, wider enclosure); n draws of that coin by the fill's own code (V from
 * a fresh word's top bits); the stored bounds of the threshold C_j (64 - shift bits). */
int dpf_dgauss_block_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t u,
                                 int crude, uint64_t *plo, uint64_t *phi);
int dpf_dgauss_block_coin_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t j,
                               uint64_t u, int64_t *out, size_t n);
int dpf_dgauss_block_threshold(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t *lo,
                               uint64_t *hi);

#ifdef __cplusplus
}
#endif
#endif
