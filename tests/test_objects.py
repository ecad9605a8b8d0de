"""Mechanism objects (dpfast.objects): the same law as the functions at fixed seeds, their
costs, accuracy, budget charging and accounting descriptions."""

import math
from fractions import Fraction

import numpy as np
import pytest

import dpfast
import dpfast.accuracy as A
import dpfast.mechanisms as M
import dpfast.randomized_response as RR
import dpfast.selection as S
from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast.accounting import Accountant, PrivacyBudget
from dpfast.objects import (
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    Laplace,
    PrivacyCost,
    RandomizedResponse,
)
from dpfast.random import ChaCha20

FLOAT_INPUTS = [
    41.3,
    -2.5e7,
    np.float64(0.125),
    np.array([1.5, -3.25, 7.0]),
    np.zeros((2, 3)),
    [0.5, 1.5],
]
INT_INPUTS = [7, -12, np.int64(3), np.arange(5), np.array([[1, 2], [3, 4]]), [10, 20, 30]]


def same(a, b):
    assert type(a) is type(b)
    np.testing.assert_array_equal(a, b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape


def test_module_is_exported_without_an_import_cycle():
    # objects imports mechanisms; mechanisms must not import objects back
    assert "objects" in dpfast.__all__ and dpfast.objects.Laplace is Laplace
    assert not hasattr(M, "Laplace")


# ------------------------------------------------------------------ equal laws


@pytest.mark.parametrize("value", FLOAT_INPUTS + INT_INPUTS)
@pytest.mark.parametrize(
    "kw",
    [
        dict(epsilon=0.5, sensitivity=1.0),
        dict(epsilon=2.0, sensitivity=3.0),
        dict(epsilon=1.0, sensitivity=1.0, mode="fast"),
        dict(epsilon=1.0, sensitivity=1.0, granularity=0.01),
    ],
)
def test_laplace_same_law_as_function(value, kw):
    obj = Laplace(**kw)
    for seed in (1, 2):
        g1, g2 = ChaCha20(seed), ChaCha20(seed)
        for _ in range(3):  # the streams stay in step over several releases
            same(obj.release(value, rng=g1), M.laplace_mechanism(value, rng=g2, **kw))
    g1, g2 = np.random.default_rng(9), np.random.default_rng(9)
    same(obj.release(value, rng=g1), M.laplace_mechanism(value, rng=g2, **kw))


@pytest.mark.parametrize("value", INT_INPUTS)
def test_discrete_laplace_same_law_as_function(value):
    obj = DiscreteLaplace(epsilon=0.7, sensitivity=2)
    g1, g2 = ChaCha20(3), ChaCha20(3)
    for _ in range(3):
        same(
            obj.release(value, rng=g1),
            M.geometric_mechanism(value, epsilon=0.7, sensitivity=2, rng=g2),
        )
    with pytest.raises(TypeError):
        obj.release(1.5)


@pytest.mark.parametrize("value", FLOAT_INPUTS + INT_INPUTS)
@pytest.mark.parametrize(
    "kw",
    [
        dict(epsilon=1.0, delta=1e-6, sensitivity=1.0),
        dict(epsilon=0.5, delta=1e-9, sensitivity=4.0, calibration="classic"),
    ],
)
def test_gaussian_same_law_as_function(value, kw):
    obj = Gaussian(**kw)
    fkw = dict(kw, l2_sensitivity=kw["sensitivity"])
    del fkw["sensitivity"]
    g1, g2 = ChaCha20(4), ChaCha20(4)
    for _ in range(3):
        same(obj.release(value, rng=g1), M.gaussian_mechanism(value, rng=g2, **fkw))


@pytest.mark.parametrize("truth", [True, [True, False, True], np.zeros(50, dtype=bool)])
def test_binary_rr_same_law_as_function(truth):
    obj = RandomizedResponse(epsilon=0.8)
    g1, g2 = ChaCha20(5), ChaCha20(5)
    same(obj.release(truth, rng=g1), RR.randomized_response(truth, epsilon=0.8, rng=g2))


@pytest.mark.parametrize("codes", [3, [0, 1, 2, 3, 4], np.arange(5).repeat(10)])
def test_kary_rr_same_law_as_function(codes):
    obj = RandomizedResponse(epsilon=1.2, k=5)
    g1, g2 = ChaCha20(6), ChaCha20(6)
    same(obj.release(codes, rng=g1), RR.kary_response(codes, 5, epsilon=1.2, rng=g2))


@pytest.mark.parametrize(
    "scores", [[1.0, 2.5, 0.25], [3, 1, 4, 1, 5], np.linspace(0, 9, 10)]
)
@pytest.mark.parametrize(
    "kw",
    [
        dict(epsilon=1.0),
        dict(epsilon=0.3, sensitivity=2.0, monotonic=True),
        dict(epsilon=1.0, mode="fast"),
    ],
)
def test_em_same_law_as_function(scores, kw):
    obj = ExponentialMechanism(**kw)
    g1, g2 = ChaCha20(7), ChaCha20(7)
    for _ in range(5):
        assert obj.release(scores, rng=g1) == S.exponential_mechanism(scores, rng=g2, **kw)


def test_same_validation_of_data():
    lap, gau = Laplace(epsilon=1.0), Gaussian(epsilon=1.0, delta=1e-6)
    for obj in (lap, gau):
        for bad in (np.array([1.0], dtype=np.longdouble), np.array([1], dtype=object)):
            with pytest.raises(TypeError):
                obj.release(bad)
        for bad in (math.nan, math.inf, np.array([1.0, math.nan])):
            with pytest.raises(PrivacyParameterError):
                obj.release(bad)
    # integers beyond int64 are clamped, as in the function
    g1, g2 = ChaCha20(8), ChaCha20(8)
    same(lap.release(2**70, rng=g1), M.laplace_mechanism(2**70, epsilon=1.0, rng=g2))


# ------------------------------------------------------------------ rho / sigma Gaussian


def test_gaussian_rho_law():
    # sigma^2 = 1/(2 rho) = 4 on integers (exactly, the sampler's s^2 is 4): variance 4
    g = Gaussian(rho=Fraction(1, 8), sensitivity=1.0)
    assert g.sigma == 2.0 and g.variance == 4.0 and g.rho == 0.125
    y = g.release(np.zeros(200_000, dtype=np.int64), rng=ChaCha20(11))
    assert y.dtype == np.int64
    # var of 2e5 draws: sd of the estimate ~ 4 sqrt(2/2e5) = 0.0126; 6 sd
    assert abs(y.var() - 4.0) < 0.08 and abs(y.mean()) < 0.03
    x = g.release(np.full(100_000, 0.5), rng=ChaCha20(12)) - 0.5
    assert abs(x.var() - 4.0) < 0.11


def test_gaussian_sigma_form():
    g = Gaussian(sigma=3.0, sensitivity=2.0)
    assert g.rho == _up_ratio(Fraction(4, 18)) and math.isclose(g.sigma, 3.0)
    assert g.privacy_cost == PrivacyCost(None, None, g.rho)
    gd = Gaussian(sigma=3.0, sensitivity=2.0, delta=1e-6)
    from dpfast.accounting import zcdp_to_dp

    assert gd.privacy_cost.epsilon == zcdp_to_dp(g.rho, 1e-6)
    y = g.release(np.zeros(100_000), rng=ChaCha20(13))
    assert abs(y.std() - 3.0) < 0.04


def _up_ratio(q):
    """Decimal parameters (issue 14): a reported bound is the smallest float whose decimal
    (its repr) is >= the exact value."""
    f = float(q)
    while Fraction(repr(f)) < q:
        f = math.nextafter(f, math.inf)
    return f


# ------------------------------------------------------------------ costs and accuracy


def test_privacy_costs():
    assert Laplace(epsilon=0.5).privacy_cost == PrivacyCost(0.5, 0.0, 0.125)
    # the epsilon is the calibrated float at or below 1/10, carrying 1/10 exactly (issue 14)
    cost = DiscreteLaplace(epsilon=0.1).privacy_cost
    assert (cost.epsilon.exact, cost.delta, cost.rho) == (Fraction(1, 10), 0.0, 0.005)
    assert RandomizedResponse(2.0, k=3).privacy_cost == PrivacyCost(2.0, 0.0, 2.0)
    assert ExponentialMechanism(2.0).privacy_cost == PrivacyCost(2.0, 0.0, 0.5)
    g = Gaussian(epsilon=1.0, delta=1e-6)
    assert g.privacy_cost[:2] == (1.0, 1e-6)
    # rho of the discrete plans, close to the continuous 1/(2 sigma^2) and not below what
    # the analytic sigma gives by more than rounding
    assert math.isclose(g.rho, 1.0 / (2 * g.sigma**2), rel_tol=1e-3)
    # a zCDP rho this small implies the (epsilon, delta) guarantee too (sanity)
    from dpfast.accounting import zcdp_to_dp

    assert zcdp_to_dp(g.rho, 1e-6) > 1.0


def test_accuracy_matches_dpfast_accuracy():
    lap = Laplace(epsilon=0.25, sensitivity=2.0)
    assert lap.scale == 8.0 and lap.variance == 128.0
    assert lap.accuracy(0.01) == A.laplace_error(0.25, beta=0.01, sensitivity=2.0)
    assert lap.accuracy(0.01, k=10) == A.laplace_error(
        0.25, beta=0.01, sensitivity=2.0, k=10
    )
    a = A.laplace_error(0.25, beta=0.05, sensitivity=2.0)
    assert lap.confidence_interval(0.05, 100.0) == (100.0 - a, 100.0 + a)
    g = Gaussian(epsilon=1.0, delta=1e-6, sensitivity=2.0)
    assert g.sigma == M.gaussian_sigma(1.0, 1e-6, 2.0)
    assert g.accuracy(0.05) == A.gaussian_error(g.sigma, beta=0.05)
    assert g.confidence_interval(0.1) == (
        -A.gaussian_error(g.sigma, beta=0.1),
        A.gaussian_error(g.sigma, beta=0.1),
    )
    em = ExponentialMechanism(1.0, 2.0, monotonic=True)
    assert em.accuracy(0.1, n_candidates=20) == A.exponential_mechanism_error(
        1.0, n_candidates=20, beta=0.1, sensitivity=2.0, monotonic=True
    )
    rr = RandomizedResponse(1.0, k=4)
    assert rr.accuracy(0.05, n=1000) == A.randomized_response_error(
        1.0, n=1000, beta=0.05, k=4
    )
    assert rr.probabilities == RR.response_probabilities(1.0, 4)
    dl = DiscreteLaplace(1.0)
    t = math.exp(-1.0)
    assert math.isclose(dl.variance, 2 * t / (1 - t) ** 2)


def test_laplace_empirical_interval():
    # the 95% interval covers the truth in ~95% of releases (exactly, for one coordinate)
    lap = Laplace(epsilon=1.0)
    lo, hi = lap.confidence_interval(0.05)
    y = lap.release(np.zeros(100_000), rng=ChaCha20(14))
    cover = np.mean((y > lo) & (y < hi))
    assert abs(cover - 0.95) < 0.005  # sd 0.0007


# ------------------------------------------------------------------ budgets


class Recorder:
    """A budget that records each charge and whether anything was drawn before it."""

    def __init__(self, refuse=False):
        self.calls, self.refuse = [], refuse

    def spend(self, epsilon, delta, *, label=None):
        self.calls.append((epsilon, delta, label))
        if self.refuse:
            raise BudgetExceededError("refused")


@pytest.mark.parametrize(
    "make,value",
    [
        (lambda: Laplace(epsilon=0.5), 1.5),
        (lambda: Laplace(epsilon=0.5), np.ones(3)),
        (lambda: Laplace(epsilon=0.5), 3),
        (lambda: DiscreteLaplace(epsilon=0.5), 3),
        (lambda: Gaussian(epsilon=0.5, delta=1e-6), 1.5),
        (lambda: Gaussian(epsilon=0.5, delta=1e-6), np.ones(4, dtype=np.int64)),
        (lambda: RandomizedResponse(0.5), [True]),
        (lambda: RandomizedResponse(0.5, k=3), [2]),
        (lambda: ExponentialMechanism(0.5), [1.0, 2.0]),
    ],
)
def test_budget_charged_once_before_drawing(make, value):
    obj = make()
    cost = obj.privacy_cost
    b = Recorder()
    obj.release(value, budget=b)
    assert len(b.calls) == 1 and b.calls[0][:2] == (cost.epsilon, cost.delta)
    # a refused charge draws nothing: the stream is where it was
    g, ref = ChaCha20(21), ChaCha20(21)
    with pytest.raises(BudgetExceededError):
        obj.release(value, rng=g, budget=Recorder(refuse=True))
    same_stream(g, ref)


def same_stream(g, ref):
    np.testing.assert_array_equal(
        dpfast.random.uniform(size=8, rng=g), dpfast.random.uniform(size=8, rng=ref)
    )


def test_bad_data_or_rng_charges_nothing():
    b = Recorder()
    objs = (
        Laplace(epsilon=1.0),
        Laplace(epsilon=1.0, mode="fast"),
        DiscreteLaplace(1.0),
        Gaussian(epsilon=1.0, delta=1e-6),
        Gaussian(rho=0.5),
        RandomizedResponse(1.0),
        ExponentialMechanism(1.0),
    )
    for obj in objs[:5]:
        with pytest.raises((TypeError, PrivacyParameterError)):
            obj.release(np.array([1.0, math.nan]), budget=b)
    for obj, value in zip(objs, (1.0, 1.0, 3, 1.0, 1, [True], [1.0, 2.0])):
        with pytest.raises(TypeError):
            obj.release(value, rng="not a generator", budget=b)
    assert b.calls == []


def test_real_budgets():
    b = PrivacyBudget(1.0)
    lap = Laplace(epsilon=0.25)
    for _ in range(4):
        lap.release(1.0, budget=b)
    with pytest.raises(BudgetExceededError):
        lap.release(1.0, budget=b)
    assert len(b.ledger) == 4
    # zCDP budget: Gaussian objects charge their rho
    z = PrivacyBudget(composition="zcdp", rho=1.0)
    g = Gaussian(rho=0.25)
    for _ in range(4):
        g.release(np.zeros(3), budget=z)
    with pytest.raises(BudgetExceededError):
        g.release(0.0, budget=z)
    ge = Gaussian(epsilon=1.0, delta=1e-6)
    z2 = PrivacyBudget(composition="zcdp", rho=1.0)
    ge.release(2.0, budget=z2)
    assert z2.spent.rho == ge.rho and z2.ledger[0].label == "gaussian_mechanism"
    # the function charges a zCDP budget the exact rho of the plan it draws with (it
    # refused one before issue 23 item 3); the object charges the larger of its d = 1 plans
    z4 = PrivacyBudget(composition="zcdp", rho=1.0)
    M.gaussian_mechanism(2.0, epsilon=1.0, delta=1e-6, budget=z4)
    assert 0.0 < z4.spent.rho <= ge.rho and z4.ledger[0].label == "gaussian_mechanism"
    # rho without delta cannot be charged to an (epsilon, delta) budget; nothing drawn
    with pytest.raises(PrivacyParameterError):
        g.release(1.0, budget=PrivacyBudget(10.0, 1e-3))
    # with delta it charges (epsilon, delta)
    gd = Gaussian(rho=0.25, delta=1e-6)
    bb = PrivacyBudget(10.0, 1e-3)
    gd.release(1.0, budget=bb)
    assert bb.ledger[0].epsilon == gd.privacy_cost.epsilon
    # the exponential mechanism charges a zCDP budget epsilon^2/8
    z3 = PrivacyBudget(composition="zcdp", rho=Fraction(1, 8))
    ExponentialMechanism(1.0).release([1, 2], budget=z3)
    with pytest.raises(BudgetExceededError):
        ExponentialMechanism(1.0).release([1, 2], budget=z3)


# ------------------------------------------------------------------ construction


@pytest.mark.parametrize(
    "make",
    [
        lambda: Laplace(epsilon=0.0),
        lambda: Laplace(epsilon=-1.0),
        lambda: Laplace(epsilon=math.nan),
        lambda: Laplace(epsilon=1.0, sensitivity=0.0),
        lambda: Laplace(epsilon=1.0, mode="turbo"),
        lambda: Laplace(epsilon=True),
        lambda: Laplace(epsilon=1e-300, sensitivity=1e300),
        lambda: DiscreteLaplace(epsilon=math.inf),
        lambda: Gaussian(epsilon=1.0, delta=0.0),
        lambda: Gaussian(epsilon=1.0, delta=1.0),
        lambda: Gaussian(epsilon=1.0),
        lambda: Gaussian(),
        lambda: Gaussian(epsilon=1.0, delta=1e-6, rho=1.0),
        lambda: Gaussian(rho=0.0),
        lambda: Gaussian(sigma=-1.0),
        lambda: Gaussian(epsilon=1.0, delta=1e-6, calibration="nope"),
        lambda: ExponentialMechanism(0.0),
        lambda: ExponentialMechanism(1.0, monotonic=1),
        lambda: RandomizedResponse(1.0, k=1),
        lambda: RandomizedResponse(1.0, k=2.5),
        lambda: RandomizedResponse(-1.0),
    ],
)
def test_bad_parameters_refused_at_construction(make):
    with pytest.raises((TypeError, PrivacyParameterError)):
        make()


# ------------------------------------------------------------------ accounting


def test_describe_matches_explicit_accounting():
    k = 10
    # fast Laplace: the continuous law that runs; secure Laplace: pure epsilon-DP (proved)
    lap = Laplace(epsilon=0.5, sensitivity=2.0, mode="fast")
    a1 = Accountant("pld").compose(lap.describe(), count=k)
    a2 = Accountant("pld").compose_laplace(scale=4.0, sensitivity=2.0, count=k)
    assert a1.epsilon(1e-6) == a2.epsilon(1e-6)
    sec = Laplace(epsilon=0.5, sensitivity=2.0)
    assert Accountant("pld").compose(sec.describe(), count=k).epsilon(1e-6) == Accountant(
        "pld"
    ).compose_pure_dp(0.5, count=k).epsilon(1e-6)
    assert Accountant("basic").compose(sec.describe(), count=k).epsilon(
        1e-6
    ) == pytest.approx(5.0)
    # no Gaussian description is proved to dominate the secure discrete Gaussian on a grid
    assert not hasattr(Gaussian(epsilon=1.0, delta=1e-6), "describe")
    dl = DiscreteLaplace(epsilon=0.5, sensitivity=1)
    assert Accountant("pld").compose(dl.describe(), count=k).epsilon(1e-6) == Accountant(
        "pld"
    ).compose_discrete_laplace(scale=2.0, count=k).epsilon(1e-6)
    rr = RandomizedResponse(1.0, k=3)
    assert Accountant("pld").compose(rr.describe(), count=k).epsilon(1e-6) == Accountant(
        "pld"
    ).compose_randomized_response(1.0, 3, count=k).epsilon(1e-6)
    em = ExponentialMechanism(0.5)
    assert Accountant("basic").compose(em.describe(), count=k).epsilon(1e-6) == Accountant(
        "basic"
    ).compose_exponential_mechanism(0.5, count=k).epsilon(1e-6)


def test_module_doctest():
    import doctest

    import dpfast.objects

    res = doctest.testmod(dpfast.objects, optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
