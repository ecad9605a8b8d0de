"""The privacy record every query-release mechanism exposes as ``privacy_cost``."""

from __future__ import annotations

from typing import Any

from .. import _validation as _v
from .._privacy import Cost

#: Whole cost of a mechanism, computed from public parameters before any data is touched:
#: the one privacy-cost class (:class:`dpfast.accounting.Cost`).
#:
#: ``epsilon``, ``delta``: the (ε, δ)-DP guarantee charged to ``budget=`` (δ = 0 for pure
#: ε-DP).  ``rho``: a ρ-zCDP guarantee where one follows (pure ε-DP implies ε²/2-zCDP,
#: Bun & Steinke 2016 Prop. 1.4; a selection's ρ is :func:`dpfast.selection.selection_rho`'s,
#: ε²/8 only for the exponential mechanism), else None.  ``parts``: the labelled components.
PrivacyCost = Cost


def charged_amounts(cost: Cost) -> Cost:
    """What a release system charges for ``cost`` (with :func:`dpfast._privacy.charge`,
    once, before anything is drawn or read): its epsilon and delta at their exact values
    (``_v.charged``: a caller's parameter as written, a computed bound at its binary
    value), without rho (a zCDP budget converts a pure epsilon itself)."""
    return Cost(_v.charged(cost.epsilon), _v.charged(cost.delta))


def check_budget(budget: Any) -> Any:
    """Check ``budget=`` at construction and return it as given: a stored None is
    resolved when the charge is made."""
    if budget is not None:
        _v.budget(budget)
    return budget
