"""Faster exact samplers (issue 15 item 1): the quotient/remainder discrete Laplace and the
discrete Gaussian's computed acceptance coin.

The laws are checked at alpha = 1e-6 with fixed seeds, on the paths the new code takes:
Y = 2^s G + L at large scales (binned chi-square against the exact CDF), ties forced by a
coarse first comparison (fast_bits), and the certified enclosures themselves against
mpmath at 300 bits.
"""

import random as pyrandom
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpfast
from dpfast import random as dr

ALPHA = 1e-6
TWO64 = 2**64


def rng(seed):
    return dr.ChaCha20(seed)


def binned_pvalue(samples, cdf, edges):
    """Chi-square p-value of integer samples over the bins (-inf, e0], (e0, e1], ..., (e_last, inf)
    with the exact CDF `cdf` (a function of an integer, returning an mpmath number)."""
    samples = np.asarray(samples).ravel()
    n = samples.size
    with mpmath.workprec(250):
        cum = [mpmath.mpf(0)] + [cdf(e) for e in edges] + [mpmath.mpf(1)]
    probs = np.array([float(cum[i + 1] - cum[i]) for i in range(len(cum) - 1)])
    assert (probs * n >= 5).all(), probs * n
    counts = np.bincount(
        np.searchsorted(np.asarray(edges, dtype=np.int64), samples, side="left"),
        minlength=len(probs),
    )
    stat = ((counts - probs * n) ** 2 / (probs * n)).sum()
    return stats.chi2.sf(stat, len(probs) - 1)


def _q(scale):
    """q = exp(-1/scale) at the working precision of the caller (binned_pvalue's)."""
    s = Fraction(scale)
    return mpmath.exp(-mpmath.mpf(s.denominator) / s.numerator)


def geom_cdf(scale):
    return lambda y: 1 - _q(scale) ** (y + 1) if y >= 0 else mpmath.mpf(0)


def dlap_cdf(scale):
    return lambda x: (
        1 - _q(scale) ** (x + 1) / (1 + _q(scale))
        if x >= 0
        else _q(scale) ** (-x) / (1 + _q(scale))
    )


def quantile_edges(scale, bins, signed):
    """Integer bin edges near equal-probability quantiles of the geometric / discrete Laplace."""
    t = float(Fraction(scale))
    if signed:
        us = [i / bins for i in range(1, bins)]
        return sorted(
            {int(np.sign(u - 0.5) * -t * np.log(1 - 2 * abs(u - 0.5))) for u in us}
        )
    return sorted({int(-t * np.log(1 - i / bins)) for i in range(1, bins)})


@pytest.mark.parametrize(
    "scale", [256, Fraction(1001, 1), Fraction(10**6, 7), 10**8, 2**40 + 1, 2**56]
)
def test_quotient_remainder_laws(scale):
    """Y = 2^s G + L (s >= 1 here) against the exact CDFs, 40 bins, 4e5 draws each."""
    num, den = dr._scale_rational(scale)
    prepared = dpfast._core.DiscreteLaplaceExact(num, den)
    assert prepared.digits >= 1 and prepared.block == 2**prepared.digits
    y = prepared.draw(True, 400_000, rng(101))
    assert (
        binned_pvalue(
            y, geom_cdf(Fraction(num, den)), quantile_edges(Fraction(num, den), 40, False)
        )
        > ALPHA
    )
    x = prepared.draw(False, 400_000, rng(102))
    assert (
        binned_pvalue(
            x, dlap_cdf(Fraction(num, den)), quantile_edges(Fraction(num, den), 40, True)
        )
        > ALPHA
    )
    # the low digits alone: L = Y mod 2^s has P(L <= l) = (1 - q^(l+1)) / (1 - q^(2^s))
    s, t = prepared.digits, Fraction(num, den)
    B = 2**s
    low = y % B
    edges = (
        sorted({int(B * i / 20) for i in range(1, 20)}) if B > 20 else list(range(B - 1))
    )

    def low_cdf(v):
        q = mpmath.exp(-mpmath.mpf(t.denominator) / t.numerator)
        return (1 - q ** (v + 1)) / (1 - q**B)

    assert binned_pvalue(low, low_cdf, edges) > ALPHA


@pytest.mark.parametrize("scale", [Fraction(10**6, 7), 10**8, 2**40 + 1])
def test_remainder_mean(scale):
    """L = Y mod 2^s is nearly uniform (its weights q^l fall by at most e^-1/32): a z-test
    of its mean against the exact E[L] = q/(1-q) - B q^B/(1-q^B), 4e6 draws, has the power
    the binned test lacks (accepting every proposal shifts the mean by 9 standard errors)."""
    num, den = dr._scale_rational(scale)
    prepared = dpfast._core.DiscreteLaplaceExact(num, den)
    B = prepared.block
    low = prepared.draw(True, 4_000_000, rng(108)) % B
    with mpmath.workprec(250):
        q = _q(Fraction(num, den))
        mean = q / (1 - q) - B * q**B / (1 - q**B)
        z = (mpmath.mpf(int(low.sum())) / low.size - mean) / (
            B / mpmath.sqrt(12 * low.size)
        )
    assert abs(float(z)) < stats.norm.isf(ALPHA / 2)


@pytest.mark.parametrize(
    "scale,fast_bits,n",
    [
        (Fraction(1000, 3), 2, 100_000),
        (10**6, 3, 40_000),
        (256, 1, 100_000),
        (Fraction(511, 2), 2, 100_000),
    ],
)
def test_quotient_remainder_ties(scale, fast_bits, n):
    """A coarse first comparison makes the table thresholds and L's acceptance coin tie
    often; every tie is finished by the exact 704-bit continuation."""
    num, den = dr._scale_rational(scale)
    prepared = dpfast._core.DiscreteLaplaceExact(num, den, fast_bits)
    y = prepared.draw(True, n, rng(103))
    assert (
        binned_pvalue(
            y, geom_cdf(Fraction(num, den)), quantile_edges(Fraction(num, den), 30, False)
        )
        > ALPHA
    )
    x = prepared.draw(False, n, rng(104))
    assert (
        binned_pvalue(
            x, dlap_cdf(Fraction(num, den)), quantile_edges(Fraction(num, den), 30, True)
        )
        > ALPHA
    )


def test_small_polynomial_enclosure():
    """lo <= 2^64 exp(-x) <= hi on [xl, xh] / 2^64, for x up to 1/32, and only ~2^-24 wide.
    hi saturates at 2^64 - 1 (for x < 64 / 2^64): a saturated bound never decides a
    rejection (that needs a word above hi), so it stays safe."""
    gen = pyrandom.Random(7)
    cases = [(0, 0), (1, 3), (63, 65), (64, 66), (2**59 - 2, 2**59)]
    cases += [(v, v + 2) for v in (gen.randrange(64, 2**59 - 2) for _ in range(300))]
    cases += [
        (v, v) for v in (gen.randrange(0, 2 ** gen.randrange(1, 60)) for _ in range(300))
    ]
    with mpmath.workprec(300):
        for xl, xh in cases:
            lo, hi = dpfast._core._exp_small_bounds(xl, xh)
            assert lo <= mpmath.exp(-mpmath.mpf(xh) / TWO64) * TWO64, (xl, xh)
            assert mpmath.exp(-mpmath.mpf(xl) / TWO64) * TWO64 <= hi or hi == TWO64 - 1, (
                xl,
                xh,
            )
            assert hi - lo <= 2**40 + (xh - xl) + 8, (xl, xh)


@pytest.mark.parametrize(
    "sigma2",
    [
        Fraction(64**2),
        Fraction(2000**2),
        Fraction(10**12),
        Fraction(3**40, 7),
        Fraction(2**63 + 2**40 + 7, 3),
        Fraction(123456789123456789, 2**20 + 3),
    ],
)
def test_gaussian_coin_enclosure(sigma2):
    """The computed acceptance coin's enclosure holds the exact acceptance probability
    exp(-(x - sigma^2/t)^2 / (2 sigma^2)) for proposals x near and far from mu."""
    num, den = dr._sigma2_rational(None, sigma2)
    g = dpfast._core.DiscreteGaussianExact(num, den)
    assert g.computed_coin
    t = g.t
    s2 = Fraction(num, den)
    mu = s2 / t
    sigma = float(s2) ** 0.5
    gen = pyrandom.Random(num % 1000)
    xs = {0, 1, int(mu), int(mu) + 1, 2 * t, 12 * t, 2**62}
    xs |= {
        max(0, int(mu + gen.gauss(0, 1) * sigma * gen.choice([0.01, 1, 3, 8, 11.3])))
        for _ in range(300)
    }
    with mpmath.workprec(300):
        for x in sorted(xs):
            d = Fraction(x) - mu
            e = (
                mpmath.mpf(d.numerator) ** 2
                / d.denominator**2
                / (2 * mpmath.mpf(s2.numerator) / s2.denominator)
            )
            exact = mpmath.exp(-e) * TWO64
            for crude, width in ((False, 2.0**-20), (True, 2.0**-4)):
                lo, hi = g._coin_bounds(x, crude)
                # hi saturates at 2^64 - 1 (safe: see test_small_polynomial_enclosure)
                assert lo <= exact and (exact <= hi or hi == TWO64 - 1), (
                    x,
                    crude,
                    lo,
                    float(exact),
                    hi,
                )
                assert hi - lo <= exact * width + 16, (x, crude, hi - lo)


def normal_cdf_bins(sigma, bins):
    """Edges at the quantiles of N(0, sigma^2), and P(X <= k) = Phi((k + 1/2) / sigma), exact for
    the discrete Gaussian to within O(sigma^-2) relative error, far below the chi-square's
    resolution at these sample sizes and sigmas."""
    edges = sorted({int(round(sigma * stats.norm.ppf(i / bins))) for i in range(1, bins)})
    return edges, lambda k: mpmath.ncdf((k + mpmath.mpf(1) / 2) / sigma)


@pytest.mark.parametrize(
    "sigma2,n",
    [
        (Fraction(1500**2), 300_000),
        (Fraction(10**12), 300_000),
        (Fraction(2**63 + 2**40 + 7, 3), 200_000),
    ],
)
def test_gaussian_computed_coin_law(sigma2, n):
    num, den = dr._sigma2_rational(None, sigma2)
    g = dpfast._core.DiscreteGaussianExact(num, den, 64, 0)  # [CKS] Algorithm 3, not blocks
    assert g.computed_coin and g.table_span == 0
    x = g.draw(n, rng(105))
    edges, cdf = normal_cdf_bins(float(Fraction(num, den)) ** 0.5, 40)
    assert binned_pvalue(x, cdf, edges) > ALPHA
    # the public sampler takes the same path
    y = dr.discrete_gaussian(sigma2=sigma2, size=n // 4, rng=rng(106), workers=1)
    assert binned_pvalue(y, cdf, edges) > ALPHA


def test_gaussian_computed_coin_ties():
    """With a 2-bit first comparison nearly every acceptance coin ties and is finished
    exactly (704-bit continuation); the law must not move."""
    g = dpfast._core.DiscreteGaussianExact(1500**2, 1, 2, 0)
    assert g.computed_coin
    x = g.draw(20_000, rng(107))
    edges, cdf = normal_cdf_bins(1500.0, 16)
    assert binned_pvalue(x, cdf, edges) > ALPHA


def test_gaussian_beyond_table_uses_computed_coin():
    """For 64 <= t <= 1024 the tabulated coins cover |y| <= 16 t; beyond, the computed coin
    decides (probability ~e^-16 per proposal): forced here by reading the law's far tail
    through many draws would be slow, so the coin's bounds are checked there instead."""
    g = dpfast._core.DiscreteGaussianExact(100**2, 1, 64, 0)
    assert g.table_span == 16 * 101 and g.computed_coin
    lo, hi = g._coin_bounds(16 * 101 + 1)
    with mpmath.workprec(200):
        mu = Fraction(100**2, 101)
        exact = (
            mpmath.exp(-mpmath.mpf(float((16 * 101 + 1 - mu) ** 2)) / (2 * 100**2)) * TWO64
        )
    assert lo <= exact <= hi


def test_fills_do_not_depend_on_slicing():
    """No state links one value to the next (sign bits come from each value's own word):
    a fill over more than one slice equals fills over pieces cut elsewhere, so seeded
    output depends on the generator and n only (issue 9's slicing, _parallel's chunks)."""
    S = dpfast._core._SLICE
    n = S + 1000
    for make in (
        lambda: dpfast._core.DiscreteLaplaceExact(3, 2),
        lambda: dpfast._core.DiscreteLaplaceExact(10**6, 7),
        lambda: dpfast._core.DiscreteLaplaceExact(2**40, 1),
    ):
        for geometric in (True, False):
            whole = make().draw(geometric, n, rng(109))
            g, p = rng(109), make()
            parts = [p.draw(geometric, m, g) for m in (S // 2, S // 2 - 3, 1003)]
            assert np.array_equal(whole, np.concatenate(parts))
    for num, den in ((9, 4), (10**12, 1)):
        whole = dpfast._core.DiscreteGaussianExact(num, den).draw(n, rng(110))
        g, p = rng(110), dpfast._core.DiscreteGaussianExact(num, den)
        parts = [p.draw(m, g) for m in (S // 2, S // 2 - 3, 1003)]
        assert np.array_equal(whole, np.concatenate(parts))
