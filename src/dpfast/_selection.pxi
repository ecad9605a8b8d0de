# Selection and randomized response (dpfast.selection, dpfast.randomized_response).
# Arguments were validated and the public grid computed in Python; here we only convert,
# hold the generator's lock, release the GIL and map the status (one call to _check).
# Score arrays arrive C-contiguous, float64 or int64, non-empty.

from cpython.exc cimport PyErr_CheckSignals

dpf_selection_init()

# About this many candidate visits (a few milliseconds) between two checks for Ctrl-C in
# the long secure loops.
cdef size_t _INTERRUPT_WORK = 1 << 22

SEL_GUMBEL, SEL_EXPONENTIAL, SEL_LAPLACE = DPF_NOISE_GUMBEL, DPF_NOISE_EXPONENTIAL, DPF_NOISE_LAPLACE


cdef int _score_kind(cnp.ndarray a) except -1:
    if not cnp.PyArray_IS_C_CONTIGUOUS(a) or a.ndim != 1:
        raise ValueError("internal: scores must be a 1-d C-contiguous array")
    if a.dtype == np.float64:
        return DPF_SCORES_F64
    if a.dtype == np.int64:
        return DPF_SCORES_I64
    raise TypeError(f"internal: scores must be float64 or int64, got {a.dtype}")


cdef dpf_sel_grid_t _mkgrid(double inv_grid, uint64_t g, uint32_t s):
    cdef dpf_sel_grid_t gr
    gr.inv_grid = inv_grid
    gr.g = g
    gr.s = s
    return gr


def scores_argmax(cnp.ndarray scores):
    """Index of the first maximum, or -1 if some float score is NaN or infinite."""
    cdef int kind = _score_kind(scores)
    cdef size_t idx = 0
    cdef size_t m = scores.shape[0]
    cdef const void *p = cnp.PyArray_DATA(scores)
    cdef int st
    with nogil:
        st = dpf_scores_argmax(p, kind, m, &idx)
    if st == DPF_E_PARAM:
        return -1
    _check(st)
    return idx


def em_secure(cnp.ndarray scores, double inv_grid, uint64_t g, uint32_t s, object rng,
              uint64_t shift=0):
    """shift != 0: tests only (the same law, driven through higher layers)."""
    cdef int kind = _score_kind(scores)
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef dpf_sel_grid_t gr = _mkgrid(inv_grid, g, s)
    cdef size_t out = 0, m = scores.shape[0]
    cdef const void *p = cnp.PyArray_DATA(scores)
    cdef int st
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_em_secure_shifted(&r, p, kind, m, &gr, shift, &out)
    _check(st)
    return out


def topk_secure(cnp.ndarray scores, double inv_grid, uint64_t g, uint32_t s, size_t k,
                object rng):
    cdef int kind = _score_kind(scores)
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef dpf_sel_grid_t gr = _mkgrid(inv_grid, g, s)
    cdef size_t m = scores.shape[0]
    cdef const void *p = cnp.PyArray_DATA(scores)
    cdef cnp.ndarray out = np.empty(k, dtype=np.int64)
    cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
    cdef cnp.ndarray layer = np.zeros(m, dtype=np.uint8)
    cdef uint8_t *lp = <uint8_t *>cnp.PyArray_DATA(layer)
    cdef int st = DPF_OK
    cdef size_t t = 0, step
    # Rounds in slices of about _INTERRUPT_WORK candidate visits, with a signal check
    # between slices (never inside a round): Ctrl-C stops a long top-k within a fraction
    # of a second.  Nothing is returned from an interrupted call (the budget was charged
    # before the first round, as for any call that raises after charging).
    step = max(<size_t>1, <size_t>(_INTERRUPT_WORK // m))
    _bind(bg, &r)
    with bg.lock:
        while t < k and st == DPF_OK:
            with nogil:
                st = dpf_topk_secure_rounds(&r, p, kind, m, &gr, lp, t, min(k, t + step), o)
            t = min(k, t + step)
            if t < k:
                PyErr_CheckSignals()
    _check(st)
    return out


def noisy_max_secure(cnp.ndarray scores, double inv_grid, uint64_t g, uint32_t s, int noise,
                     object rng):
    cdef int kind = _score_kind(scores)
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef dpf_sel_grid_t gr = _mkgrid(inv_grid, g, s)
    cdef size_t out = 0, m = scores.shape[0]
    cdef const void *p = cnp.PyArray_DATA(scores)
    cdef int st
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_noisy_max_secure(&r, p, kind, m, &gr, noise, &out)
    _check(st)
    return out


def noisy_max_fast(cnp.ndarray scores, double gamma, int noise, object rng):
    cdef int kind = _score_kind(scores)
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef size_t out = 0, m = scores.shape[0]
    cdef const double *p = <const double *>cnp.PyArray_DATA(scores)
    cdef int st
    if kind != DPF_SCORES_F64:
        raise TypeError("internal: the fast path takes float64 scores")
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_noisy_max_fast(&r, p, m, gamma, noise, &out)
    _check(st)
    return out


def topk_fast(cnp.ndarray scores, double gamma, size_t k, object rng):
    cdef int kind = _score_kind(scores)
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef size_t m = scores.shape[0]
    cdef const double *p = <const double *>cnp.PyArray_DATA(scores)
    cdef cnp.ndarray out = np.empty(k, dtype=np.int64)
    cdef int64_t *o = <int64_t *>cnp.PyArray_DATA(out)
    cdef int st
    if kind != DPF_SCORES_F64:
        raise TypeError("internal: the fast path takes float64 scores")
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_topk_fast(&r, p, m, gamma, k, o)
    _check(st)
    return out


# Randomized response over many respondents runs through _sliced (_continuous.pxi): the
# lock is held for the whole call, the GIL is released per slice, and Ctrl-C is checked
# between slices.  The C loops consume whole keystream words per slice-aligned batch
# (_SLICE is a multiple of every batch size), so a seeded call gives the same reports in
# slices as in one C call (tests/test_sigint.py pins them).

cdef struct _rr_job:
    int kind             # 0 coins, 1 binary, 2 k-ary
    const void *truth
    void *out
    uint64_t k, threshold


cdef int _rr_slice(void *ctx, dpf_rng_t *r, size_t off, size_t m) noexcept nogil:
    cdef _rr_job *j = <_rr_job *>ctx
    if j.kind == 0:
        dpf_rr_coins(r, <const uint8_t *>j.truth + off, <uint8_t *>j.out + off, m)
    elif j.kind == 1:
        dpf_rr_binary(r, <const uint8_t *>j.truth + off, <uint8_t *>j.out + off, m,
                      j.threshold)
    else:
        dpf_rr_kary(r, <const int64_t *>j.truth + off, <int64_t *>j.out + off, m, j.k,
                    j.threshold)
    return DPF_OK


cdef cnp.ndarray _rr(int kind, cnp.ndarray truth, uint64_t k, uint64_t threshold,
                     object rng):
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef cnp.ndarray out = np.empty_like(truth)
    cdef _rr_job job
    job.kind = kind
    job.truth = cnp.PyArray_DATA(truth)
    job.out = cnp.PyArray_DATA(out)
    job.k = k
    job.threshold = threshold
    _bind(bg, &r)
    _check(_sliced(bg, &r, _rr_slice, &job, <size_t>truth.size))
    return out


def rr_coins(cnp.ndarray truth, object rng):
    """truth: C-contiguous uint8 0/1 (any shape); returns uint8 of the same shape."""
    return _rr(0, truth, 0, 0, rng)


def rr_binary(cnp.ndarray truth, uint64_t threshold, object rng):
    return _rr(1, truth, 0, threshold, rng)


def rr_kary(cnp.ndarray truth, uint64_t k, uint64_t threshold, object rng):
    return _rr(2, truth, k, threshold, rng)


def _selection_constants():
    """(k, J, beta_num, beta_den) of the exact layer coins, for the tests."""
    cdef uint64_t c[7][4]
    dpf_selection_constants(c)
    return [tuple(int(c[i][j]) for j in range(4)) for i in range(7)]
