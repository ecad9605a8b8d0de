# Continuous (simulation) samplers: a scalar draw holds the lock; a fill also releases
# the GIL.  Arguments were validated in dpfast.random.
#
# Every bulk fill here, in _discrete.pxi and in _mechanisms.pxi runs through _sliced: the
# generator's lock is held for the whole fill (so its words are consumed in one run, as by
# a single C call), the GIL is released for each slice of _SLICE values, and between
# slices (never inside a sampler's loop) PyErr_CheckSignals lets Ctrl-C raise.  The C
# fills keep no state across values that a slice boundary could cut (their only per-call
# caches are deterministic tables), so a seeded fill gives the same values in slices as
# in one call.  On an interrupt the generator stands just after the last finished slice:
# it is consistent, and the next draw continues its stream from there.

ctypedef double (*_std_fn)(dpf_rng_t *) noexcept nogil
ctypedef void (*_fill_fn)(dpf_rng_t *, double, double *, size_t) noexcept nogil

cdef enum:
    _UNIFORM, _EXPONENTIAL, _NORMAL, _LAPLACE, _GUMBEL

UNIFORM, EXPONENTIAL, NORMAL, LAPLACE, GUMBEL = range(5)

cdef _std_fn _STD[5]
cdef _fill_fn _FILL[5]
_STD[:] = [NULL, dpf_std_exponential, dpf_std_normal, dpf_std_laplace, dpf_std_gumbel]
_FILL[:] = [NULL, dpf_exponential_fill, dpf_normal_fill, dpf_laplace_fill, dpf_gumbel_fill]


from cpython.exc cimport PyErr_CheckSignals

# Values per nogil call of a bulk fill: a few milliseconds for the fast samplers.
_SLICE = 1 << 20

# One slice of a fill: write values [off, off + m) of the job described by ctx.
ctypedef int (*_slice_fn)(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil


cdef int _sliced(BitGenerator bg, dpf_rng_t *r, _slice_fn fn, void *ctx,
                 size_t n) except? -1:
    """Run fn over [0, n) in slices under bg's lock; the first non-OK status stops it.
    A signal handler's exception (KeyboardInterrupt) propagates between two slices."""
    cdef size_t off = 0, m
    cdef int st = DPF_OK
    with bg.lock:
        while off < n:
            m = min(n - off, <size_t>_SLICE)
            with nogil:
                st = fn(ctx, r, off, m)
            off += m
            if st != DPF_OK or off >= n:
                break
            PyErr_CheckSignals()
    return st


cdef struct _cont_job:
    _fill_fn fill       # NULL: uniform
    double a, b
    double *out


cdef int _cont_slice(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil:
    cdef _cont_job *j = <_cont_job *>ctx
    if j.fill == NULL:
        dpf_uniform_fill(r, j.a, j.b, j.out + off, m)
    else:
        j.fill(r, j.a, j.out + off, m)
    return DPF_OK


cdef cnp.ndarray _target(object size, object out):
    """The array to write: ``out`` or a new float64 array of ``size``."""
    if out is not None:
        if size is not None and tuple(out.shape) != tuple(size):
            raise ValueError(f"out has shape {out.shape} but size is {tuple(size)}")
        return out
    return np.empty(size, dtype=np.float64)


def continuous(int kind, double a, double b, object size, object rng, object out):
    """Scale ``a`` (and, for uniform, width ``b``) times a standard draw."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef double v
    cdef cnp.ndarray arr, buf
    cdef size_t n
    cdef _std_fn std = _STD[kind]
    cdef _cont_job job
    _bind(bg, &r)
    if size is None and out is None:
        with bg.lock:
            if kind == _UNIFORM:
                v = a + b * dpf_next_double(&r)
            else:
                v = a * std(&r)
        return v
    arr = _target(size, out)
    buf = arr if cnp.PyArray_IS_C_CONTIGUOUS(arr) else np.empty((<object>arr).shape)
    n = buf.size
    job.fill, job.a, job.b = _FILL[kind], a, b
    job.out = <double *>cnp.PyArray_DATA(buf)
    # an interrupt leaves a caller's contiguous ``out`` partly written (documented)
    _sliced(bg, &r, _cont_slice, &job, n)
    if buf is not arr:
        arr[...] = buf
    return arr
