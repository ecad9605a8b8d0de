"""Workloads of linear queries over a :class:`~dpfast.query_release.Domain`: marginal-cell
queries (all cells of a chosen set of marginals), single cell queries, and general
[0, 1] query matrices (:class:`LinearWorkload`, compressed sparse rows).

A marginal on attributes S is an axis reduction of the dense histogram; every record
lies in exactly one cell of each marginal, so the vector of all cells of m marginals has
L1 sensitivity m and L2 sensitivity sqrt(m) under add/remove-one neighbours
(:meth:`MarginalWorkload.sensitivity`).  Reductions run in C by implicit strides
(``csrc/release.c``): no index list and no ``|Q| x |X|`` matrix is built.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .. import _core
from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._types import FloatArray, IntArray
from .domain import Domain, shape64

# (steps, finals) of a reduction plan (see _plan)
Plan = tuple[list[tuple[int, int, IntArray]], list[tuple[int, int]]]

__all__ = ["CellQuery", "LinearQuery", "MarginalWorkload", "LinearWorkload"]


class CellQuery:
    """The counting query "attributes ``attrs`` take the values ``values``": the sum of
    the histogram over one cell of the marginal on ``attrs``.  Public by construction.

    ``CellQuery(domain, ("age", "sex"), (2, 1))``
    """

    __slots__ = ("domain", "attrs", "values", "mask", "vals", "n_cells", "cell")

    def __init__(
        self, domain: Domain, attrs: str | int | Sequence[str | int], values: Any
    ) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        keys: tuple[Any, ...] = (attrs,) if isinstance(attrs, (str, int)) else tuple(attrs)
        values = (
            tuple(np.atleast_1d(values).tolist())
            if not isinstance(values, tuple)
            else values
        )
        if len(keys) != len(values):
            raise PrivacyParameterError("attrs and values must have the same length")
        pairs = sorted((domain.attr(k), v) for k, v in zip(keys, values))
        if len({a for a, _ in pairs}) != len(pairs):
            raise PrivacyParameterError(f"attributes repeat in {keys!r}")
        vals = np.zeros(domain.ndim, dtype=np.int64)
        mask = 0
        cells = domain.size
        for a, v in pairs:
            v = _v.integer(
                f"value of {domain.names[a]!r}", v, minimum=0, maximum=domain.shape[a] - 1
            )
            vals[a] = v
            mask |= 1 << a
            cells //= domain.shape[a]
        vals.flags.writeable = False
        self.domain = domain
        self.attrs = tuple(a for a, _ in pairs)
        self.values = tuple(int(vals[a]) for a in self.attrs)
        self.mask = mask
        self.vals = vals
        self.n_cells = cells
        # position of this cell in the C-order table of the marginal on attrs
        cell = 0
        for a, v in zip(self.attrs, self.values):
            cell = cell * domain.shape[a] + v
        self.cell = cell

    def evaluate(self, counts: Any) -> float:
        """The query's value on a histogram (a :class:`Histogram` or an array of length
        ``domain.size``)."""
        return float(
            _core.rel_slice_sum(
                _as_counts(self.domain, counts), shape64(self.domain), self.mask, self.vals
            )
        )

    def __repr__(self) -> str:
        body = ", ".join(
            f"{self.domain.names[a]}={v}" for a, v in zip(self.attrs, self.values)
        )
        return f"CellQuery({body})"


class LinearQuery:
    """A general linear query f: X → [0, 1], f(x) = Σ_i f_i x_i, from a dense vector of
    public weights (0/1 for a counting query).  Its sensitivity is 1 count under
    add/remove-one neighbours.

    ``LinearQuery(domain, weights)`` or ``LinearQuery.from_cells(domain, indices)``.
    Weights are public: a weight outside [0, 1] or a non-finite one is refused.
    """

    __slots__ = ("domain", "weights", "binary")

    def __init__(self, domain: Domain, weights: Any) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        arr = _v.float_array("weights", weights)
        if arr.shape not in ((domain.size,), domain.shape):
            raise PrivacyParameterError(
                f"weights must have shape ({domain.size},) or {domain.shape}; got {arr.shape}"
            )
        if not ((arr >= 0.0).all() and (arr <= 1.0).all()):
            raise PrivacyParameterError("weights must lie in [0, 1]")
        arr = np.array(arr, dtype=np.float64).reshape(-1)
        arr.flags.writeable = False
        self.domain = domain
        self.weights = arr
        self.binary = bool(((arr == 0.0) | (arr == 1.0)).all())

    @classmethod
    def from_cells(cls, domain: Domain, indices: Any) -> LinearQuery:
        """The counting query of a set of cells (flat indices into X)."""
        idx = np.asarray(indices)
        if idx.dtype == np.bool_ or idx.dtype.kind not in "iu":
            raise TypeError(f"indices must be integers; got dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= domain.size):
            raise PrivacyParameterError(f"indices must lie in [0, {domain.size})")
        w = np.zeros(domain.size)
        w[idx] = 1.0
        return cls(domain, w)

    def evaluate(self, counts: Any) -> float:
        """The query's value on a histogram (a :class:`Histogram` or an array of length
        ``domain.size``)."""
        return float(np.dot(self.weights, _as_counts(self.domain, counts)))

    def __repr__(self) -> str:
        return f"LinearQuery(support={int(np.count_nonzero(self.weights))})"


class MarginalWorkload:
    """Every cell of each marginal in ``marginals``, in marginal-major, C order.

    Parameters
    ----------
    domain : Domain
    marginals : sequence of sequences of attributes (names or positions)
        Distinct attribute sets; each is sorted into domain order.

    Attributes
    ----------
    m : int
        Number of marginals.
    n_queries : int
        ``|Q|``, the total number of cells.
    offsets : ndarray
        ``offsets[g]:offsets[g+1]`` are the queries of marginal g.
    query_marginal : ndarray
        The marginal of each query.
    """

    def __init__(
        self, domain: Domain, marginals: Iterable[str | int | Sequence[str | int]]
    ) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        sets = [domain.attrs(mg) for mg in marginals]
        if not sets:
            raise PrivacyParameterError("a workload needs at least one marginal")
        if len(set(sets)) != len(sets):
            raise PrivacyParameterError("the marginals of a workload must be distinct")
        self.domain = domain
        self.marginals = tuple(sets)
        self.m = len(sets)
        self.masks = np.array([sum(1 << a for a in s) for s in sets], dtype=np.uint32)
        self.cell_shapes = tuple(tuple(domain.shape[a] for a in s) for s in sets)
        ncell = [math.prod(sh) for sh in self.cell_shapes]
        self.offsets = np.concatenate([[0], np.cumsum(ncell)]).astype(np.int64)
        self.n_queries = int(self.offsets[-1])
        self.query_marginal = np.repeat(np.arange(self.m), ncell)
        # (|Q|, d) codes and masks of every cell query, for the C MW loops
        vals = np.zeros((self.n_queries, domain.ndim), dtype=np.int64)
        for g, s in enumerate(sets):
            codes = (
                np.indices(self.cell_shapes[g]).reshape(len(s), -1)
                if s
                else np.zeros((0, 1), dtype=np.int64)
            )
            for k, a in enumerate(s):
                vals[self.offsets[g] : self.offsets[g + 1], a] = codes[k]
        self.query_vals = vals
        self.query_masks = self.masks[self.query_marginal].astype(np.uint32)
        self._plan = _plan(domain.shape, sets)
        self._cplan = _compile_plan(domain.shape, self._plan, self.offsets)

    @classmethod
    def k_way(cls, domain: Domain, k: int) -> MarginalWorkload:
        """All ``C(d, k)`` k-way marginals."""
        k = _v.integer("k", k, minimum=0, maximum=domain.ndim)
        return cls(domain, itertools.combinations(range(domain.ndim), k))

    def sensitivity(self) -> tuple[float, float]:
        """(L1, L2) sensitivity of the vector of all answers: (m, sqrt(m)) (the root
        rounded up).

        Exact: adding one record adds 1 to exactly one cell of each marginal."""
        return float(self.m), _sqrt_up(float(self.m))

    def cell_query(self, q: int) -> CellQuery:
        """Query ``q`` as a :class:`CellQuery`."""
        q = _v.integer("q", q, minimum=0, maximum=self.n_queries - 1)
        g = int(self.query_marginal[q])
        s = self.marginals[g]
        return CellQuery(self.domain, s, tuple(int(self.query_vals[q, a]) for a in s))

    def marginal_slice(self, g: int) -> slice:
        """The queries (cells) of marginal ``g``, in workload order."""
        g = _v.integer("g", g, minimum=0, maximum=self.m - 1)
        return slice(int(self.offsets[g]), int(self.offsets[g + 1]))

    @property
    def n_units(self) -> int:
        """Measurement units of MWEM's ``unit="group"``: the m marginals."""
        return self.m

    def to_linear(self) -> LinearWorkload:
        """The same queries, in the same order, as a :class:`LinearWorkload` (0/1 rows;
        ``m * |X|`` stored indices)."""
        dom = self.domain
        codes = np.unravel_index(np.arange(dom.size), dom.shape)
        rows = np.empty(self.m * dom.size, dtype=np.int64)
        for g, st in enumerate(self.marginals):
            cell = (
                np.ravel_multi_index([codes[a] for a in st], self.cell_shapes[g])
                if st
                else np.zeros(dom.size, dtype=np.int64)
            )
            rows[g * dom.size : (g + 1) * dom.size] = self.offsets[g] + cell
        order = np.argsort(rows, kind="stable")
        cols = np.tile(np.arange(dom.size, dtype=np.int32), self.m)[order]
        indptr = np.zeros(self.n_queries + 1, dtype=np.int64)
        indptr[1:] = np.cumsum(np.bincount(rows, minlength=self.n_queries))
        return LinearWorkload.from_csr(dom, indptr, cols)

    def _fit_queries(
        self, state: Any, idx: IntArray, targets: FloatArray, passes: int
    ) -> None:
        """MWEM's step on the queries ``idx`` in turn, ``passes`` times."""
        state.fit_cells(self.query_masks[idx], self.query_vals[idx], targets, passes)

    def _joint_fit(self, state: Any, targets: FloatArray, passes: int) -> None:
        """``passes`` joint MW passes: every measured cell's factor
        exp((target - n m(A)/Z)/(2n)) is computed on the same iterate A and all are
        applied together (targets[q] NaN: not measured).  Post-processing; see
        :class:`~dpfast.query_release.MWEM` ``replay``.

        In C (``dpf_rel_mw_joint``): the reduction plan runs forwards for the marginals
        of A, then backwards for the factors -- each marginal's factor table is folded
        into the intermediate it was reduced from, each intermediate into its parent --
        so A is swept once per plan root (four times on Adult's W2), not once per
        measured marginal."""
        _core.rel_mw_joint(
            self._cplan,
            state.w,
            np.ascontiguousarray(targets, dtype=np.float64),
            passes,
            state.n,
        )
        state.renormalised()

    def answer(self, counts: Any, out: FloatArray | None = None) -> FloatArray:
        """All ``|Q|`` answers on a histogram (a :class:`Histogram` or a float64 array of
        length ``domain.size``), in one planned set of strided reductions."""
        w = _as_counts(self.domain, counts)
        if out is None:
            out = np.empty(self.n_queries)
        _core.rel_plan_answer(self._cplan, w, out)
        return out

    def __repr__(self) -> str:
        return f"MarginalWorkload(m={self.m}, n_queries={self.n_queries})"


class LinearWorkload:
    """A workload of general linear queries: a public ``|Q| x |X|`` matrix with entries
    in [0, 1] (0/1 for counting queries), stored as compressed sparse rows.

    ``LinearWorkload(domain, matrix)`` takes a dense array of shape ``(|Q|, |X|)`` (or
    ``(|Q|,) + domain.shape``) or a scipy.sparse matrix; :meth:`from_csr` takes the
    sparse rows directly and :meth:`from_queries` a list of :class:`LinearQuery` /
    :class:`CellQuery`.  The matrix is public: a non-real dtype is refused by type, an
    entry outside [0, 1] (or non-finite), a wrong shape or an empty workload by value.

    Each query changes by at most 1 when one record is added or removed (its weights lie
    in [0, 1]).  The whole answer vector has the exact sensitivities of
    :meth:`sensitivity`: L1 = the largest column sum, L2 = the square root of the largest
    column sum of squares (adding a record at x adds column x).

    Attributes
    ----------
    n_queries : int
        ``|Q|``.
    indptr : ndarray of int64
        Query i has the stored entries ``indptr[i]:indptr[i+1]``.
    indices : ndarray of int32
        The cell of each stored entry.
    values : ndarray of float64 or None
        The weight of each stored entry; None when every stored weight is 1.
    binary : bool
        True for 0/1 queries.
    """

    def __init__(self, domain: Domain, matrix: Any) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        if hasattr(matrix, "tocsr") and hasattr(matrix, "nnz"):  # scipy.sparse
            csr = matrix.tocsr(copy=True)
            if csr.ndim != 2 or csr.shape[1] != domain.size or csr.shape[0] < 1:
                raise PrivacyParameterError(
                    f"matrix must have shape (|Q| >= 1, {domain.size}); got {csr.shape}"
                )
            csr.sum_duplicates()
            data = _v.float_array("matrix", csr.data)
            self._set(
                domain,
                np.asarray(csr.indptr, dtype=np.int64),
                np.asarray(csr.indices, dtype=np.int32),
                data,
            )
            return
        arr = _v.float_array("matrix", matrix)
        if arr.ndim == 1 + domain.ndim and arr.shape[1:] == domain.shape:
            arr = arr.reshape(arr.shape[0], domain.size)
        if arr.ndim != 2 or arr.shape[1] != domain.size or arr.shape[0] < 1:
            raise PrivacyParameterError(
                f"matrix must have shape (|Q| >= 1, {domain.size}); got {arr.shape}"
            )
        _check_weights(arr)
        rows, cols = np.nonzero(arr)
        indptr = np.zeros(arr.shape[0] + 1, dtype=np.int64)
        indptr[1:] = np.cumsum(np.bincount(rows, minlength=arr.shape[0]))
        self._set(domain, indptr, cols.astype(np.int32), arr[rows, cols])

    @classmethod
    def from_csr(
        cls, domain: Domain, indptr: Any, indices: Any, values: Any = None
    ) -> LinearWorkload:
        """From compressed sparse rows: query i has weights ``values[j]`` (all 1 if
        ``values`` is None) on the cells ``indices[j]``, ``indptr[i] <= j < indptr[i+1]``.
        A cell listed twice in one row is refused."""
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        ptr, idx = _int_array("indptr", indptr), _int_array("indices", indices)
        nq = ptr.size - 1
        if nq < 1 or ptr[0] != 0 or ptr[-1] != idx.size or (np.diff(ptr) < 0).any():
            raise PrivacyParameterError(
                "indptr must start at 0, never decrease, end at len(indices) and describe "
                "at least one query"
            )
        if idx.size and (idx.min() < 0 or idx.max() >= domain.size):
            raise PrivacyParameterError(f"indices must lie in [0, {domain.size})")
        if values is None:
            vals = np.ones(idx.size)
        else:
            vals = _v.float_array("values", values)
            if vals.shape != idx.shape:
                raise PrivacyParameterError("values must have one entry per index")
        rows = np.repeat(np.arange(nq), np.diff(ptr))
        key = rows * domain.size + idx
        if np.unique(key).size != key.size:
            raise PrivacyParameterError("a cell is listed twice in one query")
        order = np.argsort(key, kind="stable")
        obj = cls.__new__(cls)
        obj._set(domain, ptr, idx[order].astype(np.int32), vals[order])
        return obj

    @classmethod
    def from_queries(
        cls, domain: Domain, queries: Iterable[LinearQuery | CellQuery]
    ) -> LinearWorkload:
        """From a sequence of :class:`LinearQuery` / :class:`CellQuery` over ``domain``."""
        queries = list(queries)
        if not queries:
            raise PrivacyParameterError("a workload needs at least one query")
        ptr, idx, vals = [0], [], []
        for q in queries:
            if not isinstance(q, (LinearQuery, CellQuery)):
                raise TypeError(
                    f"queries must be LinearQuery or CellQuery; got {type(q).__name__}"
                )
            if q.domain != domain:
                raise PrivacyParameterError("a query is over another domain")
            if isinstance(q, LinearQuery):
                cells = np.flatnonzero(q.weights)
                w = q.weights[cells]
            else:
                sel = tuple(
                    int(q.vals[a]) if q.mask >> a & 1 else slice(None)
                    for a in range(domain.ndim)
                )
                cells = np.arange(domain.size).reshape(domain.shape)[sel].reshape(-1)
                w = np.ones(cells.size)
            idx.append(cells)
            vals.append(w)
            ptr.append(ptr[-1] + cells.size)
        return cls.from_csr(
            domain,
            np.asarray(ptr, dtype=np.int64),
            np.concatenate(idx),
            np.concatenate(vals),
        )

    def _set(
        self, domain: Domain, indptr: IntArray, indices: Any, data: FloatArray
    ) -> None:
        _check_weights(data)
        keep = data != 0.0
        if not keep.all():  # explicit zeros: drop them
            nq = indptr.size - 1
            rows = np.repeat(np.arange(nq), np.diff(indptr))
            counts = np.bincount(rows[keep], minlength=nq)
            indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            indices, data = indices[keep], data[keep]
        self.domain = domain
        self.n_queries = int(indptr.size - 1)
        self.binary = bool((data == 1.0).all())
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.values = None if self.binary else np.ascontiguousarray(data, dtype=np.float64)
        for a in (self.indptr, self.indices, self.values):
            if a is not None:
                a.flags.writeable = False
        self.offsets = np.arange(self.n_queries + 1, dtype=np.int64)
        # Exact sensitivities.  Column sums of 0/1 weights are exact integers; fractional
        # ones are rounded up by a bound on the float sum's relative error.
        col1 = np.bincount(self.indices, weights=data, minlength=domain.size)
        col2 = np.bincount(self.indices, weights=data * data, minlength=domain.size)
        if self.binary:
            self._l1, self._l2 = float(col1.max()), _sqrt_up(float(col1.max()))
        else:
            up = 1.0 + (self.n_queries + 2) * 2.0**-52
            self._l1 = float(np.nextafter(col1.max() * up, np.inf))
            self._l2 = _sqrt_up(float(np.nextafter(col2.max() * up, np.inf)))

    @property
    def n_units(self) -> int:
        """Measurement units of MWEM's ``unit="group"``: one per query."""
        return self.n_queries

    def marginal_slice(self, g: int) -> slice:
        """The queries of unit g: query g alone (a general workload has no groups)."""
        g = _v.integer("g", g, minimum=0, maximum=self.n_queries - 1)
        return slice(g, g + 1)

    def sensitivity(self) -> tuple[float, float]:
        """(L1, L2) sensitivity of the vector of all answers under add/remove-one
        neighbours: the largest column sum and the root of the largest column sum of
        squares (safe side); at most ``(|Q|, sqrt(|Q|))``."""
        return self._l1, self._l2

    def answer(self, counts: Any, out: FloatArray | None = None) -> FloatArray:
        """All ``|Q|`` answers on a histogram (a :class:`Histogram` or a float64 array of
        length ``domain.size``): one sparse matrix-vector product in C."""
        w = _as_counts(self.domain, counts)
        if out is None:
            out = np.empty(self.n_queries)
        _core.rel_csr_matvec(w, self.indptr, self.indices, self.values, out)
        return out

    def _fit_queries(
        self, state: Any, idx: IntArray, targets: FloatArray, passes: int
    ) -> None:
        """MWEM's step on the queries ``idx`` in turn, ``passes`` times."""
        state.fit_rows(self, idx, targets, passes)

    def _joint_fit(self, state: Any, targets: FloatArray, passes: int) -> None:
        """``passes`` joint MW passes (as :meth:`MarginalWorkload._joint_fit`): every
        measured query's exponent (target - n q(A)/Z)/(2n) on the same iterate, then
        A(x) *= exp(sum_q q(x) e_q) in one sweep.  Weights that a pass left without
        mass (noisy targets far outside [0, n]) restart from uniform before the next
        pass, as the marginal kernel does (post-processing; no division by a zero sum
        after the charge)."""
        measured = ~np.isnan(targets)
        if not measured.any() or passes < 1:
            return
        w, n = state.w, state.n
        rows = np.repeat(np.arange(self.n_queries), np.diff(self.indptr))
        vals = self.values if self.values is not None else np.ones(self.indices.size)
        est = np.empty(self.n_queries)
        e = np.zeros(self.n_queries)
        for _ in range(passes):
            state.restart_if_degenerate()  # in place: w is still state.w
            self.answer(w, est)
            z = float(w.sum())
            e.fill(0.0)
            np.subtract(targets, est * (n / z), out=e, where=measured)
            e *= 1.0 / (2.0 * n)
            logf = np.bincount(self.indices, weights=vals * e[rows], minlength=w.size)
            np.clip(logf - math.log(z), -700.0, 700.0, out=logf)
            w *= np.exp(logf)
        state.renormalise()

    def __repr__(self) -> str:
        return (
            f"LinearWorkload(n_queries={self.n_queries}, nnz={self.indices.size}, "
            f"binary={self.binary})"
        )


def _sqrt_up(x: float) -> float:
    """sqrt(x) rounded up (a sensitivity is promised as a bound)."""
    r = math.sqrt(x)
    return r if Fraction(r) ** 2 >= Fraction(x) else math.nextafter(r, math.inf)


def _check_weights(arr: FloatArray) -> None:
    if arr.size and not ((arr >= 0.0).all() and (arr <= 1.0).all()):
        raise PrivacyParameterError(
            "query weights must lie in [0, 1] (the matrix is public; rescale it)"
        )


def _int_array(name: str, value: Any) -> IntArray:
    arr = np.asarray(value)
    if arr.ndim == 1 and arr.size == 0 and arr.dtype.kind in "iuf":  # [] is float64
        return np.zeros(0, dtype=np.int64)
    if (
        arr.dtype == np.bool_
        or arr.dtype.kind not in "iu"
        or arr.dtype == np.uint64
        or arr.ndim != 1
    ):
        raise TypeError(
            f"{name} must be a 1-D integer array no wider than int64; got "
            f"dtype {arr.dtype}, {arr.ndim} dimension(s)"
        )
    return arr.astype(np.int64)


def _as_counts(domain: Domain, counts: Any) -> FloatArray:
    from .domain import Histogram

    if isinstance(counts, Histogram):
        if counts.domain != domain:
            raise PrivacyParameterError("the histogram is over another domain")
        return counts.counts
    if isinstance(counts, np.ndarray) and counts.dtype == np.float64:
        arr = np.ascontiguousarray(counts)
    else:
        # exact, by type (a list by its elements' types: an int of any size is clamped to
        # +-2**53, never an OverflowError; docs/security-model.md "How data is converted")
        arr = np.ascontiguousarray(_v.float_data("counts", counts))
    if arr.shape != (domain.size,):
        raise PrivacyParameterError(f"expected {domain.size} counts; got {arr.shape}")
    return arr


# ----------------------------------------------------------------- reduction planner
#
# A marginal on S = {s_0 < s_1 < ...} is computed from the smallest of three kinds of
# intermediate marginals that contain it:
#   ("p", j): attributes 0..j;  ("s", i): attributes i..d-1;
#   ("h", i, j): attribute i and j..d-1 (a suffix with a hole).
# Each needed intermediate is itself reduced from the smallest larger intermediate that
# contains it (or from the histogram), largest first.  On Adult's W2 that is about two
# passes over |X| plus small arrays, instead of m = 28 passes.


def _attrs_of(key: tuple[Any, ...], d: int) -> tuple[int, ...]:
    if key[0] == "p":
        return tuple(range(key[1] + 1))
    if key[0] == "s":
        return tuple(range(key[1], d))
    return (key[1],) + tuple(range(key[2], d))


def _mask_in(attrs: Sequence[int], sub: Sequence[int]) -> int:
    pos = {a: i for i, a in enumerate(attrs)}
    return sum(1 << pos[a] for a in sub)


def _plan(shape: Sequence[int], sets: Sequence[tuple[int, ...]]) -> Plan:
    """(steps, finals): steps build the intermediates in order, each as (parent index or
    -1 for the histogram, keep mask within the parent, shape); finals give each
    marginal's (source index or -1, keep mask within the source)."""
    d = len(shape)
    full = tuple(range(d))

    def size(attrs: Sequence[int]) -> int:
        return math.prod(shape[a] for a in attrs)

    chosen = []
    for st in sets:
        cands = [full]
        if st:
            lo, hi = st[0], st[-1]
            cands += [_attrs_of(("p", hi), d), _attrs_of(("s", lo), d)]
            if len(st) > 1 and st[1] > lo + 1:
                cands.append(_attrs_of(("h", lo, st[1]), d))
        chosen.append(min(cands, key=size))
    inter = sorted({c for c in chosen if c != full}, key=size, reverse=True)
    steps = []
    for k, attrs in enumerate(inter):
        parents = [j for j in range(k) if set(attrs) <= set(inter[j])]
        j = min(parents, key=lambda j: size(inter[j])) if parents else -1
        pattrs = inter[j] if j >= 0 else full
        steps.append(
            (
                j,
                _mask_in(pattrs, attrs),
                np.asarray([shape[a] for a in attrs], dtype=np.int64),
            )
        )
    index = {attrs: k for k, attrs in enumerate(inter)}
    finals = [(index.get(c, -1), _mask_in(c, st)) for c, st in zip(chosen, sets)]
    return steps, finals


def _compile_plan(shape: Sequence[int], plan: Plan, offsets: IntArray) -> Any:
    """The plan as the flat arrays of dpf_rel_plan_t (checked in C once)."""
    steps, finals = plan
    sshape = [np.asarray(shp, dtype=np.int64) for _, _, shp in steps]
    sizes = [int(np.prod(x)) for x in sshape]
    return _core.RelPlan(
        np.asarray(shape, dtype=np.int64),
        [p for p, _, _ in steps],
        [k for _, k, _ in steps],
        [x.size for x in sshape],
        np.concatenate([[0], np.cumsum([x.size for x in sshape])]),
        np.concatenate(sshape) if sshape else np.zeros(0, dtype=np.int64),
        np.concatenate([[0], np.cumsum(sizes)]),
        [k for k, _ in finals],
        [keep for _, keep in finals],
        offsets,
    )


def check_workload(w: object) -> MarginalWorkload | LinearWorkload:
    """``w`` if it is a workload the release mechanisms take (``TypeError`` otherwise)."""
    if not isinstance(w, (MarginalWorkload, LinearWorkload)):
        raise TypeError(
            "workload must be a MarginalWorkload or a LinearWorkload; got "
            f"{type(w).__name__}"
        )
    return w
