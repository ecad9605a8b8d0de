"""A differentially private decision stump over a public threshold grid
(Dwork, Rothblum & Vadhan 2010, Sec. 6): the shipped base learner of Boosting for People."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._active import NO_BUDGET
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, RngLike
from ..selection import exponential_mechanism
from ._params import ParamsMixin
from .base import NEIGHBOURING

__all__ = ["Stump", "DPStumpLearner"]

_MAX_THRESHOLDS = 32767  # codes are int16


@dataclasses.dataclass(frozen=True)
class Stump:
    """h(x) = sign if x[feature] >= threshold else -sign; ``feature = -1`` is the constant
    classifier ``sign``.  A NaN feature value is below every threshold (the public rule
    of :class:`DPStumpLearner`).  ``code`` is the threshold's index + 1 in the encoded
    features (x >= threshold  <=>  code(x) >= code)."""

    feature: int
    threshold: float
    sign: int
    code: int

    def predict(self, Z: npt.NDArray[Any]) -> npt.NDArray[np.int8]:
        """+-1 (int8) for every row of the encoded features Z."""
        if self.feature < 0:
            return np.full(Z.shape[0], self.sign, dtype=np.int8)
        s = np.int8(self.sign)
        result: npt.NDArray[np.int8] = np.where(Z[:, self.feature] >= self.code, s, -s)
        return result


class DPStumpLearner(ParamsMixin):
    """Decision stumps chosen by the exponential mechanism (the base learner of Boosting for People).

    Candidates: for every feature f, every public threshold theta in ``thresholds[f]`` and
    sign s in {+1, -1}, ``h(x) = s if x_f >= theta else -s``; plus the two constants when
    ``include_constant``.  The set never depends on the data.

    Parameters
    ----------
    epsilon : float
        epsilon_b > 0: DP per position of the k-tuple.
    thresholds : sequence of sequences of float, or a sequence of float
        Public cut points per feature (or one list used for every feature), fixed before
        looking at the data (never sample quantiles).  Required.
    include_constant : bool
        Add the constant classifiers +1 and -1.

    Privacy
    -------
    The score q(h) = number of positions of the k-tuple that h classifies correctly
    (duplicates counted with multiplicity) changes by at most 1 when one position is
    replaced; scores are not monotone, so the exponential mechanism
    Pr[h] ∝ exp(epsilon q(h) / 2) is epsilon-DP per position (McSherry & Talwar 2007;
    Dwork & Roth Thm 3.10).  It is drawn by :func:`dpfast.selection.exponential_mechanism`
    on integer scores: exact, with the dyadic rate <= epsilon/2.  Multiplicity of one
    person in the tuple is paid by the booster (Lemma 6.5', docs/learn.md), not here.

    Accuracy
    --------
    With probability >= 1 - e^-t the chosen stump classifies at least
    OPT - (2/epsilon)(ln|H| + t) positions correctly (Cor. 3.12).

    References
    ----------
    Dwork, Rothblum, Vadhan, "Boosting and Differential Privacy", FOCS 2010, Sec. 6.
    McSherry & Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
    """

    neighbouring = NEIGHBOURING
    delta = 0.0

    def __init__(
        self,
        *,
        epsilon: PrivacyParam = 0.15,
        thresholds: Sequence[float] | Sequence[Sequence[float]] | None = None,
        include_constant: bool = True,
    ) -> None:
        self.epsilon = epsilon
        self.thresholds = thresholds
        self.include_constant = include_constant

    # ------------------------------------------------------------ public plan
    def _grid(self, d: int) -> list[npt.NDArray[np.float64]]:
        """Sorted unique thresholds per feature (public); clear errors on bad ones."""
        if self.thresholds is None:
            raise PrivacyParameterError(
                "DPStumpLearner needs thresholds=: public cut points per feature, chosen "
                "without looking at the data"
            )
        th: list[Any] = list(self.thresholds)
        if th and all(np.ndim(t) == 0 for t in th):
            th = [th] * d
        if len(th) != d:
            raise ValueError(f"thresholds has {len(th)} entries but X has {d} features")
        out = []
        for f, t in enumerate(th):
            try:
                a = np.asarray(t, dtype=np.float64).ravel()
            except OverflowError:  # an int beyond the doubles: not finite, below
                a = np.array([np.inf])
            if a.size == 0 or a.size > _MAX_THRESHOLDS or not np.isfinite(a).all():
                raise PrivacyParameterError(
                    f"thresholds[{f}] must hold 1..{_MAX_THRESHOLDS} finite numbers"
                )
            out.append(np.unique(a))
        return out

    def _candidates(
        self,
        grid: list[npt.NDArray[np.float64]],
    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """(feature, code, sign) of every candidate, in the score vector's order."""
        feats, codes = [], []
        for f, t in enumerate(grid):
            feats.append(np.full(t.size, f))
            codes.append(np.arange(1, t.size + 1))
        return np.concatenate(feats), np.concatenate(codes)

    def check(self, d: int) -> None:
        """Validate the public plan for d features (before any budget is spent)."""
        self._grid(d)

    def n_candidates(self, d: int) -> int:
        n = sum(t.size for t in self._grid(d))
        return 2 * n + (2 if self.include_constant else 0)

    # ------------------------------------------------------------ protocol
    def encode(self, cols: list[npt.NDArray[Any]]) -> npt.NDArray[np.int16]:
        """int16 codes: code(x) = #{theta in thresholds[f] : theta <= x}; NaN -> 0.

        Integer columns are compared exactly (x >= theta <=> x >= ceil(theta))."""
        grid = self._grid(len(cols))
        Z = np.empty((len(cols[0]), len(cols)), dtype=np.int16)
        for f, (c, t) in enumerate(zip(cols, grid)):
            if c.dtype.kind in "iu":
                ti = np.clip(np.ceil(t), -(2.0**63), 2.0**62).astype(np.int64)
                Z[:, f] = np.searchsorted(ti, c.astype(np.int64), side="right")
            else:
                x = c.astype(np.float64, copy=False)
                z = np.searchsorted(t, x, side="right")
                z[np.isnan(x)] = 0  # public rule: NaN is below every threshold
                Z[:, f] = z
        self._plan = (grid, *self._candidates(grid))
        return Z

    def scores(
        self, Z_k: npt.NDArray[Any], y_k: npt.NDArray[np.int8]
    ) -> npt.NDArray[np.int64]:
        """q(h) for every candidate (int64, the order of :meth:`candidate`), from
        cumulative counts per feature in ``O(k d + sum_f |thresholds_f|)``."""
        grid, feats, codes = self._plan
        sizes = np.array([t.size + 1 for t in grid])
        off = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        total = int(sizes.sum())
        flat = Z_k.astype(np.int64) + off[None, :]
        pos = y_k > 0
        cpos = np.bincount(flat[pos].ravel(), minlength=total)
        cneg = np.bincount(flat[~pos].ravel(), minlength=total)
        # Within each feature's segment, cumulative counts of codes <= j.
        cs_pos, cs_neg = np.cumsum(cpos), np.cumsum(cneg)
        base_pos = np.concatenate(([0], cs_pos))[off]
        base_neg = np.concatenate(([0], cs_neg))[off]
        n_pos = int(pos.sum())
        k = y_k.shape[0]
        # Candidate (f, code=j+1, +1): correct on positives with code >= j+1 and on
        # negatives with code <= j.
        at = off[feats] + codes - 1
        pos_le = cs_pos[at] - base_pos[feats]
        neg_le = cs_neg[at] - base_neg[feats]
        q_plus = (n_pos - pos_le) + neg_le
        parts = [q_plus, k - q_plus]
        if self.include_constant:
            parts.append(np.array([n_pos, k - n_pos]))
        scores: npt.NDArray[np.int64] = np.concatenate(parts).astype(np.int64)
        return scores

    def candidate(self, j: int) -> Stump:
        """The stump of index j of the score vector."""
        grid, feats, codes = self._plan
        n = feats.size
        if j >= 2 * n:
            return Stump(-1, math.nan, 1 if j == 2 * n else -1, 0)
        sign = 1 if j < n else -1
        j %= n
        f, c = int(feats[j]), int(codes[j])
        return Stump(f, float(grid[f][c - 1]), sign, c)

    def fit_sample(
        self, Z_k: npt.NDArray[Any], y_k: npt.NDArray[np.int8], rng: RngLike
    ) -> Stump:
        """Choose a stump from the k-tuple (Z_k, y_k) (encoded rows, labels in {-1, +1})
        by the exact exponential mechanism with score q and sensitivity 1."""
        eps = _v.epsilon(self.epsilon)
        # charged as part of the booster's whole cost, never on its own
        j = exponential_mechanism(
            self.scores(Z_k, y_k), epsilon=eps, sensitivity=1, rng=rng, budget=NO_BUDGET
        )
        return self.candidate(j)
