"""Private learning: Boosting for People (Dwork, Rothblum, Vadhan 2010, Sec. 6).

:class:`PrivateBoostingClassifier` boosts a differentially private base learner
(:class:`DPStumpLearner` by default; any object following :mod:`dpfast.learn.base`) with
capped reweighting, in the certified ``grid`` variant by default (docs/learn.md: dpfast's corrections of
the paper, the ``grid`` variant and its privacy theorem, "Theorem G").
:func:`boosting_privacy_cost` gives a fit's (epsilon, delta) from public parameters;
:func:`plan_grid` chooses parameters that meet an (epsilon, delta) target.
"""

from ._accounting import (
    PrivacyCost,
    amplified_delta,
    amplified_epsilon,
    boosting_privacy_cost,
    grid_size_bound,
    plan_grid,
    smoothness_distance,
)
from .boosting import PrivateBoostingClassifier, RunRecord, UncertifiedPrivacyWarning
from .stumps import DPStumpLearner, Stump

__all__ = [
    "PrivateBoostingClassifier",
    "DPStumpLearner",
    "Stump",
    "RunRecord",
    "PrivacyCost",
    "UncertifiedPrivacyWarning",
    "boosting_privacy_cost",
    "amplified_epsilon",
    "amplified_delta",
    "smoothness_distance",
    "grid_size_bound",
    "plan_grid",
]
