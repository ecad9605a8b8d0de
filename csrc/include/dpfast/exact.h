/* Exact discrete samplers with no set-up (csrc/exact.c): the [CKS] loops, for scalars and
 * short arrays; the laws are the stated ones with no approximation.  See discrete.h for the
 * overview and return conventions. */
#ifndef DPFAST_EXACT_H
#define DPFAST_EXACT_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/certified.h"   /* DPF_BIG_MAX_LIMBS */
#include "dpfast/rng.h"
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

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
int dpf_bernoulli_exp_fill(dpf_rng_t *r, uint64_t num, uint64_t den, int64_t *out,
                           size_t n);
int dpf_bernoulli_exp_big(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                          size_t limbs);
int dpf_bernoulli_exp_big_fill(dpf_rng_t *r, const uint64_t *num, const uint64_t *den,
                               size_t limbs, int64_t *out, size_t n);

/* Scale t = s_num/s_den > 0 (both >= 1).  Geometric: P(k) ∝ exp(-k/t), k >= 0.
 * Discrete Laplace: P(x) ∝ exp(-|x|/t), x in Z. */
int dpf_geometric(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out);
int dpf_discrete_laplace(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out);

/* sigma^2 = sigma2_num/sigma2_den > 0: P(x) ∝ exp(-x^2 / (2 sigma^2)), x in Z. */
int dpf_discrete_gaussian(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                          int64_t *out);

/* The same laws for arrays by the [CKS] loops, value after value.  Callers use the fills
 * of discrete.h (dpf_geometric_fill, ...), which choose between these and the prepared
 * samplers by the array's length. */
int dpf_geometric_cks_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                           size_t n);
int dpf_discrete_laplace_cks_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den,
                                  int64_t *out, size_t n);
int dpf_discrete_gaussian_cks_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                                   int64_t *out, size_t n);

/* Internal, shared with csrc/prepared.c (which builds on the [CKS] coins). */

/* Fair bits one at a time from a reservoir word (sign bits of the fills). */
typedef struct {
    uint64_t bits;
    int left;
} dpf_bits_t;

static DPF_INLINE int dpf_next_bit(dpf_rng_t *r, dpf_bits_t *b)
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

int dpf_bern_exp_le1(dpf_rng_t *r, uint64_t num, uint64_t den);
int dpf_bern_exp_split(dpf_rng_t *r, uint64_t g_int, uint64_t g_frac, uint64_t den);
int dpf_dg_accept(dpf_rng_t *r, uint64_t a, const uint64_t bt[2], const uint64_t *D, int dn,
                  int64_t y);
int dpf_dg_setup(uint64_t *a, uint64_t *b, uint64_t *t, uint64_t bt[2], uint64_t D[6],
                 int *dn);
void dpf_dg_square(uint64_t N[6], uint64_t a, const uint64_t bt[2], uint64_t x);

#ifdef __cplusplus
}
#endif
#endif
