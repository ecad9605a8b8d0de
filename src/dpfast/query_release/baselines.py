"""Data-independent baselines: Laplace / Gaussian noise per query and on whole
marginals (Dwork & Roth Thm 3.6 and 3.22, per query or per marginal).  They are what MWEM and PMW must beat."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from .. import _core, _draw, _insecure
from .. import _validation as _v
from .. import mechanisms as _mech
from .._active import label as _label
from .._errors import PrivacyParameterError
from .._privacy import charge
from ._types import Budget, FloatArray, Rng
from .cost import PrivacyCost, charged_amounts, check_budget
from .domain import Histogram
from .workloads import LinearWorkload, MarginalWorkload, check_workload

Workload = MarginalWorkload | LinearWorkload

__all__ = [
    "laplace_per_query",
    "laplace_marginals",
    "gaussian_per_query",
    "gaussian_marginals",
    "marginal_sensitivity",
]


def marginal_sensitivity(workload: Workload) -> tuple[float, float]:
    """Exact (L1, L2) sensitivity of the vector of all cells of a set of marginals under
    add/remove-one neighbours: (m, sqrt(m)) -- a record adds 1 to one cell per marginal,
    and the marginals of a workload are distinct attribute sets.  For a
    :class:`LinearWorkload`: the largest column sum and the root of the largest column
    sum of squares (:meth:`LinearWorkload.sensitivity`)."""
    check_workload(workload)
    return workload.sensitivity()


def _finish(noisy: FloatArray, n_public: float | None) -> FloatArray:
    if n_public is not None:  # post-processing: a count lies in [0, n]
        np.clip(noisy, 0.0, n_public, out=noisy)
    return noisy


def _n(n_public: float | None) -> float | None:
    return None if n_public is None else _v.positive("n_public", n_public)


def _prepare(
    workload: Workload,
    epsilon: float,
    n_public: float | None,
    rng: Rng,
    mode: str,
    budget: Budget,
) -> tuple[float, float | None, str, Any]:
    """Validate every public argument, then charge the budget, before the data is read."""
    check_workload(workload)
    epsilon = _v.epsilon(epsilon)
    n_public = _n(n_public)
    mode = _insecure.mode(mode)
    rng = _core.secure_rng(rng)
    check_budget(budget)
    return epsilon, n_public, mode, rng


def plan_noise(
    epsilon: float, delta: float | None, sensitivity: float, d: int, mode: str
) -> None:
    """Prepare the noise a release will add to ``d`` float answers (public parameters
    only), so that parameters the sampler cannot serve are refused before the budget is
    charged, never after (issue 22): the plan of ``laplace_mechanism`` (``delta`` None)
    or of ``gaussian_mechanism`` with the same arguments (cached, so the draw reuses it)."""
    sens = float(sensitivity)
    if mode == "fast":
        if delta is None and not 0.0 < sens / epsilon < math.inf:
            raise PrivacyParameterError(
                f"sensitivity / epsilon = {sens!r} / {epsilon!r} is outside the range of "
                "doubles"
            )
        return
    if delta is None:
        _mech._laplace_grid_plan(_v.epsilon(epsilon), sens, max(d, 1), None)
    else:
        _mech._gauss_grid_plan(
            _v.epsilon(epsilon), _v.delta(delta), sens, max(d, 1), "analytic", None
        )


def laplace_per_query(
    workload: Workload,
    histogram: Histogram,
    *,
    epsilon: float,
    n_public: float | None = None,
    rng: Rng = None,
    mode: str = "secure",
    budget: Budget = None,
    label: str | None = None,
) -> FloatArray:
    """Every query its own share ``ε/|Q|``: ``Lap(|Q|/ε)`` on each answer.

    Privacy
    -------
    ε-DP by basic composition of ``|Q|`` sensitivity-1 counting queries (Dwork & Roth
    Thm 3.16); the textbook baseline that ignores the workload's structure.

    Accuracy
    --------
    Each answer's noise is ``Lap(|Q|/ε)``.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6, 3.16.
    """
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode, budget)
    plan_noise(epsilon, None, float(workload.n_queries), workload.n_queries, mode)
    label = _label(label, "laplace_per_query")
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, charged_amounts(PrivacyCost(epsilon, 0.0)), label)
    truth = workload.answer(histogram)
    noisy = _draw.laplace_release(
        truth, epsilon, float(workload.n_queries), rng, mode
    )  # charged above
    return _finish(cast(FloatArray, noisy), n_public)


def laplace_marginals(
    workload: Workload,
    histogram: Histogram,
    *,
    epsilon: float,
    n_public: float | None = None,
    rng: Rng = None,
    mode: str = "secure",
    budget: Budget = None,
    label: str | None = None,
) -> FloatArray:
    """Lap(m/ε) on every cell of the m marginals (for a :class:`LinearWorkload`,
    Lap(Δ₁/ε) with Δ₁ its exact L1 sensitivity, the largest column sum).

    Privacy
    -------
    ε-DP: the whole cell vector has L1 sensitivity m (:func:`marginal_sensitivity`).

    Accuracy
    --------
    Each answer's noise is Lap(m/ε); the honest strong baseline on marginal workloads.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6; Barak et al., PODS 2007 (marginals).
    """
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode, budget)
    l1, _ = workload.sensitivity()
    plan_noise(epsilon, None, l1, workload.n_queries, mode)
    label = _label(label, "laplace_marginals")
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, charged_amounts(PrivacyCost(epsilon, 0.0)), label)
    truth = workload.answer(histogram)
    noisy = _draw.laplace_release(truth, epsilon, l1, rng, mode)  # charged above
    return _finish(cast(FloatArray, noisy), n_public)


def gaussian_per_query(
    workload: Workload,
    histogram: Histogram,
    *,
    epsilon: float,
    delta: float,
    n_public: float | None = None,
    rng: Rng = None,
    mode: str = "secure",
    budget: Budget = None,
    label: str | None = None,
) -> FloatArray:
    """Gaussian noise calibrated to L2 sensitivity ``sqrt(|Q|)`` (each query treated as an
    arbitrary counting query).  (ε, δ)-DP (:func:`dpfast.mechanisms.gaussian_mechanism`)."""
    return _gaussian(
        workload,
        histogram,
        epsilon,
        delta,
        math.sqrt(workload.n_queries),
        n_public,
        rng,
        mode,
        budget,
        _label(label, "gaussian_per_query"),
    )


def _gaussian(
    workload: Workload,
    histogram: Histogram,
    epsilon: float,
    delta: float,
    l2: float,
    n_public: float | None,
    rng: Rng,
    mode: str,
    budget: Budget,
    label: str,
) -> FloatArray:
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode, budget)
    delta = _v.delta(delta, allow_zero=False)
    _mech.gaussian_sigma(epsilon, delta, l2)  # may refuse the parameters: before charging
    plan_noise(epsilon, delta, l2, workload.n_queries, mode)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, charged_amounts(PrivacyCost(epsilon, delta)), label)
    truth = workload.answer(histogram)
    noisy = _mech.gaussian_release(
        truth, epsilon=epsilon, delta=delta, l2_sensitivity=l2, rng=rng, mode=mode
    )  # charged above
    return _finish(cast(FloatArray, noisy), n_public)


def gaussian_marginals(
    workload: Workload,
    histogram: Histogram,
    *,
    epsilon: float,
    delta: float,
    n_public: float | None = None,
    rng: Rng = None,
    mode: str = "secure",
    budget: Budget = None,
    label: str | None = None,
) -> FloatArray:
    """Gaussian noise on every cell, calibrated to the exact L2 sensitivity sqrt(m)
    (for a :class:`LinearWorkload`, the root of its largest column sum of squares).
    (ε, δ)-DP (:func:`dpfast.mechanisms.gaussian_mechanism`)."""
    check_workload(workload)
    return _gaussian(
        workload,
        histogram,
        epsilon,
        delta,
        workload.sensitivity()[1],
        n_public,
        rng,
        mode,
        budget,
        _label(label, "gaussian_marginals"),
    )
