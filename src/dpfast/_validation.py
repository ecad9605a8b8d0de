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
from fractions import Fraction

import numpy as np

from ._active import resolve as _resolve_budget
from ._errors import PrivacyParameterError  # noqa: F401  (re-exported for callers)

_INF = math.inf


def _number(name, value):
    """Return ``value`` as a Python float; ``TypeError`` if it is not a real number."""
    if type(value) is float:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number; got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except OverflowError:      # an int or Fraction beyond the doubles: +-inf, refused later
        return _INF if value > 0 else -_INF


def show(q):
    """A number (int, Fraction, float) for a message, never OverflowError."""
    try:
        return f"{float(q):.6g}"
    except OverflowError:
        q = Fraction(q)
        return f"about 2**{q.numerator.bit_length() - q.denominator.bit_length()}"


def _fail(name, rule, value):
    shown = repr(value)
    if len(shown) > 60:              # e.g. 10**400: name it, do not print 400 digits
        shown = f"{shown[:24]}...({len(shown)} characters)"
    raise PrivacyParameterError(f"{name} must be {rule}; got {shown}")


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


def budget(value):
    """The budget a call charges (``dpfast._active.resolve``): ``None`` -> the active
    budget of ``with budget.active():`` (or None when there is none), ``NO_BUDGET`` ->
    None, else an object with a callable ``spend(epsilon, delta, *, label=None)``
    (:class:`dpfast.accounting.PrivacyBudget` or any ledger); ``TypeError`` otherwise.
    Resolve once per public call: a result of None means "charge nothing"."""
    return _resolve_budget(value)


def bounds(lower, upper):
    """Public clamping bounds of a release: both finite, ``lower < upper``."""
    lo = finite("lower", lower)
    hi = finite("upper", upper)
    if not lo < hi:
        raise PrivacyParameterError(f"upper must be > lower; got lower={lower!r}, "
                                    f"upper={upper!r}")
    return lo, hi


def size(value):
    """``None`` (a scalar), an int, or a tuple of ints >= 0; returns None or a tuple."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return tuple(integer("size", s, minimum=0) for s in value)
    return (integer("size", value, minimum=0),)


# ------------------------------------------------------------------ private data
#
# Rule (docs/security-model.md): the *type* of private data may be refused, its *values*
# never.  np.asarray chooses the dtype of a Python list from the magnitudes it holds
# ([1, 2**63] is uint64, [1, 2**64] object, [1, 2.5] float64 with the int rounded), so
# lists are classified here by the types of their elements instead, and every conversion
# below is exact: integers are clamped to a public range that the target type represents
# (clamping is 1-Lipschitz, so it never increases a sensitivity), never rounded.

#: Integers go to an int64 path clamped to [INT64_MIN, INT64_MAX] and to a float64 path
#: clamped to [-2**53, 2**53], where every integer is an exact double.
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
EXACT_INT = 2 ** 53


def _exact_float_dtype(dtype):
    # float16/32/64 convert to float64 exactly; a wider float (np.longdouble, float128)
    # would be rounded, whatever its value, so it is refused by type.
    return dtype.kind == "f" and dtype.itemsize <= 8


def _refuse_dtype(name, what):
    raise TypeError(
        f"{name} must hold real numbers of a dtype that converts to int64/float64 exactly; "
        f"got {what} "
        "(np.longdouble, complex, object, Decimal, Fraction and bool data are refused "
        "by type: convert them explicitly, e.g. with .astype(np.float64))")


def _clip_ints(arr, lo, hi):
    """An int64 array of arr (any integer dtype) clamped to [lo, hi], exactly."""
    if arr.dtype == np.uint64:
        arr = np.minimum(arr, np.uint64(min(hi, INT64_MAX)))
    arr = arr.astype(np.int64, copy=False)
    if lo > INT64_MIN or hi < INT64_MAX:
        arr = np.clip(arr, lo, hi)
    return np.asarray(arr)


def _clamp_int(v, lo=INT64_MIN, hi=INT64_MAX):
    return lo if v < lo else hi if v > hi else v


def _leaf_kind(t):
    """'i', 'f' or None (refused) for the type of one element of a Python sequence."""
    if t is bool or issubclass(t, np.bool_):
        return None
    if issubclass(t, (int, np.integer)):
        return "i"
    if t is float or (issubclass(t, np.floating) and np.dtype(t).itemsize <= 8):
        return "f"
    return None


def _from_sequence(name, value):
    """(kind, array) of a Python list/tuple, classified by element *types* only."""
    # the common flat cases first (the same classification, a quarter of the time)
    if all(type(x) is float for x in value):
        return "f", np.array(value, dtype=np.float64)
    if all(type(x) is int for x in value):
        try:
            return "i", np.array(value, dtype=np.int64)
        except OverflowError:      # beyond int64: clamp (same output type, no error)
            return "i", np.array([_clamp_int(x) for x in value], dtype=np.int64)
    try:
        obj = np.array(value, dtype=object)
    except ValueError:
        _refuse_dtype(name, "a ragged sequence")
    kinds = set()
    for t in set(map(type, obj.flat)):
        k = _leaf_kind(t)
        if k is None:
            _refuse_dtype(name, f"elements of type {t.__name__}")
        kinds.add(k)
    if kinds == {"i"}:
        try:
            return "i", obj.astype(np.int64)
        except OverflowError:      # beyond int64: clamp (same output type, no error)
            flat = [_clamp_int(int(x)) for x in obj.flat]
            return "i", np.array(flat, dtype=np.int64).reshape(obj.shape)
    if "i" in kinds:               # mixed ints and floats: the ints clamped to +-2**53
        flat = [float(_clamp_int(int(x), -EXACT_INT, EXACT_INT))
                if _leaf_kind(type(x)) == "i" else float(x) for x in obj.flat]
        return "f", np.array(flat, dtype=np.float64).reshape(obj.shape)
    return "f", obj.astype(np.float64)


def real_data(name, value):
    """Private data as ``(kind, array)``: kind ``"i"`` with an int64 ndarray (integers
    clamped to int64) or ``"f"`` with a float64 ndarray (floats exact; ints mixed with
    floats in a Python sequence clamped to +-2**53).  ``TypeError`` for a type that cannot
    be converted exactly, decided by the type alone.  A 0-d array for a scalar; a copy
    only when needed (never write through the result)."""
    if type(value) is float:
        return "f", np.array(value)
    if isinstance(value, (list, tuple)):
        return _from_sequence(name, value)
    if isinstance(value, (bool, np.bool_)):
        _refuse_dtype(name, "bool")
    if isinstance(value, int):
        return "i", np.array(_clamp_int(int(value)), dtype=np.int64)
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError, OverflowError):
        _refuse_dtype(name, f"type {type(value).__name__}")
    dt = arr.dtype
    if dt.kind in "iu":
        return "i", _clip_ints(arr, INT64_MIN, INT64_MAX)
    if _exact_float_dtype(dt):
        return "f", arr.astype(np.float64, copy=False)
    _refuse_dtype(name, f"dtype {dt}")


def float_data(name, value):
    """Private data as a float64 ndarray, exactly: integers clamped to +-2**53 first."""
    kind, arr = real_data(name, value)
    if kind == "i":
        arr = np.clip(arr, -EXACT_INT, EXACT_INT).astype(np.float64)
    return arr


def float_array(name, value, *, allow_nonfinite=False):
    """A public array-like of real numbers (bins, candidates) as float64, converted
    exactly (refused by type otherwise; integers beyond 2**53 are refused as values:
    they are public)."""
    kind, arr = real_data(name, value)
    if kind == "i":
        if arr.size and (int(arr.max()) > EXACT_INT or int(arr.min()) < -EXACT_INT):
            _fail(name, "at most 2**53 in absolute value when given as integers",
                  "an integer beyond it")
        arr = arr.astype(np.float64)
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
