/* Certified threshold tables (see tables.h): the guide table of a sorted threshold table
 * and the exact continuation of a uniform against a certified interval, shared by the
 * prepared samplers (prepared.c, dgauss.c). */
#include "dpfast/certified.h"
#include "dpfast/status.h"
#include "dpfast/tables.h"

#define XT_GUIDE_SHIFT (64 - DPF_XT_GUIDE_BITS)

void dpf_guide_build(const dpf_thr_t *thr, uint32_t m, uint16_t *guide, uint32_t shift)
{
    /* guide[i]: the thresholds certainly below every word of cell i (hi is nondecreasing) */
    uint32_t i;
    for (i = 0; i < (1u << DPF_XT_GUIDE_BITS); i++) {
        uint64_t cellmin = ((uint64_t)i << XT_GUIDE_SHIFT) >> shift;
        uint32_t k = i ? guide[i - 1] : 0;
        while (k < m && thr[k].hi < cellmin) k++;
        guide[i] = (uint16_t)k;
    }
}

/* Is U < p, for the uniform U whose first *nw words are words[]?  U lies in
 * [u, u + 2^(-64 nw)): 1 once that interval is below the certified 704-bit interval of p,
 * 0 once it is at or above it, else one more word (kept: later comparisons of the same U
 * use it).  Undecided after 704 bits (probability < 2^-600): *err. */
int dpf_u_below(dpf_rng_t *r, uint64_t *words, int *nw, const dpf_fxi_t *p, int *err)
{
    const int n = DPF_FXMAX;
    dpf_fx_t u, uhi;
    int j;
    for (;;) {
        dpf_fx_zero(&u);
        for (j = 0; j < *nw; j++) u.w[n - 2 - j] = words[j];
        uhi = u;
        dpf_fx_add_at(&uhi, n - 1 - *nw, n);
        if (dpf_fx_cmp(&uhi, &p->lo, n) <= 0) return 1;
        if (dpf_fx_cmp(&u, &p->hi, n) >= 0) return 0;
        if (*nw == n - 1) {
            *err = DPF_E_RANGE;
            return 0;
        }
        words[(*nw)++] = dpf_next_u64(r);
    }
}
