/* Selection (exponential mechanism, report noisy max, permute-and-flip, top-k) and
 * randomized response: the C kernels behind dpfast.selection and
 * dpfast.randomized_response.  Pure C99, no Python.h.  The Python layer validates every
 * argument and computes the public grid parameters; nothing here decides privacy
 * parameters, but every line whose correctness is a privacy argument cites it.
 *
 * SECURE PATHS (exact on a public grid).
 * Scores are float64 or int64.  They are mapped to integer gaps below the current maximum
 * u* (the maximum over the candidates still in play):
 *   int64 scores:  d_i = u* - u_i exactly (0 <= d_i < 2^64);
 *   float scores:  d_i = min(DMAX, round((u* - u_i) / G)), G = 2^j the public grid step,
 *                  computed in double: the subtraction may round (error <= 2^-52 of the
 *                  result) and the rounding to an integer is whatever the FP mode does.
 * The sampled law is exactly the one with weights exp(-gamma d_i), gamma = g / 2^s per grid
 * unit, a dyadic rational computed by the Python layer from public parameters only.
 * Why this is epsilon-DP, and how gamma is chosen from (epsilon, Delta, G), is documented in
 * dpfast/selection.py (`_grid`) and beside the kernels in selection.c.
 *
 * FAST PATHS (simulation): ordinary floating point noise, Gumbel-max et al.; not
 * floating-point-attack safe.  Never a default.
 */
#ifndef DPFAST_SELECTION_H
#define DPFAST_SELECTION_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { DPF_SCORES_F64 = 0, DPF_SCORES_I64 = 1 };

/* Noise of report noisy max. */
enum { DPF_NOISE_GUMBEL = 0, DPF_NOISE_EXPONENTIAL = 1, DPF_NOISE_LAPLACE = 2 };

/* Float gaps saturate here: (u* - u_i)/G >= 2^50 gives d_i = 2^50.  Saturation is the
 * utility transform u_i -> max(u_i, u* - DMAX G), which has the sensitivity of u (see
 * selection.c), so it costs no privacy; its weight exp(-gamma 2^50) is negligible for every
 * gamma the Python layer admits. */
#define DPF_SEL_DMAX (((uint64_t)1) << 50)

/* Candidates: at most 2^40 (the proposal weights of the exact sampler fit in 128 bits). */
#define DPF_SEL_MAX_CANDIDATES (((uint64_t)1) << 40)

typedef struct dpf_sel_grid {
    double inv_grid;   /* float scores: 1/G = 2^-j (ignored for int64 scores) */
    uint64_t g;        /* gamma = g / 2^s per grid unit; g < 2^63 */
    uint32_t s;        /* 0 <= s <= 63 */
} dpf_sel_grid_t;

/* Builds the constants of the exact layer coins once (called at import). */
void dpf_selection_init(void);
/* For the tests: (k, J, beta numerator, beta denominator) of the exact coins
 * Bernoulli(2^10 e^-7) (row 0) and Bernoulli(2^LB[r] e^-r) (row r = 1..6). */
void dpf_selection_constants(uint64_t out[7][4]);

/* Index of the first maximum of u[0..m); DPF_E_PARAM if m == 0 or a float score is NaN or
 * infinite (the Python layer reports it before any budget is charged). */
int dpf_scores_argmax(const void *u, int kind, size_t m, size_t *idx);

/* ---------------------------------------------------------------- secure (exact) */

/* Exponential mechanism: returns i with probability exp(-gamma d_i) / sum_j exp(-gamma d_j),
 * exactly (no floating point touches a score-dependent probability). */
int dpf_em_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                  const dpf_sel_grid_t *grid, size_t *out);
/* The same law with every gap increased by `shift` grid units (weights exp(-gamma (d_i +
 * shift)), the same normalised law): lets the tests drive the sampler's high and deep
 * layers.  shift <= DMAX for float scores, < 2^62 for int64 scores. */
int dpf_em_secure_shifted(dpf_rng_t *r, const void *u, int kind, size_t m,
                          const dpf_sel_grid_t *grid, uint64_t shift, size_t *out);

/* Peeling: k rounds of dpf_em_secure, each over the candidates not yet chosen, with the
 * grid's gamma in every round; out[0..k) in selection order. */
int dpf_topk_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                    const dpf_sel_grid_t *grid, size_t k, int64_t *out);

/* Rounds [t0, t1) of dpf_topk_secure with a caller-owned exclusion buffer layer[0..m),
 * all zero before round 0 and passed unchanged between calls (so that a caller can check
 * for interrupts between calls). */
int dpf_topk_secure_rounds(dpf_rng_t *r, const void *u, int kind, size_t m,
                           const dpf_sel_grid_t *grid, uint8_t *layer, size_t t0, size_t t1,
                           int64_t *out);

/* Report noisy max on the grid: argmax_i (Z_i - d_i), ties broken uniformly at random, with
 * Z_i exact discrete Laplace of scale 1/gamma grid units (noise = DPF_NOISE_LAPLACE) or
 * exact geometric with P(Z = z) proportional to exp(-gamma z), z >= 0
 * (DPF_NOISE_EXPONENTIAL: the law of permute-and-flip on the grid).  gamma must be >= 2^-40
 * (g >= 1 and the noise fits in int64); DPF_E_RANGE otherwise. */
int dpf_noisy_max_secure(dpf_rng_t *r, const void *u, int kind, size_t m,
                         const dpf_sel_grid_t *grid, int noise, size_t *out);

/* ---------------------------------------------------------------- fast (simulation) */

/* argmax_i gamma (u_i - u*) + N_i with N_i iid Gumbel(0,1), Exponential(1) or Laplace(0,1).
 * Scores must be finite; gamma > 0 finite. */
int dpf_noisy_max_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, int noise,
                       size_t *out);
/* One-shot Gumbel top-k: the k largest of gamma (u_i - u*) + G_i, largest first. */
int dpf_topk_fast(dpf_rng_t *r, const double *u, size_t m, double gamma, size_t k,
                  int64_t *out);

/* ---------------------------------------------------------------- randomized response */

/* Claim 3.5 (Dwork & Roth): per respondent, a first fair coin; tails: the truth; heads: a
 * second fair coin.  truth[i] in {0, 1}. */
void dpf_rr_coins(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n);
/* out[i] = truth[i] XOR Bernoulli(t / 2^64), exactly; t <= 2^63. */
void dpf_rr_binary(dpf_rng_t *r, const uint8_t *truth, uint8_t *out, size_t n, uint64_t t);
/* With probability t / 2^64 (exactly) a value uniform on the k - 1 others, else the truth;
 * truth[i] in [0, k), 2 <= k <= 2^62.  t = 2^64 - 1 means: uniform on [0, k), ignoring the
 * truth. */
void dpf_rr_kary(dpf_rng_t *r, const int64_t *truth, int64_t *out, size_t n, uint64_t k,
                 uint64_t t);

#ifdef __cplusplus
}
#endif
#endif
