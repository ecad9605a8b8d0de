/* Constant-time samplers (csrc/consttime.c): certified, with a reported slack. */
#ifndef DPFAST_CONSTTIME_H
#define DPFAST_CONSTTIME_H

#include "dpfast/common.h"
#include "dpfast/exact.h"

#include <time.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <x86intrin.h>
#elif defined(_MSC_VER)
#include <intrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define DPF_DLAP_CT_MAX_DIGITS 62     /* bitwise geometric: |value| < 2^62 */
#define DPF_DGAUSS_CT_MAX 4096        /* cumulative table entries (sigma up to ~410) */

/* A cycle-resolution tick counter for the timing probe (bench/timing_probe.py): rdtsc on
 * x86, the virtual counter on arm64, clock() elsewhere.  Never used to sample. */
static DPF_INLINE uint64_t dpf_ticks(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    return (uint64_t)__rdtsc();
#elif defined(_MSC_VER) && (defined(_M_X64) || defined(_M_IX86))
    return (uint64_t)__rdtsc();
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return (uint64_t)clock();
#endif
}

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
 * each term replaced by a certified upper bound (see consttime.c). */
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

#ifdef __cplusplus
}
#endif
#endif
