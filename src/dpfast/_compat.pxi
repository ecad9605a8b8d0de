# Samplers for the drop-in backends (csrc/compat_samplers.c).  Arguments were validated
# in dpfast.random; a scalar draw holds the lock, an array draw also releases the GIL.

BOUNDED_MAX_STEPS = DPF_BOUNDED_MAX_STEPS


def laplace_bounded(object sampler, object x, int k, double lower, double upper,
                    double scale, object rng):
    """Bounded-domain Laplace of each x (a float or a float64 array, finite, inside
    [lower, upper]): on the grid 2^k with the prepared exact sampler when ``sampler`` is
    given, else continuous noise of ``scale`` (simulation)."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef const dpf_dlap_exact_t *lap = NULL
    cdef int status = DPF_OK
    cdef double xv, yv
    cdef cnp.ndarray xa, out
    cdef size_t n
    if sampler is not None:
        if not isinstance(sampler, DiscreteLaplaceExact):
            raise TypeError("sampler must be a prepared exact discrete Laplace")
        lap = &(<DiscreteLaplaceExact>sampler).t
    _bind(bg, &r)
    if isinstance(x, float):
        xv = x
        with bg.lock:
            if lap != NULL:
                status = dpf_laplace_bounded_grid(&r, lap, &xv, &yv, 1, k, lower, upper)
            else:
                dpf_laplace_bounded_fast(&r, scale, &xv, &yv, 1, lower, upper)
        _check(status)
        return yv
    xa = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(xa)
    n = xa.size
    with bg.lock, nogil:
        if lap != NULL:
            status = dpf_laplace_bounded_grid(&r, lap, <double *>cnp.PyArray_DATA(xa),
                                              <double *>cnp.PyArray_DATA(out), n, k,
                                              lower, upper)
        else:
            dpf_laplace_bounded_fast(&r, scale, <double *>cnp.PyArray_DATA(xa),
                                     <double *>cnp.PyArray_DATA(out), n, lower, upper)
    _check(status)
    return out


def gamma(double shape, double scale, object size, object rng):
    """Gamma(shape, scale) draws: one float for size None, else a new array."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef double v
    cdef cnp.ndarray arr
    _bind(bg, &r)
    if size is None:
        with bg.lock:
            dpf_gamma_fill(&r, shape, scale, &v, 1)
        return v
    arr = np.empty(size, dtype=np.float64)
    with bg.lock, nogil:
        dpf_gamma_fill(&r, shape, scale, <double *>cnp.PyArray_DATA(arr), arr.size)
    return arr


def uniform_full_precision(object size, object rng):
    """Uniform [0, 1) rounded down to a double, every double reachable."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef double v
    cdef cnp.ndarray arr
    _bind(bg, &r)
    if size is None:
        with bg.lock:
            dpf_uniform_fp_fill(&r, &v, 1)
        return v
    arr = np.empty(size, dtype=np.float64)
    with bg.lock, nogil:
        dpf_uniform_fp_fill(&r, <double *>cnp.PyArray_DATA(arr), arr.size)
    return arr
