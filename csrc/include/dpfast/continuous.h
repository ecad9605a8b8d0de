/* Continuous samplers: the fast "simulation" path.  Not floating-point-attack safe
 * (Mironov 2012): never a mechanism's default.  Each fill writes n values to out. */
#ifndef DPFAST_CONTINUOUS_H
#define DPFAST_CONTINUOUS_H

#include <stddef.h>
#include "dpfast/rng.h"

void dpf_continuous_init(void);   /* builds the ziggurat tables once */

double dpf_std_exponential(dpf_rng_t *r);
double dpf_std_normal(dpf_rng_t *r);
double dpf_std_laplace(dpf_rng_t *r);
double dpf_std_gumbel(dpf_rng_t *r);

void dpf_uniform_fill(dpf_rng_t *r, double low, double width, double *out, size_t n);
void dpf_exponential_fill(dpf_rng_t *r, double scale, double *out, size_t n);
void dpf_normal_fill(dpf_rng_t *r, double sigma, double *out, size_t n);
void dpf_laplace_fill(dpf_rng_t *r, double scale, double *out, size_t n);
void dpf_gumbel_fill(dpf_rng_t *r, double scale, double *out, size_t n);

#endif
