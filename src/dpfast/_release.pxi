# Query release kernels (csrc/release.c): marginal reductions and MW updates on a dense
# histogram by implicit strides.  The Python layer (dpfast.query_release) has validated the
# shape, the masks and the codes; these wrappers only check the array lengths they index
# (a wrong length would be an out-of-bounds access, so it is refused here too).

cdef int64_t _rel_size(const int64_t[::1] shape) except -1:
    cdef int64_t n = 1
    cdef Py_ssize_t a
    if shape.shape[0] < 1 or shape.shape[0] > DPF_REL_MAXDIM:
        raise ValueError("release: the number of attributes must be in [1, 32]")
    for a in range(shape.shape[0]):
        if shape[a] < 1:
            raise ValueError("release: every attribute needs at least one category")
        n *= shape[a]
    return n


cdef int64_t _rel_kept(const int64_t[::1] shape, uint32_t keep):
    cdef int64_t n = 1
    cdef Py_ssize_t a
    for a in range(shape.shape[0]):
        if (keep >> a) & 1u:
            n *= shape[a]
    return n


def rel_reduce(const double[::1] src, const int64_t[::1] shape, uint32_t keep,
               double[::1] out):
    """out = the marginal of src on the attributes in the bit mask keep."""
    cdef int64_t n = _rel_size(shape)
    cdef int st
    if src.shape[0] != n or out.shape[0] != _rel_kept(shape, keep):
        raise ValueError("release: array length does not match the domain")
    with nogil:
        st = dpf_rel_reduce(&src[0], <int>shape.shape[0], &shape[0], keep, &out[0])
    _check(st)


def rel_expand_mul(double[::1] w, const int64_t[::1] shape, uint32_t keep,
                   const double[::1] factor):
    """w[x] *= factor[cell(x)] over the marginal keep."""
    cdef int64_t n = _rel_size(shape)
    cdef int st
    if w.shape[0] != n or factor.shape[0] != _rel_kept(shape, keep):
        raise ValueError("release: array length does not match the domain")
    with nogil:
        st = dpf_rel_expand_mul(&w[0], <int>shape.shape[0], &shape[0], keep, &factor[0])
    _check(st)


cdef inline int _rel_arr(cnp.ndarray a, int typenum, bint writeable) except -1:
    # plain ndarray checks instead of memoryviews: these calls sit on PMW's per-query path
    if cnp.PyArray_TYPE(a) != typenum or not cnp.PyArray_IS_C_CONTIGUOUS(a) or \
            cnp.PyArray_NDIM(a) != 1:
        raise TypeError("release: expected a 1-D C-contiguous array of the kernel's dtype")
    if writeable and not cnp.PyArray_ISWRITEABLE(a):
        raise ValueError("release: the weights must be writeable")
    return 0


cdef inline int _rel_slice_args(cnp.ndarray w, cnp.ndarray shape, uint32_t fixed,
                                cnp.ndarray vals, bint writeable) except -1:
    cdef int64_t n = 1
    cdef Py_ssize_t a, d
    _rel_arr(w, cnp.NPY_FLOAT64, writeable)
    _rel_arr(shape, cnp.NPY_INT64, False)
    _rel_arr(vals, cnp.NPY_INT64, False)
    d = cnp.PyArray_DIM(shape, 0)
    cdef const int64_t *sh = <const int64_t *>cnp.PyArray_DATA(shape)
    cdef const int64_t *v = <const int64_t *>cnp.PyArray_DATA(vals)
    if d < 1 or d > DPF_REL_MAXDIM or cnp.PyArray_DIM(vals, 0) != d:
        raise ValueError("release: vals must have one entry per attribute")
    for a in range(d):
        if sh[a] < 1:
            raise ValueError("release: every attribute needs at least one category")
        if (fixed >> a) & 1u and not (0 <= v[a] < sh[a]):
            raise ValueError("release: a fixed code is outside its attribute")
        n *= sh[a]
    if cnp.PyArray_DIM(w, 0) != n:
        raise ValueError("release: array length does not match the domain")
    return 0


cdef inline double _rel_slice(cnp.ndarray w, cnp.ndarray shape, uint32_t fixed,
                              cnp.ndarray vals) noexcept:
    return dpf_rel_slice_sum(<const double *>cnp.PyArray_DATA(w),
                             <int>cnp.PyArray_DIM(shape, 0),
                             <const int64_t *>cnp.PyArray_DATA(shape), fixed,
                             <const int64_t *>cnp.PyArray_DATA(vals))


def rel_slice_sum(cnp.ndarray w, cnp.ndarray shape, uint32_t fixed, cnp.ndarray vals):
    """Sum of w over the cells with x_a = vals[a] for a in fixed."""
    _rel_slice_args(w, shape, fixed, vals, False)
    return _rel_slice(w, shape, fixed, vals)


def rel_slice_scale(cnp.ndarray w, cnp.ndarray shape, uint32_t fixed, cnp.ndarray vals,
                    double factor):
    """Multiply w by factor on the cells of one cell query; returns their sum before."""
    _rel_slice_args(w, shape, fixed, vals, True)
    cdef double s = _rel_slice(w, shape, fixed, vals)
    dpf_rel_slice_scale(<double *>cnp.PyArray_DATA(w), <int>cnp.PyArray_DIM(shape, 0),
                        <const int64_t *>cnp.PyArray_DATA(shape), fixed,
                        <const int64_t *>cnp.PyArray_DATA(vals), factor)
    return s


def rel_mw_cells(double[::1] w, const int64_t[::1] shape, const uint32_t[::1] masks,
                 const int64_t[:, ::1] vals, const double[::1] targets, int passes,
                 double n, double Z):
    """MWEM's step on each cell query in turn, `passes` times; returns the new Z (1)."""
    cdef Py_ssize_t j, a, nq = masks.shape[0], d = shape.shape[0]
    cdef int st
    cdef double z = Z
    if vals.shape[0] != nq or targets.shape[0] != nq or (nq and vals.shape[1] != d):
        raise ValueError("release: masks, vals and targets must have one row per query")
    if _rel_size(shape) != w.shape[0]:
        raise ValueError("release: array length does not match the domain")
    for j in range(nq):
        for a in range(d):
            if (masks[j] >> a) & 1u and not (0 <= vals[j, a] < shape[a]):
                raise ValueError("release: a fixed code is outside its attribute")
    if nq == 0 or passes <= 0:
        return z
    with nogil:
        st = dpf_rel_mw_cells(&w[0], <int>d, &shape[0], <size_t>nq, &masks[0], &vals[0, 0],
                              &targets[0], passes, n, &z)
    _check(st)
    return z


def rel_mw_marginal(double[::1] w, const int64_t[::1] shape, uint32_t keep,
                    const double[::1] targets, double n, double[::1] scratch):
    """MWEM's step on every measured (non-NaN) cell of one marginal; w ends normalised."""
    cdef int64_t m = _rel_kept(shape, keep)
    cdef int st
    cdef double z = 1.0
    if _rel_size(shape) != w.shape[0] or targets.shape[0] != m or scratch.shape[0] < 2 * m:
        raise ValueError("release: array length does not match the domain")
    with nogil:
        st = dpf_rel_mw_marginal(&w[0], <int>shape.shape[0], &shape[0], keep, &targets[0],
                                 n, &z, &scratch[0])
    _check(st)


cdef int _rel_svt_one(_SVTStream s, dpf_rng_t *r, double v, double t, double *val,
                      uint8_t *top) except -1:
    """One query of a NumericSparse stream, exactly as _SVTStream.step (the caller holds
    the stream's lock and its generator's lock): validate, clamp an out-of-range value,
    feed."""
    cdef size_t bad = 0, done = 0
    cdef int which = -1, st
    st = dpf_svt_validate(s._st, &v, &t, 0, 1, &bad, &which)
    if st == DPF_E_RANGE and which == 0 and math.isfinite(v):
        v = math.copysign(_svt_value_bound(s._st.grid), v)   # clamp, as in step/feed
        st = dpf_svt_validate(s._st, &v, &t, 0, 1, &bad, &which)
    if st == DPF_OK:
        which = -1
        st = dpf_svt_feed(s._st, r, &v, &t, 0, 1, top, val, &done)
    if st != DPF_OK:
        s._status(st, bad, which, np.float64(v), np.float64(t), "value", "threshold")
    return 0


def rel_pmw_probe(_SVTStream stream, double est, double truth, double T, bint ask_both):
    """One step of online PMW (Dwork & Roth Alg. 6) against a NumericSparse stream, for
    the public estimate e = est: ask f(x) >= e + T, then (only if that was ⊥, erratum E7,
    unless ask_both) -f(x) >= T - e.  Returns a, the answer released by the stream
    (f(x) + noise), or NaN for ⊥⊥.  The two stream queries are the stream's own step,
    under one acquisition of its locks (dpfast.sparse)."""
    cdef dpf_rng_t r
    cdef double v1 = NAN, v2 = NAN, a = NAN
    cdef uint8_t top = 0
    if not stream._st.started:
        raise TypeError("stream not started")
    if not stream._st.numeric:
        raise TypeError("rel_pmw_probe needs a NumericSparse stream")
    with stream._lock, stream._bg.lock:
        if stream._is_halted():
            raise MechanismHaltedError(stream._halted_message())
        _bind(stream._bg, &r)
        _rel_svt_one(stream, &r, truth, est + T, &v1, &top)
        if v1 == v1:
            a = v1
        if (a != a or ask_both) and not stream._is_halted():
            _rel_svt_one(stream, &r, -truth, T - est, &v2, &top)
            if v2 == v2 and a != a:
                a = -v2
    return a


from libc.stdint cimport int32_t

# General linear queries in CSR form (dpfast.query_release.LinearWorkload).  The wrappers
# check everything an index depends on (C-side, O(nnz)), so a malformed matrix is an
# error, never an out-of-bounds access.

cdef int _rel_csr_args(Py_ssize_t N, const int64_t[::1] indptr, const int32_t[::1] indices,
                       object vals) except -1:
    cdef Py_ssize_t nq = indptr.shape[0] - 1
    cdef int st
    cdef const double[::1] v
    if nq < 0 or N < 1:
        raise ValueError("release: indptr needs at least one entry")
    if indptr[nq] != indices.shape[0]:
        raise ValueError("release: indptr[-1] must equal the number of indices")
    if vals is not None:
        v = vals
        if v.shape[0] != indices.shape[0]:
            raise ValueError("release: vals must have one entry per index")
    if indices.shape[0] == 0:
        return 0
    with nogil:
        st = dpf_rel_csr_check(<int64_t>N, <size_t>nq, &indptr[0], &indices[0])
    if st != DPF_OK:
        raise ValueError("release: malformed query rows (indptr or an index)")
    return 0


def rel_csr_matvec(const double[::1] w, const int64_t[::1] indptr,
                   const int32_t[::1] indices, object vals, double[::1] out):
    """out[i] = the weighted sum of w over row i (vals None: 0/1 rows)."""
    cdef Py_ssize_t nq = indptr.shape[0] - 1
    cdef const double[::1] v
    cdef const double *vp = NULL
    cdef const int32_t *ip = NULL
    _rel_csr_args(w.shape[0], indptr, indices, vals)
    if out.shape[0] != nq:
        raise ValueError("release: out must have one entry per query")
    if indices.shape[0]:
        ip = &indices[0]
        if vals is not None:
            v = vals
            vp = &v[0]
    if nq == 0:
        return
    with nogil:
        dpf_rel_csr_matvec(&w[0], <size_t>nq, &indptr[0], ip, vp, &out[0])


def rel_mw_rows(double[::1] w, const int64_t[::1] indptr, const int32_t[::1] indices,
                object vals, const int64_t[::1] rows, const double[::1] targets,
                int passes, double n, double Z):
    """MWEM's step on each listed row in turn, `passes` times; returns the new Z (1)."""
    cdef Py_ssize_t nq = indptr.shape[0] - 1, r, nr = rows.shape[0]
    cdef const double[::1] v
    cdef const double *vp = NULL
    cdef int st
    cdef double z = Z
    _rel_csr_args(w.shape[0], indptr, indices, vals)
    if targets.shape[0] != nr:
        raise ValueError("release: rows and targets must have the same length")
    for r in range(nr):
        if not (0 <= rows[r] < nq):
            raise ValueError("release: a row is outside the workload")
    if nr == 0 or passes <= 0 or indices.shape[0] == 0:
        return z
    if vals is not None:
        v = vals
        vp = &v[0]
    with nogil:
        st = dpf_rel_mw_rows(&w[0], <int64_t>w.shape[0], &indptr[0], &indices[0], vp,
                             <size_t>nr, &rows[0], &targets[0], passes, n, &z)
    _check(st)
    return z


cdef class RelPlan:
    """A checked reduction plan (dpf_rel_plan_t) with its scratch: the arrays are copied
    and kept alive here; dpf_rel_plan_check runs once, at construction."""
    cdef dpf_rel_plan_t p
    cdef readonly object arrays
    cdef readonly int64_t size, ntables, nout

    def __init__(self, shape, parent, keep, sndim, soff, sshape, toff, fsrc, fkeep,
                 offsets):
        cdef const int64_t[::1] sh, so, ss, to, off
        cdef const int32_t[::1] par, snd, fs
        cdef const uint32_t[::1] kp, fk
        arrs = (np.ascontiguousarray(shape, dtype=np.int64),
                np.ascontiguousarray(parent, dtype=np.int32),
                np.ascontiguousarray(keep, dtype=np.uint32),
                np.ascontiguousarray(sndim, dtype=np.int32),
                np.ascontiguousarray(soff, dtype=np.int64),
                np.ascontiguousarray(sshape, dtype=np.int64),
                np.ascontiguousarray(toff, dtype=np.int64),
                np.ascontiguousarray(fsrc, dtype=np.int32),
                np.ascontiguousarray(fkeep, dtype=np.uint32),
                np.ascontiguousarray(offsets, dtype=np.int64))
        nsteps, m = arrs[1].shape[0], arrs[7].shape[0]
        if (arrs[0].shape[0] < 1 or arrs[0].shape[0] > DPF_REL_MAXDIM or m < 1
                or arrs[2].shape[0] != nsteps or arrs[3].shape[0] != nsteps
                or arrs[4].shape[0] != nsteps + 1 or arrs[6].shape[0] != nsteps + 1
                or arrs[8].shape[0] != m or arrs[9].shape[0] != m + 1
                or arrs[4][-1] != arrs[5].shape[0]):
            raise ValueError("release: inconsistent reduction plan")
        for a in arrs:
            a.flags.writeable = False
        sh, par, kp, snd, so, ss, to, fs, fk, off = (
            arrs[0], arrs[1], arrs[2], arrs[3], arrs[4],
            arrs[5] if arrs[5].shape[0] else np.zeros(1, dtype=np.int64), arrs[6],
            arrs[7], arrs[8], arrs[9])
        self.p.ndim = <int>sh.shape[0]
        self.p.shape = &sh[0]
        self.p.nsteps = <int>nsteps
        self.p.parent = &par[0] if nsteps else NULL
        self.p.keep = &kp[0] if nsteps else NULL
        self.p.sndim = &snd[0] if nsteps else NULL
        self.p.soff = &so[0]
        self.p.sshape = &ss[0]
        self.p.toff = &to[0]
        self.p.m = <int>m
        self.p.fsrc = &fs[0]
        self.p.fkeep = &fk[0]
        self.p.offsets = &off[0]
        self.arrays = arrs + (ss,)
        self.ntables = to[nsteps]
        self.nout = off[m]
        self.size = _rel_size(sh)
        if dpf_rel_plan_check(&self.p, self.ntables, self.nout) != DPF_OK:
            raise ValueError("release: inconsistent reduction plan")


def rel_plan_answer(RelPlan plan, const double[::1] w, double[::1] out):
    """Every marginal of w, by the plan, into out (the workload's answer order)."""
    cdef int st
    cdef double[::1] tables = np.empty(max(plan.ntables, 1))
    if w.shape[0] != plan.size or out.shape[0] != plan.nout:
        raise ValueError("release: array length does not match the plan")
    with nogil:
        st = dpf_rel_plan_answer(&plan.p, &w[0], &tables[0], &out[0])
    _check(st)


def rel_mw_joint(RelPlan plan, double[::1] w, const double[::1] targets, int passes,
                 double n):
    """`passes` joint MW passes on the measured (non-NaN) targets; w ends normalised."""
    cdef int st
    cdef double[::1] tables = np.empty(max(plan.ntables, 1))
    cdef double[::1] facs = np.empty(max(plan.ntables, 1))
    cdef double[::1] est = np.empty(plan.nout)
    cdef double[::1] f = np.empty(plan.nout)
    cdef uint8_t[::1] touched = np.empty(max(plan.p.nsteps, 1), dtype=np.uint8)
    if w.shape[0] != plan.size or targets.shape[0] != plan.nout:
        raise ValueError("release: array length does not match the plan")
    with nogil:
        st = dpf_rel_mw_joint(&plan.p, &w[0], &targets[0], passes, n, &tables[0],
                              &facs[0], &est[0], &f[0], &touched[0])
    _check(st)
