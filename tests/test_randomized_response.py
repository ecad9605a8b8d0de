"""Randomized response: certified thresholds (mpmath), exact laws, unbiased estimators and
their variances, truth-independent work, validation, budget before drawing."""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from dpfast import randomized_response as RR
from stat_helpers import ALPHA, chi2_pvalue

EPSILONS = [
    1e-20,
    1e-17,
    1e-9,
    0.001,
    0.1,
    0.5,
    1.0,
    math.log(3),
    2.0,
    5.0,
    10.0,
    30.0,
    44.0,
    45.0,
    100.0,
    700.0,
    1e300,
]
KS = [2, 3, 10, 1000, 2**40]


@pytest.mark.parametrize("k", KS)
def test_flip_threshold_is_certified(k):
    mpmath.mp.dps = 80
    two64 = mpmath.mpf(2) ** 64
    for eps in EPSILONS:
        t = RR._flip_threshold(eps, k)
        q = (k - 1) / (mpmath.exp(mpmath.mpf(eps)) + k - 1)  # the ideal flip probability
        if t is None:
            # uniform report: only when q is within 2^-62 of (k-1)/k
            assert mpmath.mpf(k - 1) / k - q < mpmath.mpf(2) ** -62
            continue
        qq = mpmath.mpf(t) / two64
        assert qq >= q and qq - q <= mpmath.mpf(2) ** -62
        assert t < (k - 1) * 2**64 // k
        # the mechanism that runs is eps'-DP with eps' <= eps
        eps_run = mpmath.log((1 - qq) * (k - 1) / qq)
        assert eps_run <= eps


def test_response_probabilities():
    for k in [2, 5]:
        for eps in [0.1, 1.0, 3.0]:
            a, b = RR.response_probabilities(eps, k)
            assert math.isclose(a + (k - 1) * b, 1.0)
            ideal = math.exp(eps) / (math.exp(eps) + k - 1)
            assert a <= ideal and ideal - a < 1e-15
    assert RR.response_probabilities(1e-20, 4) == (0.25, 0.25)


def test_coin_response_law(seeded):
    n = 400_000
    for value, p_yes in [(True, 0.75), (False, 0.25)]:
        out = RR.coin_response(np.full(n, value), rng=seeded(1))
        assert out.dtype == np.bool_ and out.shape == (n,)
        assert stats.binomtest(int(out.sum()), n, p_yes).pvalue > ALPHA


@pytest.mark.parametrize("eps", [0.05, 1.0, math.log(3), 6.0])
def test_randomized_response_law(eps, seeded):
    n = 400_000
    a, b = RR.response_probabilities(eps)
    for value, p_yes in [(True, a), (False, b)]:
        out = RR.randomized_response(np.full(n, value), epsilon=eps, rng=seeded(2))
        assert stats.binomtest(int(out.sum()), n, p_yes).pvalue > ALPHA


def test_lazy_comparison_tie_path(seeded):
    # A threshold whose low 56 bits matter: the top byte of the uniform word equals t's
    # with probability 1/256 and then the remaining bits decide.  Check the rate exactly
    # through the private kernel with t = 0x80_0000_0000_0001 + 2^55 (p = 1/2 + 1/512).
    from dpfast import _core

    t = (0x80 << 56) + (1 << 55) + 1
    n = 2_000_000
    out = _core.rr_binary(np.zeros(n, dtype=np.uint8), t, seeded(3))
    assert stats.binomtest(int(out.sum()), n, t / 2**64).pvalue > ALPHA


@pytest.mark.parametrize("k, eps", [(2, 1.0), (5, 1.0), (7, 0.3), (3, 4.0)])
def test_kary_law(k, eps, seeded):
    n = 300_000
    a, b = RR.response_probabilities(eps, k)
    for truth in {0, k - 1, k // 2}:
        out = RR.kary_response(np.full(n, truth), k, epsilon=eps, rng=seeded(4))
        assert out.dtype == np.int64
        law = np.full(k, b)
        law[truth] = a
        assert chi2_pvalue(np.bincount(out, minlength=k), law) > ALPHA


def test_kary_tiny_epsilon_is_uniform(seeded):
    out = RR.kary_response(np.zeros(200_000, dtype=int), 6, epsilon=1e-20, rng=seeded(5))
    assert chi2_pvalue(np.bincount(out, minlength=6), np.full(6, 1 / 6)) > ALPHA
    out = RR.randomized_response(
        np.zeros(200_000, dtype=bool), epsilon=1e-20, rng=seeded(5)
    )
    assert stats.binomtest(int(out.sum()), out.size, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("name", ["coins", "binary", "kary"])
def test_work_does_not_depend_on_the_truth(name, seeded):
    # Same seed, opposite truths: the same words are consumed and the flips coincide.
    n = 10_000

    def run(truth):
        g = seeded(6)
        if name == "coins":
            out = RR.coin_response(truth, rng=g)
        elif name == "binary":
            out = RR.randomized_response(truth, epsilon=0.8, rng=g)
        else:
            out = RR.kary_response(truth.astype(np.int64) * 3, 4, epsilon=0.8, rng=g)
        return out, g.random_raw()

    zeros, ones = np.zeros(n, dtype=bool), np.ones(n, dtype=bool)
    (o0, w0), (o1, w1) = run(zeros), run(ones)
    assert w0 == w1  # the same words were consumed
    if name == "binary":  # and the same flips happened
        np.testing.assert_array_equal(o0 ^ zeros, o1 ^ ones)
    elif name == "kary":
        np.testing.assert_array_equal(o0 != 0, o1 != 3)


# ---------------------------------------------------------------- estimators


def _unbiased(est, truth, var_true, R):
    sd = math.sqrt(var_true / R)
    assert abs(np.mean(est) - truth) < 5.3 * sd  # two-sided, ~1e-7


def _variance_matches(est, var_hat, var_true):
    R = len(est)
    s2 = np.var(est, ddof=1)
    stat = (R - 1) * s2 / var_true
    p = 2 * min(stats.chi2.sf(stat, R - 1), stats.chi2.cdf(stat, R - 1))
    assert p > ALPHA
    assert abs(np.mean(var_hat) / var_true - 1) < 0.02


@pytest.mark.parametrize("coins, eps", [(False, 0.5), (False, 2.0), (True, None)])
def test_estimate_proportion_unbiased_with_its_variance(coins, eps, seeded):
    p, n, R = 0.3, 1000, 2000
    g = seeded(7)
    truth = np.random.default_rng(0).random((R, n)) < p  # R samples of n respondents
    if coins:
        reps = RR.coin_response(truth, rng=g)
        q = 0.25
    else:
        reps = RR.randomized_response(truth, epsilon=eps, rng=g)
        q = RR.response_probabilities(eps)[1]
    res = [RR.estimate_proportion(reps[i], epsilon=eps, coins=coins) for i in range(R)]
    est = np.array([r[0] for r in res])
    var_hat = np.array([r[1] for r in res])
    # unbiased for each sample's own proportion, with variance q(1-q)/(n (1-2q)^2) ...
    own = truth.mean(axis=1)
    _unbiased(est - own, 0.0, q * (1 - q) / (n * (1 - 2 * q) ** 2), R)
    # ... and for the population's p, with variance lambda(1-lambda)/(n (1-2q)^2),
    # which the returned variance estimates
    lam = q + p * (1 - 2 * q)
    var_pop = lam * (1 - lam) / (n * (1 - 2 * q) ** 2)
    _unbiased(est, p, var_pop, R)
    _variance_matches(est, var_hat, var_pop)


def test_estimate_frequencies_unbiased_with_its_variance(seeded):
    k, eps, n, R = 4, 1.0, 2000, 1500
    pi = np.array([0.5, 0.3, 0.15, 0.05])
    vals = np.random.default_rng(1).choice(k, size=(R, n), p=pi)
    reps = RR.kary_response(vals, k, epsilon=eps, rng=seeded(8))
    a, b = RR.response_probabilities(eps, k)
    res = [RR.estimate_frequencies(reps[i], k, epsilon=eps) for i in range(R)]
    est = np.array([r[0] for r in res])
    var_hat = np.array([r[1] for r in res])
    np.testing.assert_allclose(est.sum(axis=1), 1.0)
    for c in range(k):
        lam = b + pi[c] * (a - b)
        var_pop = lam * (1 - lam) / (n * (a - b) ** 2)
        _unbiased(est[:, c], pi[c], var_pop, R)
        _variance_matches(est[:, c], var_hat[:, c], var_pop)


def test_estimators_validation():
    with pytest.raises(TypeError):
        RR.estimate_proportion([True, False])
    with pytest.raises(ValueError):
        RR.estimate_proportion([], epsilon=1.0)
    with pytest.raises(ValueError):
        RR.estimate_proportion([0, 2], epsilon=1.0)
    with pytest.raises(dpfast.PrivacyParameterError):
        RR.estimate_proportion([True], epsilon=-1.0)
    with pytest.raises(dpfast.PrivacyParameterError):
        RR.estimate_proportion([True], epsilon=1e-20)
    assert math.isnan(RR.estimate_proportion([True], epsilon=1.0)[1])
    with pytest.raises(ValueError):
        RR.estimate_frequencies([0, 5], 3, epsilon=1.0)
    with pytest.raises(TypeError):
        RR.estimate_frequencies([0.0, 1.0], 3, epsilon=1.0)
    with pytest.raises(dpfast.PrivacyParameterError):
        RR.estimate_frequencies([0, 1], 1, epsilon=1.0)


# ---------------------------------------------------------------- shapes, validation


def test_shapes_and_scalars(seeded):
    g = seeded(9)
    assert isinstance(RR.randomized_response(True, epsilon=1.0, rng=g), bool)
    assert isinstance(RR.coin_response(False, rng=g), bool)
    assert isinstance(RR.kary_response(2, 3, epsilon=1.0, rng=g), int)
    t = np.zeros((3, 4), dtype=bool)
    assert RR.randomized_response(t, epsilon=1.0, rng=g).shape == (3, 4)
    assert RR.coin_response(t, rng=g).shape == (3, 4)
    assert RR.kary_response(
        np.zeros((3, 4), dtype=np.int8), 5, epsilon=1.0, rng=g
    ).shape == (3, 4)
    assert RR.randomized_response([], epsilon=1.0, rng=g).shape == (0,)
    ro = np.ones(10, dtype=np.int64)[::2]
    ro.flags.writeable = False
    assert RR.randomized_response(ro, epsilon=50.0, rng=g).all()
    assert (RR.kary_response(ro, 2, epsilon=50.0, rng=g) == 1).all()
    np.testing.assert_array_equal(ro, 1)


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda: RR.randomized_response([0.0, 1.0], epsilon=1.0), TypeError),
        (lambda: RR.randomized_response(["a"], epsilon=1.0), TypeError),
        (lambda: RR.randomized_response([True], epsilon=0.0), dpfast.PrivacyParameterError),
        (
            lambda: RR.randomized_response([True], epsilon=float("nan")),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: RR.randomized_response([True], epsilon=float("inf")),
            dpfast.PrivacyParameterError,
        ),
        (lambda: RR.randomized_response([True], epsilon=True), TypeError),
        (lambda: RR.randomized_response([True], epsilon=1.0, rng=3), TypeError),
        (lambda: RR.coin_response([True], rng="x"), TypeError),
        (lambda: RR.kary_response([0.5], 3, epsilon=1.0), TypeError),
        (lambda: RR.kary_response([True], 3, epsilon=1.0), TypeError),
        (lambda: RR.kary_response([0], 1, epsilon=1.0), dpfast.PrivacyParameterError),
        (lambda: RR.kary_response([0], True, epsilon=1.0), TypeError),
        (lambda: RR.kary_response([0], 2.0, epsilon=1.0), TypeError),
        (lambda: RR.kary_response([0], 3, epsilon=-2.0), dpfast.PrivacyParameterError),
        (lambda: RR.response_probabilities(0.0), dpfast.PrivacyParameterError),
        (lambda: RR.response_probabilities(1.0, 1), dpfast.PrivacyParameterError),
    ],
)
def test_validation(call, exc):
    with pytest.raises(exc):
        call()


# ---------------------------------------------------------------- budget


class Stub:
    def __init__(self, rng, fail=False):
        self.calls, self.rng, self.fail = [], rng, fail

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label, self.rng.state))
        if self.fail:
            raise dpfast.BudgetExceededError("stub")


CALLS = [
    (lambda **kw: RR.coin_response([True, False] * 50, **kw), math.log(3)),
    (lambda **kw: RR.randomized_response([True, False] * 50, epsilon=0.4, **kw), 0.4),
    (lambda **kw: RR.kary_response([0, 1, 2] * 50, 3, epsilon=0.9, **kw), 0.9),
]


def _same(a, b):
    return a["key"] == b["key"] and np.array_equal(a["buffer"], b["buffer"])


@pytest.mark.parametrize("call, eps", CALLS)
def test_budget_charged_before_drawing(call, eps):
    g = dr.ChaCha20(10)
    start = g.state
    stub = Stub(g)
    call(rng=g, budget=stub)
    ((e, d, label, state),) = stub.calls
    # the caller's epsilon, exactly (a validated Amount reads as it; issue 14)
    assert Fraction(repr(e)) == Fraction(repr(eps)) and d == 0.0 and isinstance(label, str)
    assert _same(state, start) and not _same(g.state, start)
    g2 = dr.ChaCha20(10)
    with pytest.raises(dpfast.BudgetExceededError):
        call(rng=g2, budget=Stub(g2, fail=True))
    assert _same(g2.state, start)
    with pytest.raises(ValueError):
        RR.kary_response([0], 1, epsilon=1.0, budget=stub)  # k is public
    assert len(stub.calls) == 1


def test_coin_charge_is_at_least_ln3():
    mpmath.mp.dps = 40
    assert mpmath.mpf(math.log(3.0)) >= mpmath.log(3)


def test_private_values_never_raise_they_are_mapped_into_the_public_range():
    # Truth values and codes are private: a value outside the expected range must not
    # decide whether the call raises.  Nonzero truth counts as true; codes are clamped
    # to [0, k - 1].  At a huge epsilon the report is the (mapped) truth.
    g = dr.ChaCha20(11)
    assert RR.randomized_response([0, 2, -5, 1], epsilon=60.0, rng=g).tolist() == [
        False,
        True,
        True,
        True,
    ]
    assert RR.coin_response(np.array([2, 0]), rng=g).shape == (2,)
    codes = RR.kary_response(np.array([-1, 0, 2, 3, 10**9]), 3, epsilon=60.0, rng=g)
    assert codes.tolist() == [0, 0, 2, 2, 2]
    big = RR.kary_response(
        np.array([2**64 - 1, 1], dtype=np.uint64), 3, epsilon=60.0, rng=g
    )
    assert big.tolist() == [2, 1]
