"""The grid release of the drop-in backends (dpfast.compat._plans.grid_shift) is the C
grid release (csrc/grid.c, dpf_grid_add through _core.grid_add) wherever that is exact,
and the same correctly rounded grid point beyond (issue 23 item 2: the Python twin of
the grid release, ``grid_add``, is gone).

Every result is checked against the exact rational sum, rounded by definition (nearest
double, ties to even, +-inf from half an ulp beyond the largest double), and against
the deleted Python twin wherever that returned a value."""

from __future__ import annotations

import itertools
import math
import sys
from fractions import Fraction

import pytest

from dpfast import _core
from dpfast.compat import _plans

MAX = sys.float_info.max
TINY = 5e-324
MIN_NORMAL = sys.float_info.min
OVERFLOW = Fraction(2) ** 1024 - Fraction(2) ** 970  # half an ulp above MAX


def _old_grid_add(x: float, z: float, k: int) -> float:
    """The deleted twin: fl(round(x/2^k) 2^k + z) for a grid multiple z."""
    g = math.ldexp(1.0, k)
    if abs(x) < 2.0**53 * g:
        x = math.ldexp(float(round(math.ldexp(x, -k))), k)
    return x + z


def _exact(x: float, n: int, k: int) -> Fraction:
    """2^k (round(x / 2^k) + n), exactly (round: ties to even)."""
    g = Fraction(2) ** k
    return (round(Fraction(x) / g) + n) * g


def _assert_nearest(v: Fraction, y: float) -> None:
    """y is v rounded to the nearest double, ties to even, +-inf from OVERFLOW on."""
    if abs(v) >= OVERFLOW:
        assert y == (math.inf if v > 0 else -math.inf), (v, y)
        return
    assert math.isfinite(y), (v, y)
    err = abs(v - Fraction(y))
    for w in (math.nextafter(y, math.inf), math.nextafter(y, -math.inf)):
        if math.isfinite(w):
            other = abs(v - Fraction(w))
            assert err <= other, (v, y, w)
            if err == other:  # a tie: the even significand wins
                assert math.frexp(y)[0] * 2**53 % 2 == 0 or y == 0.0, (v, y, w)
    if v == 0:
        assert math.copysign(1.0, y) == 1.0  # never -0.0: 0 has one representative


def _xs(k: int) -> list[float]:
    g = math.ldexp(1.0, k)
    xs = [
        0.0,
        -0.0,
        1.0,
        -1.3,
        1e300,
        -1e-300,
        TINY,
        -TINY,
        MIN_NORMAL,
        -MIN_NORMAL,
        MAX,
        -MAX,
        math.nextafter(MAX, 0.0),
        -math.nextafter(MAX, 0.0),
    ]
    for m in (0.5, 1.5, 2.5, -0.5, -2.5, 3.5, 2.0**52 + 0.5, -(2.0**52 + 1.5)):
        xs.append(m * g)  # ties of round(x / g), when representable
    for big in (2.0**53 * g, math.nextafter(2.0**53 * g, 0.0)):
        if math.isfinite(big):
            xs += [big, -big]
    return [x for x in xs if math.isfinite(x)]


C_KS = (-1000, -1022 + 22, -537, -60, -1, 0, 1, 52, 500, 940, 970, 971)
C_NS = (0, 1, -1, 12345, -(2**40), 2**52, -(2**52), 2**53 - 1, -(2**53 - 1))


@pytest.mark.parametrize("k", C_KS)
def test_c_grid_add_is_the_correctly_rounded_grid_point(k: int) -> None:
    for x, n in itertools.product(_xs(k), C_NS):
        y = _core.grid_add(x, n, k)
        _assert_nearest(_exact(x, n, k), y)
        assert y == _plans.grid_value(_plans.grid_index(x, k) + n, k)
        assert _plans.grid_shift(x, n, k) == y
        z = math.ldexp(float(n), k)  # exact: |n| < 2^53, k <= 971
        old = _old_grid_add(x, z, k)
        assert old == y and math.copysign(1.0, old) == math.copysign(1.0, y), (x, n, k)


@pytest.mark.parametrize("k", (-1114, -1074, -1022, -1001, 972, 983, 1000))
def test_grid_shift_beyond_the_c_range_is_exact(k: int) -> None:
    ns = C_NS + (2**53, -(2**53), 2**60 + 1, -(2**1100), 2**2200 + 3)
    for x, n in itertools.product(_xs(k), ns):
        y = _plans.grid_shift(x, n, k)
        _assert_nearest(_exact(x, n, k), y)


def test_grid_shift_beyond_2_53_steps_matches_the_deleted_twin() -> None:
    # LaplaceBoundedNoise's noise can exceed 2^53 grid steps (epsilon above ~8000): the
    # twin added the (exact) double z; grid_shift takes z / 2^k and sums exactly
    for k in (-1000, -40, 0, 600, 900):
        for n in (2**53, -(2**53) - 2, 2**61 - 2**8, -(2**70)):
            z = math.ldexp(float(n), k)
            if not math.isfinite(z) or Fraction(z) != n * Fraction(2) ** k:
                continue
            for x in _xs(k):
                try:
                    old = _old_grid_add(x, z, k)
                except OverflowError:  # the twin raised on a private x: no value
                    continue
                assert _plans.grid_shift(x, n, k) == old, (x, n, k)


def test_c_grid_add_refuses_what_it_cannot_do_exactly() -> None:
    with pytest.raises(ValueError, match="k must be in"):
        _core.grid_add(1.0, 1, 1001)
    with pytest.raises(ValueError, match="k must be in"):
        _core.grid_add(1.0, 1, -1001)
    with pytest.raises(Exception, match="outside the range"):
        _core.grid_add(1.0, 2**53, 0)


def test_the_twin_is_gone() -> None:
    assert not hasattr(_plans, "grid_add")


def test_bounded_noise_near_the_largest_double_never_raises() -> None:
    # the twin's ldexp raised OverflowError when x rounded up to 2^1024 on a grid 2^k,
    # k >= 972 (here 973): a private value must never raise (DESIGN.md); grid_shift
    # returns the correctly rounded release (+inf beyond the doubles)
    pytest.importorskip("diffprivlib")
    import warnings

    from dpfast.compat import diffprivlib as dpl

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mech = dpl.LaplaceBoundedNoise(epsilon=1.0, delta=0.1, sensitivity=1e305)
        for x in (MAX, -MAX, math.nextafter(MAX, 0.0)):
            y = mech.randomise(x)
            assert y == y and abs(y) >= 1e308, (x, y)
