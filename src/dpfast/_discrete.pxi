# Discrete samplers (csrc/exact.c, prepared.c, consttime.c): exact ones (Canonne, Kamath, Steinke 2020) and
# constant-time ones with certified thresholds.  dpfast.random has validated every argument
# and converted it to an exact rational; here the values are only bound to C types.  A
# scalar draw holds the generator's lock; a fill also releases the GIL.

from libc.stdint cimport int64_t

ctypedef int (*_rat_fill_fn)(dpf_rng_t *, uint64_t, uint64_t, int64_t *, size_t) noexcept nogil
ctypedef int (*_big_fill_fn)(dpf_rng_t *, const uint64_t *, const uint64_t *, size_t,
                             int64_t *, size_t) noexcept nogil

BERNOULLI, BERNOULLI_EXP, GEOMETRIC, DISCRETE_LAPLACE, DISCRETE_GAUSSIAN = range(5)
BIG_MAX_BITS = 64 * DPF_BIG_MAX_LIMBS
DLAP_CT_MAX_DIGITS = DPF_DLAP_CT_MAX_DIGITS
DGAUSS_CT_MAX = DPF_DGAUSS_CT_MAX

cdef _rat_fill_fn _RAT_FILL[5]
_RAT_FILL[:] = [dpf_bernoulli_rational_fill, dpf_bernoulli_exp_fill, dpf_geometric_fill,
                dpf_discrete_laplace_fill, dpf_discrete_gaussian_fill]

cdef extern from "dpfast/discrete.h":
    enum: DPF_EXACT_FILL_MIN

cdef extern from "dpfast/prepared.h":
    int dpf_dgauss_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t x, int crude,
                               uint64_t *plo, uint64_t *phi) nogil
    void dpf_exp_small_bounds(uint64_t xl, uint64_t xh, uint64_t *plo, uint64_t *phi) nogil
    int dpf_dgauss_exact_prepare_ex(dpf_dgauss_exact_t *g, uint64_t sigma2_num,
                                    uint64_t sigma2_den, unsigned fast_bits,
                                    unsigned span2) nogil
    void dpf_dgauss_block_info(const dpf_dgauss_exact_t *g, uint64_t *m, uint64_t *nblk) nogil
    int dpf_dgauss_block_coin_bounds(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t u,
                                     int crude, uint64_t *plo, uint64_t *phi) nogil
    int dpf_dgauss_block_threshold(const dpf_dgauss_exact_t *g, uint64_t j, uint64_t *lo,
                                   uint64_t *hi) nogil
    int dpf_dgauss_block_coin_fill(dpf_rng_t *r, const dpf_dgauss_exact_t *g, uint64_t j,
                                   uint64_t u, int64_t *out, size_t n) nogil

cdef extern from "dpfast/dgauss.h":
    enum: DPF_DGBLOCK_SPAN2, DPF_DGBLOCK_TMIN

# The bulk fills below run through _sliced (_continuous.pxi): one job, its slices.
cdef enum _int_kind:
    _J_RAT, _J_BIG, _J_BELOW, _J_GEO_CT, _J_LAP_CT, _J_DG_CT, _J_GEO_EX, _J_LAP_EX, _J_DG_EX

cdef struct _int_job:
    _int_kind kind
    _rat_fill_fn rat
    _big_fill_fn big
    uint64_t a, b
    const uint64_t *pn
    const uint64_t *pd
    size_t limbs
    const void *prep        # the prepared sampler's C struct
    int64_t *out


cdef int _int_slice(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil:
    cdef _int_job *j = <_int_job *>ctx
    cdef int64_t *o = j.out + off
    if j.kind == _J_RAT:
        return j.rat(r, j.a, j.b, o, m)
    if j.kind == _J_BIG:
        return j.big(r, j.pn, j.pd, j.limbs, o, m)
    if j.kind == _J_BELOW:
        return dpf_uniform_below_fill(r, j.a, o, m)
    if j.kind == _J_GEO_CT:
        return dpf_geometric_ct_fill(r, <const dpf_dlap_ct_t *>j.prep, o, m)
    if j.kind == _J_LAP_CT:
        return dpf_discrete_laplace_ct_fill(r, <const dpf_dlap_ct_t *>j.prep, o, m)
    if j.kind == _J_DG_CT:
        return dpf_discrete_gaussian_ct_fill(r, <const dpf_dgauss_ct_t *>j.prep, o, m)
    if j.kind == _J_GEO_EX:
        return dpf_geometric_exact_fill(r, <const dpf_dlap_exact_t *>j.prep, o, m)
    if j.kind == _J_LAP_EX:
        return dpf_discrete_laplace_exact_fill(r, <const dpf_dlap_exact_t *>j.prep, o, m)
    return dpf_discrete_gaussian_exact_fill(r, <const dpf_dgauss_exact_t *>j.prep, o, m)


cdef int _int_fill(BitGenerator bg, dpf_rng_t *r, _int_job *job, cnp.ndarray arr) except -1:
    """Fill the int64 array arr by job, in slices (Ctrl-C stops it between two slices:
    nothing is returned, the generator stands after the last finished slice)."""
    job.out = <int64_t *>cnp.PyArray_DATA(arr)
    _check(_sliced(bg, r, _int_slice, job, arr.size))
    return 0


cdef inline object _result(cnp.ndarray arr, object size):
    """A Python int for ``size=None``, else the int64 array."""
    if size is None:
        return int((<int64_t *>cnp.PyArray_DATA(arr))[0])
    return arr


def discrete(int kind, uint64_t a, uint64_t b, object size, object rng):
    """Sampler ``kind`` with the 64-bit rational parameter a/b (validated by the caller)."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef cnp.ndarray arr
    cdef int64_t v
    cdef _rat_fill_fn fill = _RAT_FILL[kind]
    cdef int status
    cdef _int_job job
    _bind(bg, &r)
    if size is None:
        with bg.lock:
            status = fill(&r, a, b, &v, 1)
        _check(status)
        return v
    arr = np.empty(size, dtype=np.int64)
    if arr.size > _SLICE and kind in (GEOMETRIC, DISCRETE_LAPLACE, DISCRETE_GAUSSIAN):
        # The C fill switches to the prepared exact sampler from DPF_EXACT_FILL_MIN values
        # on, with per-call state below it: prepare it here once, so that every slice (the
        # last one may be short) runs the sampler one call would have run.
        if kind == DISCRETE_GAUSSIAN:
            return DiscreteGaussianExact(a, b).draw(size, rng)
        return DiscreteLaplaceExact(a, b).draw(kind == GEOMETRIC, size, rng)
    job.kind, job.rat, job.a, job.b = _J_RAT, fill, a, b
    _int_fill(bg, &r, &job, arr)
    return arr


def discrete_big(int kind, object num, object den, object size, object rng):
    """Bernoulli(num/den) or Bernoulli(exp(-num/den)) for integers of up to BIG_MAX_BITS."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef Py_ssize_t limbs = (max(num.bit_length(), den.bit_length()) + 63) // 64
    cdef cnp.ndarray nl = np.array([(num >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(limbs)],
                                   dtype=np.uint64)
    cdef cnp.ndarray dl = np.array([(den >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(limbs)],
                                   dtype=np.uint64)
    cdef const uint64_t *pn = <const uint64_t *>cnp.PyArray_DATA(nl)
    cdef const uint64_t *pd = <const uint64_t *>cnp.PyArray_DATA(dl)
    cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
    cdef _big_fill_fn fill
    cdef _int_job job
    if kind == BERNOULLI:
        fill = dpf_bernoulli_big_fill
    elif kind == BERNOULLI_EXP:
        fill = dpf_bernoulli_exp_big_fill
    else:
        raise ValueError(f"no multi-word version of sampler {kind}")
    _bind(bg, &r)
    job.kind, job.big, job.pn, job.pd, job.limbs = _J_BIG, fill, pn, pd, limbs
    _int_fill(bg, &r, &job, arr)
    return _result(arr, size)


def uniform_below(uint64_t bound, object size, object rng):
    """Uniform integers on [0, bound) by Lemire's method (bound in [1, 2**63])."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
    cdef _int_job job
    _bind(bg, &r)
    job.kind, job.a = _J_BELOW, bound
    _int_fill(bg, &r, &job, arr)
    return _result(arr, size)


cdef class DiscreteLaplaceCT:
    """Certified thresholds of the bitwise geometric for the scale s_num/s_den (public).

    Built once per scale (dpfast.random caches them); ``slack`` and ``slack_geometric``
    are certified upper bounds on the total variation distance between one draw and the
    exact law.
    """
    cdef dpf_dlap_ct_t t

    def __cinit__(self, uint64_t s_num, uint64_t s_den):
        cdef int status
        with nogil:
            status = dpf_dlap_ct_prepare(&self.t, s_num, s_den)
        _check(status)

    @property
    def scale(self):
        """(s_num, s_den) in lowest terms."""
        return (int(self.t.s_num), int(self.t.s_den))

    @property
    def digits(self):
        return int(self.t.digits)

    @property
    def words(self):
        """(geometric, discrete Laplace): words drawn for the coins of one value."""
        return int(self.t.n_geo), int(self.t.n_lap)

    @property
    def thresholds(self):
        """Per pair of digits (2k, 2k+1): its cumulative thresholds (three, or one for an
        odd last digit)."""
        D = self.t.digits
        return [[int(self.t.threshold[k][i]) for i in range(3 if 2 * k + 1 < D else 1)]
                for k in range((D + 1) // 2)]

    @property
    def sign_threshold(self):
        return int(self.t.sign_threshold)

    @property
    def slack(self):
        return self.t.slack

    @property
    def slack_geometric(self):
        return self.t.slack_geometric

    def draw(self, bint geometric, object size, object rng):
        cdef BitGenerator bg = _resolve(rng)
        cdef dpf_rng_t r
        cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
        cdef int64_t *out = <int64_t *>cnp.PyArray_DATA(arr)
        cdef _int_job job
        _bind(bg, &r)
        if size is None:
            with bg.lock:
                if geometric:
                    out[0] = dpf_geometric_ct(&r, &self.t)
                else:
                    out[0] = dpf_discrete_laplace_ct(&r, &self.t)
        else:
            job.kind, job.prep = (_J_GEO_CT if geometric else _J_LAP_CT), &self.t
            _int_fill(bg, &r, &job, arr)
        return _result(arr, size)


cdef class DiscreteGaussianCT:
    """Certified cumulative table of |X| for sigma^2 = num/den (public); see DiscreteLaplaceCT."""
    cdef dpf_dgauss_ct_t t

    def __cinit__(self, uint64_t sigma2_num, uint64_t sigma2_den):
        cdef int status
        with nogil:
            status = dpf_dgauss_ct_prepare(&self.t, sigma2_num, sigma2_den)
        _check(status)

    @property
    def sigma2(self):
        """(num, den) in lowest terms."""
        return (int(self.t.sigma2_num), int(self.t.sigma2_den))

    @property
    def thresholds(self):
        return [int(self.t.threshold[k]) for k in range(self.t.size)]

    @property
    def slack(self):
        return self.t.slack

    def draw(self, object size, object rng):
        cdef BitGenerator bg = _resolve(rng)
        cdef dpf_rng_t r
        cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
        cdef int64_t *out = <int64_t *>cnp.PyArray_DATA(arr)
        cdef _int_job job
        _bind(bg, &r)
        if size is None:
            with bg.lock:
                out[0] = dpf_discrete_gaussian_ct(&r, &self.t)
        else:
            job.kind, job.prep = _J_DG_CT, &self.t
            _int_fill(bg, &r, &job, arr)
        return _result(arr, size)


cdef class DiscreteLaplaceExact:
    """Prepared exact discrete Laplace / geometric for the scale s_num/s_den (public).

    ``fast_bits`` < 64 only for tests: it makes ties, and so the exact 704-bit
    continuation, frequent.
    """
    cdef dpf_dlap_exact_t t

    def __cinit__(self, uint64_t s_num, uint64_t s_den, unsigned fast_bits=64):
        cdef int status
        with nogil:
            status = dpf_dlap_exact_prepare(&self.t, s_num, s_den, fast_bits)
        _check(status)

    @property
    def scale(self):
        """(s_num, s_den): the scale, in lowest terms."""
        return int(self.t.s_num), int(self.t.s_den)

    @property
    def block(self):
        """2**s: a geometric value is block * G + L, L < block (see prepared.h)."""
        return int(self.t.block)

    @property
    def digits(self):
        """s, the binary digits of L (drawn by rejection)."""
        return int(self.t.digits)

    @property
    def words(self):
        """(geometric, discrete Laplace): keystream words per value on the common path."""
        return int(self.t.n_geo), int(self.t.n_lap)

    def draw(self, bint geometric, object size, object rng):
        cdef BitGenerator bg = _resolve(rng)
        cdef dpf_rng_t r
        cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
        cdef _int_job job
        _bind(bg, &r)
        job.kind, job.prep = (_J_GEO_EX if geometric else _J_LAP_EX), &self.t
        _int_fill(bg, &r, &job, arr)
        return _result(arr, size)


cdef class DiscreteGaussianExact:
    """Prepared exact discrete Gaussian for sigma^2 = num/den (public); see above."""
    cdef dpf_dgauss_exact_t g

    def __cinit__(self, uint64_t sigma2_num, uint64_t sigma2_den, unsigned fast_bits=64,
                  unsigned span2=DPF_DGBLOCK_SPAN2):
        # span2 (tests and benchmarks only): 0 keeps [CKS] Algorithm 3 at every sigma; a
        # small value makes the block sampler's tail likely (csrc/dgauss.c)
        cdef int status
        with nogil:
            status = dpf_dgauss_exact_prepare_ex(&self.g, sigma2_num, sigma2_den, fast_bits,
                                                 span2)
        _check(status)

    def __dealloc__(self):
        dpf_dgauss_exact_free(&self.g)

    @property
    def sigma2(self):
        """(num, den): sigma^2, in lowest terms."""
        return int(self.g.sigma2_num), int(self.g.sigma2_den)

    @property
    def t(self):
        return int(self.g.t)

    @property
    def table_span(self):
        """[CKS] Algorithm 3 (span2 = 0): the largest |y| whose acceptance coin is
        tabulated (0: no table, as with the default block sampler)."""
        return int(self.g.ymax)

    @property
    def blocks(self):
        """(m, J): block width and block count of the large-sigma block sampler
        (csrc/dgauss.c), or (0, 0) where [CKS] Algorithm 3 is used."""
        cdef uint64_t m, nblk
        dpf_dgauss_block_info(&self.g, &m, &nblk)
        return int(m), int(nblk)

    def _block_coin_bounds(self, uint64_t j, uint64_t u, bint crude=False):
        """(lo, hi) with lo <= 2**64 p <= hi for the block sampler's acceptance probability
        p = exp(-u (2 j m + u) / (2 sigma^2)) (tests only)."""
        cdef uint64_t lo, hi
        _check(dpf_dgauss_block_coin_bounds(&self.g, j, u, crude, &lo, &hi))
        return int(lo), int(hi)

    def _block_coin_draw(self, uint64_t j, uint64_t u, Py_ssize_t n, object rng):
        """n draws of the block sampler's acceptance coin for the proposal j m + u, by the
        fill's code (tests only: with fast_bits < 64 they exercise the exact continuation)."""
        cdef BitGenerator bg = _resolve(rng)
        cdef dpf_rng_t r
        cdef cnp.ndarray arr = np.empty(n, dtype=np.int64)
        cdef int status
        _bind(bg, &r)
        with bg.lock:
            status = dpf_dgauss_block_coin_fill(&r, &self.g, j, u,
                                                <int64_t *>cnp.PyArray_DATA(arr), n)
        _check(status)
        return arr

    def _block_threshold(self, uint64_t j):
        """(lo, hi): the stored bounds of the block sampler's threshold C_j, in units of
        2**-(64 - shift) (tests only; shift = 0 unless fast_bits < 64)."""
        cdef uint64_t lo, hi
        _check(dpf_dgauss_block_threshold(&self.g, j, &lo, &hi))
        return int(lo), int(hi)

    @property
    def computed_coin(self):
        """Whether [CKS] Algorithm 3's acceptance coins beyond its table are computed per
        draw (t >= 64; that path runs with span2 = 0)."""
        cdef uint64_t lo, hi
        return dpf_dgauss_coin_bounds(&self.g, 0, 0, &lo, &hi) == DPF_OK

    def _coin_bounds(self, uint64_t x, bint crude=False):
        """(lo, hi) with lo <= 2**64 p <= hi for the acceptance probability p of the
        proposal |y| = x, as the computed coin sees it (crude: its first, wider enclosure;
        tests only)."""
        cdef uint64_t lo, hi
        _check(dpf_dgauss_coin_bounds(&self.g, x, crude, &lo, &hi))
        return int(lo), int(hi)

    def draw(self, object size, object rng):
        cdef BitGenerator bg = _resolve(rng)
        cdef dpf_rng_t r
        cdef cnp.ndarray arr = np.empty(1 if size is None else size, dtype=np.int64)
        cdef _int_job job
        _bind(bg, &r)
        job.kind, job.prep = _J_DG_EX, &self.g
        _int_fill(bg, &r, &job, arr)
        return _result(arr, size)


def _exp_small_bounds(uint64_t xl, uint64_t xh):
    """(lo, hi) with lo <= 2**64 exp(-x) <= hi for xl/2**64 <= x <= xh/2**64 <= 1/32: the
    per-draw polynomial enclosure of the prepared samplers (tests only)."""
    cdef uint64_t lo, hi
    dpf_exp_small_bounds(xl, xh, &lo, &hi)
    return int(lo), int(hi)


def exp_neg_interval(object num, object den, unsigned prec):
    """(lo, hi) with lo <= 2**(64 (prec-1)) exp(-num/den) <= hi, certified (num, den ints
    of up to 384 bits, den > 0, 3 <= prec <= 12)."""
    cdef Py_ssize_t limbs = max(1, (max(num.bit_length(), den.bit_length()) + 63) // 64)
    cdef cnp.ndarray nl = np.array([(num >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(limbs)],
                                   dtype=np.uint64)
    cdef cnp.ndarray dl = np.array([(den >> (64 * i)) & 0xFFFFFFFFFFFFFFFF for i in range(limbs)],
                                   dtype=np.uint64)
    cdef cnp.ndarray lo = np.zeros(12, dtype=np.uint64)
    cdef cnp.ndarray hi = np.zeros(12, dtype=np.uint64)
    _check(dpf_exp_neg_interval(<const uint64_t *>cnp.PyArray_DATA(nl),
                                <const uint64_t *>cnp.PyArray_DATA(dl), limbs, prec,
                                <uint64_t *>cnp.PyArray_DATA(lo), <uint64_t *>cnp.PyArray_DATA(hi)))
    return (sum(int(lo[i]) << (64 * i) for i in range(prec)),
            sum(int(hi[i]) << (64 * i) for i in range(prec)))


# ---------------------------------------------------------------- test helper

cdef struct _replay_t:
    const uint64_t *words
    size_t n
    size_t pos
    int overrun

cdef uint64_t _replay_next(void *st) noexcept nogil:
    cdef _replay_t *s = <_replay_t *>st
    if s.pos < s.n:
        s.pos += 1
        return s.words[s.pos - 1]
    s.overrun = 1
    return 0xFFFFFFFFFFFFFFFF    # makes every coin 0, so every sampling loop ends

cdef uint32_t _replay_next32(void *st) noexcept nogil:
    return <uint32_t>(_replay_next(st) >> 32)

cdef double _replay_double(void *st) noexcept nogil:
    return <double>(_replay_next(st) >> 11) * (1.0 / 9007199254740992.0)


cdef class ReplayWords(BitGenerator):
    """A BitGenerator that hands out a given list of 64-bit words, then 2**64 - 1 (and sets
    ``overrun``).  Not random: tests use it to drive rare branches (ties of the lazy
    comparisons, Lemire rejections) deterministically."""
    cdef _replay_t _st
    cdef object _arr

    def __init__(self, words):
        BitGenerator.__init__(self, SeedlessSeedSequence())
        self._arr = np.ascontiguousarray(np.array(words, dtype=np.uint64))
        self._st.words = <const uint64_t *>cnp.PyArray_DATA(self._arr)
        self._st.n = self._arr.size
        self._st.pos = 0
        self._st.overrun = 0
        self._bitgen.state = <void *>&self._st
        self._bitgen.next_uint64 = &_replay_next
        self._bitgen.next_uint32 = &_replay_next32
        self._bitgen.next_double = &_replay_double
        self._bitgen.next_raw = &_replay_next

    @property
    def consumed(self):
        return int(self._st.pos)

    @property
    def overrun(self):
        return bool(self._st.overrun)


# ---------------------------------------------------------------- timing probe
# bench/timing_probe.py: the ticks of single draws, measured in C (no Python object is
# created inside the timed window), to test whether a sampler's time depends on its value.

ctypedef int (*_probe_fn)(dpf_rng_t *r, void *sampler, int64_t *out) noexcept nogil


cdef int _probe_dlap_ct(dpf_rng_t *r, void *s, int64_t *out) noexcept nogil:
    out[0] = dpf_discrete_laplace_ct(r, <const dpf_dlap_ct_t *>s)
    return DPF_OK


cdef int _probe_dgauss_ct(dpf_rng_t *r, void *s, int64_t *out) noexcept nogil:
    out[0] = dpf_discrete_gaussian_ct(r, <const dpf_dgauss_ct_t *>s)
    return DPF_OK


cdef int _probe_dlap_exact(dpf_rng_t *r, void *s, int64_t *out) noexcept nogil:
    return dpf_discrete_laplace_exact_fill(r, <const dpf_dlap_exact_t *>s, out, 1)


cdef int _probe_dgauss_exact(dpf_rng_t *r, void *s, int64_t *out) noexcept nogil:
    return dpf_discrete_gaussian_exact_fill(r, <const dpf_dgauss_exact_t *>s, out, 1)


def _probe_draws(object sampler, Py_ssize_t n, object rng):
    """(ticks, values): n single draws of a prepared sampler, each timed by dpf_ticks."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef _probe_fn fn
    cdef void *s
    cdef cnp.ndarray ticks = np.empty(n, dtype=np.uint64)
    cdef cnp.ndarray vals = np.empty(n, dtype=np.int64)
    cdef uint64_t *tp = <uint64_t *>cnp.PyArray_DATA(ticks)
    cdef int64_t *vp = <int64_t *>cnp.PyArray_DATA(vals)
    cdef Py_ssize_t i
    cdef uint64_t t0
    cdef int status = DPF_OK
    if isinstance(sampler, DiscreteLaplaceCT):
        fn, s = _probe_dlap_ct, <void *>&(<DiscreteLaplaceCT>sampler).t
    elif isinstance(sampler, DiscreteGaussianCT):
        fn, s = _probe_dgauss_ct, <void *>&(<DiscreteGaussianCT>sampler).t
    elif isinstance(sampler, DiscreteLaplaceExact):
        fn, s = _probe_dlap_exact, <void *>&(<DiscreteLaplaceExact>sampler).t
    elif isinstance(sampler, DiscreteGaussianExact):
        fn, s = _probe_dgauss_exact, <void *>&(<DiscreteGaussianExact>sampler).g
    else:
        raise TypeError("sampler must be a prepared discrete sampler")
    _bind(bg, &r)
    with bg.lock, nogil:
        for i in range(n):
            t0 = dpf_ticks()
            status |= fn(&r, s, vp + i)
            tp[i] = dpf_ticks() - t0
    _check(status)
    return ticks, vals
