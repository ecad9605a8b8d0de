"""The samplers added for the drop-in backends: laplace_truncated, gamma,
uniform_full_precision (dpfast.random), and the cached randomized-response threshold."""

import math

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from dpfast import randomized_response as rrmod
from stat_helpers import ALPHA

N = 200_000


def _trunc_laplace_cdf(loc, scale, lower, upper):
    base = stats.laplace(loc=loc, scale=scale)
    lo, hi = base.cdf(lower), base.cdf(upper)
    return lambda y: (base.cdf(np.clip(y, lower, upper)) - lo) / (hi - lo)


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize(
    "loc,scale,lower,upper",
    [
        (0.3, 1.0, 0.0, 1.0),
        (2.0, 0.5, -1.0, 3.0),
        (0.0, 2.0, 0.0, math.inf),
        (5.0, 1.0, -math.inf, 1.0),  # centre outside: clamped to 1.0
    ],
)
def test_laplace_truncated_law(seeded, mode, loc, scale, lower, upper):
    y = dr.laplace_truncated(loc, scale, lower, upper, size=N, rng=seeded(), mode=mode)
    assert y.shape == (N,) and y.min() >= lower and y.max() <= upper
    c = min(max(loc, lower), upper)
    assert stats.kstest(y, _trunc_laplace_cdf(c, scale, lower, upper)).pvalue > ALPHA


def test_laplace_truncated_detects_wrong_scale(seeded):
    """The KS test above has the power to see a 2 % scale error at this n."""
    y = dr.laplace_truncated(0.0, 1.02, -5.0, 5.0, size=4 * N, rng=seeded())
    assert stats.kstest(y, _trunc_laplace_cdf(0.0, 1.0, -5.0, 5.0)).pvalue < 1e-3


def test_laplace_truncated_secure_outputs_on_grid(seeded):
    scale = 3.0
    y = dr.laplace_truncated(np.linspace(0.0, 1.0, 1000), scale, -2.0, 4.0, rng=seeded())
    g = 2.0 ** (math.frexp(scale)[1] - 1 - 40)
    assert np.all(y / g == np.round(y / g))
    # a private centre's low bits never reach the output
    a = dr.laplace_truncated(0.5, scale, -2.0, 4.0, size=50, rng=seeded(7))
    b = dr.laplace_truncated(0.5 + 2**-50, scale, -2.0, 4.0, size=50, rng=seeded(7))
    assert np.array_equal(a, b)


@pytest.mark.slow
def test_laplace_truncated_edges(seeded):
    assert dr.laplace_truncated(7.0, 0.0, 0.0, 1.0) == 1.0
    assert dr.laplace_truncated(0.5, 1.0, 2.0, 2.0) == 2.0
    assert isinstance(dr.laplace_truncated(0.5, 1.0, 0.0, 1.0, rng=seeded()), float)
    # a tiny domain relative to the scale still terminates and stays inside
    y = dr.laplace_truncated(0.0, 1e6, 0.0, 1.0, size=20, rng=seeded())
    assert y.min() >= 0.0 and y.max() <= 1.0
    # huge bounds coarsen the grid instead of failing
    y = dr.laplace_truncated(0.0, 1.0, -1e30, 1e30, size=10, rng=seeded())
    assert np.isfinite(y).all()
    ref = dr.laplace_truncated([0.1, 0.2], 1.0, 0.0, 1.0, rng=seeded(3))
    assert np.array_equal(
        ref, dr.laplace_truncated([0.1, 0.2], 1.0, 0.0, 1.0, rng=seeded(3))
    )


@pytest.mark.parametrize(
    "kwargs,exc",
    [
        (dict(loc=0.0, scale=-1.0), dpfast.PrivacyParameterError),
        (dict(loc=0.0, scale=1.0, lower=1.0, upper=0.0), dpfast.PrivacyParameterError),
        (dict(loc=0.0, scale=1.0, lower=math.nan), dpfast.PrivacyParameterError),
        (dict(loc=0.0, scale=1.0, lower=math.inf), dpfast.PrivacyParameterError),
        (dict(loc=0.0, scale=1.0, mode="quick"), dpfast.PrivacyParameterError),
        (dict(loc=0.0, scale="1"), TypeError),
        (dict(loc=0.0, scale=1e300, lower=0.0, upper=1e-300), dpfast.PrivacyParameterError),
    ],
)
def test_laplace_truncated_bad_parameters(kwargs, exc):
    with pytest.raises(exc):
        dr.laplace_truncated(**kwargs)


@pytest.mark.parametrize("shape,scale", [(0.3, 1.0), (1.0, 2.0), (2.5, 0.5), (40.0, 3.0)])
def test_gamma_law(seeded, shape, scale):
    y = dr.gamma(shape, scale, size=N, rng=seeded())
    assert stats.kstest(y, stats.gamma(shape, scale=scale).cdf).pvalue > ALPHA


def test_gamma_edges(seeded):
    assert dr.gamma(0.0, 1.0, rng=seeded()) == 0.0
    assert isinstance(dr.gamma(2.0, rng=seeded()), float)
    with pytest.raises(dpfast.PrivacyParameterError):
        dr.gamma(-1.0)
    with pytest.raises(TypeError):
        dr.gamma(1.0, size=2.5)


def test_uniform_full_precision_law(seeded):
    u = dr.uniform_full_precision(size=N, rng=seeded())
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    # the binade of U is geometric: P[U in [2^-j-1, 2^-j)] = 2^-j-1
    e = np.frexp(u)[1]
    counts = np.bincount(-e, minlength=12)[:12]
    probs = 2.0 ** -np.arange(1, 13)
    assert (
        stats.chisquare(
            counts[1:11], probs[:10] * N * counts[1:11].sum() / (probs[:10] * N).sum()
        ).pvalue
        > ALPHA
    )


def test_uniform_full_precision_reaches_small_values(seeded):
    # 53-bit uniforms never land in (0, 2^-53); this one does, with probability 2^-53 each,
    # so look at the low bits instead: below 2^-10 the values keep 52 random mantissa bits
    u = dr.uniform_full_precision(size=N, rng=seeded())
    small = u[u < 2**-10]
    assert small.size > 50
    assert np.any((small * 2.0**63) % 1.0 != 0.0)  # bits below 2^-63 are used


def test_randomized_response_threshold_cached():
    rrmod._flip_threshold.cache_clear()
    a = rrmod._flip_threshold(0.7, 2)
    b = rrmod._flip_threshold(0.7, 2)
    assert a == b and rrmod._flip_threshold.cache_info().hits == 1
    # the cached value is still the certified one
    q = 1.0 / (1.0 + math.exp(0.7))
    assert a / 2**64 >= q and a / 2**64 - q < 2**-40
