/* Discrete samplers: exact (Canonne, Kamath, Steinke 2020) and constant time (certified).
 *
 * One file per job, each with its header (included here):
 *   exact.h / exact.c            the [CKS] loops, no set-up
 *   tables.h / tables.c          certified threshold tables and their exact ties
 *   prepared.h / prepared.c      prepared exact samplers: certified coins, exact ties
 *   dgauss.h / dgauss.c          the prepared discrete Gaussian by blocks
 *   consttime.h / consttime.c    constant-time samplers and their slack
 *   certified.h / certified.c    multi-word integers, certified fixed-point intervals
 *   discrete.c                   the fills below: the choice of loop or prepared sampler
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

#include "dpfast/exact.h"
#include "dpfast/prepared.h"
#include "dpfast/consttime.h"
#include "dpfast/certified.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The fills of the exact laws (discrete.c): the [CKS] loops of exact.h (*_cks_fill) below
 * DPF_EXACT_FILL_MIN values, the prepared samplers of prepared.h (set up for the call)
 * from there on.  The same law either way; the status conventions of exact.h. */
#define DPF_EXACT_FILL_MIN 16384
int dpf_geometric_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                       size_t n);
int dpf_discrete_laplace_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                              size_t n);
int dpf_discrete_gaussian_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                               int64_t *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
