# Secure noise for the mechanisms: integer noise from the exact discrete samplers, added
# to integers exactly or to floats through the grid (csrc/grid.c).  The calibration (what
# k, a, b are) is decided and proved in dpfast.mechanisms; this only moves data.

cdef enum:
    _NOISE_DLAP = 0
    _NOISE_DGAUSS = 1
    _CHUNK = 4096

NOISE_DLAP, NOISE_DGAUSS = 0, 1


cdef int _int_noise(int kind, dpf_rng_t *r, uint64_t a, uint64_t b, int64_t *z,
                    size_t n) noexcept nogil:
    if kind == _NOISE_DLAP:
        return dpf_discrete_laplace_fill(r, a, b, z, n)     # scale a/b
    return dpf_discrete_gaussian_fill(r, a, b, z, n)        # sigma^2 = a/b


def grid_release(int kind, object x, int k, uint64_t a, uint64_t b, object rng):
    """fl(2^k (round(x / 2^k) + Z)) for a float or a float64 array x (a new array)."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef int status = DPF_OK
    cdef double xv, yv
    cdef int64_t zv
    cdef cnp.ndarray xa, out, zbuf
    cdef double *xp
    cdef double *op
    cdef int64_t *zp
    cdef size_t n, off, m
    _bind(bg, &r)
    if isinstance(x, float):
        xv = x
        with bg.lock:
            status = _int_noise(kind, &r, a, b, &zv, 1)
            if status == DPF_OK:
                status = dpf_grid_add(&xv, &zv, &yv, 1, k)
        _check(status)
        return yv
    xa = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(xa)
    n = xa.size
    zbuf = np.empty(min(n, <size_t>_CHUNK), dtype=np.int64)
    xp = <double *>cnp.PyArray_DATA(xa)
    op = <double *>cnp.PyArray_DATA(out)
    zp = <int64_t *>cnp.PyArray_DATA(zbuf)
    with bg.lock, nogil:
        off = 0
        while off < n and status == DPF_OK:
            m = min(n - off, <size_t>_CHUNK)
            status = _int_noise(kind, &r, a, b, zp, m)
            if status == DPF_OK:
                status = dpf_grid_add(xp + off, zp, op + off, m, k)
            off += m
        dpf_secure_zero(zp, min(n, <size_t>_CHUNK) * sizeof(int64_t))
    _check(status)
    return out


def int_release(int kind, object x, uint64_t a, uint64_t b, object rng):
    """x + Z for an int or an int64 array x (a new array); OverflowError past int64."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef int status = DPF_OK
    cdef int64_t xv, zv, yv
    cdef cnp.ndarray xa, out
    cdef size_t n
    _bind(bg, &r)
    if isinstance(x, int):
        xv = x
        with bg.lock:
            status = _int_noise(kind, &r, a, b, &zv, 1)
            if status == DPF_OK:
                status = dpf_int_add(&xv, &zv, &yv, 1)
        _check(status)
        return yv
    xa = np.ascontiguousarray(x, dtype=np.int64)
    out = np.empty_like(xa)
    n = xa.size
    with bg.lock, nogil:
        # the noise goes straight into out, then the values are added in place
        status = _int_noise(kind, &r, a, b, <int64_t *>cnp.PyArray_DATA(out), n)
        if status == DPF_OK:
            status = dpf_int_add(<int64_t *>cnp.PyArray_DATA(xa),
                                 <int64_t *>cnp.PyArray_DATA(out),
                                 <int64_t *>cnp.PyArray_DATA(out), n)
    _check(status)
    return out
