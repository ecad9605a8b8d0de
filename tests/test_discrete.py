"""Discrete samplers: exact laws, certified constant-time variants and their slack.

Statistical tests use fixed seeds and alpha = 1e-6: a chi-square over the binned support
(tails pooled so that every expected count is >= 5) with 10**6 draws, binomial tests of
tail masses, and exact high-precision (mpmath) reference laws.  The slack of the
constant-time samplers is checked against the exact total variation distance computed
from their thresholds.
"""

import math
import threading
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpfast
from dpfast import PrivacyParameterError
from dpfast import random as dr

ALPHA = 1e-6
N = 10**6
TWO64 = 2**64
mp = mpmath.mp
mp.prec = 200


def rng(seed):
    return dr.ChaCha20(seed)


# ---------------------------------------------------------------- reference laws


def _q(scale):
    s = Fraction(scale)
    return mpmath.exp(-mpmath.mpf(s.denominator) / s.numerator)


def dlap_pmf(scale):
    q = _q(scale)
    c = (1 - q) / (1 + q)
    return lambda x: c * q ** abs(x)


def geom_pmf(scale):
    q = _q(scale)
    return lambda k: (1 - q) * q**k


def dgauss_pmf(sigma2):
    s2 = mpmath.mpf(Fraction(sigma2).numerator) / Fraction(sigma2).denominator
    K = int(40 * mpmath.sqrt(s2)) + 40
    norm = 1 + 2 * mpmath.fsum(
        mpmath.exp(-(mpmath.mpf(k) ** 2) / (2 * s2)) for k in range(1, K)
    )
    return lambda x: mpmath.exp(-(mpmath.mpf(x) ** 2) / (2 * s2)) / norm


def chisq_pvalue(samples, pmf, lo, hi):
    """Chi-square p-value of integer samples against pmf on [lo, hi] (mass outside
    [lo, hi] negligible, < 1e-20); bins with expected count < 5 are pooled into the tails."""
    samples = np.asarray(samples).ravel()
    n = samples.size
    assert samples.min() >= lo and samples.max() <= hi, (samples.min(), samples.max())
    xs = np.arange(lo, hi + 1)
    probs = np.array([float(pmf(int(x))) for x in xs])
    assert abs(probs.sum() - 1) < 1e-9
    counts = np.bincount(samples - lo, minlength=xs.size).astype(float)
    big = np.nonzero(probs * n >= 5)[0]
    a, b = big[0], big[-1]
    exp_ = [probs[:a].sum()] + list(probs[a : b + 1]) + [probs[b + 1 :].sum()]
    obs = [counts[:a].sum()] + list(counts[a : b + 1]) + [counts[b + 1 :].sum()]
    exp_, obs = np.array(exp_) * n, np.array(obs)
    # merge a tail whose expected count is below 5 into its neighbour
    if exp_[0] < 5:
        exp_[1] += exp_[0]
        obs[1] += obs[0]
        exp_, obs = exp_[1:], obs[1:]
    if exp_[-1] < 5:
        exp_[-2] += exp_[-1]
        obs[-2] += obs[-1]
        exp_, obs = exp_[:-1], obs[:-1]
    assert (exp_ >= 5).all() and len(exp_) >= 2
    stat = ((obs - exp_) ** 2 / exp_).sum()
    return stats.chi2.sf(stat, len(exp_) - 1)


def binom_ok(count, n, p):
    return stats.binomtest(int(count), n, float(p)).pvalue > ALPHA


def dlap_range(scale):
    """[-K, K] holding all but < 1e-20 of the mass."""
    t = float(Fraction(scale))
    return int(math.ceil(47 * t)) + 2


# ---------------------------------------------------------------- Lemire uniform


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 1000, 2**33 + 1, 3 * 2**61 + 5, 2**63])
def test_uniform_below(n):
    x = dpfast._core.uniform_below(n, N, rng(11))
    assert x.dtype == np.int64 and x.min() >= 0 and x.max() <= n - 1
    if n == 1:
        assert (x == 0).all()
    elif n <= 1000:
        p = chisq_pvalue(x, lambda v: Fraction(1, n), 0, n - 1)
    else:
        # 64 equal-probability buckets up to the rounding of the bucket edges
        edges = [n * i // 64 for i in range(65)]
        b = np.searchsorted(
            np.array(edges[1:-1], dtype=np.uint64), x.astype(np.uint64), side="right"
        )
        p = chisq_pvalue(b, lambda i: Fraction(edges[i + 1] - edges[i], n), 0, 63)
    assert n == 1 or p > ALPHA


# ---------------------------------------------------------------- Bernoulli


@pytest.mark.parametrize(
    "p",
    [
        Fraction(1, 3),
        (2, 7),
        0.3,
        1e-3,
        Fraction(1, 3**50),
        Fraction(3**41 - 1, 3**41),
        Fraction(2**64 - 2, 2**64 - 1),
    ],
)
def test_bernoulli(p):
    x = dr.bernoulli(p, N, rng=rng(1))
    exact = Fraction(*p) if isinstance(p, tuple) else Fraction(p)
    assert x.dtype == np.int64 and set(np.unique(x)) <= {0, 1}
    assert binom_ok(x.sum(), N, exact)


def test_bernoulli_edges_and_scalar():
    g = rng(2)
    assert (dr.bernoulli(0, 1000, rng=g) == 0).all()
    assert (dr.bernoulli(1, 1000, rng=g) == 1).all()
    assert (dr.bernoulli(Fraction(0), 10, rng=g) == 0).all()
    v = dr.bernoulli(0.5, rng=g)
    assert type(v) is int and v in (0, 1)
    assert dr.bernoulli(0.5, (3, 4), rng=g).shape == (3, 4)
    assert dr.bernoulli(0.5, 0, rng=g).shape == (0,)


# ---------------------------------------------------------------- Bernoulli(exp(-gamma))


@pytest.mark.parametrize(
    "gamma",
    [
        0,
        Fraction(1, 10**12),
        Fraction(1, 1000),
        0.5,
        1,
        Fraction(7, 3),
        2.5,
        7,
        10,
        Fraction(37 * 2**70 + 1, 10 * 2**70),  # multi-word rational, gamma ~ 3.7
        Fraction(2**65 + 3, 2**66),  # multi-word numerator, gamma ~ 0.5
        (2**63, 2**64 - 1),  # den * k overflows 64 bits from k = 2
    ],
)
def test_bernoulli_exp(gamma):
    x = dr.bernoulli_exp(gamma, N, rng=rng(3))
    g = Fraction(*gamma) if isinstance(gamma, tuple) else Fraction(gamma)
    p = mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator)
    assert set(np.unique(x)) <= {0, 1}
    assert binom_ok(x.sum(), N, p)


def test_bernoulli_exp_extremes():
    g = rng(4)
    assert (dr.bernoulli_exp(0, 1000, rng=g) == 1).all()
    assert (dr.bernoulli_exp(0.0, 1000, rng=g) == 1).all()
    assert (dr.bernoulli_exp(60, 10000, rng=g) == 0).all()  # P = 8.8e-27
    assert (dr.bernoulli_exp(2**64 - 1, 1000, rng=g) == 0).all()  # 64-bit, huge
    assert (dr.bernoulli_exp(1e300, 1000, rng=g) == 0).all()  # multi-word, huge
    assert (dr.bernoulli_exp(Fraction(1, 2**1000), 1000, rng=g) == 1).sum() >= 999
    assert type(dr.bernoulli_exp(1, rng=g)) is int


# ---------------------------------------------------------------- geometric, discrete Laplace


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("scale", [0.7, 2.5, Fraction(200, 3)])
def test_geometric(scale, constant_time):
    x = dr.geometric(scale, N, rng=rng(5), constant_time=constant_time)
    K = dlap_range(scale)
    assert chisq_pvalue(x, geom_pmf(scale), 0, K) > ALPHA


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("scale", [0.3, 1, 3, Fraction(21, 2), 1000, 2**-3])
def test_discrete_laplace(scale, constant_time):
    x = dr.discrete_laplace(scale, N, rng=rng(6), constant_time=constant_time)
    K = dlap_range(scale)
    assert chisq_pvalue(x, dlap_pmf(scale), -K, K) > ALPHA
    # tail mass: P(|X| >= k) = 2 q^k / (1 + q), at a k where about 50 draws are expected
    q = _q(scale)
    k = max(1, int(mpmath.log(mpmath.mpf(25) / N * (1 + q)) / mpmath.log(q)))
    assert binom_ok((np.abs(x) >= k).sum(), N, 2 * q**k / (1 + q))


def test_discrete_laplace_scalar_path():
    g = rng(7)
    x = np.array([dr.discrete_laplace(2, rng=g) for _ in range(40000)])
    assert type(dr.discrete_laplace(2, rng=g)) is int
    assert type(dr.discrete_laplace(2, rng=g, constant_time=True)) is int
    assert chisq_pvalue(x, dlap_pmf(2), -100, 100) > ALPHA
    x = np.array([dr.discrete_laplace(2, rng=g, constant_time=True) for _ in range(40000)])
    assert chisq_pvalue(x, dlap_pmf(2), -100, 100) > ALPHA
    x = np.array(
        [dr.geometric(Fraction(7, 3), rng=g, constant_time=True) for _ in range(40000)]
    )
    assert chisq_pvalue(x, geom_pmf(Fraction(7, 3)), 0, 120) > ALPHA


def test_discrete_laplace_huge_and_tiny_scales():
    g = rng(8)
    x = dr.discrete_laplace(1e15, 20000, rng=g)
    assert 0.8e15 < np.abs(x).mean() < 1.2e15
    with pytest.raises(
        PrivacyParameterError, match="2\\*\\*56"
    ):  # |X| > 2**63 - 1: p = 0.13
        dr.discrete_laplace(2**62, 1000, rng=g)
    with pytest.raises(PrivacyParameterError, match="scale"):
        dr.discrete_laplace(2.0**64, rng=g)
    for ct in (False, True):
        assert (dr.discrete_laplace(1e-30, 10000, rng=g, constant_time=ct) == 0).all()
        assert (
            dr.geometric(Fraction(1, 2**64 - 1), 10000, rng=g, constant_time=ct) == 0
        ).all()
    with pytest.raises(PrivacyParameterError, match="scale"):
        dr.discrete_laplace(1e18, 10, rng=g, constant_time=True)
    x = dr.discrete_laplace(1e16, 20000, rng=g, constant_time=True)
    assert 0.8e16 < np.abs(x).mean() < 1.2e16


@pytest.mark.parametrize("fast_bits", [1, 3])
@pytest.mark.parametrize("scale", [0.3, 3, Fraction(200, 3)])
def test_exact_tie_continuation(scale, fast_bits):
    """With the first comparison cut to 1 or 3 bits, ties are frequent and every coin is
    often finished by the exact 704-bit continuation: the law must still be exact."""
    prepared = dpfast._core.DiscreteLaplaceExact(*dr._scale_rational(scale), fast_bits)
    K = dlap_range(scale)
    x = prepared.draw(False, N, rng(20))
    assert chisq_pvalue(x, dlap_pmf(scale), -K, K) > ALPHA
    y = prepared.draw(True, N // 4, rng(21))
    assert chisq_pvalue(y, geom_pmf(scale), 0, K) > ALPHA


@pytest.mark.parametrize("scale", [1, 3, Fraction(1000, 3)])
def test_table_sampler_with_ties(scale):
    """Table inversion (issue 15): with the first comparison cut to 12 bits, a word ties
    with a cumulative threshold about once per 500 words, each finished by the exact
    continuation of that threshold: the laws must be exact."""
    prepared = dpfast._core.DiscreteLaplaceExact(*dr._scale_rational(scale), 12)
    K = dlap_range(scale)
    x = prepared.draw(False, N // 4, rng(24))
    assert chisq_pvalue(x, dlap_pmf(scale), -K, K) > ALPHA
    y = prepared.draw(True, N // 4, rng(25))
    assert chisq_pvalue(y, geom_pmf(scale), 0, K) > ALPHA


def test_table_sampler_word_counts():
    # keystream words per value: 1 up to scale 2**36 (was 2 at scale 1, 3 plus U's above),
    # G's word holding L's first proposal from scale 256 on; 2 beyond
    assert dpfast._core.DiscreteLaplaceExact(1, 1).words == (1, 1)
    assert dpfast._core.DiscreteLaplaceExact(255, 1).words == (1, 1)
    assert dpfast._core.DiscreteLaplaceExact(511, 2).digits == 0
    assert dpfast._core.DiscreteLaplaceExact(256, 1).words == (1, 1)
    assert dpfast._core.DiscreteLaplaceExact(2**36, 1).words == (1, 1)
    assert dpfast._core.DiscreteLaplaceExact(2**37, 1).words == (2, 2)
    assert dpfast._core.DiscreteLaplaceExact(2**40, 1).words == (2, 2)
    # Y = 2^s G + L with 2^s / t <= 1/32
    for t in (256, 1000, 10**8, 2**40, 2**56):
        s = dpfast._core.DiscreteLaplaceExact(t, 1).digits
        assert 2**s * 32 <= t < 2 ** (s + 1) * 32


def test_exact_tie_continuation_gaussian():
    """Ties of the proposal's coins and of the tabulated acceptance coins (cached for
    |y| < 256 and computed afresh beyond) are finished exactly ([CKS] Algorithm 3, kept
    with span2 = 0; the default block sampler's ties: test_discrete_gaussian_large.py)."""
    prepared = dpfast._core.DiscreteGaussianExact(9, 1, 2, 0)
    x = prepared.draw(N, rng(22))
    assert chisq_pvalue(x, dgauss_pmf(9), -50, 50) > ALPHA
    prepared = dpfast._core.DiscreteGaussianExact(150**2, 1, 2, 0)
    x = prepared.draw(N // 10, rng(23))
    assert chisq_pvalue(x, dgauss_pmf_float(150, 2000), -2000, 2000) > ALPHA


@pytest.mark.parametrize("prec", [3, 4, 6, 12])
def test_certified_exp_intervals(prec):
    """The certified arithmetic behind every threshold: the interval contains exp(-x),
    computed independently at 1600 bits, and is only a few ulp wide."""
    import random as pyrandom

    gen = pyrandom.Random(prec)
    F = 64 * (prec - 1)
    cases = [(0, 1), (1, 1), (1, 3), (45, 1), (2**64 - 1, 2**64 - 3), (3**80, 7**45)]
    cases += [
        (
            gen.randrange(0, 2 ** gen.randrange(1, 300)),
            gen.randrange(1, 2 ** gen.randrange(1, 300)),
        )
        for _ in range(40)
    ]
    with mpmath.workprec(1600):
        for num, den in cases:
            lo, hi = dpfast._core.exp_neg_interval(num, den, prec)
            exact = mpmath.exp(-mpmath.mpf(num) / den) * mpmath.mpf(2) ** F
            assert lo <= exact <= hi, (num, den)
            assert hi - lo <= 256, (num, den, hi - lo)  # observed: at most ~70 ulp


@pytest.mark.parametrize(
    "kind,param,pmf,lo,hi",
    [
        ("GEOMETRIC", (5, 2), geom_pmf(Fraction(5, 2)), 0, 130),
        ("DISCRETE_LAPLACE", (7, 3), dlap_pmf(Fraction(7, 3)), -120, 120),
        ("DISCRETE_GAUSSIAN", (9, 4), dgauss_pmf(Fraction(9, 4)), -30, 30),
    ],
)
def test_c_fill_paths(kind, param, pmf, lo, hi):
    """The unprepared C fills: [CKS] loops below DPF_EXACT_FILL_MIN values, the prepared
    sampler (set up inside the call) from there on."""
    k = getattr(dpfast._core, kind)
    g = rng(23)
    small = np.concatenate(
        [dpfast._core.discrete(k, *param, (10000,), g) for _ in range(100)]
    )
    assert chisq_pvalue(small, pmf, lo, hi) > ALPHA
    large = dpfast._core.discrete(k, *param, (N,), g)
    assert chisq_pvalue(large, pmf, lo, hi) > ALPHA


# ---------------------------------------------------------------- rare branches, replayed


def ref_lazy_lt(words, p):
    """Reference for [U < p] from U's 64-bit words: decided as soon as the interval of U
    known so far lies below p (1) or at or above it (0); returns (result, words used)."""
    u = Fraction(0)
    for k, w in enumerate(words, 1):
        u += Fraction(int(w), 2 ** (64 * k))
        if u + Fraction(1, 2 ** (64 * k)) <= p:
            return 1, k
        if u >= p:
            return 0, k
    raise AssertionError("undecided")


def expansion(p, k):
    """The first k base-2**64 digits of p in (0, 1): words that keep [U < p] undecided."""
    out = []
    for _ in range(k):
        p *= TWO64
        out.append(int(p))
        p -= int(p)
    return out


def test_lazy_comparison_replayed():
    import random as pyrandom

    gen = pyrandom.Random(31)
    checked = 0
    for trial in range(400):
        big = trial % 2 == 1
        den = gen.randrange(2, 2**200 if big else 2**64)
        num = gen.randrange(1, den)
        p = Fraction(num, den)
        if (p.denominator <= TWO64 - 1) == big or p.denominator == 1:
            continue
        k = trial % 4  # 0..3 words equal to p's expansion, then random ones
        words = expansion(p, k) + [gen.randrange(TWO64) for _ in range(4)]
        g = dpfast._core.ReplayWords(words)
        assert dr.bernoulli(p, rng=g) == ref_lazy_lt(words, p)[0]
        assert g.consumed == ref_lazy_lt(words, p)[1] and not g.overrun
        checked += 1
    assert checked > 300
    # a tie that lasts exactly as long as the denominator allows: p = 1/3, 2/3
    for p in (Fraction(1, 3), Fraction(2, 3), Fraction(2**64 - 2, 2**64 - 1)):
        words = expansion(p, 3) + [0]
        g = dpfast._core.ReplayWords(words)
        assert (dr.bernoulli(p, rng=g), g.consumed) == ref_lazy_lt(words, p)


def test_exact_coin_tie_replayed():
    """The prepared exact sampler's tie continuation, driven word by word.  At scale 3
    (s = 0) |X| is the number of cumulative thresholds C_k = P(|X| <= k) = 1 - 2 q^(k+1)/(1+q)
    at or below one uniform U, q = exp(-1/3) (irrational); U's first 63 bits are the top of
    the value's word, whose lowest bit is the sign (0: positive), then, on a tie, the top
    bit of a fresh word and further fresh words.  U is fed the first k base-2**64 digits of
    C_3, so it stays undecided for k words; then one deciding word: the value is 3
    (U < C_3) or 4."""
    prepared = dpfast._core.DiscreteLaplaceExact(3, 1)
    assert prepared.block == 1 and prepared.digits == 0 and prepared.words == (1, 1)
    with mpmath.workprec(1400):
        q = mpmath.exp(-mpmath.mpf(1) / 3)
        c3 = 1 - 2 * q**4 / (1 + q)
        man, exp = c3.man_exp
        c = Fraction(int(man), 2 ** -int(exp))  # C_3 to 1400 bits

    def replay(uwords):
        """The keystream words that make U's 64-bit words uwords (sign bit 0)."""
        return [uwords[0] & ~1, (uwords[0] & 1) << 63] + uwords[1:]

    for k in range(1, 11):
        for flip in (0, 2**63):
            digits = expansion(c, k + 1)
            uwords = digits[:k] + [digits[k] ^ flip ^ 2**62]
            below, used = ref_lazy_lt(uwords, c)
            g = dpfast._core.ReplayWords(replay(uwords))
            assert prepared.draw(False, None, g) == (3 if below else 4)
            assert g.consumed == used + 1 and not g.overrun
    # undecided after 11 words = 704 bits: an error, never a guess
    g = dpfast._core.ReplayWords(replay(expansion(c, 12)))
    with pytest.raises(PrivacyParameterError, match="outside the range"):
        prepared.draw(False, None, g)


def test_lemire_rejections_replayed():
    for n in [
        3,
        10,
        2**62 + 1,
        3 * 2**61 + 5,
        2**63 - 25,
    ]:  # 2^64 mod n: 1, 6, 2^62 - 3, ...
        assert n <= 2**63
        thresh = TWO64 % n
        words = [0, 1, 2**64 - 1, 12345678901234567, 2**63, 7, 2**62 + 3]
        for start in range(len(words) - 2):
            ws = words[start:]
            g = dpfast._core.ReplayWords(ws)
            got = dpfast._core.uniform_below(n, None, g)
            # reference: accept once (w n mod 2^64) >= 2^64 mod n
            for k, w in enumerate(ws, 1):  # noqa: B007 (k is read after the loop)
                if (w * n) % TWO64 >= thresh:
                    break
            assert (got, g.consumed) == ((ws[k - 1] * n) >> 64, k)


# ---------------------------------------------------------------- discrete Gaussian

# 0.3: sigma**2 of a float does not fit in 64 bits and is rounded up
GAUSS_CASES = [
    (0.5, None),
    (1, None),
    (3, None),
    (50, None),
    (None, Fraction(5, 2)),
    (Fraction(7, 3), None),
    (0.3, None),
]


@pytest.mark.parametrize("constant_time", [False, True])
@pytest.mark.parametrize("sigma,sigma2", GAUSS_CASES)
def test_discrete_gaussian(sigma, sigma2, constant_time):
    x = dr.discrete_gaussian(
        sigma, N, rng=rng(9), constant_time=constant_time, sigma2=sigma2
    )
    s2 = Fraction(sigma2) if sigma2 is not None else Fraction(sigma) ** 2
    num, den = dr._sigma2_rational(sigma, sigma2)
    pmf = dgauss_pmf(Fraction(num, den))
    K = int(12 * math.sqrt(s2)) + 12
    assert chisq_pvalue(x, pmf, -K, K) > ALPHA
    # tail mass P(|X| >= k) at about 2.5 sigma
    k = max(1, int(2.5 * math.sqrt(s2)))
    tail = 1 - pmf(0) - 2 * mpmath.fsum(pmf(i) for i in range(1, k))
    assert binom_ok((np.abs(x) >= k).sum(), N, tail)


def dgauss_pmf_float(sigma, K):
    """float64 pmf on [-K, K] (for large sigma, where mpmath per point would be slow)."""
    xs = np.arange(-K, K + 1, dtype=np.float64)
    w = np.exp(-(xs**2) / (2.0 * sigma**2))
    w /= w.sum()
    return lambda x: w[x + K]


def test_discrete_gaussian_large_sigma_and_scalar():
    g = rng(10)
    # the block sampler (csrc/dgauss.c) at every sigma, no acceptance table; [CKS]
    # Algorithm 3 (span2 = 0) tabulates the coins of |y| <= 16 t for t <= 1024
    assert dr._dgauss_exact(*dr._sigma2_rational(2000, None)).blocks == (64, 262)
    assert dr._dgauss_exact(*dr._sigma2_rational(50, None)).table_span == 0
    assert dpfast._core.DiscreteGaussianExact(2500, 1, 64, 0).table_span == 16 * 51
    assert dpfast._core.DiscreteGaussianExact(2000**2, 1, 64, 0).table_span == 0
    K = 2000 * 12
    x = dr.discrete_gaussian(2000, N, rng=g)
    assert chisq_pvalue(x, dgauss_pmf_float(2000, K), -K, K) > ALPHA
    x = dr.discrete_gaussian(1e6, 100000, rng=g)
    assert abs(x.std() / 1e6 - 1) < 0.02
    x = np.array([dr.discrete_gaussian(2, rng=g) for _ in range(30000)])
    assert chisq_pvalue(x, dgauss_pmf(4), -40, 40) > ALPHA
    assert type(dr.discrete_gaussian(sigma2=3, rng=g)) is int
    for ct in (False, True):  # P(X != 0) = 3.9e-22 for sigma = 0.1
        assert (dr.discrete_gaussian(0.1, 10000, rng=g, constant_time=ct) == 0).all()
    with pytest.raises(PrivacyParameterError, match="sigma"):
        dr.discrete_gaussian(1000, 10, rng=g, constant_time=True)
    with pytest.raises(PrivacyParameterError, match="sigma"):
        dr.discrete_gaussian(2.0**33, rng=g)  # sigma**2 >= 2**64


# ---------------------------------------------------------------- exact conversions


def test_float_parameters_are_exact_or_rounded_up():
    assert dr._scale_rational(0.1) == (3602879701896397, 36028797018963968)
    assert dr._scale_rational(3) == (3, 1)
    assert dr._scale_rational((6, 4)) == (3, 2)
    for v in [1e-6, 1e-30, Fraction(1, 3**50), Fraction(3**45, 7**10), 2.0**63 + 2.0**20]:
        num, den = dr._scale_rational(v)
        assert 1 <= num < TWO64 and 1 <= den < TWO64
        x = Fraction(v)
        assert Fraction(num, den) >= x  # more noise, never less
        assert Fraction(num, den) / x - 1 <= max(x, 1 / x) / (TWO64 - 1)
        # nothing representable lies in between: the next smaller candidate is below x
        assert Fraction(num, den) == x or Fraction(num - 1, den) < x
    num, den = dr._sigma2_rational(0.1, None)
    assert Fraction(num, den) >= Fraction(0.1) ** 2
    assert Fraction(num, den) / Fraction(0.1) ** 2 - 1 < Fraction(1, 2**120)
    assert dr._sigma2_rational(None, 2.5) == (5, 2)


# ---------------------------------------------------------------- certified slack


def _digit_p(scale, j):
    qj = _q(scale) ** (2**j)
    return qj / (1 + qj)


def _pair_cdfs(scale, k, D):
    """Exact cumulative law of m = d_2k + 2 d_2k+1 (or of d_2k alone for an odd last digit)."""
    a = _digit_p(scale, 2 * k)
    if 2 * k + 1 == D:
        return [1 - a]
    b = _digit_p(scale, 2 * k + 1)
    return [(1 - a) * (1 - b), 1 - b, 1 - a * b]


def _pair_pmf(T):
    edges = [0] + T + [TWO64]
    return [mpmath.mpf(edges[m + 1] - edges[m]) / TWO64 for m in range(len(T) + 1)]


@pytest.mark.parametrize("scale", [Fraction(1, 50), 0.5, 1, 3, Fraction(7, 3), 1000, 1e12])
def test_laplace_ct_thresholds_and_slack(scale):
    s = Fraction(scale)
    t = dr._dlap_ct(*dr._scale_rational(scale))
    D = t.digits
    # D is the least j with 2^j / scale >= 45; digits come in pairs
    assert 2**D / s >= 45 and (D == 0 or 2 ** (D - 1) / s < 45)
    assert len(t.thresholds) == (D + 1) // 2
    formula = mpmath.mpf(0)
    for k, T in enumerate(t.thresholds):
        assert T == sorted(T)
        for Ti, Ci in zip(T, _pair_cdfs(scale, k, D)):
            err = abs(mpmath.mpf(Ti) / TWO64 - Ci)
            # rounded to nearest (2**64 - 1 caps a cumulative value within 2**-65 of 1)
            assert err <= mpmath.mpf(2) ** (-64 if Ti == TWO64 - 1 else -65) * (
                1 + mpmath.mpf(2) ** -60
            )
            formula += err
    formula += _q(scale) ** (2**D)  # truncation
    assert mpmath.mpf(t.slack_geometric) >= formula
    assert mpmath.mpf(t.slack_geometric) <= formula * (1 + mpmath.mpf(2) ** -40)
    sign_err = abs(mpmath.mpf(t.sign_threshold) / TWO64 - _digit_p(scale, 0))
    assert sign_err <= mpmath.mpf(2) ** -65 * (1 + mpmath.mpf(2) ** -60)
    assert mpmath.mpf(t.slack) >= formula + sign_err
    assert t.slack <= (3 * D + 3) * 2.0**-64
    assert dr.constant_time_slack("discrete_laplace", scale) == t.slack
    assert dr.constant_time_slack("geometric", scale) == t.slack_geometric


@pytest.mark.parametrize("scale", [0.5, 1, Fraction(7, 3)])
def test_laplace_ct_exact_total_variation(scale):
    """The law the thresholds define, computed exactly, is within `slack` of the exact law."""
    t = dr._dlap_ct(*dr._scale_rational(scale))
    D = t.digits
    pairs = [_pair_pmf(T) for T in t.thresholds]
    b = mpmath.mpf(t.sign_threshold) / TWO64
    pm = dlap_pmf(scale)
    tv = mpmath.mpf(0)
    for m in range(2**D):
        pt = mpmath.fprod(pairs[k][(m >> (2 * k)) & 3] for k in range(len(pairs)))
        tv += abs((1 - b) * pt - pm(m)) + abs(b * pt - pm(-m - 1))
    K = 2**D  # the support of the table's law is [-K, K)
    outside = 1 - mpmath.fsum(pm(x) for x in range(-K, K))
    tv = (tv + outside) / 2
    assert tv <= mpmath.mpf(t.slack)
    assert tv > 0


@pytest.mark.parametrize(
    "sigma,sigma2", [(0.5, None), (3, None), (None, Fraction(5, 2)), (40, None)]
)
def test_gaussian_ct_thresholds_and_slack(sigma, sigma2):
    num, den = dr._sigma2_rational(sigma, sigma2)
    t = dr._dgauss_ct(num, den)
    pm = dgauss_pmf(Fraction(num, den))
    T = t.thresholds
    M = len(T)
    cdf = pm(0)
    probs = [pm(0)]
    formula = mpmath.mpf(0)
    for k in range(M):
        if k > 0:
            probs.append(2 * pm(k))
            cdf += probs[-1]
        err = abs(mpmath.mpf(T[k]) / TWO64 - cdf)
        # rounded to nearest, except the last entry, which may be capped at 2**64 - 1
        assert err <= mpmath.mpf(2) ** (-64 if T[k] == TWO64 - 1 else -65) * (
            1 + mpmath.mpf(2) ** -60
        )
        assert T[k] < TWO64 - 1 or k == M - 1
        formula += err
    probs.append(2 * pm(M))
    tail = 1 - (cdf + probs[-1])  # P(|X| > M)
    assert (
        tail <= mpmath.mpf(1.5) * mpmath.mpf(2) ** -64
    )  # the table ends before 1 - P(|X| <= k) < 2**-64
    formula += tail
    assert mpmath.mpf(t.slack) >= formula
    # exact TV between the table's law of |X| and the exact one
    edges = [0] + T + [TWO64]
    tv = mpmath.fsum(
        abs(mpmath.mpf(edges[m + 1] - edges[m]) / TWO64 - probs[m]) for m in range(M + 1)
    )
    tv = (tv + tail) / 2
    assert tv <= mpmath.mpf(t.slack)
    assert dr.constant_time_slack("discrete_gaussian", sigma, sigma2=sigma2) == t.slack
    assert t.slack < 1e-15


def test_constant_time_work_is_fixed():
    """The constant-time fills consume a number of words that depends only on the
    parameters, never on the values drawn."""
    n = 1000
    for scale in [0.5, 3, 1000]:
        D = dr._dlap_ct(*dr._scale_rational(scale)).digits
        for geometric, per in [(False, 1 + (D + 1) // 2), (True, (D + 1) // 2)]:
            g1, g2 = rng(12), rng(12)
            if geometric:
                dr.geometric(scale, n, rng=g1, constant_time=True)
            else:
                dr.discrete_laplace(scale, n, rng=g1, constant_time=True)
            g2.random_raw(n * per)
            assert (g1.random_raw(4) == g2.random_raw(4)).all()
    for sigma in [0.5, 3, 50]:
        g1, g2 = rng(13), rng(13)
        dr.discrete_gaussian(sigma, n, rng=g1, constant_time=True)
        g2.random_raw(n + (n + 63) // 64)
        assert (g1.random_raw(4) == g2.random_raw(4)).all()


# ---------------------------------------------------------------- generators and threads


def test_foreign_bitgenerator():
    g = np.random.PCG64(2024)
    x = dr.discrete_laplace(3, N, rng=g)
    assert chisq_pvalue(x, dlap_pmf(3), -dlap_range(3), dlap_range(3)) > ALPHA
    x = dr.discrete_gaussian(
        2, N, rng=np.random.Generator(np.random.PCG64(7)), constant_time=True
    )
    assert chisq_pvalue(x, dgauss_pmf(4), -40, 40) > ALPHA
    assert dr.bernoulli(Fraction(1, 3), 10, rng=np.random.Philox(1)).shape == (10,)


def test_seeded_reproducible_and_default_rng():
    a = dr.discrete_gaussian(3, 1000, rng=rng(14))
    b = dr.discrete_gaussian(3, 1000, rng=rng(14))
    assert (a == b).all()
    x = dr.discrete_laplace(3, 10000)  # the thread's OS-keyed generator
    assert x.shape == (10000,) and x.dtype == np.int64


def test_threads_match_serial():
    calls = [
        lambda g: dr.discrete_laplace(3, 20000, rng=g),
        lambda g: dr.discrete_gaussian(5, 20000, rng=g),
        lambda g: dr.discrete_laplace(7, 20000, rng=g, constant_time=True),
        lambda g: dr.discrete_gaussian(5, 20000, rng=g, constant_time=True),
        lambda g: dr.bernoulli_exp(Fraction(2, 3), 20000, rng=g),
    ]

    def work(i, results):
        g = rng(100 + i)
        results[i] = [f(g) for f in calls]

    serial = [None] * 4
    for i in range(4):
        work(i, serial)
    results = [None] * 4

    threads = [threading.Thread(target=work, args=(i, results)) for i in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for i in range(4):
        for a, b in zip(serial[i], results[i]):
            assert (a == b).all()


# ---------------------------------------------------------------- bad inputs

BAD_VALUES = [
    (math.nan, PrivacyParameterError),
    (math.inf, PrivacyParameterError),
    (-math.inf, PrivacyParameterError),
    (-1, PrivacyParameterError),
    (-0.5, PrivacyParameterError),
    (Fraction(-1, 2), PrivacyParameterError),
    (True, TypeError),
    (np.bool_(False), TypeError),
    ("1", TypeError),
    (None, TypeError),
    (1 + 2j, TypeError),
    ((1, 0), PrivacyParameterError),
    ((1, 2, 3), TypeError),
    ((1.5, 2), TypeError),
]

SCALED = [
    ("scale", lambda v: dr.discrete_laplace(v)),
    ("scale", lambda v: dr.discrete_laplace(v, constant_time=True)),
    ("scale", lambda v: dr.geometric(v)),
    ("sigma", lambda v: dr.discrete_gaussian(v)),
    ("sigma", lambda v: dr.discrete_gaussian(v, constant_time=True)),
    ("sigma2", lambda v: dr.discrete_gaussian(sigma2=v)),
    ("gamma", lambda v: dr.bernoulli_exp(v)),
    ("p", lambda v: dr.bernoulli(v)),
    ("param", lambda v: dr.constant_time_slack("discrete_laplace", v)),
]


@pytest.mark.parametrize("value,exc", BAD_VALUES)
@pytest.mark.parametrize("name,call", SCALED)
def test_bad_parameters(name, call, value, exc):
    if name == "param":
        name = "scale"
    if value is None and name == "sigma":
        exc = TypeError  # neither sigma nor sigma2 given
    with pytest.raises(exc) as info:
        call(value)
    if value is not None or name != "sigma":
        assert name in str(info.value)


@pytest.mark.parametrize("name,call", [c for c in SCALED if c[0] not in ("gamma", "p")])
def test_zero_scale_rejected(name, call):
    for zero in (0, 0.0, Fraction(0), (0, 5)):
        with pytest.raises(
            PrivacyParameterError, match="scale" if name == "param" else name
        ):
            call(zero)


def test_cached_conversions_still_validate():
    dr.discrete_laplace(1)  # cached for the int 1 ...
    with pytest.raises(TypeError, match="scale"):
        dr.discrete_laplace(True)  # ... never for the bool True (== 1)
    dr.discrete_gaussian(1.0)
    with pytest.raises(TypeError, match="sigma"):
        dr.discrete_gaussian(np.bool_(True))
    dr.bernoulli(1)
    with pytest.raises(TypeError, match="p"):
        dr.bernoulli(True)
    with pytest.raises(TypeError, match="scale"):
        dr.discrete_laplace([3])  # unhashable: the uncached path reports it
    assert dr.discrete_laplace(np.float64(2.0), 3, rng=rng(1)).shape == (3,)


def test_other_bad_arguments():
    with pytest.raises(PrivacyParameterError, match="p"):
        dr.bernoulli(1.5)
    with pytest.raises(PrivacyParameterError, match="p"):
        dr.bernoulli(Fraction(3, 2))
    with pytest.raises(PrivacyParameterError, match="size"):
        dr.discrete_laplace(1, -1)
    with pytest.raises(TypeError, match="size"):
        dr.discrete_laplace(1, 2.5)
    with pytest.raises(TypeError, match="rng"):
        dr.discrete_laplace(1, 3, rng=42)
    with pytest.raises(TypeError, match="sigma"):
        dr.discrete_gaussian(1, sigma2=1)
    with pytest.raises(PrivacyParameterError, match="sampler"):
        dr.constant_time_slack("laplace", 1)
    with pytest.raises(TypeError, match="sigma2"):
        dr.constant_time_slack("geometric", 1, sigma2=2)
    with pytest.raises(PrivacyParameterError, match="p"):
        dr.bernoulli(Fraction(1, 2**1400))


@pytest.mark.parametrize(
    "draw",
    [
        lambda w: dr.discrete_laplace(3, 2**18 + 9, rng=rng(31), workers=w),
        lambda w: dr.discrete_laplace(
            3, 2**18 + 9, rng=rng(31), workers=w, constant_time=True
        ),
        lambda w: dr.discrete_gaussian(2.5, 2**18 + 9, rng=rng(31), workers=w),
    ],
)
def test_parallel_discrete_fill_same_for_every_thread_count(draw):
    ref = draw(1)
    for w in (2, 3):
        assert np.array_equal(draw(w), ref)


def test_parallel_discrete_gaussian_law():
    x = dr.discrete_gaussian(2.5, 2**18 + 9, rng=rng(32), workers=2)
    assert chisq_pvalue(x, dgauss_pmf(Fraction(25, 4)), -30, 30) > ALPHA
