"""The privacy record every query-release mechanism exposes as ``privacy_cost``."""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

from .. import _validation as _v
from ._types import Budget


class PrivacyCost(NamedTuple):
    """Whole cost of a mechanism, computed from public parameters before any data is
    touched.

    ``epsilon``, ``delta``: the (ε, δ)-DP guarantee charged to ``budget=`` (δ = 0 for
    pure ε-DP).  ``rho``: a ρ-zCDP guarantee where one follows (pure ε-DP implies
    ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4; a selection's ρ is
    :func:`dpfast.selection.selection_rho`'s, ε²/8 only for the exponential mechanism),
    else None.  ``parts``: the labelled components.
    """

    epsilon: float
    delta: float
    rho: Optional[float]
    parts: tuple[tuple[str, float], ...] = ()


def charge(budget: Budget, cost: PrivacyCost, label: str) -> None:
    """Charge the whole cost once, before anything is drawn or read.  ``budget`` is the
    caller's argument as given (None: the active budget of ``with b.active():`` at the
    time of the charge, if any; ``NO_BUDGET``: nothing)."""
    budget = _v.budget(budget)
    if budget is not None:
        budget.spend(_v.charged(cost.epsilon), _v.charged(cost.delta), label=label)


def check_budget(budget: Budget) -> Any:
    """Check ``budget=`` at construction and return it as given: a stored None is
    resolved when the charge is made (:func:`charge`)."""
    if budget is not None:
        _v.budget(budget)
    return budget
