/* Query release on a dense histogram over a product domain: marginal reductions and
 * multiplicative-weights (MW) updates by implicit strides.
 *
 * The histogram is a C-order array of shape shape[0..ndim-1] (ndim <= DPF_REL_MAXDIM).
 * A marginal keeps the attributes in the bit mask `keep` and sums over the others; a
 * marginal cell query fixes the attributes in `fixed` to vals[] (vals is indexed by
 * attribute, entries of free attributes are ignored).  No index list and no |Q| x |X|
 * matrix is ever built: every loop walks the array by blocks of merged dimensions.
 *
 * Nothing here touches privacy: these are the exact answers (of the data, or of a public
 * synthetic histogram) and post-processing steps on released values.  The Python layer
 * (dpfast.release) validates shapes, masks and values before calling. */
#ifndef DPFAST_RELEASE_H
#define DPFAST_RELEASE_H

#include <stddef.h>
#include <stdint.h>

#define DPF_REL_MAXDIM 32

/* out[prod(shape[k], k in keep)] = sum of src over the attributes not in keep. */
int dpf_rel_reduce(const double *src, int ndim, const int64_t *shape, uint32_t keep,
                   double *out);

/* w[x] *= factor[cell_keep(x)] for every x (the broadcast inverse of dpf_rel_reduce). */
int dpf_rel_expand_mul(double *w, int ndim, const int64_t *shape, uint32_t keep,
                       const double *factor);

/* Sum of w over the cells with x_a = vals[a] for a in fixed. */
double dpf_rel_slice_sum(const double *w, int ndim, const int64_t *shape, uint32_t fixed,
                         const int64_t *vals);

/* Multiply w by factor on the same cells. */
void dpf_rel_slice_scale(double *w, int ndim, const int64_t *shape, uint32_t fixed,
                         const int64_t *vals, double factor);

/* MWEM's step (Hardt, Ligett, McSherry 2012) on many cell queries in turn, `passes`
 * times: for query j (in order), est = n * sum_j(w) / Z, w_j *= exp((target_j - est) /
 * (2n)), Z tracks sum(w).  Query j fixes the attributes masks[j] to vals[j*ndim ..].
 * w is renormalised (and *Z reset to 1) when Z leaves [1e-200, 1e200] and at the end. */
int dpf_rel_mw_cells(double *w, int ndim, const int64_t *shape, size_t nq,
                     const uint32_t *masks, const int64_t *vals, const double *targets,
                     int passes, double n, double *Z);

/* MWEM's step on every measured cell of one marginal in cell order (targets[c] is NaN
 * for an unmeasured cell): identical to the cell-by-cell rule, in two passes over w.
 * scratch holds 2 * prod(shape[keep]) doubles.  On return sum(w) = 1 and *Z = 1. */
int dpf_rel_mw_marginal(double *w, int ndim, const int64_t *shape, uint32_t keep,
                        const double *targets, double n, double *Z, double *scratch);

/* General linear queries as compressed sparse rows: row i has the columns
 * indices[indptr[i] .. indptr[i+1]) with weights vals[..] in [0, 1] (vals NULL: every
 * weight 1).  DPF_E_PARAM unless indptr starts at 0, never decreases and every index
 * lies in [0, N). */
int dpf_rel_csr_check(int64_t N, size_t nq, const int64_t *indptr, const int32_t *indices);

/* out[i] = sum_j vals[j] w[indices[j]] over row i, for the nq rows. */
void dpf_rel_csr_matvec(const double *w, size_t nq, const int64_t *indptr,
                        const int32_t *indices, const double *vals, double *out);

/* MWEM's step on rows[0..nr) in turn (target targets[r]), `passes` times:
 * est = n q.w / Z, w_x *= exp(q_x (target - est) / (2n)); Z tracks sum(w); w is
 * renormalised as in dpf_rel_mw_cells.  N = length of w. */
int dpf_rel_mw_rows(double *w, int64_t N, const int64_t *indptr, const int32_t *indices,
                    const double *vals, size_t nr, const int64_t *rows,
                    const double *targets, int passes, double n, double *Z);

/* A reduction plan over a histogram of shape shape[0..ndim): nsteps intermediates, step
 * k reduced from parent[k] (-1: the histogram; else an earlier step) keeping the bit mask
 * keep[k] of its source's dimensions; its sndim[k] dimensions are
 * sshape[soff[k] .. soff[k+1]) and its values live at tables[toff[k] .. toff[k+1]).
 * Marginal g (of m) is reduced from fsrc[g] keeping fkeep[g], into
 * out[offsets[g] .. offsets[g+1]). */
typedef struct {
    int ndim;
    const int64_t *shape;
    int nsteps;
    const int32_t *parent;
    const uint32_t *keep;
    const int32_t *sndim;
    const int64_t *soff;
    const int64_t *sshape;
    const int64_t *toff;
    int m;
    const int32_t *fsrc;
    const uint32_t *fkeep;
    const int64_t *offsets;
} dpf_rel_plan_t;

/* DPF_OK iff the plan is consistent: parents earlier, masks within their source, every
 * shape, table offset and output offset as the sources imply, tables within ntables
 * doubles and out exactly nout. */
int dpf_rel_plan_check(const dpf_rel_plan_t *p, int64_t ntables, int64_t nout);

/* All marginals of w (the plan run forwards); tables is scratch. */
int dpf_rel_plan_answer(const dpf_rel_plan_t *p, const double *w, double *tables,
                        double *out);

/* `passes` joint MW passes: every measured cell q (targets[q] not NaN) gets the factor
 * exp((targets[q] - n est_q / Z)/(2n)) computed on the same iterate, and all factors are
 * applied together.  The plan's roots (what is reduced straight from w) are computed
 * and the factors applied in one fused sweep over w per pass; the rest of the plan runs
 * on the small tables, forwards for the marginals and backwards for the factors (a
 * marginal's factor table is folded into its source, each touched intermediate into
 * its parent).  w ends normalised.  Scratch: vals and facs (toff[nsteps] doubles each),
 * est and f (offsets[m] doubles), touched (max(nsteps, 1) bytes). */
int dpf_rel_mw_joint(const dpf_rel_plan_t *p, double *w, const double *targets, int passes,
                     double n, double *vals, double *facs, double *est, double *f,
                     uint8_t *touched);

#endif
