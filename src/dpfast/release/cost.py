"""The privacy record every query-release mechanism exposes as ``privacy_cost``."""

from typing import NamedTuple, Optional

from .. import _validation as _v


class PrivacyCost(NamedTuple):
    """Whole cost of a mechanism, computed from public parameters before any data is
    touched.

    ``epsilon``, ``delta``: the (ε, δ)-DP guarantee charged to ``budget=`` (δ = 0 for
    pure ε-DP).  ``rho``: a ρ-zCDP guarantee where one follows (pure ε-DP implies
    ε²/2-zCDP, Bun & Steinke 2016 Prop. 1.4; an ε-bounded-range selection is
    ε²/8-zCDP, Cesar & Rogers 2021), else None.  ``parts``: the labelled components.
    """

    epsilon: float
    delta: float
    rho: Optional[float]
    parts: tuple = ()


def charge(budget, cost, label):
    """Charge the whole cost once, before anything is drawn or read.  ``budget`` is the
    caller's argument as given (None: the active budget of ``with b.active():`` at the
    time of the charge, if any; ``NO_BUDGET``: nothing)."""
    budget = _v.budget(budget)
    if budget is not None:
        budget.spend(_v.charged(cost.epsilon), _v.charged(cost.delta), label=label)


def check_budget(budget):
    """Check ``budget=`` at construction and return it as given: a stored None is
    resolved when the charge is made (:func:`charge`)."""
    if budget is not None:
        _v.budget(budget)
    return budget
