"""Boosting for People: a differentially private boosted classifier.

Dwork, Rothblum & Vadhan (FOCS 2010, Sec. 6, Figure 2) boost a DP base learner by
AdaBoost-style reweighting with a *cap* on every person's weight, so that no one is
likely to be sampled often.  dpfast follows the paper with the errata listed in
docs/learn.md fixed: E1 (step 3 counts the vote's *mistakes*), E2 (alpha =
artanh(2 eta)), E9 (Lemma 6.5' accounting), E10 (the r_{i,t} of the analysis), E18 (round
T runs no test and no threshold), E5 (the paper variant's boundary delta), and E4: the
paper's step 5 (w_t solved from a noisy target) has no complete privacy proof, so the
default ``variant="grid"`` draws w_t by the exponential mechanism from a public geometric
grid ("Theorem G" in docs/learn.md).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator

from .. import _core, _plans
from .. import _validation as _v
from .. import mechanisms as _mech
from .._active import NO_BUDGET
from .._errors import NotFittedError, PrivacyParameterError
from .._privacy import Cost, charge, deflate, inflate
from .._typing import PrivacyParam, Real, RngLike, SupportsSpend
from ..mechanisms import geometric_mechanism, laplace_mechanism
from ..random import ChaCha20
from ..selection import exponential_mechanism
from . import _accounting as _acc
from . import _data
from ._params import ParamsMixin
from .base import check_base_learner, encode
from .stumps import DPStumpLearner

__all__ = ["PrivateBoostingClassifier", "RunRecord", "UncertifiedPrivacyWarning"]


class UncertifiedPrivacyWarning(UserWarning):
    """A fit whose privacy claim has no complete proof (``variant="paper"``)."""


class RunRecord(dict[str, Any]):
    """What a fit did: ``rounds_run``, ``stop_reason`` ("test", "max_rounds",
    "cap_out_of_range"), ``privacy_cost``, ``hypotheses`` (one per round),
    ``smoothing_thresholds`` (w_t per reweighting), ``noisy_train_errors`` (the noisy
    error fraction of each stopping test), and ``capped_counts`` (items capped per round:
    **not private**; None unless ``record_nonprivate_diagnostics=True``)."""

    __getattr__ = dict.__getitem__


def _training_errors(
    votes: npt.NDArray[np.int64], y: npt.NDArray[np.int8], tie_break: int
) -> int:
    """err_t of Figure 2 step 3 *as corrected* (erratum E1): the number of rows the
    majority vote H_t gets WRONG, a tie (vote 0) counting as ``tie_break`` (a fixed, public rule).
    The printed step 3 counts rows it gets right, which would stop the loop when almost
    everything is misclassified.  Sensitivity 1 under replace-one either way."""
    h = np.where(votes > 0, 1, np.where(votes < 0, -1, tie_break))
    return int(np.count_nonzero(h != y))


def _rng(rng: Any) -> BitGenerator:
    """An int seeds a reproducible ChaCha20 (tests only, not secure: it warns, as any
    predictable generator does)."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        rng = ChaCha20(int(rng))
    return _core.secure_rng(rng)


class PrivateBoostingClassifier(ParamsMixin):
    """A differentially private boosted classifier (Boosting for People).

    Parameters
    ----------
    variant : {"grid", "paper"}
        "grid" (default): Figure 2 with step 5 replaced by an exponential mechanism over a
        public geometric grid of thresholds; privacy by Theorem G (docs/learn.md).
        "paper": Figure 2 literally (w_t solved from 2l + Laplace noise), with errata
        E1/E10 fixed.  **Its privacy has no complete proof** (erratum E4 in docs/learn.md: the proof's step
        that w_t is eps-DP fails on a concrete counterexample); it needs
        ``allow_uncertified=True``, warns, and reports ``certified=False``.
    n_rounds : int
        T, the maximum number of rounds (odd avoids tied votes).
    sample_size : int
        k, rows drawn i.i.d. with replacement from D_t each round.
    smoothness : int or None
        l: every D_{t+1} has max weight about 1/l.  None: floor(m/4) from the public m.
        m > 3l is required.
    eta : float
        Assumed base-learner edge in (0, 1/2); the fixed step is alpha = artanh(2 eta).
    gamma : float
        Target training error in (0, 1); the noisy test stops the loop when the noisy
        error fraction is <= gamma/2.
    epsilon_test, epsilon_threshold : float
        Per-round epsilon of the stopping test and of the threshold w_t.
    base_learner : object or None
        A learner following :mod:`dpfast.learn.base`; None: ``DPStumpLearner(
        epsilon=base_epsilon, thresholds=thresholds)``.
    base_epsilon : float
        epsilon_b of the default stump learner (ignored when base_learner is given).
    thresholds : sequence
        Public cut points of the default stump learner (see :class:`DPStumpLearner`).
    grid_resolution : float
        c_grid: the grid ratio is r = 1 + c_grid / (2 l).
    tie_break : {1, -1}
        Public vote for a tie of the majority.
    classes : pair
        The public label set; ``classes[1]`` is the positive class.  Labels are private:
        a label equal to neither class is counted as ``classes[0]`` (never an error).
    rng : None, int, ChaCha20, numpy BitGenerator or Generator
        None: the thread's OS-keyed ChaCha20.  An int seeds a reproducible ChaCha20
        (tests only: anyone with the seed can undo the privacy).
    budget : object with ``spend(epsilon, delta, *, label)`` or None
        Charged the whole ``privacy_cost`` before the data are touched; never refunded.
        None: the budget active when :meth:`fit` runs (``with b.active():``), if any.
    allow_uncertified : bool
        Must be True for ``variant="paper"``.
    record_nonprivate_diagnostics : bool
        Also record the capped counts, exact training errors and capped mass per round.
        These are NOT private; the fit's cost then says ``certified=False``.

    Attributes
    ----------
    classes_, n_features_in_, base_learner_, estimators_ (hypotheses), n_rounds_run_,
    termination_reason_, smoothing_thresholds_, noisy_train_errors_, alpha_, tau_,
    smoothness_, privacy_cost_, run_record_ (a :class:`RunRecord`).

    Privacy
    -------
    ``privacy_cost(m)`` from public parameters only (Theorem G, docs/learn.md, replace-one
    adjacency with m public)::

        eps = A(1/m) + (T-1)(epsilon_test + epsilon_threshold + A(sigma_l))
        delta = Delta(1/m) + (T-1) Delta(sigma_l) + sum_t N_t^max e^{-E}

    where A, Delta amplify the base learner's (eps_b, delta_b) through sampling
    (Lemma 6.5'), sigma_l = (1 + 1/(8(l-1)))/l and the last term bounds the chance that
    the chosen threshold leaves less than l capped mass (see
    :func:`dpfast.learn.boosting_privacy_cost`).  Noisy test: exact discrete Laplace on
    the error count (:func:`dpfast.mechanisms.geometric_mechanism`); threshold: the exact
    exponential mechanism on scores ``-|S(g) - 2l|`` of sensitivity 1
    (:func:`dpfast.selection.exponential_mechanism`); sampling: exact (csrc/boost.c).
    The released view is the hypotheses, the thresholds w_t and the noisy test values.
    ``score`` on private data is a separate, non-private release.

    Accuracy
    --------
    Theorem 6.1(2) (with explicit constants): with T = ceil(ln(4/gamma)/(2 eta^2)),
    m >= max(4 l T / gamma, 3l + 1) and a base learner with edge eta on every D_t, the
    training error is <= gamma except with probability T beta + e^{-kappa}.  At
    realistic sizes this needs huge m; accuracy on real data is empirical.

    References
    ----------
    C. Dwork, G. N. Rothblum, S. Vadhan, "Boosting and Differential Privacy", FOCS 2010,
    Sec. 6.  docs/learn.md (dpfast's corrections: errata E1-E21, Theorem G).
    """

    def __init__(
        self,
        *,
        variant: str = "grid",
        n_rounds: int = 15,
        sample_size: int = 1000,
        smoothness: int | None = None,
        eta: Real = 0.1,
        gamma: Real = 0.05,
        epsilon_test: PrivacyParam = 0.02,
        epsilon_threshold: PrivacyParam = 0.02,
        base_learner: Any = None,
        base_epsilon: PrivacyParam = 0.15,
        thresholds: Sequence[float] | Sequence[Sequence[float]] | None = None,
        grid_resolution: Real = 1.0,
        tie_break: int = 1,
        classes: tuple[Any, Any] | list[Any] = (-1, 1),
        rng: RngLike | int = None,
        budget: SupportsSpend | None = None,
        allow_uncertified: bool = False,
        record_nonprivate_diagnostics: bool = False,
    ) -> None:
        self.variant = variant
        self.n_rounds = n_rounds
        self.sample_size = sample_size
        self.smoothness = smoothness
        self.eta = eta
        self.gamma = gamma
        self.epsilon_test = epsilon_test
        self.epsilon_threshold = epsilon_threshold
        self.base_learner = base_learner
        self.base_epsilon = base_epsilon
        self.thresholds = thresholds
        self.grid_resolution = grid_resolution
        self.tie_break = tie_break
        self.classes = classes
        self.rng = rng
        self.budget = budget
        self.allow_uncertified = allow_uncertified
        self.record_nonprivate_diagnostics = record_nonprivate_diagnostics

    # ------------------------------------------------------------ planning (public)
    def _learner(self) -> Any:
        if self.base_learner is not None:
            return self.base_learner
        return DPStumpLearner(epsilon=self.base_epsilon, thresholds=self.thresholds)

    def _smoothness(self, m: int) -> int:
        if self.smoothness is None:
            return max(m // 4, 2)
        return self.smoothness

    def privacy_cost(self, n_samples: int) -> _acc.PrivacyCost:
        """The :class:`~dpfast.learn.PrivacyCost` a fit on ``n_samples`` rows is charged
        (public parameters only; validates them)."""
        variant = _v.choice("variant", self.variant, ("grid", "paper"))
        if variant == "paper" and self.allow_uncertified is not True:
            raise PrivacyParameterError(
                "variant='paper' has no complete privacy proof (erratum E4 in docs/learn.md: the "
                "threshold w_t is not shown to be DP, and a counterexample breaks the "
                "proof's step); pass allow_uncertified=True to run it for experiments"
            )
        eps_b, delta_b = check_base_learner(self._learner())
        m = _v.integer("n_samples", n_samples, minimum=2)
        cost = _acc.boosting_privacy_cost(
            m,
            variant=variant,
            n_rounds=self.n_rounds,
            sample_size=self.sample_size,
            smoothness=self._smoothness(m),
            eta=self.eta,
            epsilon_test=self.epsilon_test,
            epsilon_threshold=self.epsilon_threshold,
            base_epsilon=eps_b,
            base_delta=delta_b,
            grid_resolution=self.grid_resolution,
        )
        if self.record_nonprivate_diagnostics is True and cost.certified:
            cost = cost._replace(certified=False)
        return cost

    def _check_public(self) -> tuple[float, tuple[Any, ...]]:
        g = _v.finite("gamma", self.gamma)
        if not 0.0 < g < 1.0:
            raise PrivacyParameterError(f"gamma must be in (0, 1); got {self.gamma!r}")
        if self.tie_break not in (1, -1) or isinstance(self.tie_break, bool):
            raise PrivacyParameterError(
                f"tie_break must be 1 or -1; got {self.tie_break!r}"
            )
        for flag in ("allow_uncertified", "record_nonprivate_diagnostics"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise TypeError(f"{flag} must be a bool")
        try:
            cls = tuple(self.classes)
        except TypeError:
            raise TypeError("classes must be a pair of labels") from None
        if len(cls) != 2 or cls[0] == cls[1]:
            raise PrivacyParameterError(f"classes must be two distinct labels; got {cls!r}")
        if self.budget is not None and not callable(getattr(self.budget, "spend", None)):
            raise TypeError("budget must have spend(epsilon, delta, *, label=...)")
        return g, cls

    def _plan_draws(self) -> None:
        """Prepare the samplers of the stopping test and the threshold (public parameters
        only, already validated by :meth:`privacy_cost`), so that one they cannot serve
        is refused before the charge, not at the first test after it."""
        if self.n_rounds < 2:  # round T runs no test and no threshold
            return
        _mech._laplace_int_plan(_v.epsilon(float(self.epsilon_test)), 1.0)
        eps_w = _v.epsilon(float(self.epsilon_threshold))
        if self.variant == "paper":
            _mech._laplace_grid_plan(eps_w, 1.0, 1, None)
        else:
            _plans.selection_grid(eps_w, 1.0, False, False)

    # ------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> PrivateBoostingClassifier:
        """Fit on (X, y): validate the schema, charge the budget, then boost.

        Returns self."""
        gamma, classes = self._check_public()
        cols, m = _data.columns(X)
        y_pm = _data.labels(y, classes, m)
        cost = self.privacy_cost(m)
        learner = self._learner()
        if callable(getattr(learner, "check", None)):
            learner.check(len(cols))
        self._plan_draws()
        rng = _rng(self.rng)
        if self.variant == "paper":
            warnings.warn(
                "variant='paper' has no complete privacy proof (erratum E4, docs/learn.md)",
                UncertifiedPrivacyWarning,
                stacklevel=2,
            )
        # The whole a-priori cost (docs/learn.md, Privacy), before any data-dependent step;
        # no refund.
        budget = _v.budget(self.budget)  # None: the active budget at fit time, if any
        if budget is not None:
            label = "PrivateBoostingClassifier.fit"
            if not cost.certified:
                label += f" (variant={self.variant}, UNCERTIFIED)"
            charge(budget, Cost(_v.charged(cost.epsilon), _v.charged(cost.delta)), label)
        Z = encode(learner, cols)
        self._run(Z, y_pm, m, learner, rng, gamma, cost)
        self.classes_ = np.asarray(classes)
        self.n_features_in_ = len(cols)
        self.base_learner_ = learner
        self.privacy_cost_ = cost
        return self

    def _run(
        self,
        Z: npt.NDArray[Any],
        y: npt.NDArray[np.int8],
        m: int,
        learner: Any,
        rng: BitGenerator,
        gamma: float,
        cost: _acc.PrivacyCost,
    ) -> None:
        T, k = self.n_rounds, self.sample_size
        ell = self._smoothness(m)
        alpha = math.atanh(2.0 * float(self.eta))
        tau = 2.0 * ell
        down, up = math.exp(-alpha), math.exp(alpha)
        eps_test = float(self.epsilon_test)
        eps_w = float(self.epsilon_threshold)
        c_grid = float(self.grid_resolution)
        ratio = 1.0 + c_grid / tau
        diag = bool(self.record_nonprivate_diagnostics)
        v = np.ones(m, dtype=np.float64)  # capped weights, D_t = v / sum(v); v_0 = 1/m ~ 1
        lam, U = 1.0, float(m)  # public bounds on min v and sum v (scale-free
        votes = np.zeros(
            m, dtype=np.int64
        )  # v_0 = 1: S is scale-equivariant (docs/learn.md)
        hyps, ws, noisy, capped, errs, masses = [], [], [], [], [], []
        reason = "max_rounds"
        for t in range(1, T + 1):
            idx = _core.boost_sample(v, k, rng)  # step 1: C_t ~ D_t^k
            h = learner.fit_sample(Z[idx], y[idx], rng)  # step 2
            hyps.append(h)
            pred = np.asarray(h.predict(Z))
            pred = np.where(pred > 0, 1, -1).astype(np.int8)
            votes += pred
            if t == T:  # E18: nothing after h_T
                break
            err = _training_errors(votes, y, self.tie_break)  # step 3 (E1 fixed)
            if diag:
                errs.append(err)
            noisy_err = geometric_mechanism(
                err, epsilon=eps_test, rng=rng, budget=NO_BUDGET
            )
            noisy.append(noisy_err / m)
            if noisy_err <= gamma * m / 2.0:
                reason = "test"
                break
            c = pred * y  # step 4
            a = _core.boost_premultiply(v, c, down, up)
            if self.variant == "grid":  # step 5' (docs/learn.md, Variants)
                w = self._grid_threshold(
                    a, t, m, tau, alpha, c_grid, ratio, lam, U, eps_w, rng
                )
                # Public updates of the bounds (docs/learn.md, Variants), nudged to stay
                # bounds after rounding: lam_t <= min v_t, U_t >= sum v_t.
                lam = deflate(min(1.0, down * lam / w))
                U = min(float(m), inflate(up * U / w))
            else:  # step 5 (paper, uncertified)
                target = laplace_mechanism(
                    tau, epsilon=eps_w, sensitivity=1.0, rng=rng, budget=NO_BUDGET
                )
                if target < ell or target >= m:
                    reason = "cap_out_of_range"
                    break
                w, _ = _core.boost_solve_w(a, float(target))
            ws.append(w)
            v, n_capped, mass = _core.boost_cap(a, w)
            if diag:
                capped.append(n_capped)
                masses.append(mass)
        self.estimators_ = hyps
        self.n_rounds_run_ = len(hyps)
        self.termination_reason_ = reason
        self.smoothing_thresholds_ = ws
        self.noisy_train_errors_ = noisy
        self.alpha_, self.tau_, self.smoothness_ = alpha, tau, ell
        self.nonprivate_diagnostics_ = diag
        if diag:
            self.capped_counts_, self.exact_train_errors_, self.cap_mass_ = (
                capped,
                errs,
                masses,
            )
        self.run_record_ = RunRecord(
            rounds_run=len(hyps),
            stop_reason=reason,
            privacy_cost=cost,
            hypotheses=list(hyps),
            smoothing_thresholds=list(ws),
            noisy_train_errors=list(noisy),
            capped_counts=list(capped) if diag else None,
        )

    @staticmethod
    def _grid_threshold(
        a: npt.NDArray[np.float64],
        t: int,
        m: int,
        tau: float,
        alpha: float,
        c_grid: float,
        ratio: float,
        lam: float,
        U: float,
        eps_w: float,
        rng: BitGenerator,
    ) -> float:
        """Step 5' of the grid variant: w_t from the public grid by the exponential
        mechanism with score -|S(g) - tau| (sensitivity 1 under replace-one: only row i's
        term min(a_i/g, 1) in [0, 1] differs)."""
        g_min = math.exp(-alpha) * lam
        g_max = math.exp(alpha) * U / tau
        n_max = _acc.grid_size_bound(t, m, tau, alpha, c_grid)
        grid = _core.boost_grid(g_min, ratio, max(g_max, g_min), n_max)
        S = _core.boost_grid_sums(a, grid)
        j = exponential_mechanism(
            -np.abs(S - tau), epsilon=eps_w, sensitivity=1.0, rng=rng, budget=NO_BUDGET
        )  # fit charged the whole cost
        return float(grid[j])

    # ------------------------------------------------------------ predict
    def _check_fitted(self) -> None:
        if not hasattr(self, "estimators_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit first"
            )

    def decision_function(self, X: Any) -> npt.NDArray[np.float64]:
        """Mean vote (1/t) sum_s h_s(x) in [-1, 1] (not a probability)."""
        self._check_fitted()
        cols, _ = _data.columns(X, self.n_features_in_)
        Z = encode(self.base_learner_, cols)
        votes = np.zeros(Z.shape[0], dtype=np.int64)
        for h in self.estimators_:
            votes += np.where(np.asarray(h.predict(Z)) > 0, 1, -1)
        return votes / len(self.estimators_)

    def predict(self, X: Any) -> npt.NDArray[Any]:
        """Majority vote, a tie going to ``tie_break``, mapped to ``classes_``."""
        d = self.decision_function(X)
        pos = np.where(d > 0, True, np.where(d < 0, False, self.tie_break == 1))
        result: npt.NDArray[Any] = np.where(pos, self.classes_[1], self.classes_[0])
        return result

    def score(self, X: Any, y: Any) -> float:
        """Accuracy on (X, y).  On private data this is a NON-PRIVATE release."""
        yt = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y).ravel()
        return float(np.mean(self.predict(X) == yt))
