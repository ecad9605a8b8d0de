/* Marginal reductions and multiplicative-weights updates by implicit strides
 * (see dpfast/release.h).  The data model follows private-pgm's Domain and axis
 * reductions (McKenna et al.); the loops are our own.
 *
 * Every routine first merges adjacent dimensions of the same kind (kept/summed, or
 * free/fixed) into blocks, then walks the outer blocks with an odometer and the innermost
 * block with a plain loop: a contiguous sum, a contiguous vector add, or a strided run.
 * For an 8-attribute domain that is at most 5 blocks, and the inner loops are the ones
 * the compiler vectorises. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dpfast/release.h"
#include "dpfast/status.h"

typedef struct {
    int nb;                          /* number of blocks */
    int64_t len[DPF_REL_MAXDIM];     /* block length */
    int64_t stride[DPF_REL_MAXDIM];  /* element stride of the block (slices) or of the
                                        output (reductions; 0 for a summed block) */
    int kept[DPF_REL_MAXDIM];
} blocks_t;

/* Blocks of a reduction: runs of consecutive kept / summed dimensions. */
static void reduce_blocks(int ndim, const int64_t *shape, uint32_t keep, blocks_t *b)
{
    b->nb = 0;
    for (int a = 0; a < ndim; a++) {
        int k = (keep >> a) & 1u;
        if (b->nb > 0 && b->kept[b->nb - 1] == k) {
            b->len[b->nb - 1] *= shape[a];
        } else {
            b->kept[b->nb] = k;
            b->len[b->nb] = shape[a];
            b->nb++;
        }
    }
    /* output strides: C order over the kept blocks only */
    int64_t s = 1;
    for (int i = b->nb - 1; i >= 0; i--) {
        if (b->kept[i]) {
            b->stride[i] = s;
            s *= b->len[i];
        } else {
            b->stride[i] = 0;
        }
    }
}

/* Advance the odometer over blocks 0..nb-2; returns 0 after the last position.
 * *o moves by the blocks' strides (output offset or element offset). */
static inline int odometer_next(const blocks_t *b, int64_t *ctr, int64_t *o)
{
    for (int i = b->nb - 2; i >= 0; i--) {
        if (++ctr[i] < b->len[i]) {
            *o += b->stride[i];
            return 1;
        }
        ctr[i] = 0;
        *o -= b->stride[i] * (b->len[i] - 1);
    }
    return 0;
}

static inline double run_sum(const double *p, int64_t L)
{
    /* four accumulators: a long run is not one serial chain of adds */
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t t = 0;
    for (; t + 3 < L; t += 4) {
        s0 += p[t];
        s1 += p[t + 1];
        s2 += p[t + 2];
        s3 += p[t + 3];
    }
    for (; t < L; t++)
        s0 += p[t];
    return (s0 + s1) + (s2 + s3);
}

static inline double strided_sum(const double *p, int64_t A, int64_t st)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t a = 0;
    for (; a + 3 < A; a += 4) {
        s0 += p[a * st];
        s1 += p[(a + 1) * st];
        s2 += p[(a + 2) * st];
        s3 += p[(a + 3) * st];
    }
    for (; a < A; a++)
        s0 += p[a * st];
    return (s0 + s1) + (s2 + s3);
}

static int64_t span(const blocks_t *b, int b0)
{
    int64_t n = 1;
    for (int i = b0; i < b->nb; i++)
        n *= b->len[i];
    return n;
}

/* Doubles of scratch the recursions below need: one buffer per summed block that is
 * followed by at least two blocks (the partial sums over the blocks after it). */
static int64_t scratch_need(const blocks_t *b)
{
    int64_t need = 0;
    for (int i = 0; i + 2 < b->nb; i++)
        if (!b->kept[i] && b->len[i] > 1)
            need += span(b, i + 1);
    return need;
}

/* The marginal of src (blocks b0.. of b) added into out.  A leading summed block is
 * removed first by adding its rows (contiguous vector adds) into scratch, a leading
 * kept block by recursing on each of its slices; two blocks are plain nested loops.
 * Every element is visited once, in long contiguous runs whatever the mask. */
static void reduce_rec(const double *src, const blocks_t *b, int b0, double *out,
                       double *scratch)
{
    const int nb = b->nb - b0;
    if (nb == 1) {
        const int64_t L = b->len[b0];
        if (b->kept[b0])
            for (int64_t t = 0; t < L; t++)
                out[t] += src[t];
        else
            out[0] += run_sum(src, L);
        return;
    }
    const int64_t A = b->len[b0];
    if (nb == 2) {
        const int64_t L = b->len[b0 + 1];
        const int64_t oa = b->kept[b0] ? b->stride[b0] : 0;
        if (b->kept[b0 + 1] && oa == 0 && L < 16) {
            /* many short rows into one short output: column sums with independent
             * accumulators instead of a chain of loads and stores to out[t] */
            for (int64_t t = 0; t < L; t++)
                out[t] += strided_sum(src + t, A, L);
        } else if (b->kept[b0 + 1]) {
            for (int64_t a = 0; a < A; a++, src += L) {
                double *q = out + a * oa;
                for (int64_t t = 0; t < L; t++)
                    q[t] += src[t];
            }
        } else {
            for (int64_t a = 0; a < A; a++, src += L)
                out[a * oa] += run_sum(src, L);
        }
        return;
    }
    const int64_t R = span(b, b0 + 1);
    if (b->kept[b0]) {
        for (int64_t a = 0; a < A; a++)
            reduce_rec(src + a * R, b, b0 + 1, out + a * b->stride[b0], scratch);
    } else if (A == 1) {
        reduce_rec(src, b, b0 + 1, out, scratch);
    } else {
        memcpy(scratch, src, (size_t)R * sizeof(double));
        for (int64_t a = 1; a < A; a++) {
            const double *p = src + a * R;
            for (int64_t t = 0; t < R; t++)
                scratch[t] += p[t];
        }
        reduce_rec(scratch, b, b0 + 1, out, scratch + R);
    }
}

/* w *= factor[cell(x)] on blocks b0..: the mirror image of reduce_rec (a leading summed
 * block's rows all get the same factor pattern, built once in scratch). */
static void expand_rec(double *w, const blocks_t *b, int b0, const double *f,
                       double *scratch)
{
    const int nb = b->nb - b0;
    if (nb == 1) {
        const int64_t L = b->len[b0];
        if (b->kept[b0])
            for (int64_t t = 0; t < L; t++)
                w[t] *= f[t];
        else
            for (int64_t t = 0; t < L; t++)
                w[t] *= f[0];
        return;
    }
    const int64_t A = b->len[b0];
    if (nb == 2) {
        const int64_t L = b->len[b0 + 1];
        const int64_t oa = b->kept[b0] ? b->stride[b0] : 0;
        if (b->kept[b0 + 1] && oa == 0 && L < 16) {
            for (int64_t t = 0; t < L; t++) {       /* long strided runs, one factor each */
                const double ft = f[t];
                for (int64_t a = 0; a < A; a++)
                    w[a * L + t] *= ft;
            }
        } else if (b->kept[b0 + 1]) {
            for (int64_t a = 0; a < A; a++, w += L) {
                const double *g = f + a * oa;
                for (int64_t t = 0; t < L; t++)
                    w[t] *= g[t];
            }
        } else {
            for (int64_t a = 0; a < A; a++, w += L) {
                const double fa = f[a * oa];
                for (int64_t t = 0; t < L; t++)
                    w[t] *= fa;
            }
        }
        return;
    }
    const int64_t R = span(b, b0 + 1);
    if (b->kept[b0]) {
        for (int64_t a = 0; a < A; a++)
            expand_rec(w + a * R, b, b0 + 1, f + a * b->stride[b0], scratch);
    } else if (A == 1) {
        expand_rec(w, b, b0 + 1, f, scratch);
    } else {
        for (int64_t t = 0; t < R; t++)
            scratch[t] = 1.0;
        expand_rec(scratch, b, b0 + 1, f, scratch + R);
        for (int64_t a = 0; a < A; a++) {
            double *p = w + a * R;
            for (int64_t t = 0; t < R; t++)
                p[t] *= scratch[t];
        }
    }
}

#define STACK_SCRATCH 4096

/* Plan the blocks of `keep`, find scratch (on the stack when small), run one walk. */
static int walk(int ndim, const int64_t *shape, uint32_t keep, const double *src,
                double *out, double *w, const double *factor)
{
    blocks_t b;
    double stack[STACK_SCRATCH];
    if (ndim < 1 || ndim > DPF_REL_MAXDIM)
        return DPF_E_PARAM;
    reduce_blocks(ndim, shape, keep, &b);
    int64_t need = scratch_need(&b);
    double *scratch = need <= STACK_SCRATCH ? stack : malloc((size_t)need * sizeof(double));
    if (scratch == NULL)
        return DPF_E_NOMEM;
    if (src != NULL) {
        int64_t nout = 1;
        for (int i = 0; i < b.nb; i++)
            if (b.kept[i])
                nout *= b.len[i];
        memset(out, 0, (size_t)nout * sizeof(double));
        reduce_rec(src, &b, 0, out, scratch);
    } else {
        expand_rec(w, &b, 0, factor, scratch);
    }
    if (scratch != stack)
        free(scratch);
    return DPF_OK;
}

int dpf_rel_reduce(const double *src, int ndim, const int64_t *shape, uint32_t keep,
                   double *out)
{
    return walk(ndim, shape, keep, src, out, NULL, NULL);
}

int dpf_rel_expand_mul(double *w, int ndim, const int64_t *shape, uint32_t keep,
                       const double *factor)
{
    return walk(ndim, shape, keep, NULL, NULL, w, factor);
}

/* Blocks of a slice: runs of consecutive free dimensions with their element strides;
 * the fixed dimensions only move the base offset. */
static int64_t slice_blocks(int ndim, const int64_t *shape, uint32_t fixed,
                            const int64_t *vals, blocks_t *b)
{
    int64_t stride[DPF_REL_MAXDIM];
    int64_t s = 1, base = 0;
    for (int a = ndim - 1; a >= 0; a--) {
        stride[a] = s;
        s *= shape[a];
    }
    b->nb = 0;
    int prev_free = 0;
    for (int a = 0; a < ndim; a++) {
        if ((fixed >> a) & 1u) {
            base += vals[a] * stride[a];
            prev_free = 0;
        } else if (prev_free) {
            b->len[b->nb - 1] *= shape[a];
            b->stride[b->nb - 1] = stride[a];
        } else {
            b->len[b->nb] = shape[a];
            b->stride[b->nb] = stride[a];
            b->nb++;
            prev_free = 1;
        }
    }
    if (b->nb == 0) {            /* every attribute fixed: one cell */
        b->len[0] = 1;
        b->stride[0] = 1;
        b->nb = 1;
    }
    return base;
}

double dpf_rel_slice_sum(const double *w, int ndim, const int64_t *shape, uint32_t fixed,
                         const int64_t *vals)
{
    blocks_t b;
    int64_t ctr[DPF_REL_MAXDIM] = {0};
    int64_t o = slice_blocks(ndim, shape, fixed, vals, &b);
    const int64_t L = b.len[b.nb - 1], st = b.stride[b.nb - 1];
    double s = 0.0;
    do {
        s += strided_sum(w + o, L, st);
    } while (odometer_next(&b, ctr, &o));
    return s;
}

void dpf_rel_slice_scale(double *w, int ndim, const int64_t *shape, uint32_t fixed,
                         const int64_t *vals, double factor)
{
    blocks_t b;
    int64_t ctr[DPF_REL_MAXDIM] = {0};
    int64_t o = slice_blocks(ndim, shape, fixed, vals, &b);
    const int64_t L = b.len[b.nb - 1], st = b.stride[b.nb - 1];
    do {
        double *p = w + o;
        if (st == 1) {
            for (int64_t t = 0; t < L; t++)
                p[t] *= factor;
        } else {
            for (int64_t t = 0; t < L; t++)
                p[t * st] *= factor;
        }
    } while (odometer_next(&b, ctr, &o));
}

/* exp of an MW exponent, clamped so that one wild (noisy, public) target cannot turn
 * the weights into inf or 0; the clamp never binds for targets within [0, n]. */
static inline double mw_factor(double target, double est, double n)
{
    double e = (target - est) / (2.0 * n);
    if (e > 700.0)
        e = 700.0;
    else if (e < -700.0)
        e = -700.0;
    return exp(e);
}

static double total(const double *w, int ndim, const int64_t *shape)
{
    int64_t N = 1;
    for (int a = 0; a < ndim; a++)
        N *= shape[a];
    double s = 0.0;
    for (int64_t i = 0; i < N; i++)
        s += w[i];
    return s;
}

static void rescale(double *w, int ndim, const int64_t *shape, double *Z)
{
    int64_t N = 1;
    for (int a = 0; a < ndim; a++)
        N *= shape[a];
    double z = total(w, ndim, shape);
    if (z > 0.0) {
        double inv = 1.0 / z;
        for (int64_t i = 0; i < N; i++)
            w[i] *= inv;
    }
    *Z = 1.0;
}

int dpf_rel_mw_cells(double *w, int ndim, const int64_t *shape, size_t nq,
                     const uint32_t *masks, const int64_t *vals, const double *targets,
                     int passes, double n, double *Z)
{
    if (ndim < 1 || ndim > DPF_REL_MAXDIM || !(n > 0.0))
        return DPF_E_PARAM;
    double z = *Z;
    int since = 0;
    for (int r = 0; r < passes; r++) {
        for (size_t j = 0; j < nq; j++) {
            const int64_t *v = vals + j * (size_t)ndim;
            double s = dpf_rel_slice_sum(w, ndim, shape, masks[j], v);
            double f = mw_factor(targets[j], n * s / z, n);
            dpf_rel_slice_scale(w, ndim, shape, masks[j], v, f);
            z += s * (f - 1.0);
            if (++since >= 256 || !(z > 1e-200 && z < 1e200)) {
                rescale(w, ndim, shape, &z);
                since = 0;
            }
        }
    }
    rescale(w, ndim, shape, &z);
    *Z = z;
    return DPF_OK;
}

int dpf_rel_mw_marginal(double *w, int ndim, const int64_t *shape, uint32_t keep,
                        const double *targets, double n, double *Z, double *scratch)
{
    if (ndim < 1 || ndim > DPF_REL_MAXDIM || !(n > 0.0))
        return DPF_E_PARAM;
    int64_t M = 1;
    for (int a = 0; a < ndim; a++)
        if ((keep >> a) & 1u)
            M *= shape[a];
    double *m = scratch, *f = scratch + M;
    dpf_rel_reduce(w, ndim, shape, keep, m);
    /* The cells of one marginal are disjoint: scaling cell c changes only its own sum
     * and the total, so applying the cell rule in order c = 0, 1, ... needs only the
     * running total -- then one broadcast pass applies every factor at once. */
    double z = 0.0;
    for (int64_t c = 0; c < M; c++)
        z += m[c];
    for (int64_t c = 0; c < M; c++) {
        if (targets[c] == targets[c]) {
            f[c] = mw_factor(targets[c], n * m[c] / z, n);
            z += m[c] * (f[c] - 1.0);
        } else {
            f[c] = 1.0;
        }
    }
    double inv = z > 0.0 ? 1.0 / z : 1.0;
    for (int64_t c = 0; c < M; c++)
        f[c] *= inv;
    dpf_rel_expand_mul(w, ndim, shape, keep, f);
    *Z = 1.0;
    return DPF_OK;
}

/* ---------------------------------------------------------------------------------
 * General linear queries in compressed sparse rows (CSR): row i has the columns
 * indices[indptr[i] .. indptr[i+1]) with weights vals[...] in [0, 1] (vals NULL: all 1,
 * a 0/1 counting query).  The Python layer (dpfast.release.LinearWorkload) validated
 * the weights; dpf_rel_csr_check re-checks what indexing depends on. */

int dpf_rel_csr_check(int64_t N, size_t nq, const int64_t *indptr, const int32_t *indices)
{
    if (N < 1 || indptr[0] != 0)
        return DPF_E_PARAM;
    for (size_t i = 0; i < nq; i++)
        if (indptr[i + 1] < indptr[i])
            return DPF_E_PARAM;
    for (int64_t j = 0; j < indptr[nq]; j++)
        if (indices[j] < 0 || (int64_t)indices[j] >= N)
            return DPF_E_PARAM;
    return DPF_OK;
}

static inline double csr_dot(const double *w, const int64_t *indptr, const int32_t *indices,
                             const double *vals, size_t i)
{
    const int64_t lo = indptr[i], hi = indptr[i + 1];
    double s0 = 0.0, s1 = 0.0;
    int64_t j = lo;
    if (vals == NULL) {
        for (; j + 1 < hi; j += 2) {
            s0 += w[indices[j]];
            s1 += w[indices[j + 1]];
        }
        if (j < hi)
            s0 += w[indices[j]];
    } else {
        for (; j + 1 < hi; j += 2) {
            s0 += vals[j] * w[indices[j]];
            s1 += vals[j + 1] * w[indices[j + 1]];
        }
        if (j < hi)
            s0 += vals[j] * w[indices[j]];
    }
    return s0 + s1;
}

void dpf_rel_csr_matvec(const double *w, size_t nq, const int64_t *indptr,
                        const int32_t *indices, const double *vals, double *out)
{
    for (size_t i = 0; i < nq; i++)
        out[i] = csr_dot(w, indptr, indices, vals, i);
}

int dpf_rel_mw_rows(double *w, int64_t N, const int64_t *indptr, const int32_t *indices,
                    const double *vals, size_t nr, const int64_t *rows,
                    const double *targets, int passes, double n, double *Z)
{
    if (N < 1 || !(n > 0.0))
        return DPF_E_PARAM;
    int64_t shape[1] = {N};
    double z = *Z;
    int since = 0;
    for (int p = 0; p < passes; p++) {
        for (size_t r = 0; r < nr; r++) {
            const int64_t i = rows[r];
            const int64_t lo = indptr[i], hi = indptr[i + 1];
            double s = csr_dot(w, indptr, indices, vals, (size_t)i);
            /* MWEM's step A(x) <- A(x) exp(q(x) (m - q(A)) / (2n)) (Hardt, Ligett,
             * McSherry 2012, Alg. 1): a 0/1 row scales its support by one factor, a
             * fractional row each cell by factor^q(x). */
            double e = (targets[r] - n * s / z) / (2.0 * n);
            e = e > 700.0 ? 700.0 : (e < -700.0 ? -700.0 : e);
            if (vals == NULL) {
                const double f = exp(e);
                for (int64_t j = lo; j < hi; j++)
                    w[indices[j]] *= f;
                z += s * (f - 1.0);
            } else {
                double dz = 0.0;
                for (int64_t j = lo; j < hi; j++) {
                    const double old = w[indices[j]];
                    const double nw = old * exp(e * vals[j]);
                    w[indices[j]] = nw;
                    dz += nw - old;
                }
                z += dz;
            }
            if (++since >= 256 || !(z > 1e-200 && z < 1e200)) {
                rescale(w, 1, shape, &z);
                since = 0;
            }
        }
    }
    rescale(w, 1, shape, &z);
    *Z = z;
    return DPF_OK;
}

/* ---------------------------------------------------------------------------------
 * A reduction plan (see release.h): intermediates reduced from the histogram or from a
 * larger intermediate, then every marginal from its smallest source.  Run forwards it
 * answers a whole marginal workload; run backwards it applies a factor table per
 * marginal to w with one sweep per plan root. */

static void plan_src(const dpf_rel_plan_t *p, int k, int *nd, const int64_t **sh,
                     int64_t *off)
{
    if (k < 0) {
        *nd = p->ndim;
        *sh = p->shape;
        *off = -1;
    } else {
        *nd = p->sndim[k];
        *sh = p->sshape + p->soff[k];
        *off = p->toff[k];
    }
}

static int64_t kept_size(int nd, const int64_t *sh, uint32_t keep, int *nk)
{
    int64_t s = 1;
    *nk = 0;
    for (int a = 0; a < nd; a++)
        if ((keep >> a) & 1u) {
            s *= sh[a];
            (*nk)++;
        }
    return s;
}

int dpf_rel_plan_check(const dpf_rel_plan_t *p, int64_t ntables, int64_t nout)
{
    if (p->ndim < 1 || p->ndim > DPF_REL_MAXDIM || p->nsteps < 0 || p->m < 1)
        return DPF_E_PARAM;
    for (int a = 0; a < p->ndim; a++)
        if (p->shape[a] < 1)
            return DPF_E_PARAM;
    if (p->toff[0] != 0 || p->soff[0] != 0 || p->offsets[0] != 0)
        return DPF_E_PARAM;
    for (int k = 0; k < p->nsteps; k++) {
        int nd, nk;
        const int64_t *sh;
        int64_t off;
        if (p->parent[k] >= k || p->parent[k] < -1)
            return DPF_E_PARAM;
        plan_src(p, p->parent[k], &nd, &sh, &off);
        if (nd < 32 && (p->keep[k] >> nd) != 0)
            return DPF_E_PARAM;
        int64_t s = kept_size(nd, sh, p->keep[k], &nk);
        if (nk != p->sndim[k] || p->soff[k + 1] != p->soff[k] + nk ||
            p->toff[k + 1] != p->toff[k] + s)
            return DPF_E_PARAM;
        /* the intermediate's shape is the kept part of its source's, in order */
        int j = 0;
        for (int a = 0; a < nd; a++)
            if ((p->keep[k] >> a) & 1u && p->sshape[p->soff[k] + j++] != sh[a])
                return DPF_E_PARAM;
    }
    if (p->toff[p->nsteps] > ntables)
        return DPF_E_PARAM;
    for (int g = 0; g < p->m; g++) {
        int nd, nk;
        const int64_t *sh;
        int64_t off;
        if (p->fsrc[g] >= p->nsteps || p->fsrc[g] < -1)
            return DPF_E_PARAM;
        plan_src(p, p->fsrc[g], &nd, &sh, &off);
        if (nd < 32 && (p->fkeep[g] >> nd) != 0)
            return DPF_E_PARAM;
        if (p->offsets[g + 1] != p->offsets[g] + kept_size(nd, sh, p->fkeep[g], &nk))
            return DPF_E_PARAM;
    }
    return p->offsets[p->m] == nout ? DPF_OK : DPF_E_PARAM;
}

int dpf_rel_plan_answer(const dpf_rel_plan_t *p, const double *w, double *tables,
                        double *out)
{
    int st = DPF_OK;
    for (int k = 0; k < p->nsteps && st == DPF_OK; k++) {
        int nd;
        const int64_t *sh;
        int64_t off;
        plan_src(p, p->parent[k], &nd, &sh, &off);
        st = dpf_rel_reduce(off < 0 ? w : tables + off, nd, sh, p->keep[k],
                            tables + p->toff[k]);
    }
    for (int g = 0; g < p->m && st == DPF_OK; g++) {
        int nd;
        const int64_t *sh;
        int64_t off;
        plan_src(p, p->fsrc[g], &nd, &sh, &off);
        st = dpf_rel_reduce(off < 0 ? w : tables + off, nd, sh, p->fkeep[g],
                            out + p->offsets[g]);
    }
    return st;
}

int dpf_rel_mw_joint(const dpf_rel_plan_t *p, double *w, const double *targets,
                     int passes, double n, double *tables, double *est, double *f,
                     uint8_t *touched)
{
    if (!(n > 0.0))
        return DPF_E_PARAM;
    const int64_t nq = p->offsets[p->m];
    int first = -1;
    for (int g = 0; g < p->m && first < 0; g++)
        for (int64_t q = p->offsets[g]; q < p->offsets[g + 1]; q++)
            if (targets[q] == targets[q]) {
                first = g;
                break;
            }
    if (first < 0 || passes < 1)
        return DPF_OK;
    for (int r = 0; r < passes; r++) {
        int st = dpf_rel_plan_answer(p, w, tables, est);
        if (st != DPF_OK)
            return st;
        /* every marginal sums to sum(w) */
        double z = 0.0;
        for (int64_t q = p->offsets[first]; q < p->offsets[first + 1]; q++)
            z += est[q];
        if (!(z > 0.0))
            return DPF_E_PARAM;
        /* MWEM's factor exp((m - q(A))/(2n)) for every measured cell, all on the same
         * iterate A (Hardt, Ligett, McSherry 2012, Alg. 1 step 3, applied jointly) */
        for (int64_t q = 0; q < nq; q++)
            f[q] = targets[q] == targets[q] ? mw_factor(targets[q], n * est[q] / z, n)
                                            : 1.0;
        /* one marginal partitions X: scaling its factors by 1/z rescales w to ~1 */
        for (int64_t q = p->offsets[first]; q < p->offsets[first + 1]; q++)
            f[q] /= z;
        for (int64_t t = 0; t < p->toff[p->nsteps]; t++)
            tables[t] = 1.0;
        memset(touched, 0, (size_t)(p->nsteps > 0 ? p->nsteps : 1));
        for (int g = 0; g < p->m; g++) {
            int live = 0;
            for (int64_t q = p->offsets[g]; q < p->offsets[g + 1] && !live; q++)
                live = targets[q] == targets[q];
            if (!live)
                continue;
            int nd;
            const int64_t *sh;
            int64_t off;
            plan_src(p, p->fsrc[g], &nd, &sh, &off);
            st = dpf_rel_expand_mul(off < 0 ? w : tables + off, nd, sh, p->fkeep[g],
                                    f + p->offsets[g]);
            if (st != DPF_OK)
                return st;
            if (off >= 0)
                touched[p->fsrc[g]] = 1;
        }
        for (int k = p->nsteps - 1; k >= 0; k--) {
            if (!touched[k])
                continue;
            int nd;
            const int64_t *sh;
            int64_t off;
            plan_src(p, p->parent[k], &nd, &sh, &off);
            st = dpf_rel_expand_mul(off < 0 ? w : tables + off, nd, sh, p->keep[k],
                                    tables + p->toff[k]);
            if (st != DPF_OK)
                return st;
            if (off >= 0)
                touched[p->parent[k]] = 1;
        }
    }
    double z;
    rescale(w, p->ndim, p->shape, &z);
    return DPF_OK;
}
