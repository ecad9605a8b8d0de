"""dpfast: fast, floating-point-safe differential privacy primitives.

Modules: :mod:`dpfast.random` (the ChaCha20 CSPRNG and raw samplers),
:mod:`dpfast.mechanisms` (validated mechanisms, secure by default),
:mod:`dpfast.accounting` (composition, zCDP/RDP, privacy budgets).
Importing dpfast without its compiled core fails: there is no pure-Python fallback.
"""

from . import _core  # noqa: F401  (fails loudly if the extension was not built)
from . import random
from . import accounting
from . import mechanisms
from ._errors import (
    BudgetExceededError,
    DPFastError,
    EntropyError,
    MechanismHaltedError,
    PrivacyParameterError,
)

__version__ = "0.1.0"

__all__ = [
    "random",
    "accounting",
    "mechanisms",
    "DPFastError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "MechanismHaltedError",
    "EntropyError",
]
