/* Multi-word integers and certified fixed-point interval arithmetic (csrc/certified.c). */
#ifndef DPFAST_CERTIFIED_H
#define DPFAST_CERTIFIED_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_BIG_MAX_LIMBS 20          /* multi-word rationals: at most 1280 bits */

/* ---------------------------------------------------------------- certified arithmetic */

/* A certified interval [lo, hi] / 2^(64 (prec-1)) containing exp(-num/den), for num and den
 * of `limbs` little-endian words (den > 0, limbs <= 6) at a precision of prec limbs
 * (3 <= prec <= 12: 64 (prec-1) fractional bits).  lo and hi receive prec words each.
 * The thresholds of the samplers above are computed by the same code. */
int dpf_exp_neg_interval(const uint64_t *num, const uint64_t *den, size_t limbs,
                         unsigned prec, uint64_t *lo, uint64_t *hi);

/* Internal: multi-word integers and certified fixed-point intervals, for the samplers'
 * set-up and tie-breaking (csrc/certified.c). */
#define DPF_BIGW (DPF_BIG_MAX_LIMBS + 4)
#define DPF_FXMAX 12 /* at most 704 fractional bits */
#define DPF_CTN 4 /* precision of the constant-time tables: 192 fractional bits */
typedef struct {
    uint64_t w[DPF_FXMAX];
} dpf_fx_t;
typedef struct {
    dpf_fx_t lo, hi;
} dpf_fxi_t;

int dpf_big_bitlen(const uint64_t *a, int an);
int dpf_big_cmp(const uint64_t *a, int an, const uint64_t *b, int bn);
int dpf_big_len(const uint64_t *a, int n);
int dpf_big_mul(uint64_t *out, const uint64_t *a, int an, const uint64_t *b, int bn);
int dpf_big_mul_u64(uint64_t *out, const uint64_t *a, int an, uint64_t k);
int dpf_big_shl(uint64_t *out, const uint64_t *a, int an, int s);
void dpf_big_sub(uint64_t *a, int an, const uint64_t *b, int bn);
void dpf_fx_absdiff(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n);
int dpf_fx_add(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n);
int dpf_fx_add_at(dpf_fx_t *z, int limb, int n);
int dpf_fx_cmp(const dpf_fx_t *x, const dpf_fx_t *y, int n);
void dpf_fx_coin_p(dpf_fxi_t *p, uint64_t k, uint64_t num, uint64_t den, int ratio,
                   const dpf_fxi_t *e1, int n);
void dpf_fx_div(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int up, int n);
void dpf_fx_div_u64(dpf_fx_t *z, const dpf_fx_t *x, uint64_t d, int up, int n);
void dpf_fx_exp_m1(dpf_fxi_t *e1, int n);
void dpf_fx_exp_neg(dpf_fxi_t *res, uint64_t k, const dpf_fx_t *flo, const dpf_fx_t *fhi,
                    const dpf_fxi_t *e1, int n);
void dpf_fx_exp_neg_big(dpf_fxi_t *res, const uint64_t *N, int nn, const uint64_t *D,
                        int dn, const dpf_fxi_t *e1, int n);
void dpf_fx_exp_pos(dpf_fx_t *lo, dpf_fx_t *hi, const dpf_fx_t *flo, const dpf_fx_t *fhi,
                    int n);
void dpf_fx_half(dpf_fx_t *z, const dpf_fx_t *x, int up, int n);
void dpf_fx_int(dpf_fx_t *x, uint64_t v, int n);
int dpf_fx_mul(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int up, int n);
int dpf_fx_mul_u64(dpf_fx_t *z, const dpf_fx_t *x, uint64_t k, int n);
void dpf_fx_ratio(dpf_fx_t *z, uint64_t nhi, uint64_t nlo, uint64_t d, int up, int n);
void dpf_fx_sub(dpf_fx_t *z, const dpf_fx_t *x, const dpf_fx_t *y, int n);
uint64_t dpf_fx_threshold(const dpf_fxi_t *p, dpf_fx_t *err, int n);
double dpf_fx_to_double_up(const dpf_fx_t *x, int n);
void dpf_fx_zero(dpf_fx_t *x);
uint64_t dpf_gcd64(uint64_t a, uint64_t b);

#ifdef __cplusplus
}
#endif
#endif
