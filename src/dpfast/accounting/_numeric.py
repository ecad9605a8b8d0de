"""Small numerical helpers shared by the accountants (numpy + stdlib only: scipy is a test
dependency).  Every helper rounds on the side its caller names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _validation as _v
from .._errors import PrivacyParameterError

_INF = math.inf
_ULP = 2.0**-52
# Relative slack that covers the floating-point error of a short closed form (a handful
# of correctly rounded operations and libm calls, each within 1 ulp).
_CLOSED_FORM_SLACK = 16 * _ULP
# Relative slack on delta targets of the numerical inverses (sums of up to 1e7 terms).
_SUM_SLACK = 2.0**-40
# Largest k accepted by the optimal-composition routines: they hold O(k) float arrays.
_KOV_K_MAX = 10**7


def bisect_least(
    ok: Callable[[float], bool],
    lo: float,
    hi: float,
    *,
    rel: float = 0.0,
    steps: int = 200,
    geometric: bool = False,
) -> float:
    """The safe end of a bisection for the least x with ``ok(x)``, ``ok`` monotone (false
    below some point, true above): from a bracket with ``ok(hi)`` (and ``lo`` below the
    point or a floor), halve (at the arithmetic or geometric midpoint) until
    ``hi - lo <= rel * hi``, the floats are adjacent, or ``steps`` halvings; return ``hi``,
    where ``ok`` holds."""
    for _ in range(steps):
        if hi - lo <= rel * hi:
            break
        mid = math.sqrt(lo * hi) if geometric else 0.5 * (lo + hi)
        if not lo < mid < hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


_TINY = 2.0**-1000  # below this, results are subnormal-adjacent: add absolute ulps too


def _up(x: float, slack: float = _CLOSED_FORM_SLACK) -> float:
    """Round a nonnegative float result up by a relative ``slack`` (never down).

    Near the subnormal range a relative slack rounds away to nothing while each
    operation can still be off by an absolute 2**-1074, so a few of those are added."""
    if x == 0.0 or x == _INF or x != x:
        return x  # zero is exact; inf and NaN have no neighbour to move to
    if abs(x) < _TINY:
        x = x + 8 * math.ulp(0.0)
    return math.nextafter(x + abs(x) * slack, _INF)


def _up_array(
    a: npt.NDArray[np.float64],
    slack: float = _CLOSED_FORM_SLACK,
) -> npt.NDArray[np.float64]:
    """Elementwise :func:`_up` of a float64 array of nonnegative values (zeros stay zero)."""
    a = np.asarray(a, dtype=np.float64)
    out = a + np.abs(a) * slack
    out = np.where(np.abs(a) < _TINY, out + 8 * math.ulp(0.0), out)
    out = np.nextafter(out, _INF)
    return np.where(a == 0.0, 0.0, out)


def _finite(name: str, value: float) -> float:
    """A result promised finite: refuse (by the public parameters) rather than return inf/NaN."""
    if -_INF < value < _INF:
        return value
    raise PrivacyParameterError(
        f"{name} is not representable as a finite float for these parameters; "
        "use less extreme values (the exact value exceeds the range of doubles)"
    )


def _positive_floor(x: float) -> float:
    """A bound that is positive in exact arithmetic but underflowed to 0 becomes the
    smallest positive float, which is still an upper bound."""
    return x if x > 0.0 else math.ulp(0.0)


def _down(x: float, slack: float = _CLOSED_FORM_SLACK) -> float:
    """Round a nonnegative float down by a relative ``slack``, never below 0."""
    if x <= 0.0:
        return 0.0
    return max(0.0, math.nextafter(x - x * slack, 0.0))


def _fraction_to_float_up(f: Fraction) -> float:
    """The smallest float >= the rational ``f`` (float() rounds to nearest)."""
    x = float(f)
    if Fraction(x) < f:
        x = math.nextafter(x, _INF)
    return x


def _fraction_to_float_down(f: Fraction) -> float:
    """The largest float <= the rational ``f``."""
    x = float(f)
    if Fraction(x) > f:
        x = math.nextafter(x, -_INF)
    return x


def _fsum_up(values: Iterable[float]) -> float:
    """An upward-rounded sum of floats: math.fsum is correctly rounded to nearest;
    the sign of the (again exactly summed) residual tells which side it fell on."""
    try:
        s = math.fsum(values)
    except OverflowError:  # partial sums beyond the doubles: the sum is not a float
        return _INF
    if s == _INF:
        return s
    residual = math.fsum(list(values) + [-s])
    return math.nextafter(s, _INF) if residual > 0.0 else s


def _sum_up(arr: npt.NDArray[np.float64]) -> float:
    """An upward-rounded sum of a float64 array of nonnegative values.

    Up to 2**14 terms: :func:`_fsum_up` (the exact sum, rounded up).  Beyond that,
    numpy's pairwise sum plus a rigorous bound on its rounding error: numpy adds blocks
    of at most 128 terms in 8 interleaved running sums and combines blocks pairwise, so
    every term passes through fewer than m = 128 + log2(n) additions, and the error is
    at most m u / (1 - m u) times the sum of |terms| (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 2nd ed., §4.2)."""
    n = arr.shape[0]
    if n <= 1 << 14:
        return _fsum_up(arr.tolist())
    with np.errstate(over="ignore"):
        s = float(np.sum(arr))
    m = 128 + math.ceil(math.log2(n))
    gamma = m * 2.0**-53 / (1.0 - m * 2.0**-53)
    return math.nextafter(
        s + 2.0 * gamma * s, _INF
    )  # terms are >= 0: sum |x| = s (x2 for its own rounding)


def _logsumexp(a: npt.ArrayLike) -> float:
    """log(sum(exp(a))) of a 1-D float array, without overflow; -inf for no mass."""
    a = np.asarray(a, dtype=np.float64)
    if a.size == 0:
        return -_INF
    m = float(np.max(a))
    if m == -_INF:
        return -_INF
    return m + math.log(float(np.sum(np.exp(a - m))))


def _log1mexp(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """log(1 - e^x) for x <= 0, accurate near 0 and far below it (Maechler 2012)."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out: npt.NDArray[np.float64] = np.where(
            x > -math.log(2.0), np.log(-np.expm1(x)), np.log1p(-np.exp(x))
        )
    return out


def _real_sequence(
    name: str,
    values: Iterable[Any] | npt.NDArray[Any],
    *,
    minimum_exclusive: float | None = None,
) -> npt.NDArray[np.float64]:
    """Validate a sequence of nonnegative finite reals; return a float64 array.

    A numpy array is checked vectorised; any other iterable element by element with
    the shared helpers (so a bool or a string inside a list is a TypeError naming
    ``name[i]``)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(
            f"{name} must be a sequence of real numbers; got {type(values).__name__}"
        )
    if isinstance(values, np.ndarray):
        arr = _v.float_array(name, values)
        if arr.ndim != 1:
            raise PrivacyParameterError(
                f"{name} must be one-dimensional; got shape {arr.shape}"
            )
        bad = arr < 0.0 if minimum_exclusive is None else arr <= minimum_exclusive
        if bad.any():
            rule = ">= 0" if minimum_exclusive is None else f"> {minimum_exclusive}"
            raise PrivacyParameterError(
                f"{name} must be {rule} everywhere; got {arr[bad][0]!r}"
            )
        return arr
    out = []
    for i, v in enumerate(values):
        label = f"{name}[{i}]"
        if minimum_exclusive is None:
            out.append(_v.nonnegative(label, v))
        else:
            f = _v.finite(label, v)
            if not f > minimum_exclusive:
                raise PrivacyParameterError(
                    f"{label} must be > {minimum_exclusive}; got {v!r}"
                )
            out.append(f)
    return np.asarray(out, dtype=np.float64)


def _delta_sequence(
    name: str,
    values: Iterable[Any] | npt.NDArray[Any] | None,
    n: int,
) -> npt.NDArray[np.float64]:
    if values is None:
        return np.zeros(n)
    arr = _real_sequence(name, values)
    if (arr >= 1.0).any():
        raise PrivacyParameterError(
            f"{name} must be in [0, 1) everywhere; got {arr[arr >= 1.0][0]!r}"
        )
    if arr.shape[0] != n:
        raise PrivacyParameterError(
            f"{name} must have the same length as epsilons ({n}); got {arr.shape[0]}"
        )
    return arr


def _open_delta(name: str, value: object) -> float:
    """A probability in (0, 1): advanced composition needs ln(1/delta') finite."""
    return _v.delta(value, name, allow_zero=False)
