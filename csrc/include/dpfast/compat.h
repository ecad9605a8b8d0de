/* Samplers that other DP tools' mechanisms need and dpfast's own mechanisms did not:
 * bounded-domain (truncated) Laplace, gamma, and a full-precision uniform.  Used by the
 * drop-in backends (dpfast.compat); exposed in dpfast.random. */
#ifndef DPFAST_COMPAT_H
#define DPFAST_COMPAT_H

#include <stddef.h>
#include <stdint.h>
#include "dpfast/rng.h"
#include "dpfast/discrete.h"

/* Largest |grid index| the bounded release uses: sums of two such indices fit in int64. */
#define DPF_BOUNDED_MAX_STEPS ((int64_t)1 << 61)

/* Secure bounded-domain Laplace on the grid g = 2^k: for each x[i] (finite, already
 * clamped to [lower, upper] by the caller), c = round(x/g) clamped to the grid points
 * [lo, hi] of [lower, upper] (lo = ceil(lower/g), hi = floor(upper/g), each capped at
 * +-DPF_BOUNDED_MAX_STEPS; an infinite bound gives the cap), then n = c + Z with Z from
 * the prepared exact discrete Laplace, redrawn until lo <= n <= hi, and out[i] = fl(n g).
 * The caller guarantees lo <= hi.  Returns the first non-OK status of the sampler. */
int dpf_laplace_bounded_grid(dpf_rng_t *r, const dpf_dlap_exact_t *t, const double *x,
                             double *out, size_t n, int k, double lower, double upper);

/* Simulation path: x[i] + scale * L with L standard Laplace (float inverse CDF), redrawn
 * until it lies in [lower, upper]; x[i] in [lower, upper], lower < upper or scale = 0. */
void dpf_laplace_bounded_fast(dpf_rng_t *r, double scale, const double *x, double *out,
                              size_t n, double lower, double upper);

/* Gamma(shape, scale) (Marsaglia & Tsang 2000); shape >= 0, scale >= 0.  Simulation. */
void dpf_gamma_fill(dpf_rng_t *r, double shape, double scale, double *out, size_t n);

/* Uniform on [0, 1) with every double reachable: the uniform real rounded down to the
 * double below it (exponent by counting leading zero bits, 52 fresh mantissa bits). */
void dpf_uniform_fp_fill(dpf_rng_t *r, double *out, size_t n);

#endif
