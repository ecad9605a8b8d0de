/* The floating-point-safe ("grid") release of float values (Mironov 2012).
 *
 * A release is y = fl(g * (round(x / g) + z)): x is rounded to the power-of-two grid
 * g = 2^k, integer noise z is added exactly, and the exact sum is rounded to a double
 * once.  The set of possible outputs is the grid, whatever x is, so no output rules out
 * any input; and y is a function of the integer round(x/g) + z alone, so it is
 * post-processing of an integer mechanism whose privacy the caller proves. */
#ifndef DPFAST_GRID_H
#define DPFAST_GRID_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = fl(g * (round_half_even(x[i] / g) + z[i])) for i < n, with g = 2^k,
 * -1000 <= k <= 1000.  x[i] must be finite.  Returns DPF_E_RANGE (and writes nothing
 * meaningful) if some |z[i]| >= 2^53, where g * z[i] would not be exact. */
int dpf_grid_add(const double *x, const int64_t *z, double *out, size_t n, int k);

#endif
