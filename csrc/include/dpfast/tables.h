/* Certified threshold tables (csrc/tables.c): the layer under the prepared samplers
 * (prepared.c, dgauss.c), above the exact samplers and the certified arithmetic.
 *
 * A prepared sampler inverts one uniform word against a table of nondecreasing cumulative
 * thresholds C_0 <= C_1 <= ..., each stored as the 64-bit floor bounds [lo, hi] of a
 * certified interval of C (certified.c: outward rounding, nothing from libm), located by a
 * guide table indexed by the word's top DPF_XT_GUIDE_BITS bits ([CA74] H. C. Chen,
 * Y. Asau, "On generating random variates from an empirical distribution", AIIE
 * Transactions 6, 1974).
 *
 * Every comparison of a uniform word w with a certified interval [lo, hi] of 2^64 p is
 * exact: w < lo gives U < p and w > hi gives U >= p, since the uniform real in
 * [w, w+1)/2^64 is then certainly below or above p.  Otherwise (probability about 2^-64
 * per threshold; below 2^-24 for the polynomial enclosure) the comparison continues exactly
 * with further words against a 704-bit certified interval of p, computed on first need
 * (dpf_u_below); only if that is still undecided (probability below 2^-600 per draw) does
 * the fill return DPF_E_RANGE rather than a value. */
#ifndef DPFAST_TABLES_H
#define DPFAST_TABLES_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/certified.h"
#include "dpfast/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_XT_MAX 512          /* table entries: m <= 512 */
#define DPF_XT_GUIDE_BITS 12
typedef struct dpf_thr {
    uint64_t lo, hi; /* floor(2^fast_bits C) over the certified interval of C */
} dpf_thr_t;

/* The exact continuation of a uniform U (its first *nw words in words[]) against a
 * 704-bit interval p: 1 if U < p, 0 if not, *err = DPF_E_RANGE if undecided. */
int dpf_u_below(dpf_rng_t *r, uint64_t *words, int *nw, const dpf_fxi_t *p, int *err);
/* The guide table of nondecreasing thresholds thr[0..m-1] (64 - shift bits each). */
void dpf_guide_build(const dpf_thr_t *thr, uint32_t m, uint16_t *guide, uint32_t shift);

#ifdef __cplusplus
}
#endif
#endif
