# Continuous (simulation) samplers: a scalar draw holds the lock; a fill also releases
# the GIL.  Arguments were validated in dpfast.random.

ctypedef double (*_std_fn)(dpf_rng_t *) noexcept nogil
ctypedef void (*_fill_fn)(dpf_rng_t *, double, double *, size_t) noexcept nogil

cdef enum:
    _UNIFORM, _EXPONENTIAL, _NORMAL, _LAPLACE, _GUMBEL

UNIFORM, EXPONENTIAL, NORMAL, LAPLACE, GUMBEL = range(5)

cdef _std_fn _STD[5]
cdef _fill_fn _FILL[5]
_STD[:] = [NULL, dpf_std_exponential, dpf_std_normal, dpf_std_laplace, dpf_std_gumbel]
_FILL[:] = [NULL, dpf_exponential_fill, dpf_normal_fill, dpf_laplace_fill, dpf_gumbel_fill]


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
    cdef _fill_fn fill = _FILL[kind]
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
    with bg.lock, nogil:
        if kind == _UNIFORM:
            dpf_uniform_fill(&r, a, b, <double *>cnp.PyArray_DATA(buf), n)
        else:
            fill(&r, a, <double *>cnp.PyArray_DATA(buf), n)
    if buf is not arr:
        arr[...] = buf
    return arr
