# Boosting for People (dpfast.learn): the reweighting kernels of csrc/boost.c.
# Arguments were validated and every public quantity computed in dpfast/learn/; here we
# only check array layouts, release the GIL (holding the generator's lock when drawing)
# and map the status (one call to _check).

from libc.stdint cimport int8_t


cdef int _vec(cnp.ndarray x, object dtype, size_t n, str name) except -1:
    if x.ndim != 1 or x.dtype != dtype or not cnp.PyArray_IS_C_CONTIGUOUS(x):
        raise ValueError(f"internal: {name} must be a 1-d C-contiguous {dtype} array")
    if <size_t>x.shape[0] != n:
        raise ValueError(f"internal: {name} must have {n} entries")
    return 0


def boost_premultiply(cnp.ndarray v, cnp.ndarray c, double down, double up):
    """a = v * where(c > 0, down, up) (float64 v, int8 c)."""
    cdef size_t m = v.shape[0]
    _vec(v, np.float64, m, "v")
    _vec(c, np.int8, m, "c")
    cdef cnp.ndarray a = np.empty(m, dtype=np.float64)
    cdef const double *pv = <const double *>cnp.PyArray_DATA(v)
    cdef const int8_t *pc = <const int8_t *>cnp.PyArray_DATA(c)
    cdef double *pa = <double *>cnp.PyArray_DATA(a)
    with nogil:
        dpf_boost_premultiply(pv, pc, m, down, up, pa)
    return a


def boost_grid(double g_min, double r, double g_max, size_t n_max):
    """The public grid: g_min r^j below g_max, then g_max; at most n_max points."""
    cdef cnp.ndarray g = np.empty(max(n_max, 1), dtype=np.float64)
    cdef size_t n = 0
    cdef int st
    with nogil:
        st = dpf_boost_grid(g_min, r, g_max, n_max, <double *>cnp.PyArray_DATA(g), &n)
    _check(st)
    return g[:n].copy()


def boost_grid_sums(cnp.ndarray a, cnp.ndarray g):
    """S(g_j) = sum_i min(a_i/g_j, 1) for an ascending grid g."""
    cdef size_t m = a.shape[0], n = g.shape[0]
    _vec(a, np.float64, m, "a")
    _vec(g, np.float64, n, "g")
    cdef cnp.ndarray S = np.empty(n, dtype=np.float64)
    cdef cnp.ndarray cnt = np.empty(n + 1, dtype=np.uintp)
    cdef cnp.ndarray sm = np.empty(n + 1, dtype=np.float64)
    cdef int st
    with nogil:
        st = dpf_boost_grid_sums(<const double *>cnp.PyArray_DATA(a), m,
                                 <const double *>cnp.PyArray_DATA(g), n,
                                 <size_t *>cnp.PyArray_DATA(cnt),
                                 <double *>cnp.PyArray_DATA(sm),
                                 <double *>cnp.PyArray_DATA(S))
    _check(st)
    return S


def boost_solve_w(cnp.ndarray a, double target):
    """(w, capped): the exact root of sum_i min(a_i/w, 1) = target, 0 < target < m."""
    cdef size_t m = a.shape[0]
    _vec(a, np.float64, m, "a")
    cdef cnp.ndarray work = np.empty(2 * m, dtype=np.float64)
    cdef double w = 0.0
    cdef size_t capped = 0
    cdef int st
    with nogil:
        st = dpf_boost_solve_w(<const double *>cnp.PyArray_DATA(a), m, target,
                               <double *>cnp.PyArray_DATA(work), &w, &capped)
    if st == DPF_E_PARAM:
        raise ValueError("internal: solve_w needs finite a > 0 and 0 < target < m")
    _check(st)
    return w, capped


def boost_cap(cnp.ndarray a, double w):
    """(v, capped, mass): v = min(a/w, 1), capped = #{a >= w}, mass = sum v."""
    cdef size_t m = a.shape[0]
    _vec(a, np.float64, m, "a")
    cdef cnp.ndarray v = np.empty(m, dtype=np.float64)
    cdef size_t capped = 0
    cdef double mass = 0.0
    with nogil:
        dpf_boost_cap(<const double *>cnp.PyArray_DATA(a), m, w,
                      <double *>cnp.PyArray_DATA(v), &capped, &mass)
    return v, capped, mass


def boost_sample(cnp.ndarray v, size_t k, object rng):
    """k i.i.d. indices from the law proportional to ceil(v_i 2^K) (exact)."""
    cdef size_t m = v.shape[0]
    _vec(v, np.float64, m, "v")
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef cnp.ndarray cum = np.empty(m, dtype=np.uint64)
    cdef cnp.ndarray out = np.empty(k, dtype=np.int64)
    cdef int st
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_boost_sample(&r, <const double *>cnp.PyArray_DATA(v), m, k,
                              <uint64_t *>cnp.PyArray_DATA(cum),
                              <int64_t *>cnp.PyArray_DATA(out))
    if st == DPF_E_PARAM:
        raise ValueError("internal: sampling weights must lie in (0, 1], 1 <= m <= 2**40")
    _check(st)
    return out
