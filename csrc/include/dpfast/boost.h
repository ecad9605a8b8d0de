/* Boosting for People (Dwork, Rothblum, Vadhan 2010, Sec. 6, Figure 2): the reweighting
 * kernels behind dpfast.learn.  Pure C99, no Python.h.  The Python layer validates every
 * argument and computes every public quantity (alpha, tau, the grid's ends); nothing
 * here decides a privacy parameter.  The arguments are in docs/learn.md ("The reweighting
 * kernels' arguments"): R1 (the public grid), R2 (the score's sensitivity), R3 (the exact
 * solve for w), R4 (why the capped weights make neighbouring sampling laws close).
 *
 * Weights are kept in the linear domain: v_i in (0, 1]; the Python layer refuses
 * parameters whose public lower bound on min_i v_i (lambda_t) could leave the normal
 * doubles, so no weight underflows.
 */
#ifndef DPFAST_BOOST_H
#define DPFAST_BOOST_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* a_i = v_i * (c_i > 0 ? down : up): the uncapped AdaBoost factor e^{-alpha c_i} with
 * c_i = h_t(x_i) y_i in {-1, +1} (Figure 2 step 5; down = e^-alpha, up = e^alpha). */
void dpf_boost_premultiply(const double *v, const int8_t *c, size_t m, double down,
                           double up, double *a);

/* The public geometric grid of the grid variant (R1):
 * g[j] = g_min r^j (by repeated multiplication, a deterministic function of the public
 * g_min and r) for the points strictly below g_max, then g_max.  At most n_max points;
 * *n_out receives the number written (>= 1).  DPF_E_PARAM unless 0 < g_min, r > 1,
 * n_max >= 1 (all finite). */
int dpf_boost_grid(double g_min, double r, double g_max, size_t n_max, double *g,
                   size_t *n_out);

/* S(g_j) = sum_i min(a_i / g_j, 1) for every point of an ascending grid g[0..n), in
 * O(m + n) plus one log per item: each a_i is put in its grid cell (an estimate from the
 * logarithm, corrected by exact comparisons with the table, so the cell is exact with
 * respect to g), then S(g_j) = #{a >= g_j} + (sum_{a < g_j} a) / g_j from prefix sums
 * over the cells.  cnt (n + 1 size_t) and sum (n + 1 doubles) are scratch space. */
int dpf_boost_grid_sums(const double *a, size_t m, const double *g, size_t n, size_t *cnt,
                        double *sum, double *S);

/* The unique w > min_i a_i with sum_i min(a_i / w, 1) = target, 0 < target < m (R3,
 * closed form after sorting: O(m log m)).  work: 2m doubles.  *ncapped receives
 * the number c of capped items (c <= ceil(target) - 1, Claim 6.4).  DPF_E_PARAM if the
 * target is out of range or an a_i is not finite and > 0. */
int dpf_boost_solve_w(const double *a, size_t m, double target, double *work, double *w,
                      size_t *ncapped);

/* v_i = min(a_i / w, 1) (the cap of Figure 2 step 5); *ncapped = #{a_i >= w};
 * *mass = sum_i v_i (L_t: D_{t+1} = v / L_t). */
void dpf_boost_cap(const double *a, size_t m, double w, double *v, size_t *ncapped,
                   double *mass);

/* k independent draws from the law q_i / Q with q_i = ceil(v_i 2^K), Q = sum q_i,
 * K = 63 - bitlen(m): exact (cumulative sums in uint64, a Lemire-uniform integer below
 * Q, a binary search).  Rounding each weight *up* keeps q_i <= 2^K and Q >= 2^K sum v,
 * which is all the statistical-distance bound of R4 uses (q_j common to
 * neighbours for j != i), so the bound holds for the sampled law as it is.
 * v_i must lie in (0, 1]; cum: m uint64 of scratch.  m in [1, 2^40]. */
int dpf_boost_sample(dpf_rng_t *r, const double *v, size_t m, size_t k, uint64_t *cum,
                     int64_t *out);

#ifdef __cplusplus
}
#endif
#endif
