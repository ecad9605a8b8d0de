/* Marginal reductions and multiplicative-weights updates by implicit strides
 * (see dpfast/release.h).  The data model follows private-pgm's Domain and axis
 * reductions (McKenna et al.); the loops are our own.
 *
 * Every routine first merges adjacent dimensions of the same kind (kept/summed, or
 * free/fixed) into blocks, then walks the outer blocks with an odometer and the innermost
 * block with a plain loop: a contiguous sum, a contiguous vector add, or a strided run.
 * For an 8-attribute domain that is at most 5 blocks, and the inner loops are the ones
 * the compiler vectorises. */
#include <float.h>
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
    for (; t < L; t++) s0 += p[t];
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
    for (; a < A; a++) s0 += p[a * st];
    return (s0 + s1) + (s2 + s3);
}

static int64_t span(const blocks_t *b, int b0)
{
    int64_t n = 1;
    for (int i = b0; i < b->nb; i++) n *= b->len[i];
    return n;
}

/* Doubles of scratch the recursions below need: one buffer per summed block that is
 * followed by at least two blocks (the partial sums over the blocks after it). */
static int64_t scratch_need(const blocks_t *b)
{
    int64_t need = 0;
    for (int i = 0; i + 2 < b->nb; i++)
        if (!b->kept[i] && b->len[i] > 1) need += span(b, i + 1);
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
            for (int64_t t = 0; t < L; t++) out[t] += src[t];
        else out[0] += run_sum(src, L);
        return;
    }
    const int64_t A = b->len[b0];
    if (nb == 2) {
        const int64_t L = b->len[b0 + 1];
        const int64_t oa = b->kept[b0] ? b->stride[b0] : 0;
        if (b->kept[b0 + 1] && oa == 0 && L < 16) {
            /* many short rows into one short output: column sums with independent
             * accumulators instead of a chain of loads and stores to out[t] */
            for (int64_t t = 0; t < L; t++) out[t] += strided_sum(src + t, A, L);
        } else if (b->kept[b0 + 1]) {
            for (int64_t a = 0; a < A; a++, src += L) {
                double *q = out + a * oa;
                for (int64_t t = 0; t < L; t++) q[t] += src[t];
            }
        } else {
            for (int64_t a = 0; a < A; a++, src += L) out[a * oa] += run_sum(src, L);
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
            for (int64_t t = 0; t < R; t++) scratch[t] += p[t];
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
            for (int64_t t = 0; t < L; t++) w[t] *= f[t];
        else
            for (int64_t t = 0; t < L; t++) w[t] *= f[0];
        return;
    }
    const int64_t A = b->len[b0];
    if (nb == 2) {
        const int64_t L = b->len[b0 + 1];
        const int64_t oa = b->kept[b0] ? b->stride[b0] : 0;
        if (b->kept[b0 + 1] && oa == 0 && L < 16) {
            for (int64_t t = 0; t < L; t++) { /* long strided runs, one factor each */
                const double ft = f[t];
                for (int64_t a = 0; a < A; a++) w[a * L + t] *= ft;
            }
        } else if (b->kept[b0 + 1]) {
            for (int64_t a = 0; a < A; a++, w += L) {
                const double *g = f + a * oa;
                for (int64_t t = 0; t < L; t++) w[t] *= g[t];
            }
        } else {
            for (int64_t a = 0; a < A; a++, w += L) {
                const double fa = f[a * oa];
                for (int64_t t = 0; t < L; t++) w[t] *= fa;
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
        for (int64_t t = 0; t < R; t++) scratch[t] = 1.0;
        expand_rec(scratch, b, b0 + 1, f, scratch + R);
        for (int64_t a = 0; a < A; a++) {
            double *p = w + a * R;
            for (int64_t t = 0; t < R; t++) p[t] *= scratch[t];
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
    if (ndim < 1 || ndim > DPF_REL_MAXDIM) return DPF_E_PARAM;
    reduce_blocks(ndim, shape, keep, &b);
    int64_t need = scratch_need(&b);
    double *scratch = need <= STACK_SCRATCH ? stack : malloc((size_t)need * sizeof(double));
    if (scratch == NULL) return DPF_E_NOMEM;
    if (src != NULL) {
        int64_t nout = 1;
        for (int i = 0; i < b.nb; i++)
            if (b.kept[i]) nout *= b.len[i];
        memset(out, 0, (size_t)nout * sizeof(double));
        reduce_rec(src, &b, 0, out, scratch);
    } else {
        expand_rec(w, &b, 0, factor, scratch);
    }
    if (scratch != stack) free(scratch);
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
    if (b->nb == 0) { /* every attribute fixed: one cell */
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
            for (int64_t t = 0; t < L; t++) p[t] *= factor;
        } else {
            for (int64_t t = 0; t < L; t++) p[t * st] *= factor;
        }
    } while (odometer_next(&b, ctr, &o));
}

/* exp of an MW exponent, clamped so that one wild (noisy, public) target cannot turn
 * the weights into inf or 0; the clamp never binds for targets within [0, n]. */
static inline double mw_factor(double target, double est, double n)
{
    double e = (target - est) / (2.0 * n);
    if (e > 700.0) e = 700.0;
    else if (e < -700.0) e = -700.0;
    return exp(e);
}

static double total(const double *w, int ndim, const int64_t *shape)
{
    int64_t N = 1;
    for (int a = 0; a < ndim; a++) N *= shape[a];
    double s = 0.0;
    for (int64_t i = 0; i < N; i++) s += w[i];
    return s;
}

static void rescale(double *w, int ndim, const int64_t *shape, double *Z)
{
    int64_t N = 1;
    for (int a = 0; a < ndim; a++) N *= shape[a];
    double z = total(w, ndim, shape);
    if (z > 0.0) {
        double inv = 1.0 / z;
        for (int64_t i = 0; i < N; i++) w[i] *= inv;
    }
    *Z = 1.0;
}

int dpf_rel_mw_cells(double *w, int ndim, const int64_t *shape, size_t nq,
                     const uint32_t *masks, const int64_t *vals, const double *targets,
                     int passes, double n, double *Z)
{
    if (ndim < 1 || ndim > DPF_REL_MAXDIM || !(n > 0.0)) return DPF_E_PARAM;
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
    if (ndim < 1 || ndim > DPF_REL_MAXDIM || !(n > 0.0)) return DPF_E_PARAM;
    int64_t M = 1;
    for (int a = 0; a < ndim; a++)
        if ((keep >> a) & 1u) M *= shape[a];
    double *m = scratch, *f = scratch + M;
    dpf_rel_reduce(w, ndim, shape, keep, m);
    /* The cells of one marginal are disjoint: scaling cell c changes only its own sum
     * and the total, so applying the cell rule in order c = 0, 1, ... needs only the
     * running total -- then one broadcast pass applies every factor at once. */
    double z = 0.0;
    for (int64_t c = 0; c < M; c++) z += m[c];
    for (int64_t c = 0; c < M; c++) {
        if (targets[c] == targets[c]) {
            f[c] = mw_factor(targets[c], n * m[c] / z, n);
            z += m[c] * (f[c] - 1.0);
        } else {
            f[c] = 1.0;
        }
    }
    double inv = z > 0.0 ? 1.0 / z : 1.0;
    for (int64_t c = 0; c < M; c++) f[c] *= inv;
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
    if (N < 1 || indptr[0] != 0) return DPF_E_PARAM;
    for (size_t i = 0; i < nq; i++)
        if (indptr[i + 1] < indptr[i]) return DPF_E_PARAM;
    for (int64_t j = 0; j < indptr[nq]; j++)
        if (indices[j] < 0 || (int64_t)indices[j] >= N) return DPF_E_PARAM;
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
        if (j < hi) s0 += w[indices[j]];
    } else {
        for (; j + 1 < hi; j += 2) {
            s0 += vals[j] * w[indices[j]];
            s1 += vals[j + 1] * w[indices[j + 1]];
        }
        if (j < hi) s0 += vals[j] * w[indices[j]];
    }
    return s0 + s1;
}

void dpf_rel_csr_matvec(const double *w, size_t nq, const int64_t *indptr,
                        const int32_t *indices, const double *vals, double *out)
{
    for (size_t i = 0; i < nq; i++) out[i] = csr_dot(w, indptr, indices, vals, i);
}

int dpf_rel_mw_rows(double *w, int64_t N, const int64_t *indptr, const int32_t *indices,
                    const double *vals, size_t nr, const int64_t *rows,
                    const double *targets, int passes, double n, double *Z)
{
    if (N < 1 || !(n > 0.0)) return DPF_E_PARAM;
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
                for (int64_t j = lo; j < hi; j++) w[indices[j]] *= f;
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
        if (p->shape[a] < 1) return DPF_E_PARAM;
    if (p->toff[0] != 0 || p->soff[0] != 0 || p->offsets[0] != 0) return DPF_E_PARAM;
    for (int k = 0; k < p->nsteps; k++) {
        int nd, nk;
        const int64_t *sh;
        int64_t off;
        if (p->parent[k] >= k || p->parent[k] < -1) return DPF_E_PARAM;
        plan_src(p, p->parent[k], &nd, &sh, &off);
        if (nd < 32 && (p->keep[k] >> nd) != 0) return DPF_E_PARAM;
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
    if (p->toff[p->nsteps] > ntables) return DPF_E_PARAM;
    for (int g = 0; g < p->m; g++) {
        int nd, nk;
        const int64_t *sh;
        int64_t off;
        if (p->fsrc[g] >= p->nsteps || p->fsrc[g] < -1) return DPF_E_PARAM;
        plan_src(p, p->fsrc[g], &nd, &sh, &off);
        if (nd < 32 && (p->fkeep[g] >> nd) != 0) return DPF_E_PARAM;
        if (p->offsets[g + 1] != p->offsets[g] + kept_size(nd, sh, p->fkeep[g], &nk))
            return DPF_E_PARAM;
    }
    return p->offsets[p->m] == nout ? DPF_OK : DPF_E_PARAM;
}

/* row[t] *= c * F[0][t] * ... * F[nf-1][t], nf <= 4, in one loop (the tables never
 * overlap the row: restrict lets the loop vectorise). */
static void mul_rows(double *restrict row, int64_t L, double c, const double *const *F,
                     int nf)
{
    const double *restrict f0 = nf > 0 ? F[0] : NULL;
    const double *restrict f1 = nf > 1 ? F[1] : NULL;
    const double *restrict f2 = nf > 2 ? F[2] : NULL;
    const double *restrict f3 = nf > 3 ? F[3] : NULL;
    switch (nf) {
    case 0:
        for (int64_t t = 0; t < L; t++) row[t] *= c;
        break;
    case 1:
        for (int64_t t = 0; t < L; t++) row[t] *= c * f0[t];
        break;
    case 2:
        for (int64_t t = 0; t < L; t++) row[t] *= c * f0[t] * f1[t];
        break;
    case 3:
        for (int64_t t = 0; t < L; t++) row[t] *= c * f0[t] * f1[t] * f2[t];
        break;
    default:
        for (int64_t t = 0; t < L; t++) row[t] *= c * f0[t] * f1[t] * f2[t] * f3[t];
    }
}

/* V[k][t] += row[t] for k < nv <= 4, in one loop (distinct tables, never the row). */
static void add_rows(const double *restrict row, int64_t L, double *const *V, int nv)
{
    double *restrict v0 = V[0];
    double *restrict v1 = nv > 1 ? V[1] : NULL;
    double *restrict v2 = nv > 2 ? V[2] : NULL;
    double *restrict v3 = nv > 3 ? V[3] : NULL;
    switch (nv) {
    case 1:
        for (int64_t t = 0; t < L; t++) v0[t] += row[t];
        break;
    case 2:
        for (int64_t t = 0; t < L; t++) {
            v0[t] += row[t];
            v1[t] += row[t];
        }
        break;
    case 3:
        for (int64_t t = 0; t < L; t++) {
            v0[t] += row[t];
            v1[t] += row[t];
            v2[t] += row[t];
        }
        break;
    default:
        for (int64_t t = 0; t < L; t++) {
            v0[t] += row[t];
            v1[t] += row[t];
            v2[t] += row[t];
            v3[t] += row[t];
        }
    }
}

/* One sweep over w for nr "root" tables over the full shape (root r keeps the mask
 * keep[r]): if fac != NULL, w[x] *= prod_r fac[r][cell_r(x)] (fac[r] NULL: all ones);
 * then, if val != NULL, val[r][cell_r(x)] += w[x] (val[r] zeroed by the caller; NULL:
 * skipped).  Dimensions where every root agrees (kept or summed) are merged into blocks;
 * the innermost block is a contiguous row of w, which each root either walks with
 * stride 1 (kept) or sees as one cell (summed), so w is read and written once per sweep
 * and every per-root loop runs on a row in L1.  rs: ndim * nr int64 of scratch,
 * o: nr int64, inner: nr bytes. */
static void fused_sweep(double *w, int ndim, const int64_t *shape, int nr,
                        const uint32_t *keep, double *const *fac, double *const *val,
                        int64_t *rs, int64_t *o, uint8_t *inner)
{
    int64_t wst[DPF_REL_MAXDIM], len[DPF_REL_MAXDIM], ctr[DPF_REL_MAXDIM];
    int last[DPF_REL_MAXDIM]; /* innermost dimension of each block */
    for (int r = 0; r < nr; r++) { /* C-order strides of each root's table */
        int64_t s = 1;
        for (int a = ndim - 1; a >= 0; a--) {
            if ((keep[r] >> a) & 1u) {
                rs[(size_t)a * nr + r] = s;
                s *= shape[a];
            } else {
                rs[(size_t)a * nr + r] = 0;
            }
        }
    }
    int nb = 0;
    int64_t s = 1;
    int64_t dst[DPF_REL_MAXDIM];
    for (int a = ndim - 1; a >= 0; a--) {
        dst[a] = s;
        s *= shape[a];
    }
    for (int a = 0; a < ndim; a++) {
        int same = nb > 0;
        for (int r = 0; r < nr && same; r++)
            same = ((keep[r] >> a) & 1u) == ((keep[r] >> last[nb - 1]) & 1u);
        if (same) {
            len[nb - 1] *= shape[a];
        } else {
            len[nb] = shape[a];
            nb++;
        }
        last[nb - 1] = a;
        wst[nb - 1] = dst[a];
    }
    const int64_t L = len[nb - 1];
    const int in = last[nb - 1];
    for (int r = 0; r < nr; r++) {
        inner[r] = (uint8_t)((keep[r] >> in) & 1u);
        o[r] = 0;
    }
    int64_t ow = 0;
    for (int b = 0; b < nb - 1; b++) ctr[b] = 0;
    for (;;) {
        double *row = w + ow;
        if (fac != NULL) {
            /* the row's factor: a constant from the roots that sum the row, times up
             * to four kept roots' factor runs per loop */
            double c = 1.0;
            const double *F[4];
            int nf = 0;
            for (int r = 0; r < nr; r++) {
                if (fac[r] == NULL) continue;
                if (!inner[r]) {
                    c *= fac[r][o[r]];
                    continue;
                }
                F[nf++] = fac[r] + o[r];
                if (nf == 4) {
                    mul_rows(row, L, c, F, nf);
                    c = 1.0;
                    nf = 0;
                }
            }
            if (nf > 0 || c != 1.0) mul_rows(row, L, c, F, nf);
        }
        if (val != NULL) {
            double *V[4];
            int nv = 0, summed = 0;
            for (int r = 0; r < nr; r++) {
                if (val[r] == NULL) continue;
                if (!inner[r]) {
                    summed = 1;
                    continue;
                }
                V[nv++] = val[r] + o[r];
                if (nv == 4) {
                    add_rows(row, L, V, nv);
                    nv = 0;
                }
            }
            if (nv > 0) add_rows(row, L, V, nv);
            if (summed) { /* every summing root adds the same row sum */
                const double rsum = run_sum(row, L);
                for (int r = 0; r < nr; r++)
                    if (val[r] != NULL && !inner[r]) val[r][o[r]] += rsum;
            }
        }
        /* odometer over the outer blocks */
        int b = nb - 2;
        for (; b >= 0; b--) {
            const int a = last[b];
            if (++ctr[b] < len[b]) {
                ow += wst[b];
                for (int r = 0; r < nr; r++) o[r] += rs[(size_t)a * nr + r];
                break;
            }
            ctr[b] = 0;
            ow -= wst[b] * (len[b] - 1);
            for (int r = 0; r < nr; r++) o[r] -= rs[(size_t)a * nr + r] * (len[b] - 1);
        }
        if (b < 0) break;
    }
}

/* The plan's roots: the intermediates and marginals reduced straight from w. */
typedef struct {
    int nr;
    uint32_t *keep;
    double **val; /* where the sweep accumulates root r */
    double **fac; /* root r's factor table in a joint pass (NULL: all ones) */
    int *step; /* step k, or -1 - g for marginal g */
    int64_t *rs, *o;
    uint8_t *inner;
} roots_t;

static void roots_free(roots_t *R)
{
    free(R->keep);
    free(R->val);
    free(R->fac);
    free(R->step);
    free(R->rs);
    free(R->o);
    free(R->inner);
}

static int roots_init(roots_t *R, const dpf_rel_plan_t *p, double *vals, double *out)
{
    int nr = 0;
    for (int k = 0; k < p->nsteps; k++) nr += p->parent[k] < 0;
    for (int g = 0; g < p->m; g++) nr += p->fsrc[g] < 0;
    const size_t n1 = (size_t)(nr > 0 ? nr : 1);
    R->keep = malloc(n1 * sizeof(uint32_t));
    R->val = malloc(n1 * sizeof(double *));
    R->fac = malloc(n1 * sizeof(double *));
    R->step = malloc(n1 * sizeof(int));
    R->rs = malloc(n1 * (size_t)p->ndim * sizeof(int64_t));
    R->o = malloc(n1 * sizeof(int64_t));
    R->inner = malloc(n1);
    if (!R->keep || !R->val || !R->fac || !R->step || !R->rs || !R->o || !R->inner) {
        roots_free(R);
        return DPF_E_NOMEM;
    }
    R->nr = 0;
    for (int k = 0; k < p->nsteps; k++)
        if (p->parent[k] < 0) {
            R->keep[R->nr] = p->keep[k];
            R->val[R->nr] = vals + p->toff[k];
            R->step[R->nr++] = k;
        }
    for (int g = 0; g < p->m; g++)
        if (p->fsrc[g] < 0) {
            R->keep[R->nr] = p->fkeep[g];
            R->val[R->nr] = out + p->offsets[g];
            R->step[R->nr++] = -1 - g;
        }
    return DPF_OK;
}

/* One sweep: w *= the roots' factors (fac: R->fac, else nothing), then (if take) the
 * roots of the new w into their tables. */
static void roots_sweep(roots_t *R, const dpf_rel_plan_t *p, double *w, int apply, int take)
{
    if (take)
        for (int r = 0; r < R->nr; r++) {
            int nk;
            memset(R->val[r], 0,
                   (size_t)kept_size(p->ndim, p->shape, R->keep[r], &nk) * sizeof(double));
        }
    fused_sweep(w, p->ndim, p->shape, R->nr, R->keep, apply ? R->fac : NULL,
                take ? R->val : NULL, R->rs, R->o, R->inner);
}

/* dst = the marginal keeping `keep` of the table of intermediate k (k >= 0), or (expand)
 * that table *= the broadcast of dst: the two directions of one plan edge. */
static int plan_edge(const dpf_rel_plan_t *p, int k, double *tables, uint32_t keep,
                     double *dst, int expand)
{
    int nd;
    const int64_t *sh;
    int64_t off;
    plan_src(p, k, &nd, &sh, &off);
    return expand ? dpf_rel_expand_mul(tables + off, nd, sh, keep, dst)
                  : dpf_rel_reduce(tables + off, nd, sh, keep, dst);
}

/* The rest of the plan from the roots: every intermediate, then every marginal. */
static int plan_forward(const dpf_rel_plan_t *p, double *vals, double *out)
{
    int st = DPF_OK;
    for (int k = 0; k < p->nsteps && st == DPF_OK; k++)
        if (p->parent[k] >= 0)
            st = plan_edge(p, p->parent[k], vals, p->keep[k], vals + p->toff[k], 0);
    for (int g = 0; g < p->m && st == DPF_OK; g++)
        if (p->fsrc[g] >= 0)
            st = plan_edge(p, p->fsrc[g], vals, p->fkeep[g], out + p->offsets[g], 0);
    return st;
}

int dpf_rel_plan_answer(const dpf_rel_plan_t *p, const double *w, double *tables,
                        double *out)
{
    roots_t R;
    int st = roots_init(&R, p, tables, out);
    if (st != DPF_OK) return st;
    /* apply = 0: w is only read */
    roots_sweep(&R, p, (double *)w, 0, 1);
    st = plan_forward(p, tables, out);
    roots_free(&R);
    return st;
}

int dpf_rel_mw_joint(const dpf_rel_plan_t *p, double *w, const double *targets, int passes,
                     double n, double *vals, double *facs, double *est, double *f,
                     uint8_t *touched)
{
    if (!(n > 0.0)) return DPF_E_PARAM;
    const int64_t nq = p->offsets[p->m];
    int first = -1;
    for (int g = 0; g < p->m && first < 0; g++)
        for (int64_t q = p->offsets[g]; q < p->offsets[g + 1]; q++)
            if (targets[q] == targets[q]) {
                first = g;
                break;
            }
    if (first < 0 || passes < 1) return DPF_OK;
    roots_t R;
    int st = roots_init(&R, p, vals, est);
    if (st != DPF_OK) return st;
    uint8_t *live = malloc((size_t)p->m);
    if (live == NULL) {
        st = DPF_E_NOMEM;
        goto done;
    }
    for (int g = 0; g < p->m; g++) {
        live[g] = 0;
        for (int64_t q = p->offsets[g]; q < p->offsets[g + 1] && !live[g]; q++)
            live[g] = targets[q] == targets[q];
    }
    roots_sweep(&R, p, w, 0, 1);
    for (int pass = 0; pass < passes; pass++) {
        st = plan_forward(p, vals, est);
        if (st != DPF_OK) goto done;
        /* every marginal sums to sum(w) */
        double z = 0.0;
        for (int64_t q = p->offsets[first]; q < p->offsets[first + 1]; q++) z += est[q];
        if (!(z > 0.0 && z <= DBL_MAX)) {
            /* The weights under- or overflowed: noisy targets far outside [0, n] (a tiny
             * epsilon or n against the data) compounded the clamped factors of several
             * marginals.  The iterate is then uninformative; restart it from uniform and
             * stop.  A function of the public noisy targets only (post-processing), so
             * no private value can turn into an error after the charge (issue 22). */
            int64_t N = 1;
            for (int a = 0; a < p->ndim; a++) N *= p->shape[a];
            for (int64_t i = 0; i < N; i++) w[i] = 1.0 / (double)N;
            goto done;
        }
        /* MWEM's factor exp((m - q(A))/(2n)) for every measured cell, all on the same
         * iterate A (Hardt, Ligett, McSherry 2012, Alg. 1 step 3, applied jointly) */
        for (int64_t q = 0; q < nq; q++)
            f[q] =
                targets[q] == targets[q] ? mw_factor(targets[q], n * est[q] / z, n) : 1.0;
        /* one marginal partitions X: scaling its factors by 1/z rescales w to ~1 */
        for (int64_t q = p->offsets[first]; q < p->offsets[first + 1]; q++) f[q] /= z;
        /* backwards: each marginal's factors into its source, each touched
         * intermediate into its parent, down to the roots */
        for (int64_t t = 0; t < p->toff[p->nsteps]; t++) facs[t] = 1.0;
        memset(touched, 0, (size_t)(p->nsteps > 0 ? p->nsteps : 1));
        for (int g = 0; g < p->m && st == DPF_OK; g++) {
            if (!live[g] || p->fsrc[g] < 0) continue; /* all ones, or a root of the sweep */
            st = plan_edge(p, p->fsrc[g], facs, p->fkeep[g], f + p->offsets[g], 1);
            touched[p->fsrc[g]] = 1;
        }
        for (int k = p->nsteps - 1; k >= 0 && st == DPF_OK; k--) {
            if (!touched[k] || p->parent[k] < 0) continue;
            st = plan_edge(p, p->parent[k], facs, p->keep[k], facs + p->toff[k], 1);
            touched[p->parent[k]] = 1;
        }
        if (st != DPF_OK) goto done;
        for (int r = 0; r < R.nr; r++) {
            const int k = R.step[r];
            R.fac[r] = k >= 0 ? (touched[k] ? facs + p->toff[k] : NULL)
                              : (live[-1 - k] ? f + p->offsets[-1 - k] : NULL);
        }
        /* apply every factor in one sweep, and take the next pass's roots in it */
        roots_sweep(&R, p, w, 1, pass + 1 < passes);
    }
    double z;
    rescale(w, p->ndim, p->shape, &z);
done:
    roots_free(&R);
    free(live);
    return st;
}
