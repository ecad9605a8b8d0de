# Grouped releases (dpfast.grouped): contribution bounding and partition selection.
# The Python layer has validated everything, made the codes dense and the arrays
# C-contiguous int64 / float64 of equal length; here we convert, hold the generator's
# lock, release the GIL and map the status (one call to _check).


def bound_contributions(cnp.ndarray unit, size_t n_units, cnp.ndarray key, size_t n_keys,
                        object value, object grid, uint64_t max_partitions,
                        uint64_t max_contributions, bint want_units, object rng):
    """(count, qsum or None, units or None), int64 arrays of length n_keys.

    grid: (lo, hi, inv_step, qlo, qhi) when value is a float64 array, else ignored."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef dpf_value_grid_t g
    cdef size_t n = unit.shape[0]
    cdef cnp.ndarray count = np.empty(n_keys, dtype=np.int64)
    cdef cnp.ndarray qsum = None, units = None
    cdef cnp.ndarray val = None
    cdef const double *vp = NULL
    cdef int64_t *sp = NULL
    cdef int64_t *up = NULL
    cdef const int64_t *ip = <const int64_t *>cnp.PyArray_DATA(unit)
    cdef const int64_t *kp = <const int64_t *>cnp.PyArray_DATA(key)
    cdef int64_t *cp = <int64_t *>cnp.PyArray_DATA(count)
    cdef int st
    if key.shape[0] != n:
        raise ValueError("internal: unit and key lengths differ")
    memset(&g, 0, sizeof(g))
    if value is not None:
        val = <cnp.ndarray>value
        if val.shape[0] != n:
            raise ValueError("internal: value length differs")
        vp = <const double *>cnp.PyArray_DATA(val)
        g.lo, g.hi, g.inv_step, g.qlo, g.qhi = grid
        qsum = np.empty(n_keys, dtype=np.int64)
        sp = <int64_t *>cnp.PyArray_DATA(qsum)
    if want_units:
        units = np.empty(n_keys, dtype=np.int64)
        up = <int64_t *>cnp.PyArray_DATA(units)
    _bind(bg, &r)
    with bg.lock, nogil:
        st = dpf_bound_contributions(&r, n, ip, n_units, kp, n_keys, vp, &g, max_partitions,
                                     max_contributions, cp, sp, up)
    _check(st)
    return count, qsum, units


def select_partitions(cnp.ndarray units, cnp.ndarray table, object rng):
    """uint8 keep flags: P[keep p] = 1 if units[p] >= len(table) else table[units[p]]/2^64."""
    cdef BitGenerator bg = _resolve(rng)
    cdef dpf_rng_t r
    cdef size_t m = units.shape[0]
    cdef cnp.ndarray keep = np.empty(m, dtype=np.uint8)
    _bind(bg, &r)
    with bg.lock, nogil:
        dpf_select_partitions(&r, <const int64_t *>cnp.PyArray_DATA(units), m,
                              <const uint64_t *>cnp.PyArray_DATA(table), table.shape[0],
                              <uint8_t *>cnp.PyArray_DATA(keep))
    return keep
