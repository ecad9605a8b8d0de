"""The multiplicative-weights hypothesis: weights over X with a running total, updated
cell by cell or a whole marginal at a time (C kernels in csrc/release.c), and the
warm-start prior from noisy one-way marginals.  Everything here is post-processing of
released values, except :func:`one_way_prior`, which is a Laplace release.
"""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _core
from .. import mechanisms as _mech
from .._active import NO_BUDGET
from ._types import FloatArray, Rng
from .domain import Domain, Histogram, shape64


class MWState:
    """A distribution ``w / Z`` over the domain's cells (``w`` unnormalised)."""

    __slots__ = (
        "domain",
        "w",
        "Z",
        "n",
        "_shape",
        "_since",
        "_scratch",
        "_tables",
        "_cache",
    )

    def __init__(
        self, domain: Domain, n: float, prior: Any = None, cache: bool = False
    ) -> None:
        self.domain = domain
        self.n = float(n)
        self._shape = shape64(domain)
        if prior is None:
            self.w = np.full(domain.size, 1.0 / domain.size)
        else:
            self.w = np.array(prior, dtype=np.float64)
            self.w /= self.w.sum()
        self.Z = 1.0
        self._since = 0
        self._scratch: FloatArray | None = None
        # cache=True (online PMW): the marginals of w on the attribute sets queried so
        # far, kept exact under cell updates, so that an estimate is a table lookup
        self._cache = cache
        self._tables: dict[int, FloatArray] = {}

    def estimate(self, q: Any) -> float:
        """n f(A) for a cell query or a linear query."""
        if hasattr(q, "weights"):
            return self.n * float(np.dot(q.weights, self.w)) / self.Z
        if self._cache:
            t = self._tables.get(q.mask)
            if t is None:
                t = self._tables[q.mask] = np.empty(self.domain.size // q.n_cells)
                _core.rel_reduce(self.w, self._shape, q.mask, t)
            return self.n * float(t[q.cell]) / self.Z
        return (
            self.n
            * float(_core.rel_slice_sum(self.w, self._shape, q.mask, q.vals))
            / self.Z
        )

    def _update_tables(self, q: Any, factor: float) -> None:
        """Before q's cells are scaled by factor: add (factor - 1) x the marginal of w
        restricted to those cells to every cached table (work ~ |q| per table)."""
        shape = self.domain.shape
        d = len(shape)
        fixed = [a for a in range(d) if q.mask >> a & 1]
        free = [a for a in range(d) if not q.mask >> a & 1]
        idx = tuple(int(q.vals[a]) if q.mask >> a & 1 else slice(None) for a in range(d))
        sub = np.ascontiguousarray(self.w.reshape(shape)[idx]).reshape(-1)
        free_shape = np.asarray([shape[a] for a in free], dtype=np.int64)
        for mask, table in self._tables.items():
            attrs = [a for a in range(d) if mask >> a & 1]
            rest = [a for a in attrs if a not in fixed]
            if free:
                part = np.empty(math.prod(shape[a] for a in rest))
                _core.rel_reduce(
                    sub,
                    free_shape,
                    sum(1 << i for i, a in enumerate(free) if mask >> a & 1),
                    part,
                )
            else:
                part = sub
            view = table.reshape([shape[a] for a in attrs])
            tidx = tuple(int(q.vals[a]) if a in fixed else slice(None) for a in attrs)
            view[tidx] += (factor - 1.0) * part.reshape([shape[a] for a in rest])

    def step(self, q: Any, c: float) -> None:
        """w_i *= exp(c f_i): the MW family of updates (a cell query scales its cells)."""
        c = max(-700.0, min(700.0, c))
        if hasattr(q, "weights"):
            self.w *= np.exp(c * q.weights)
            self.renormalise()
        else:
            self.scale(q, math.exp(c))

    def scale(self, q: Any, factor: float) -> None:
        if self._tables:
            self._update_tables(q, factor)
        s = _core.rel_slice_scale(self.w, self._shape, q.mask, q.vals, factor)
        self.Z += s * (factor - 1.0)
        self._since += 1
        if self._since >= 256 or not 1e-200 < self.Z < 1e200:
            self.renormalise()

    def renormalise(self) -> None:
        self.w /= self.w.sum()
        self.Z = 1.0
        self._since = 0
        self._tables.clear()  # rebuilt exactly on the next estimate

    def fit_cells(self, masks: Any, vals: Any, targets: Any, passes: int) -> None:
        """MWEM's step on each (query, target) in turn, ``passes`` times."""
        self.Z = _core.rel_mw_cells(
            self.w, self._shape, masks, vals, targets, passes, self.n, self.Z
        )
        self._since = 0
        self._tables.clear()

    def fit_rows(self, workload: Any, rows: Any, targets: Any, passes: int) -> None:
        """MWEM's step on rows ``rows`` of a LinearWorkload in turn, ``passes`` times."""
        self.Z = _core.rel_mw_rows(
            self.w,
            workload.indptr,
            workload.indices,
            workload.values,
            np.asarray(rows, dtype=np.int64),
            np.ascontiguousarray(targets, dtype=np.float64),
            passes,
            self.n,
            self.Z,
        )
        self._since = 0
        self._tables.clear()

    def renormalised(self) -> None:
        """After a kernel left sum(w) = 1: reset the bookkeeping."""
        self.Z = 1.0
        self._since = 0
        self._tables.clear()

    def fit_marginal(self, mask: int, targets: FloatArray) -> None:
        """MWEM's step on every measured (non-NaN) cell of one marginal."""
        if self._scratch is None or self._scratch.size < 2 * targets.size:
            self._scratch = np.empty(2 * max(targets.size, 64))
        _core.rel_mw_marginal(self.w, self._shape, mask, targets, self.n, self._scratch)
        self.Z = 1.0
        self._since = 0
        self._tables.clear()

    def restart_if_degenerate(self) -> bool:
        """After an update: restart from uniform weights if they under- or overflowed
        (sum 0, inf or NaN), and say whether it did.

        Noisy targets far outside [0, n] (a tiny epsilon or n against the data) can
        compound the clamped MW factors until no weight is left; the iterate is then
        uninformative, and an estimate computed from it would be NaN, which the next
        selection would refuse after the budget was charged.  A function of the public
        noisy values only (post-processing); a run whose weights stay finite is
        untouched (the check reads their sum)."""
        total = float(self.w.sum())
        if 0.0 < total < math.inf:
            return False
        self.w.fill(1.0 / self.domain.size)
        self.renormalise()
        return True

    def distribution(self) -> FloatArray:
        dist: FloatArray = self.w / self.w.sum()
        return dist

    def counts(self) -> FloatArray:
        return self.n * self.distribution()


def one_way_prior(histogram: Histogram, epsilon: float, rng: Rng, mode: str) -> FloatArray:
    """Product of all d one-way marginals released with Laplace(d/epsilon) per cell.

    The d one-way marginals together have L1 sensitivity d (one cell each per record),
    so the release is epsilon-DP (Dwork & Roth Thm 3.6).  Clipping at a tiny positive
    floor, normalising and multiplying out are post-processing."""
    dom = histogram.domain
    shp = shape64(dom)
    parts = []
    for a in range(dom.ndim):
        out = np.empty(dom.shape[a])
        _core.rel_reduce(histogram.counts, shp, 1 << a, out)
        parts.append(out)
    noisy = _mech.laplace_mechanism(
        np.concatenate(parts),
        epsilon=epsilon,
        sensitivity=float(dom.ndim),
        rng=rng,
        mode=mode,
        budget=NO_BUDGET,
    )  # charged with the whole mechanism
    dist = None
    pos = 0
    noisy = cast(FloatArray, noisy)
    for a in range(dom.ndim):
        marg = np.clip(noisy[pos : pos + dom.shape[a]], 0.0, None) + 1e-9
        pos += dom.shape[a]
        marg /= marg.sum()
        dist = marg if dist is None else np.multiply.outer(dist, marg)
    return np.asarray(dist).reshape(-1)


def book_eta(alpha: float) -> float:
    return alpha / 2.0


def project_factor(est: float, target: float, n: float) -> float:
    """KL projection of a 0/1 query's mass onto target/n: scale its cells by
    p*(1-p)/(p(1-p*)) (then renormalise)."""
    p = min(max(est / n, 1e-12), 1 - 1e-12)
    ps = min(max(target / n, 1e-9), 1 - 1e-9)
    return ps * (1 - p) / (p * (1 - ps))


def mwem_exponent(est: float, target: float, n: float) -> float:
    return (target - est) / (2.0 * n)
