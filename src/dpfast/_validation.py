"""One helper per rule, used by every public function of dpfast.

Each helper returns the value converted to the type the caller works with, or raises
with a message that names the parameter, the rule and the value received (OpenDP's
style).  Unlike numpy's ``check_constraint``, NaN never passes a range check here:
every comparison is written so that NaN falls through to the error.

``bool`` is rejected wherever a number is expected: ``epsilon=True`` is a bug, not 1.
"""

import math
import numbers
import operator

import numpy as np

from ._errors import PrivacyParameterError  # noqa: F401  (re-exported for callers)

_INF = math.inf


def _number(name, value):
    """Return ``value`` as a Python float; ``TypeError`` if it is not a real number."""
    if type(value) is float:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    return float(value)


def _fail(name, rule, value):
    raise PrivacyParameterError(f"{name} must be {rule}; got {value!r}")


def finite(name, value):
    v = _number(name, value)
    if -_INF < v < _INF:
        return v
    _fail(name, "finite", value)


def positive(name, value):
    """A finite number > 0 (scales, epsilons, sensitivities)."""
    v = _number(name, value)
    if 0.0 < v < _INF:
        return v
    _fail(name, "finite and > 0", value)


def nonnegative(name, value):
    """A finite number >= 0."""
    v = _number(name, value)
    if 0.0 <= v < _INF:
        return v
    _fail(name, "finite and >= 0", value)


def epsilon(value, name="epsilon"):
    return positive(name, value)


def delta(value, name="delta", *, allow_zero=True):
    """A probability in [0, 1) (or (0, 1) when ``allow_zero`` is false)."""
    v = _number(name, value)
    if (0.0 <= v if allow_zero else 0.0 < v) and v < 1.0:
        return v
    _fail(name, "in [0, 1)" if allow_zero else "in (0, 1)", value)


def open_probability(name, value):
    """A probability in (0, 1) (failure probabilities beta, delta')."""
    v = _number(name, value)
    if 0.0 < v < 1.0:
        return v
    _fail(name, "in (0, 1)", value)


def probability(name, value):
    """A probability in [0, 1]."""
    v = _number(name, value)
    if 0.0 <= v <= 1.0:
        return v
    _fail(name, "in [0, 1]", value)


def integer(name, value, minimum=None, maximum=None):
    """An integer (Python or numpy, never bool) within [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer; got bool {value!r}")
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer; got {type(value).__name__} {value!r}") from None
    if minimum is not None and v < minimum:
        _fail(name, f">= {minimum}", value)
    if maximum is not None and v > maximum:
        _fail(name, f"<= {maximum}", value)
    return v


def choice(name, value, options):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {type(value).__name__} {value!r}")
    if value in options:
        return value
    _fail(name, "one of " + ", ".join(repr(o) for o in options), value)


def size(value):
    """``None`` (a scalar), an int, or a tuple of ints >= 0; returns None or a tuple."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return tuple(integer("size", s, minimum=0) for s in value)
    return (integer("size", value, minimum=0),)


def float_array(name, value, *, allow_nonfinite=False):
    """Any array-like of real numbers as a float64 ndarray (a copy only when needed)."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not allow_nonfinite and not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        _fail(name, "finite everywhere", bad)
    return arr


def out_array(out, shape):
    """Check a caller-supplied ``out=`` array: float64, writeable, of the right shape."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray; got {type(out).__name__}")
    if out.dtype != np.float64:
        raise TypeError(f"out must have dtype float64; got {out.dtype}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    if shape is not None and out.shape != shape:
        raise ValueError(f"out must have shape {shape}; got {out.shape}")
    return out
