"""dpfast: fast, floating-point-safe differential privacy primitives.

Modules: :mod:`dpfast.random` (the ChaCha20 CSPRNG and raw samplers).
Importing dpfast without its compiled core fails: there is no pure-Python fallback.
"""

from . import _core  # noqa: F401  (fails loudly if the extension was not built)
from . import random
from . import sparse
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
    "DPFastError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "MechanismHaltedError",
    "EntropyError",
]
