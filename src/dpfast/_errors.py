"""Exception types of dpfast.

Each error also derives from the builtin exception a caller would catch without
knowing dpfast (``ValueError`` for a bad privacy parameter, ``OSError`` when the
operating system cannot supply entropy), as msgpack-python does.
"""

__all__ = [
    "DPFastError",
    "PrivacyParameterError",
    "BudgetExceededError",
    "MechanismHaltedError",
    "EntropyError",
    "NotFittedError",
    "InsecureRandomnessWarning",
]


class DPFastError(Exception):
    """Base class of every error raised by dpfast itself."""


class PrivacyParameterError(DPFastError, ValueError):
    """A parameter is outside its valid range (NaN, infinite, negative, ...)."""


class BudgetExceededError(DPFastError, RuntimeError):
    """A charge would spend more privacy budget than remains; nothing was drawn."""


class MechanismHaltedError(DPFastError, RuntimeError):
    """A streaming mechanism has halted and will never answer again."""


class EntropyError(DPFastError, OSError):
    """The operating system could not supply cryptographic entropy."""


class NotFittedError(DPFastError, ValueError, AttributeError):
    """A model was used before ``fit``.  Like scikit-learn's error of the same name it is
    both a ``ValueError`` and an ``AttributeError``."""


class InsecureRandomnessWarning(UserWarning):
    """A secure mechanism ran with predictable randomness: a seeded or keyed
    :class:`~dpfast.random.ChaCha20`, a numpy ``BitGenerator``/``Generator``, or
    ``mode="fast"``.  Fine for tests and simulation; never for a real release.  Shown
    once per calling line by Python's default warning filter; silence it on purpose with
    ``warnings.filterwarnings("ignore", category=dpfast.InsecureRandomnessWarning)``."""
