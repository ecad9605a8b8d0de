"""Grid plans shared by the drop-in backends: the host tool calibrates a noise scale for a
sensitivity; dpfast releases on a power-of-two grid and charges the rounding.

A value rounded to the grid g = 2^k moves by at most g/2, so neighbours' rounded values
differ by at most ``sensitivity + g``; noise of ``scale (1/g + 1/sensitivity)`` steps is
the host's calibration at that sensitivity (every calibration used here is linear in the
sensitivity).  Plans depend on public parameters only and are cached.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from fractions import Fraction
from typing import Any, TypeVar

from .. import mechanisms as _mech
from .. import random as _random

LAPLACE_GRID_BITS = 40           # as dpfast.mechanisms: g about 2^-40 of the scale
GAUSS_GRID_BITS = 24             # as dpfast.mechanisms: g about 2^-24 of sigma
_TWO53 = 2.0 ** 53
_CACHE: dict[Hashable, Any] = {}
_T = TypeVar("_T")


def _remember(key: Hashable, make: Callable[..., _T], *args: Any) -> _T:
    plan = _CACHE.get(key)
    if plan is None:
        if len(_CACHE) >= 4096:
            _CACHE.clear()
        plan = _CACHE[key] = make(*args)
    return plan


def _steps(scale: float, k: int, sensitivity: float | None) -> Fraction:
    inv_sens = 0 if sensitivity is None else 1 / Fraction(sensitivity)
    return Fraction(scale) * (Fraction(2) ** -k + inv_sens)


def _laplace(scale: float, sensitivity: float | None, ceil_grid: bool) -> tuple[int, Any]:
    k = _mech._grid_exponent(scale, LAPLACE_GRID_BITS, None)
    if ceil_grid and math.frexp(scale)[0] != 0.5:
        k += 1          # 2^(ceil(log2 scale) - 40): PyDP's lattice, never a finer one
    return k, _mech._dlap(*_mech._ceil_rational(_steps(scale, k, sensitivity)))


def laplace(scale: float, sensitivity: float | None, ceil_grid: bool = False) -> tuple[int, Any]:
    """(k, prepared discrete Laplace) for a Laplace ``scale`` at ``sensitivity`` (None: the
    rounding is not charged; the caller accounts for it)."""
    return _remember(("lap", scale, sensitivity, ceil_grid), _laplace, scale, sensitivity,
                     ceil_grid)


def _gauss(sigma: float, sensitivity: float | None) -> tuple[int, Any]:
    k = _mech._grid_exponent(sigma, GAUSS_GRID_BITS, None)
    s = _steps(sigma, k, sensitivity)
    return k, _random._dgauss_exact(*_random._fit_up("sigma**2", s * s))


def gauss(sigma: float, sensitivity: float | None) -> tuple[int, Any]:
    """(k, prepared discrete Gaussian) for a Gaussian ``sigma`` at l2 ``sensitivity``."""
    return _remember(("gauss", sigma, sensitivity), _gauss, sigma, sensitivity)


def rational(key: Hashable, make: Callable[..., _T], *args: Any) -> _T:
    """A cached exact parameter (public only)."""
    return _remember(key, make, *args)


def grid_add(x: float, z: float, k: int) -> float:
    """fl(round(x/2^k) 2^k + z) for a grid multiple z, as csrc/grid.c does in C."""
    g = math.ldexp(1.0, k)
    if abs(x) < _TWO53 * g:
        x = math.ldexp(float(round(math.ldexp(x, -k))), k)     # round: ties to even
    return x + z
