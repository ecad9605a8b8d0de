# Secure noise for the mechanisms: integer noise from the exact discrete samplers, added
# to integers exactly or to floats through the grid (csrc/grid.c).  The calibration (what
# k, a, b are) is decided and proved in dpfast.mechanisms; this only moves data.

from libc.stdint cimport INT64_MAX, INT64_MIN

cdef enum:
    _CHUNK = 4096


cdef int _prepared_noise(const dpf_dlap_exact_t *lap, const dpf_dgauss_exact_t *gauss,
                         dpf_rng_t *r, int64_t *z, size_t n) noexcept nogil:
    if lap != NULL:
        return dpf_discrete_laplace_exact_fill(r, lap, z, n)
    return dpf_discrete_gaussian_exact_fill(r, gauss, z, n)


cdef int _unpack(object sampler, const dpf_dlap_exact_t **lap,
                 const dpf_dgauss_exact_t **gauss) except -1:
    """The prepared exact sampler (discrete Laplace or discrete Gaussian) inside."""
    if isinstance(sampler, DiscreteLaplaceExact):
        lap[0] = &(<DiscreteLaplaceExact>sampler).t
    elif isinstance(sampler, DiscreteGaussianExact):
        gauss[0] = &(<DiscreteGaussianExact>sampler).g
    else:
        raise TypeError("sampler must be a prepared exact discrete sampler")
    return 0


# The bulk releases run through _sliced (_continuous.pxi): Ctrl-C stops them between two
# slices of _SLICE values (a multiple of _CHUNK), nothing is returned, and the noise
# already drawn stays in buffers that are zeroed or dropped with the result.
cdef struct _rel_job:
    const dpf_dlap_exact_t *lap
    const dpf_dgauss_exact_t *gauss
    int k
    const double *xf
    double *of
    int64_t *z
    const int64_t *xi
    int64_t *oi


cdef int _grid_slice(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil:
    cdef _rel_job *j = <_rel_job *>ctx
    cdef size_t end = off + m, c
    cdef int status = DPF_OK
    while off < end and status == DPF_OK:
        c = min(end - off, <size_t>_CHUNK)
        status = _prepared_noise(j.lap, j.gauss, r, j.z, c)
        if status == DPF_OK:
            status = dpf_grid_add(j.xf + off, j.z, j.of + off, c, j.k)
        off += c
    return status


cdef int _int_release_slice(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil:
    # the noise goes straight into out, then the values are added in place
    cdef _rel_job *j = <_rel_job *>ctx
    cdef int status = _prepared_noise(j.lap, j.gauss, r, j.oi + off, m)
    if status == DPF_OK:
        _saturating_add(j.xi + off, j.oi + off, j.oi + off, m)
    return status


def grid_release(object sampler, object x, int k, object rng):
    """fl(2^k (round(x / 2^k) + Z)) for a float or a float64 array x (a new array), Z from
    the prepared exact sampler (its public parameters were chosen by the caller)."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef const dpf_dlap_exact_t *lap = NULL
    cdef const dpf_dgauss_exact_t *gauss = NULL
    cdef int status = DPF_OK
    cdef double xv, yv
    cdef int64_t zv
    cdef cnp.ndarray xa, out, zbuf
    cdef _rel_job job
    _unpack(sampler, &lap, &gauss)
    _bind(bg, &r)
    if isinstance(x, float):
        xv = x
        with bg.lock:
            status = _prepared_noise(lap, gauss, &r, &zv, 1)
            if status == DPF_OK:
                status = dpf_grid_add(&xv, &zv, &yv, 1, k)
        _check(status)
        return yv
    xa = np.ascontiguousarray(x, dtype=np.float64)
    out = np.empty_like(xa)
    zbuf = np.empty(min(xa.size, <Py_ssize_t>_CHUNK), dtype=np.int64)
    job.lap, job.gauss, job.k = lap, gauss, k
    job.xf = <const double *>cnp.PyArray_DATA(xa)
    job.of = <double *>cnp.PyArray_DATA(out)
    job.z = <int64_t *>cnp.PyArray_DATA(zbuf)
    try:
        status = _sliced(bg, &r, _grid_slice, &job, xa.size)
    finally:
        zbuf[...] = 0   # the noise is secret: do not leave it in freed memory
    _check(status)
    return out


def grid_add(double x, int64_t z, int k):
    """fl(2^k (round(x / 2^k) + z)) for a finite float x, integer noise |z| < 2^53 grid
    steps drawn by the caller, and -1000 <= k <= 1000 (dpf_grid_add: the one grid
    release; DPF_E_RANGE for |z| >= 2^53)."""
    cdef double y
    if not -1000 <= k <= 1000:
        raise ValueError(f"k must be in [-1000, 1000]; got {k!r}")
    _check(dpf_grid_add(&x, &z, &y, 1, k))
    return y


cdef void _saturating_add(const int64_t *x, const int64_t *z, int64_t *out,
                         size_t n) noexcept nogil:
    # x + z saturated to [INT64_MIN, INT64_MAX]: a post-processing of the exact integer
    # x + z (clamping is monotone), so it needs no privacy argument, and no private value
    # can make the release raise (docs/security-model.md).
    cdef size_t i
    cdef int64_t a, b
    for i in range(n):
        a = x[i]
        b = z[i]
        if b > 0 and a > INT64_MAX - b:
            out[i] = INT64_MAX
        elif b < 0 and a < INT64_MIN - b:
            out[i] = INT64_MIN
        else:
            out[i] = a + b


def int_release(object sampler, object x, object rng):
    """x + Z for an int or an int64 array x (a new array), saturated to int64."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef const dpf_dlap_exact_t *lap = NULL
    cdef const dpf_dgauss_exact_t *gauss = NULL
    cdef int status = DPF_OK
    cdef int64_t xv, zv, yv
    cdef cnp.ndarray xa, out
    cdef _rel_job job
    _unpack(sampler, &lap, &gauss)
    _bind(bg, &r)
    if isinstance(x, int):
        xv = x
        with bg.lock:
            status = _prepared_noise(lap, gauss, &r, &zv, 1)
        _check(status)
        _saturating_add(&xv, &zv, &yv, 1)
        return yv
    xa = np.ascontiguousarray(x, dtype=np.int64)
    out = np.empty_like(xa)
    job.lap, job.gauss = lap, gauss
    job.xi = <const int64_t *>cnp.PyArray_DATA(xa)
    job.oi = <int64_t *>cnp.PyArray_DATA(out)
    try:
        status = _sliced(bg, &r, _int_release_slice, &job, xa.size)
    except BaseException:
        out[...] = 0    # an interrupted release: its partial noise is not left behind
        raise
    _check(status)
    return out


# ---------------------------------------------------------------- prepared scalar releases
#
# A mechanism object's scalar release with rng=None is made millions of times, and its
# cost was Python plumbing, not noise: resolving the generator, taking its
# threading.Lock through the context-manager protocol, re-reading the prepared sampler.
# ScalarPlan holds the sampler's C struct and the grid exponent, and draws from a
# per-thread ChaCha20 that is never handed out (kept in the thread state's dict under a
# private key): only its own thread can reach it, so it needs no lock, and its owner
# never waits.  It is an OS-keyed ChaCha20 like default_rng() (fast key erasure, rekeyed
# in a forked child, wiped when its thread ends); the law of each release is exactly that
# of grid_release / int_release, because the same C calls run on the same prepared plan.

from cpython.dict cimport PyDict_GetItemWithError
from cpython.float cimport PyFloat_AS_DOUBLE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.ref cimport PyObject

cdef extern from "Python.h":
    PyObject *PyThreadState_GetDict()   # borrowed; the calling thread's, never shared

cdef str _STREAM_KEY = "dpfast._core.scalar_stream"


cdef ChaCha20 _thread_stream():
    """The calling thread's private scalar-release stream (created on first use)."""
    cdef PyObject *d = PyThreadState_GetDict()
    cdef PyObject *g
    if d == NULL:
        raise DPFastError("internal error: no thread state dictionary")
    g = PyDict_GetItemWithError(<object>d, _STREAM_KEY)
    if g != NULL:
        return <ChaCha20>g
    stream = ChaCha20()
    (<dict>d)[_STREAM_KEY] = stream
    return stream


cdef class ScalarPlan:
    """A prepared scalar release: ``grid(x)`` is ``grid_release(sampler, x, k, rng)`` and
    ``integer(x)`` is ``int_release(sampler, x, rng)`` for one value, drawn from the
    calling thread's private OS-keyed ChaCha20 (see above).  Either returns ``None`` for
    a value it does not take (not a finite float, not an int within int64): the caller's
    general path then validates and releases it.  The sampler's public parameters were
    chosen and validated by the caller."""
    cdef readonly object sampler
    cdef readonly int k
    cdef const dpf_dlap_exact_t *lap
    cdef const dpf_dgauss_exact_t *gauss

    def __cinit__(self, object sampler, int k=0):
        _unpack(sampler, &self.lap, &self.gauss)
        self.sampler = sampler      # keeps the structs above alive
        self.k = k

    def __reduce__(self):
        return (ScalarPlan, (self.sampler, self.k))

    cdef int _noise(self, int64_t *z) except -1:
        cdef dpf_rng_t r
        r.cc = _thread_stream()._st
        r.state = NULL
        r.next_u64 = NULL
        return _check(_prepared_noise(self.lap, self.gauss, &r, z, 1))

    def grid(self, object x):
        """fl(2^k (round(x / 2^k) + Z)) for a finite float x (exactly a float); else None."""
        cdef double xv, yv
        cdef int64_t zv
        if type(x) is not float:
            return None
        xv = PyFloat_AS_DOUBLE(x)
        if not xv - xv == 0.0:          # NaN or +-inf: the general path refuses it
            return None
        self._noise(&zv)
        _check(dpf_grid_add(&xv, &zv, &yv, 1, self.k))
        return yv

    def integer(self, object x):
        """x + Z saturated to int64 for an int x within int64 (exactly an int); else None."""
        cdef int overflow = 0
        cdef int64_t xv, zv, yv
        if type(x) is not int:
            return None
        xv = PyLong_AsLongLongAndOverflow(x, &overflow)
        if overflow:                    # beyond int64: the general path clamps it
            return None
        self._noise(&zv)
        _saturating_add(&xv, &zv, &yv, 1)
        return yv


def _seed_scalar_stream(seed):
    """Tests only: the calling thread's private stream becomes ``ChaCha20(seed)`` (a new
    OS-keyed one for ``seed=None``), so ScalarPlan's draws can be checked against
    grid_release / int_release on the same seed.  Never call it in production: a seeded
    stream is predictable."""
    cdef PyObject *d = PyThreadState_GetDict()
    if d == NULL:
        raise DPFastError("internal error: no thread state dictionary")
    (<dict>d)[_STREAM_KEY] = ChaCha20() if seed is None else ChaCha20(seed)
