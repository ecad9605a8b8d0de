/* The sampler choice (discrete.h): an array of one of exact.h's laws is drawn by the
 * [CKS] loops (exact.c) below DPF_EXACT_FILL_MIN values and by the prepared samplers
 * (prepared.c) from there on; both draw the stated law exactly, so the choice is one of
 * speed only (the prepared set-up, ~0.1 ms, pays for itself on long arrays).  This layer
 * sits above both and nothing below calls it. */
#include <stdlib.h>
#include "dpfast/discrete.h"

int dpf_geometric_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out, size_t n)
{
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        /* the prepared tables (~33 KB) live on the heap: a worker thread's stack may be
         * as small as 128 KB (musl) */
        dpf_dlap_exact_t *x = malloc(sizeof *x);
        if (x == NULL) return DPF_E_NOMEM;
        st = dpf_dlap_exact_prepare(x, s_num, s_den, 64);
        if (st == DPF_OK) st = dpf_geometric_exact_fill(r, x, out, n);
        free(x);
        return st;
    }
    return dpf_geometric_cks_fill(r, s_num, s_den, out, n);
}

int dpf_discrete_laplace_fill(dpf_rng_t *r, uint64_t s_num, uint64_t s_den, int64_t *out,
                              size_t n)
{
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        dpf_dlap_exact_t *x = malloc(sizeof *x);    /* ~33 KB: heap, as above */
        if (x == NULL) return DPF_E_NOMEM;
        st = dpf_dlap_exact_prepare(x, s_num, s_den, 64);
        if (st == DPF_OK) st = dpf_discrete_laplace_exact_fill(r, x, out, n);
        free(x);
        return st;
    }
    return dpf_discrete_laplace_cks_fill(r, s_num, s_den, out, n);
}

int dpf_discrete_gaussian_fill(dpf_rng_t *r, uint64_t sigma2_num, uint64_t sigma2_den,
                               int64_t *out, size_t n)
{
    int st;
    if (n >= DPF_EXACT_FILL_MIN) {
        dpf_dgauss_exact_t *x = malloc(sizeof *x);   /* ~56 KB: heap, as above */
        if (x == NULL) return DPF_E_NOMEM;
        st = dpf_dgauss_exact_prepare(x, sigma2_num, sigma2_den, 64);
        if (st == DPF_OK) st = dpf_discrete_gaussian_exact_fill(r, x, out, n);
        dpf_dgauss_exact_free(x);
        free(x);
        return st;
    }
    return dpf_discrete_gaussian_cks_fill(r, sigma2_num, sigma2_den, out, n);
}
