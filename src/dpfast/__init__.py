"""dpfast: fast, floating-point-safe differential privacy primitives.

Modules: :mod:`dpfast.random` (the ChaCha20 CSPRNG and raw samplers),
:mod:`dpfast.mechanisms` (validated mechanisms, secure by default), :mod:`dpfast.objects`
(the same mechanisms as objects with prepared plans),
:mod:`dpfast.accounting` (composition, zCDP/RDP, privacy budgets),
:mod:`dpfast.sparse` (AboveThreshold, Sparse, NumericSparse streams),
:mod:`dpfast.selection` (exponential mechanism, report noisy max, permute-and-flip, top-k),
:mod:`dpfast.randomized_response`, :mod:`dpfast.stats` (count, sum, mean, histogram,
quantile), :mod:`dpfast.accuracy` (accuracy bounds and their inverses),
:mod:`dpfast.learn` (Boosting for People, a private boosted classifier),
:mod:`dpfast.query_release` (query release: online PMW, MWEM, Boosting for Queries),
:mod:`dpfast.ledger` (durable, shared privacy budgets).
Importing dpfast without its compiled core fails: there is no pure-Python fallback.
"""

from . import (
    _core,  # noqa: F401  (fails loudly if the extension was not built)
    _renamed,
    accounting,
    accuracy,
    learn,
    mechanisms,
    objects,
    query_release,
    random,
    randomized_response,
    selection,
    sparse,
    stats,
)
from ._active import NO_BUDGET
from ._active import current as active_budget
from ._errors import (
    BudgetExceededError,
    DPFastError,
    EntropyError,
    InsecureRandomnessWarning,
    MechanismHaltedError,
    NotFittedError,
    PrivacyParameterError,
)

_renamed.install()

__version__ = "0.1.0"

__all__ = [
    "random",
    "accounting",
    "mechanisms",
    "objects",
    "sparse",
    "selection",
    "randomized_response",
    "stats",
    "accuracy",
    "learn",
    "query_release",
    "DPFastError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "MechanismHaltedError",
    "EntropyError",
    "NotFittedError",
    "InsecureRandomnessWarning",
    "NO_BUDGET",
    "active_budget",
]


def __getattr__(name: str) -> object:
    """``dpfast.releases`` and ``dpfast.release``: the old names of :mod:`dpfast.stats` and
    :mod:`dpfast.query_release`, for one release behind a ``DeprecationWarning``."""
    module = _renamed.old_attribute(__name__, name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return module
