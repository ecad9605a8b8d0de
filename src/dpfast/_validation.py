"""One helper per rule, used by every public function of dpfast.

Each helper returns the value converted to the type the caller works with, or raises
with a message that names the parameter, the rule and the value received (OpenDP's
style).  Unlike numpy's ``check_constraint``, NaN never passes a range check here:
every comparison is written so that NaN falls through to the error.

``bool`` is rejected wherever a number is expected: ``epsilon=True`` is a bug, not 1.

Privacy parameters (epsilon, delta, rho and the budget's amounts) are *decimal*: a float
means the decimal it prints as, ``Fraction(repr(x))`` (0.1 is one tenth, not the binary
0.1000000000000000055...), and ints, Fractions and Decimals are exact.  :func:`exact` is
the one parser; :func:`epsilon` and :func:`delta` hand a mechanism the largest float <=
that exact value (an :class:`Amount`, which also carries the exact value a budget
charges), so a calibration correct for the float it receives is DP for the decimal.
"""

from __future__ import annotations

import decimal
import math
import numbers
import operator
import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, NoReturn

import numpy as np
import numpy.typing as npt

from ._active import resolve as _resolve_budget
from ._errors import PrivacyParameterError as PrivacyParameterError  # re-exported
from ._privacy import decimal_down as decimal_down  # re-exported (one definition there)
from ._privacy import decimal_of as decimal_of
from ._privacy import decimal_up as decimal_up
from ._privacy import float_down as float_down
from ._privacy import float_up as float_up
from ._typing import SupportsSpend

_INF = math.inf
_MAX = Fraction(sys.float_info.max)


# ------------------------------------------------------------------ privacy parameters


class Amount(float):
    """A validated privacy parameter as a mechanism uses it.

    Its float value is the largest float <= :attr:`exact`, the exact value the caller
    meant (see :func:`exact`): every calibration computed from it is for a privacy
    parameter no larger than the one charged, so the mechanism is DP for ``exact``.
    Arithmetic gives plain floats; a budget's ``spend`` charges :attr:`exact`; the
    validators return an Amount unchanged (validating twice never rounds twice)."""

    __slots__ = ("exact",)
    exact: Fraction

    def __new__(cls, exact: Fraction) -> Amount:
        self = super().__new__(cls, float_down(exact))
        self.exact = exact
        return self

    def __reduce__(self) -> tuple[Any, tuple[Fraction]]:
        return (Amount, (self.exact,))

    def __repr__(self) -> str:
        # what the caller wrote (a message or an object's repr shows 0.1, not 0.0999...)
        return decimal_text(self.exact)


def decimal_text(q: Fraction) -> str:
    """q as the caller would write it: a float's repr when that float means q, else n/d."""
    if q <= _MAX:
        x = float(q)
        if decimal_of(x) == q:
            return repr(x)
    return f"{q.numerator}/{q.denominator}" if q.denominator != 1 else str(q.numerator)


def charged(value: float | Fraction) -> Fraction:
    """The exact amount to charge for a privacy cost a mechanism computed: an
    :class:`Amount`'s exact value (the caller's parameter), a Fraction as it is, and a
    plain float (a bound computed internally, e.g. a sum rounded up) at its *binary*
    value, the number its computation proved (its decimal may be a hair smaller)."""
    if type(value) is Amount:
        return value.exact
    return Fraction(value)


def exact(name: str, value: object) -> Fraction | None:
    """The exact value of a public privacy parameter, or ``None`` when it is NaN or
    infinite (the caller refuses it with its rule).

    * float (and np.float64): the decimal it prints as, ``Fraction(repr(x))``;
    * np.float32/np.float16: the decimal numpy prints for it, ``Fraction(str(x))``
      (``np.float32(0.1)`` is one tenth);
    * int, numpy integer, Fraction (any ``numbers.Rational``), finite Decimal: exact;
    * :class:`Amount`: its exact value.

    ``TypeError`` (by type only) for bool, np.longdouble (and wider floats), complex,
    strings and every other type.
    """
    if isinstance(value, Amount):
        return value.exact
    t = type(value)
    if (t is float or t is np.float64) and isinstance(value, float):
        return decimal_of(value) if -_INF < value < _INF else None
    if t is int and isinstance(value, int):
        return Fraction(value)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number; got bool {value!r}")
    if isinstance(value, decimal.Decimal):
        return Fraction(value) if value.is_finite() else None
    if isinstance(value, np.floating):
        if value.dtype.itemsize > 8:
            raise TypeError(
                f"{name} must convert exactly to a Fraction; got {value.dtype} "
                "(np.longdouble is refused by type)"
            )
        return Fraction(str(value)) if np.isfinite(value) else None
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))
    if isinstance(value, float):
        return exact(name, float(value))
    raise TypeError(
        f"{name} must be a real number (float, int, Fraction or Decimal); "
        f"got {type(value).__name__} {value!r}"
    )


def _number(name: str, value: object) -> float:
    """Return ``value`` as a Python float; ``TypeError`` if it is not a real number."""
    if type(value) is float or type(value) is Amount:  # an Amount stays exact
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number; got {type(value).__name__} {value!r}"
        )
    try:
        return float(value)
    except OverflowError:  # an int or Fraction beyond the doubles: +-inf, refused later
        return _INF if value > 0 else -_INF  # type: ignore[operator]  # numbers.Real orders


def show(q: float | Fraction) -> str:
    """A number (int, Fraction, float) for a message, never OverflowError."""
    try:
        return f"{float(q):.6g}"
    except OverflowError:
        q = Fraction(q)
        return f"about 2**{q.numerator.bit_length() - q.denominator.bit_length()}"


def _fail(name: str, rule: str, value: object) -> NoReturn:
    shown = repr(value)
    if len(shown) > 60:  # e.g. 10**400: name it, do not print 400 digits
        shown = f"{shown[:24]}...({len(shown)} characters)"
    raise PrivacyParameterError(f"{name} must be {rule}; got {shown}")


def finite(name: str, value: object) -> float:
    v = _number(name, value)
    if -_INF < v < _INF:
        return v
    _fail(name, "finite", value)


def positive(name: str, value: object) -> float:
    """A finite number > 0 (scales, epsilons, sensitivities)."""
    v = _number(name, value)
    if 0.0 < v < _INF:
        return v
    _fail(name, "finite and > 0", value)


def nonnegative(name: str, value: object) -> float:
    """A finite number >= 0."""
    v = _number(name, value)
    if 0.0 <= v < _INF:
        return v
    _fail(name, "finite and >= 0", value)


_AMOUNTS: dict[float, Amount] = {}


def _float_amount(x: float) -> Amount:
    """The Amount of a finite float (cached: mechanisms are called with few distinct
    parameters, and a parameter is validated on every call)."""
    a = _AMOUNTS.get(x)
    if a is None:
        a = Amount(decimal_of(x))
        if len(_AMOUNTS) >= 4096:
            _AMOUNTS.clear()
        _AMOUNTS[x] = a
    return a


def epsilon(value: object, name: str = "epsilon") -> Amount:
    """A privacy parameter > 0 (epsilon, rho): the largest float <= its exact value (an
    :class:`Amount` carrying the exact value), see :func:`exact`."""
    if type(value) is float and 0.0 < value < _INF:
        # a float is > 0 exactly when its decimal is; 5e-324 is the smallest of both
        return _float_amount(value)
    if type(value) is Amount and value > 0.0:
        return value
    q = exact(name, value)
    if q is not None and 0 < q <= _MAX:
        a = Amount(q)
        if a > 0.0:  # below 2**-1074 there is no float to calibrate with
            return a
    _fail(name, "finite and > 0", value)


def delta(value: object, name: str = "delta", *, allow_zero: bool = True) -> Amount:
    """A probability in [0, 1) (or (0, 1) when ``allow_zero`` is false), rounded down to a
    float like :func:`epsilon` (a smaller delta is calibrated with more noise)."""
    if (
        type(value) is float
        and (0.0 <= value if allow_zero else 0.0 < value)
        and value < 1.0
    ):
        return _float_amount(value)  # the decimal of a float is in [0, 1) iff the float is
    if (
        type(value) is Amount
        and (0.0 <= value if allow_zero else 0.0 < value)
        and value < 1.0
    ):
        return value
    q = exact(name, value)
    if q is not None and (0 <= q if allow_zero else 0 < q) and q < 1:
        a = Amount(q)
        if allow_zero or a > 0.0:
            return a
    _fail(name, "in [0, 1)" if allow_zero else "in (0, 1)", value)


def open_probability(name: str, value: object) -> float:
    """A probability in (0, 1) (failure probabilities beta, delta')."""
    v = _number(name, value)
    if 0.0 < v < 1.0:
        return v
    _fail(name, "in (0, 1)", value)


def probability(name: str, value: object) -> float:
    """A probability in [0, 1]."""
    v = _number(name, value)
    if 0.0 <= v <= 1.0:
        return v
    _fail(name, "in [0, 1]", value)


def integer(
    name: str, value: object, minimum: int | None = None, maximum: int | None = None
) -> int:
    """An integer (Python or numpy, never bool) within [minimum, maximum]."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer; got bool {value!r}")
    try:
        v = operator.index(value)  # type: ignore[arg-type]  # TypeError is the check
    except TypeError:
        raise TypeError(
            f"{name} must be an integer; got {type(value).__name__} {value!r}"
        ) from None
    if minimum is not None and v < minimum:
        _fail(name, f">= {minimum}", value)
    if maximum is not None and v > maximum:
        _fail(name, f"<= {maximum}", value)
    return v


def choice(name: str, value: object, options: Sequence[str]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string; got {type(value).__name__} {value!r}")
    if value in options:
        return value
    _fail(name, "one of " + ", ".join(repr(o) for o in options), value)


def budget(value: object) -> SupportsSpend | None:
    """The budget a call charges (``dpfast._active.resolve``): ``None`` -> the active
    budget of ``with budget.active():`` (or None when there is none), ``NO_BUDGET`` ->
    None, else an object with a callable ``spend(epsilon, delta, *, label=None)``
    (:class:`dpfast.accounting.PrivacyBudget` or any ledger); ``TypeError`` otherwise.
    Resolve once per public call: a result of None means "charge nothing"."""
    return _resolve_budget(value)


def bounds(lower: object, upper: object) -> tuple[float, float]:
    """Public clamping bounds of a release: both finite, ``lower < upper``."""
    lo = finite("lower", lower)
    hi = finite("upper", upper)
    if not lo < hi:
        raise PrivacyParameterError(
            f"upper must be > lower; got lower={lower!r}, upper={upper!r}"
        )
    return lo, hi


def size(value: object) -> tuple[int, ...] | None:
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
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
EXACT_INT = 2**53


def _exact_float_dtype(dtype: np.dtype[Any]) -> bool:
    # float16/32/64 convert to float64 exactly; a wider float (np.longdouble, float128)
    # would be rounded, whatever its value, so it is refused by type.
    return dtype.kind == "f" and dtype.itemsize <= 8


def _refuse_dtype(name: str, what: str) -> NoReturn:
    raise TypeError(
        f"{name} must hold real numbers of a dtype that converts to int64/float64 exactly; "
        f"got {what} "
        "(np.longdouble, complex, object, Decimal, Fraction and bool data are refused "
        "by type: convert them explicitly, e.g. with .astype(np.float64))"
    )


def _clip_ints(arr: npt.NDArray[Any], lo: int, hi: int) -> npt.NDArray[np.int64]:
    """An int64 array of arr (any integer dtype) clamped to [lo, hi], exactly."""
    if arr.dtype == np.uint64:
        arr = np.minimum(arr, np.uint64(min(hi, INT64_MAX)))
    arr = arr.astype(np.int64, copy=False)
    if lo > INT64_MIN or hi < INT64_MAX:
        arr = np.clip(arr, lo, hi)
    return np.asarray(arr)


def _clamp_int(v: int, lo: int = INT64_MIN, hi: int = INT64_MAX) -> int:
    return lo if v < lo else hi if v > hi else v


def _leaf_kind(t: type) -> str | None:
    """'i', 'f' or None (refused) for the type of one element of a Python sequence."""
    if t is bool or issubclass(t, np.bool_):
        return None
    if issubclass(t, (int, np.integer)):
        return "i"
    if t is float or (issubclass(t, np.floating) and np.dtype(t).itemsize <= 8):
        return "f"
    return None


def _from_sequence(name: str, value: Sequence[Any]) -> tuple[str, npt.NDArray[Any]]:
    """(kind, array) of a Python list/tuple, classified by element *types* only."""
    # the common flat cases first (the same classification, a quarter of the time)
    if all(type(x) is float for x in value):
        return "f", np.array(value, dtype=np.float64)
    if all(type(x) is int for x in value):
        try:
            return "i", np.array(value, dtype=np.int64)
        except OverflowError:  # beyond int64: clamp (same output type, no error)
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
        except OverflowError:  # beyond int64: clamp (same output type, no error)
            flat = [_clamp_int(int(x)) for x in obj.flat]
            return "i", np.array(flat, dtype=np.int64).reshape(obj.shape)
    if "i" in kinds:  # mixed ints and floats: the ints clamped to +-2**53
        mixed = [
            float(_clamp_int(int(x), -EXACT_INT, EXACT_INT))
            if _leaf_kind(type(x)) == "i"
            else float(x)
            for x in obj.flat
        ]
        return "f", np.array(mixed, dtype=np.float64).reshape(obj.shape)
    return "f", obj.astype(np.float64)


def real_data(name: str, value: object) -> tuple[str, npt.NDArray[Any]]:
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


def float_data(name: str, value: object) -> npt.NDArray[np.float64]:
    """Private data as a float64 ndarray, exactly: integers clamped to +-2**53 first."""
    kind, arr = real_data(name, value)
    if kind == "i":
        arr = np.clip(arr, -EXACT_INT, EXACT_INT).astype(np.float64)
    return arr


def float_array(
    name: str, value: object, *, allow_nonfinite: bool = False
) -> npt.NDArray[np.float64]:
    """A public array-like of real numbers (bins, candidates) as float64, converted
    exactly (refused by type otherwise; integers beyond 2**53 are refused as values:
    they are public)."""
    kind, arr = real_data(name, value)
    if kind == "i":
        if arr.size and (int(arr.max()) > EXACT_INT or int(arr.min()) < -EXACT_INT):
            _fail(
                name,
                "at most 2**53 in absolute value when given as integers",
                "an integer beyond it",
            )
        arr = arr.astype(np.float64)
    if not allow_nonfinite and not np.isfinite(arr).all():
        bad = float(arr[~np.isfinite(arr)].flat[0])
        _fail(name, "finite everywhere", bad)
    return arr


def out_array(out: object, shape: tuple[int, ...] | None) -> npt.NDArray[np.float64]:
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


def even_grid(lo: float, hi: float, k: int) -> npt.NDArray[np.float64]:
    """``k >= 2`` evenly spaced public values from ``lo`` to ``hi`` (``np.linspace``),
    finite even when ``hi - lo`` is beyond the doubles (linspace's step would be inf and
    its values inf or NaN): then ``lo (1 - t) + hi t``, clamped to ``[lo, hi]``."""
    with np.errstate(over="ignore", invalid="ignore"):
        grid: npt.NDArray[np.float64] = np.linspace(lo, hi, k)
        if not np.isfinite(grid).all():
            t = np.arange(k, dtype=np.float64) / (k - 1)
            grid = np.clip(lo * (1.0 - t) + hi * t, lo, hi)
    return grid
