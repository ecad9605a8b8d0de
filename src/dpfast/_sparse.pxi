# The streaming sparse vector technique (csrc/sparse.c): one C struct per stream, an object
# lock around every method that touches it, the generator's lock and no GIL around the
# C loop.  dpfast.sparse validates the parameters and computes the noise scales; this
# layer converts arrays, holds the locks and turns status codes into exceptions.
#
# The struct's secret fields (the current threshold noise) are not declared in _cdpf.pxd,
# so no Cython code can read them; nothing here returns them; the object refuses to be
# pickled or copied (Lyu, Su & Li 2017: the noisy threshold must never be released).

from libc.stdlib cimport calloc, free
from libc.math cimport NAN
from libc.stdint cimport int64_t

from . import _validation
from ._errors import MechanismHaltedError, PrivacyParameterError

_SVT_SECURE = DPF_SVT_SECURE
_SVT_FAST = DPF_SVT_FAST
SVT_VALUE_LIMIT = DPF_SVT_VALUE_LIMIT
# Queries per C call of feed (a signal check between calls): a few milliseconds.
_SVT_SLICE = 1 << 20
SVT_MAX_INV_L = DPF_SVT_MAX_INV_L
SVT_ATOM_BITS_MIN = DPF_SVT_ATOM_BITS_MIN
SVT_ATOM_BITS_MAX = DPF_SVT_ATOM_BITS_MAX


cdef object _svt_values(object values, str name):
    """A 1-D contiguous float64 array of ``values`` (a copy only when needed).

    Query values are private: their conversion is exact or refused by type, never by
    value (integers clamped to +-2**53, see _validation.real_data).  Thresholds are
    public and converted by _validation.float_array."""
    if name == "values":
        arr = _validation.float_data(name, values)
    else:
        arr = _validation.float_array(name, values, allow_nonfinite=True)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional; got shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


cdef double _svt_value_bound(double grid):
    """The largest query value the secure grid represents: just below 2^61 steps."""
    return np.nextafter(DPF_SVT_VALUE_LIMIT * grid, 0.0)


cdef double _svt_scalar(object value, str name) except? -1.0:
    """One query value (private: exact or refused by type, integers clamped to +-2**53)
    or threshold (public) as a double; finiteness is checked in C."""
    if type(value) is float:
        return <double>value
    if name == "value":
        arr = _validation.float_data(name, value)
    else:
        arr = _validation.float_array(name, value, allow_nonfinite=True)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a scalar; got an array of shape {arr.shape}")
    return float(arr)


cdef class _SVTStream:
    """Base of AboveThreshold, Sparse and NumericSparse (dpfast.sparse): the C state."""
    cdef dpf_svt_t *_st
    cdef BitGenerator _bg
    cdef object _lock
    cdef bint _configured
    cdef double _vrange       # > 0: query values are clamped to [-_vrange, _vrange] (public)

    def __cinit__(self, *args, **kwargs):
        self._st = <dpf_svt_t *>calloc(1, sizeof(dpf_svt_t))
        if self._st == NULL:
            raise MemoryError()
        self._lock = threading.Lock()
        self._configured = False

    def __dealloc__(self):
        if self._st != NULL:
            dpf_svt_wipe(self._st)
            free(self._st)
            self._st = NULL

    # -------------------------------------------------- configuration (once)

    cdef int _claim(self, rng) except -1:
        if self._configured:
            raise TypeError("this stream is already configured; create a new object")
        self._bg = _resolve(rng)
        self._configured = True
        return 0

    def _configure_secure(self, rng, int64_t cutoff, bint numeric, double grid,
                          double threshold, double inv_l, int atom_bits, uint64_t thr_num,
                          uint64_t thr_den, uint64_t val_num, uint64_t val_den,
                          bint constant_time):
        """Set up the secure path; returns the certified slack of one threshold draw and
        of one value draw (zero for the exact sampler)."""
        self._claim(rng)
        st = dpf_svt_init_secure(self._st, cutoff, numeric, grid, threshold, inv_l,
                                 atom_bits, thr_num, thr_den, val_num, val_den,
                                 constant_time)
        if st == DPF_E_RANGE:
            raise PrivacyParameterError(
                "the secure grid cannot represent these parameters (threshold / grid must "
                f"be below 2**61 in absolute value; got threshold={threshold!r}, "
                f"grid={grid!r}); pass a larger granularity=")
        _check(st)
        return dpf_svt_thr_slack(self._st), dpf_svt_val_slack(self._st)

    def _set_value_range(self, double value_range):
        """Clamp every query value to [-value_range, value_range] (public; before start)."""
        if self._st.started:
            raise TypeError("the value range is set before the stream starts")
        self._vrange = value_range

    def _configure_fast(self, rng, int64_t cutoff, bint numeric, double threshold,
                        double thr_scale, double q_scale, double val_scale):
        self._claim(rng)
        _check(dpf_svt_init_fast(self._st, cutoff, numeric, threshold, thr_scale, q_scale,
                                 val_scale))

    def _start(self):
        """Draw the first noisy threshold (before any query)."""
        cdef dpf_rng_t r
        cdef int st
        if not self._configured or self._st.started:
            raise TypeError("stream not configured, or already started")
        with self._lock:
            _bind(self._bg, &r)
            with self._bg.lock:
                st = dpf_svt_start(self._st, &r)
        _check(st)

    # -------------------------------------------------- errors, in one place

    cdef int _status(self, int st, size_t bad, int which, object values,
                     object thresholds, str vname="values", str tname="thresholds") except -1:
        if st == DPF_OK:
            return 0
        if st == DPF_E_RANGE and which >= 0:
            name = vname if which == 0 else tname
            arr = values if which == 0 else thresholds
            where = f"{name}[{bad}]" if arr.ndim else name
            if which == 0:
                # a query value is private: name the position, never the value
                raise PrivacyParameterError(
                    f"{where} must be finite (NaN and +-inf are outside every sensitivity "
                    "bound; the value is not shown: it is private); nothing was consumed")
            x = float(arr[bad]) if arr.ndim else float(arr)
            if x != x or x in (float("inf"), float("-inf")):
                raise PrivacyParameterError(f"{where} must be finite; got {x!r}")
            limit = DPF_SVT_VALUE_LIMIT * self._st.grid
            raise PrivacyParameterError(
                f"{where} must be below {limit!r} in absolute value (2**61 steps of the "
                f"secure grid {self._st.grid!r}); got {x!r}; pass a larger granularity=")
        if st == DPF_E_PARAM and self._st.halted:
            raise MechanismHaltedError(self._halted_message())
        _check(st)
        return 0

    def _halted_message(self):
        if self._st.forked:
            return (f"{type(self).__name__} was started in another process: a forked copy "
                    "of a stream never answers (it would reuse its parent's noisy "
                    "threshold); create a new stream in this process")
        return (f"{type(self).__name__} has halted after {self._st.count} positive "
                f"answer(s) and {self._st.consumed} queries; it never answers again")

    # -------------------------------------------------- queries

    def feed(self, values, thresholds=None):
        """Answer a batch of queries in order; see the class documentation."""
        cdef dpf_rng_t r
        cdef cnp.ndarray v, t = None, top, val = None
        cdef const double *pt = NULL
        cdef double *pval = NULL
        cdef size_t n, ts = 0, done = 0, bad = 0
        cdef int which = -1, st
        if not self._st.started:
            raise TypeError("stream not started")
        if self._st.halted:            # (checked again under the lock)
            raise MechanismHaltedError(self._halted_message())
        v = _svt_values(values, "values")
        if self._vrange > 0.0:
            # the public value range: 1-Lipschitz, the sensitivity is unchanged (NaN stays
            # NaN and is refused below)
            v = np.clip(v, -self._vrange, self._vrange)
        n = v.shape[0]
        if thresholds is not None:
            if np.ndim(thresholds) == 0:
                t = _svt_values(np.reshape(thresholds, (1,)), "thresholds")
                ts = 0
            else:
                t = _svt_values(thresholds, "thresholds")
                if t.shape[0] != n:
                    raise ValueError(f"thresholds must be a scalar or have the shape of "
                                     f"values {(<object>v).shape}; got {(<object>t).shape}")
                ts = 1
            pt = <const double *>cnp.PyArray_DATA(t)
        top = np.empty(n, dtype=np.bool_)
        if self._st.numeric:
            val = np.empty(n, dtype=np.float64)
            pval = <double *>cnp.PyArray_DATA(val)
        with self._lock:
            if self._st.halted:
                raise MechanismHaltedError(self._halted_message())
            with nogil:
                st = dpf_svt_validate(self._st, <const double *>cnp.PyArray_DATA(v), pt, ts,
                                      n, &bad, &which)
            if st == DPF_E_RANGE and which == 0 and math.isfinite(v[bad]):
                # A finite query value beyond the secure grid's range is clamped, not
                # refused: clamping is 1-Lipschitz, so the sensitivity is unchanged, and
                # an error would tell the caller something about the data.
                bound = _svt_value_bound(self._st.grid)
                v = np.clip(v, -bound, bound)
                with nogil:
                    st = dpf_svt_validate(self._st, <const double *>cnp.PyArray_DATA(v), pt,
                                          ts, n, &bad, &which)
            if st == DPF_OK:
                which = -1
                _bind(self._bg, &r)
                with self._bg.lock:
                    st = self._feed_slices(&r, <const double *>cnp.PyArray_DATA(v), pt, ts,
                                           n, <uint8_t *>cnp.PyArray_DATA(top), pval, &done,
                                           val if self._st.numeric else top)
        self._status(st, bad, which, v, t if ts else (np.float64(t[0]) if t is not None else None))
        # a copy of the answered prefix: no view onto memory past the halt
        if self._st.numeric:
            return val[:done].copy() if done < n else val
        return top[:done].copy() if done < n else top

    cdef int _feed_slices(self, dpf_rng_t *r, const double *v, const double *t, size_t ts,
                          size_t n, uint8_t *top, double *val, size_t *done,
                          object answers) except? -1:
        """dpf_svt_feed over slices of _SVT_SLICE queries with a signal check between
        them (outside the C loop).  A batch in slices has the law and, on the secure path,
        the very answers of the whole batch (query noise sits at fixed positions).  If a
        signal handler raises (Ctrl-C), the queries answered so far stay answered
        (``consumed`` counts them) and their answers travel on the exception as
        ``exc.svt_answers``: nothing answered is lost, nothing is answered twice."""
        cdef size_t off = 0, m, d
        cdef int st = DPF_OK
        done[0] = 0
        while off < n:
            m = min(n - off, <size_t>_SVT_SLICE)
            d = 0
            with nogil:
                st = dpf_svt_feed(self._st, r, v + off, (t + off) if (t != NULL and ts)
                                  else t, ts, m, top + off,
                                  (val + off) if val != NULL else NULL, &d)
            done[0] += d
            off += m
            if st != DPF_OK or d < m or off >= n:
                break
            try:
                PyErr_CheckSignals()
            except BaseException as exc:
                exc.svt_answers = answers[:done[0]].copy()
                raise
        return st

    def step(self, value, threshold=None):
        """Answer one query; see the class documentation."""
        cdef dpf_rng_t r
        cdef double v, t
        cdef const double *pt = NULL
        cdef uint8_t top = 0
        cdef double val = NAN
        cdef size_t done = 0, bad = 0
        cdef int which = -1, st
        if not self._st.started:
            raise TypeError("stream not started")
        if self._st.halted:            # (checked again under the lock)
            raise MechanismHaltedError(self._halted_message())
        v = _svt_scalar(value, "value")
        if self._vrange > 0.0 and not v != v:
            v = min(max(v, -self._vrange), self._vrange)
        if threshold is not None:
            t = _svt_scalar(threshold, "threshold")
            pt = &t
        with self._lock:
            if self._st.halted:
                raise MechanismHaltedError(self._halted_message())
            st = dpf_svt_validate(self._st, &v, pt, 0, 1, &bad, &which)
            if st == DPF_E_RANGE and which == 0 and math.isfinite(v):
                v = math.copysign(_svt_value_bound(self._st.grid), v)   # clamp, as in feed
                st = dpf_svt_validate(self._st, &v, pt, 0, 1, &bad, &which)
            if st == DPF_OK:
                which = -1
                _bind(self._bg, &r)
                with self._bg.lock:
                    st = dpf_svt_feed(self._st, &r, &v, pt, 0, 1, &top, &val, &done)
        if st != DPF_OK:
            self._status(st, bad, which, np.float64(v),
                         np.float64(t) if pt != NULL else None, "value", "threshold")
        if self._st.numeric:
            return val
        return top != 0

    # -------------------------------------------------- public state

    cdef bint _is_halted(self):
        # halted, or a copy in a process forked after the start (which halts on its next
        # call, see dpf_svt_feed)
        return self._st.halted or (self._st.started and
                                   self._st.fork_gen != dpf_fork_generation)

    @property
    def halted(self):
        """True once the stream has given its last answer (it never answers again)."""
        return bool(self._is_halted())

    @property
    def consumed(self):
        """Number of queries answered so far."""
        return int(self._st.consumed)

    @property
    def positives(self):
        """Number of positive (above-threshold) answers so far."""
        return int(self._st.count)

    @property
    def remaining_positives(self):
        """How many more positive answers the stream can give before it halts."""
        return int(self._st.cutoff - self._st.count) if not self._is_halted() else 0

    # -------------------------------------------------- no copies

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} holds a secret noisy threshold and cannot be "
                        "pickled or copied (Lyu, Su & Li 2017); create a new stream instead")

    def __reduce_ex__(self, protocol):
        return self.__reduce__()

    def __copy__(self):
        return self.__reduce__()

    def __deepcopy__(self, memo):
        return self.__reduce__()

    def __getstate__(self):
        return self.__reduce__()


SVT_CHUNK = DPF_SVT_CHUNK


def _svt_query_noise_chunk(double inv_l, words, impl="best",
                           int atom_bits=DPF_SVT_ATOM_BITS_MAX, rt=None, double grid=1.0):
    """The secure path's query noise for one chunk of SVT_CHUNK given words, computed by
    one named implementation (tests of the inversion only; a pure function of its
    arguments, tied to no stream).  Query j uses words[j].  With rt (an int): also the
    comparison bounds for R + floor(T/g) = rt on the grid ``grid``, as (noise, bounds)."""
    impls = {"best": DPF_IMPL_BEST, "scalar": DPF_IMPL_SCALAR, "sse2": DPF_IMPL_VEC128,
             "neon": DPF_IMPL_VEC128, "avx2": DPF_IMPL_AVX2, "avx512": DPF_IMPL_AVX512}
    cdef cnp.ndarray w = np.ascontiguousarray(words, dtype=np.uint64)
    cdef cnp.ndarray out = np.zeros(DPF_SVT_CHUNK, dtype=np.int64)
    cdef cnp.ndarray bounds = np.zeros(DPF_SVT_CHUNK, dtype=np.float64)
    cdef int64_t rt_c = 0 if rt is None else rt
    cdef dpf_svt_t *s
    cdef int st
    if w.ndim != 1 or w.shape[0] != DPF_SVT_CHUNK:
        raise ValueError(f"words must have shape ({DPF_SVT_CHUNK},)")
    s = <dpf_svt_t *>calloc(1, sizeof(dpf_svt_t))
    if s == NULL:
        raise MemoryError()
    try:
        _check(dpf_svt_init_secure(s, 1, 0, grid, 0.0, inv_l, atom_bits, 1, 1, 1, 1, 0))
        st = dpf_svt_query_noise_chunk(s, impls[impl], <const uint64_t *>cnp.PyArray_DATA(w),
                                       <int64_t *>cnp.PyArray_DATA(out),
                                       NULL if rt is None else <double *>cnp.PyArray_DATA(bounds),
                                       rt_c)
    finally:
        dpf_svt_wipe(s)
        free(s)
    if st != 0:
        raise ValueError(f"implementation {impl!r} is not available on this CPU")
    return out if rt is None else (out, bounds)


def _svt_simd_available():
    """Names of the query-noise implementations this build and CPU run (tests)."""
    names = []
    words = np.zeros(DPF_SVT_CHUNK, dtype=np.uint64)
    for name in ("scalar", "sse2", "neon", "avx2", "avx512"):
        try:
            _svt_query_noise_chunk(2.0, words, name)
        except ValueError:
            continue
        if name == "neon" and "sse2" in names:
            continue
        names.append(name)
    return names


def _svt_inversion_constants(double inv_l, int atom_bits=DPF_SVT_ATOM_BITS_MAX):
    """(log2(1+q), the sign split word, the atom's bound word) of the inversion, for the
    reference in the tests."""
    cdef dpf_svt_t *s = <dpf_svt_t *>calloc(1, sizeof(dpf_svt_t))
    if s == NULL:
        raise MemoryError()
    try:
        _check(dpf_svt_init_secure(s, 1, 0, 1.0, 0.0, inv_l, atom_bits, 1, 1, 1, 1, 0))
        return s.q_c1, int(s.q_pos), int(s.q_atom)
    finally:
        dpf_svt_wipe(s)
        free(s)
