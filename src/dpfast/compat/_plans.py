"""Grid plans shared by the drop-in backends: the host tool calibrates a noise scale for a
sensitivity; dpfast releases on a power-of-two grid and charges the rounding.

A value rounded to the grid g = 2^k moves by at most g/2, so neighbours' rounded values
differ by at most ``sensitivity + g``; noise of ``scale (1/g + 1/sensitivity)`` steps is
the host's calibration at that sensitivity (every calibration used here is linear in the
sensitivity).  Plans depend on public parameters only and are cached.

The staircase and uniform plans work in whole grid steps the same way: neighbours' rounded
values differ by at most ``W = floor(sensitivity / g) + 1`` steps, and the integer noise is
exactly private for a shift of W steps (:func:`staircase`, :func:`uniform`).  Their
releases do the integer arithmetic exactly and round once to a double.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any, TypeVar

from .. import _core
from .. import _validation as _v
from .. import mechanisms as _mech
from .. import random as _random
from .._errors import PrivacyParameterError
from .._plans import GRID_BITS, grid_exponent

_TWO53 = 2.0**53
_FMAX = sys.float_info.max
_CACHE: dict[Hashable, Any] = {}
_T = TypeVar("_T")


def _remember(key: Hashable, make: Callable[..., _T], *args: Any) -> _T:
    plan = _CACHE.get(key)
    if plan is None:
        if len(_CACHE) >= 4096:
            _CACHE.clear()
        plan = _CACHE[key] = make(*args)
    return plan


def _public(scale_name: str, scale: Any, sensitivity: Any) -> tuple[float, float | None]:
    """A plan's noise parameter and sensitivity, each finite and > 0 (None: no
    sensitivity): the host's validation may let NaN, infinity or 0 through."""
    return (
        _v.positive(scale_name, scale),
        None if sensitivity is None else _v.positive("sensitivity", sensitivity),
    )


def _steps(scale: float, k: int, sensitivity: float | None) -> Fraction:
    inv_sens = 0 if sensitivity is None else 1 / Fraction(sensitivity)
    return Fraction(scale) * (Fraction(2) ** -k + inv_sens)


def _laplace(scale: float, sensitivity: float | None, ceil_grid: bool) -> tuple[int, Any]:
    scale, sensitivity = _public("scale", scale, sensitivity)
    k = grid_exponent(scale, GRID_BITS.laplace, None)
    if ceil_grid and math.frexp(scale)[0] != 0.5:
        k += 1  # 2^(ceil(log2 scale) - 40): PyDP's lattice, never a finer one
    return k, _mech._dlap(*_mech._ceil_rational(_steps(scale, k, sensitivity)))


def laplace(
    scale: float, sensitivity: float | None, ceil_grid: bool = False
) -> tuple[int, Any]:
    """(k, prepared discrete Laplace) for a Laplace ``scale`` at ``sensitivity`` (None: the
    rounding is not charged; the caller accounts for it)."""
    return _remember(
        ("lap", scale, sensitivity, ceil_grid), _laplace, scale, sensitivity, ceil_grid
    )


def _gauss(sigma: float, sensitivity: float | None) -> tuple[int, Any]:
    sigma, sensitivity = _public("sigma", sigma, sensitivity)
    k = grid_exponent(sigma, GRID_BITS.gauss, None)
    s = _steps(sigma, k, sensitivity)
    return k, _random._dgauss_exact(*_random._fit_up("sigma**2", s * s))


def gauss(sigma: float, sensitivity: float | None) -> tuple[int, Any]:
    """(k, prepared discrete Gaussian) for a Gaussian ``sigma`` at l2 ``sensitivity``."""
    return _remember(("gauss", sigma, sensitivity), _gauss, sigma, sensitivity)


def rational(key: Hashable, make: Callable[..., _T], *args: Any) -> _T:
    """A cached exact parameter (public only)."""
    return _remember(key, make, *args)


# ------------------------------------------------------------------ exact integer releases


def private_double(value: Any) -> float:
    """``float(value)`` for a private real; an int or rational beyond the doubles is
    saturated to the largest double of its sign (a clamp, so neighbours stay neighbours and
    no private value raises)."""
    try:
        return float(value)
    except OverflowError:
        return _FMAX if value > 0 else -_FMAX


def grid_shift(x: float, n: int, k: int) -> float:
    """fl(2^k (round(x / 2^k) + n)) for a finite double x and integer noise n of any size:
    the correctly rounded grid point, +-inf beyond the doubles.

    The C grid release (csrc/grid.c, ``dpf_grid_add``) computes it where its steps are
    exact: |n| < 2^53 (n 2^k exact) and -1000 <= k <= 971 (2^-k, 2^k normal; with
    2^k <= ulp(max double) neither round(x / 2^k) 2^k nor n 2^k overflows).  Elsewhere
    the same sum is done on Python integers and rounded once (tests/test_compat_grid.py
    compares the two at the edges)."""
    if -_TWO53 < n < _TWO53 and -1000 <= k <= 971:
        return _core.grid_add(x, n, k)
    return grid_value(grid_index(x, k) + n, k)


def grid_index(x: float, k: int) -> int:
    """round(x / 2^k), ties to even, exactly, for a finite double x."""
    try:
        y = math.ldexp(x, -k)  # exact unless it underflows, and then |x / 2^k| < 2^-1022
    except OverflowError:
        return round(Fraction(x) / Fraction(2) ** k)
    return round(y)


def grid_value(n: int, k: int) -> float:
    """The double nearest n 2^k (one rounding of the exact grid point), +-inf beyond the
    largest double."""
    try:
        if -(1 << 53) <= n <= 1 << 53:
            return math.ldexp(float(n), k)
        return float(Fraction(n) * Fraction(2) ** k)
    except OverflowError:
        return math.inf if n > 0 else -math.inf


def uniform_int(n: int, rng: Any) -> int:
    """Uniform on the integers [0, n), n >= 1 of any size (63-bit words and rejection
    beyond 2^63)."""
    if n <= 1 << 63:
        return int(_core.uniform_below(n, None, rng))
    bits = (n - 1).bit_length()
    while True:
        v = 0
        for _ in range((bits + 62) // 63):
            v = (v << 63) | int(_core.uniform_below(1 << 63, None, rng))
        v >>= -bits % 63
        if v < n:
            return v


def _step_grid(sensitivity: float) -> tuple[int, int]:
    """(k, W): the grid 2^k <= 2^-40 sensitivity and the steps W = floor(sensitivity /
    2^k) + 1 by which neighbours' rounded values can differ (sensitivity > 0, finite)."""
    k = math.frexp(sensitivity)[1] - 1 - GRID_BITS.step
    return k, math.floor(Fraction(sensitivity) / Fraction(2) ** k) + 1


def _staircase(
    epsilon: float, sensitivity: float, gamma: float
) -> tuple[int, int, int, tuple[int, int], tuple[int, int]]:
    epsilon = _v.positive("epsilon", epsilon)
    gamma = _v.probability("gamma", gamma)
    k, width = _step_grid(_v.positive("sensitivity", sensitivity))
    first = round(Fraction(gamma) * width)
    # stairs: geometric of ratio q = exp(-den/num) >= exp(-epsilon) (the scale rounded up)
    num, den = _random._exact_scale_rational(1 / Fraction(epsilon))
    q_hi = min(Fraction(_core.exp_neg_interval(den, num, 3)[1], 1 << 128), Fraction(1))
    p_first = first / (first + q_hi * (width - first))
    return k, width, first, (num, den), (p_first.numerator, p_first.denominator)


def staircase(
    epsilon: float, sensitivity: float, gamma: float
) -> tuple[int, int, int, tuple[int, int], tuple[int, int]]:
    """The discrete staircase of Geng, Kairouz, Oh, Viswanath (2015) on the grid 2^k, for
    0 < epsilon < inf, 0 < sensitivity < inf, 0 <= gamma <= 1: (k, W, r, stairs' geometric
    scale, P[first part]).

    The noise t in grid steps has P(t) proportional to f(|t|), f(W j + s) = q^j for
    s < r = round(gamma W) and B q^j for r <= s < W, with q = exp(-den/num) >= e^-epsilon
    and q <= B <= 1 (B = an upper bound of q, certified): f is non-increasing and
    f(t + W) = q f(t), so a shift of at most W steps changes P by at most 1/q <= e^eps.
    With B = q exactly this is diffprivlib's staircase of stair width W g (sensitivity +
    at most g) sampled on the grid; the bound differs from q by below 2^-128."""
    return _remember(
        ("staircase", epsilon, sensitivity, gamma), _staircase, epsilon, sensitivity, gamma
    )


def staircase_release(
    plan: tuple[int, int, int, tuple[int, int], tuple[int, int]], x: float, rng: Any
) -> float:
    """x (finite) rounded to the plan's grid plus exact staircase noise, rounded once."""
    k, width, first, (num, den), (p_num, p_den) = plan
    while True:
        negative = _core.discrete(_core.BERNOULLI, 1, 2, None, rng)
        t = _core.discrete(_core.GEOMETRIC, num, den, None, rng) * width
        if first == width or (
            first and _core.discrete_big(_core.BERNOULLI, p_num, p_den, None, rng)
        ):
            t += uniform_int(first, rng)
        else:
            t += first + uniform_int(width - first, rng)
        if t or not negative:  # -0 would give 0 twice the mass of every other point
            break
    return grid_shift(x, -t if negative else t, k)


def _uniform(delta: float, sensitivity: float) -> tuple[int, int]:
    delta = _v.positive("delta", delta)
    if not delta <= 1.0:
        raise PrivacyParameterError(f"delta must be in (0, 1]; got {delta!r}")
    k, width = _step_grid(_v.positive("sensitivity", sensitivity))
    return k, math.ceil((width / Fraction(delta) - 1) / 2)


def uniform(delta: float, sensitivity: float) -> tuple[int, int]:
    """The uniform mechanism on the grid 2^k, for 0 < delta <= 1 and 0 < sensitivity < inf:
    (k, M), the noise uniform on the 2M + 1 integer steps [-M, M].

    A shift of at most W steps moves at most W of the 2M + 1 points, so the total
    variation distance between neighbours' outputs is at most W / (2M + 1) <= delta: the
    (0, delta)-DP of diffprivlib's continuous U(-s / (2 delta), s / (2 delta)), with
    M g = W g / (2 delta) up to one step, W g <= sensitivity + g."""
    return _remember(("uniform", delta, sensitivity), _uniform, delta, sensitivity)


def uniform_release(plan: tuple[int, int], x: float, rng: Any) -> float:
    """x (finite) rounded to the plan's grid plus exact uniform noise, rounded once."""
    k, half = plan
    return grid_shift(x, uniform_int(2 * half + 1, rng) - half, k)
