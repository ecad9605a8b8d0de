"""The validation helpers: every rule rejects NaN, infinities, bools and wrong types."""

import math
from fractions import Fraction

import numpy as np
import pytest

from dpfast import PrivacyParameterError
from dpfast import _validation as v

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    "fn, good, bad",
    [
        (
            v.positive,
            [1e-300, 1, 2.5, np.float32(3), Fraction(1, 3)],
            [0.0, -1.0, NAN, INF, -INF],
        ),
        (v.nonnegative, [0.0, 0, 5.0], [-1e-300, NAN, INF]),
        (v.finite, [-1e300, 0.0, 7], [NAN, INF, -INF]),
        (v.probability, [0.0, 0.5, 1.0], [-0.1, 1.1, NAN]),
    ],
)
def test_range_rules(fn, good, bad):
    for x in good:
        assert fn("p", x) == float(x)
    for x in bad:
        with pytest.raises(PrivacyParameterError, match=r"^p must be"):
            fn("p", x)


@pytest.mark.parametrize("fn", [v.positive, v.nonnegative, v.finite, v.probability])
@pytest.mark.parametrize("bad", [True, np.bool_(False), "1", None, 1j, [1.0]])
def test_type_rules(fn, bad):
    with pytest.raises(TypeError, match="^p must be a real number"):
        fn("p", bad)


def test_epsilon_and_delta():
    assert v.epsilon(0.5) == 0.5
    with pytest.raises(
        PrivacyParameterError, match="epsilon must be finite and > 0; got nan"
    ):
        v.epsilon(NAN)
    assert v.delta(0.0) == 0.0
    with pytest.raises(PrivacyParameterError, match=r"delta must be in \(0, 1\)"):
        v.delta(0.0, allow_zero=False)
    for bad in (1.0, -1e-9, NAN):
        with pytest.raises(PrivacyParameterError, match="delta"):
            v.delta(bad)


def test_integer():
    assert v.integer("k", np.int64(5), minimum=1) == 5
    for bad in (1.0, True, "3", None):
        with pytest.raises(TypeError, match="k must be an integer"):
            v.integer("k", bad)
    with pytest.raises(PrivacyParameterError, match="k must be >= 1; got 0"):
        v.integer("k", 0, minimum=1)
    with pytest.raises(PrivacyParameterError, match="k must be <= 3"):
        v.integer("k", 4, maximum=3)


def test_size_and_choice():
    assert v.size(None) is None
    assert v.size(3) == (3,)
    assert v.size([2, np.int32(3)]) == (2, 3)
    with pytest.raises(PrivacyParameterError):
        v.size(-1)
    assert v.choice("mode", "fast", ("secure", "fast")) == "fast"
    with pytest.raises(PrivacyParameterError, match="mode must be one of 'secure', 'fast'"):
        v.choice("mode", "Fast", ("secure", "fast"))


def test_float_array():
    a = v.float_array("x", [1, 2, 3])
    assert a.dtype == np.float64
    src = np.arange(4.0)
    assert v.float_array("x", src) is src  # no copy when none is needed
    with pytest.raises(PrivacyParameterError, match="x must be finite everywhere; got nan"):
        v.float_array("x", [1.0, math.nan])
    assert np.isinf(v.float_array("x", [math.inf], allow_nonfinite=True)[0])
    for bad in (["a"], [True, False], [1j]):
        with pytest.raises(TypeError, match="x must hold real numbers"):
            v.float_array("x", bad)
