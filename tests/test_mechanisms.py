"""Secure-by-default mechanisms: exact noise laws, the grid's support property,
validation, budget charging, shapes and threads."""

import math
import threading
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.mechanisms as M
from dpfast.random import ChaCha20
from stat_helpers import ALPHA, chi2_pvalue


def dlap_pmf(z, t):
    q = math.exp(-1.0 / t)
    return (1 - q) / (1 + q) * q ** np.abs(z)


def test_integer_laplace_is_exact_discrete_laplace():
    eps, sens = 0.5, 1.0  # scale t = 2 exactly
    z = M.laplace_mechanism(
        np.zeros(1_000_000, dtype=np.int64), epsilon=eps, sensitivity=sens, rng=ChaCha20(1)
    )
    assert z.dtype == np.int64
    support = np.arange(-40, 41)
    counts = np.array([(z == k).sum() for k in support] + [(np.abs(z) > 40).sum()])
    probs = np.append(dlap_pmf(support, 2.0), 2 * dlap_pmf(41, 2.0) / (1 - math.exp(-0.5)))
    assert chi2_pvalue(counts, probs / probs.sum()) > ALPHA


def test_integer_gaussian_is_exact_discrete_gaussian():
    eps, delta = 1.0, 1e-5
    z = (
        M.gaussian_mechanism(
            np.full(1_000_000, 7, dtype=np.int64), epsilon=eps, delta=delta, rng=ChaCha20(2)
        )
        - 7
    )
    sigma = M._gauss_sigma(eps, delta, 1.0, 1_000_000, "analytic")
    num, den = M._ceil_rational(Fraction(sigma) ** 2)
    assert M._dgauss(num, den).sigma2 == (
        num // math.gcd(num, den),
        den // math.gcd(num, den),
    )
    s2 = num / den
    support = np.arange(-60, 61)
    w = np.exp(-(support.astype(float) ** 2) / (2 * s2))
    counts = np.array([(z == k).sum() for k in support])
    assert counts.sum() == z.size  # nothing beyond 60 (P < 1e-30)
    assert chi2_pvalue(counts, w / w.sum()) > ALPHA


@pytest.mark.parametrize(
    "mech, kw",
    [
        (M.laplace_mechanism, {"epsilon": 0.7}),
        (M.gaussian_mechanism, {"epsilon": 0.7, "delta": 1e-6}),
    ],
)
def test_float_release_lies_on_a_data_independent_grid(mech, kw):
    # Neighbours 0 and 1 (and values of any size) give outputs on the same power-of-two
    # grid, chosen before the data is seen: no output can rule out either input.
    grids = set()
    for x in [0.0, 1.0, 0.3, -123456.789, 1e6 + 0.5, 2.0**60, -1e300]:
        ys = [mech(x, rng=ChaCha20(3), **kw) for _ in range(3)]
        y = mech(np.full(64, x), rng=ChaCha20(4), **kw)
        for v in ys + list(y):
            assert math.isfinite(v)
            m, e = math.frexp(v)
            grids.add(e - 53 if v else None)  # v / 2^k must be an integer for the grid k
        k = (
            M._laplace_grid_plan(0.7, 1.0, 1, None)[0]
            if mech is M.laplace_mechanism
            else M._gauss_grid_plan(0.7, 1e-6, 1.0, 1, "analytic", None)[0]
        )
        for v in ys:
            assert (Fraction(v) / Fraction(2) ** k).denominator == 1
    assert grids  # the loop ran


def _planned_law(mech, d, **kw):
    """The continuous law the grid release approximates, from the mechanism's own plan."""
    if mech is M.laplace_mechanism:
        k, sampler = M._laplace_grid_plan(
            kw["epsilon"], kw.get("sensitivity", 1.0), d, None
        )
        num, den = sampler.scale
        return stats.laplace(scale=math.ldexp(num / den, k))
    k, sampler = M._gauss_grid_plan(kw["epsilon"], kw["delta"], 1.0, d, "analytic", None)
    num, den = sampler.sigma2
    return stats.norm(scale=math.ldexp(math.sqrt(num / den), k))


@pytest.mark.parametrize(
    "mech, kw",
    [
        (M.laplace_mechanism, {"epsilon": 0.5, "sensitivity": 2.0}),
        (M.gaussian_mechanism, {"epsilon": 1.0, "delta": 1e-5}),
    ],
)
def test_float_release_law(mech, kw):
    # The grid is 2^-40 (Laplace) / 2^-24 (Gaussian) of the scale: invisible to a KS test
    # at this n, so the law is the continuous one of the planned scale.
    law1 = _planned_law(mech, 1, **kw)
    y = [mech(0.25, rng=g, **kw) - 0.25 for g in [ChaCha20(5)] for _ in range(20_000)]
    assert stats.kstest(y, law1.cdf).pvalue > ALPHA
    v = mech(np.full(200_000, -3.5), rng=ChaCha20(6), **kw) + 3.5
    assert stats.kstest(v, _planned_law(mech, 200_000, **kw).cdf).pvalue > ALPHA
    # the planned scale is the textbook one, up to the rounding charge
    if mech is M.laplace_mechanism:
        assert law1.std() / math.sqrt(2) == pytest.approx(4.0, rel=1e-9)
    else:
        assert law1.std() == pytest.approx(M.gaussian_sigma(1.0, 1e-5), rel=1e-5)


def test_grid_charge_is_in_the_plan():
    # The integer noise scale covers the rounded values' sensitivity sensitivity/g + d.
    for eps, sens, d in [(1.0, 1.0, 1), (0.1, 3.0, 1000), (5.0, 0.01, 7)]:
        k, sampler = M._laplace_grid_plan(eps, sens, d, None)
        num, den = sampler.scale
        need = (Fraction(sens) / Fraction(2) ** k + d) / Fraction(eps)
        assert Fraction(num, den) >= need
        assert Fraction(num, den) <= need * (1 + Fraction(1, 2**30))
        assert 2**40 <= Fraction(sens) / Fraction(eps) / Fraction(2) ** k < 2**41


def test_granularity_is_public_and_rounded_down_to_a_power_of_two():
    y = M.laplace_mechanism(np.zeros(1000), epsilon=1.0, granularity=0.3, rng=ChaCha20(7))
    assert np.all(y / 0.25 == np.round(y / 0.25))
    with pytest.raises(dpfast.PrivacyParameterError, match="granularity"):
        M.laplace_mechanism(0.0, epsilon=1.0, granularity=1e-30)


def test_fast_mode_is_continuous_and_explicit():
    y = M.laplace_mechanism(np.zeros(1000), epsilon=1.0, mode="fast", rng=ChaCha20(8))
    k = M._laplace_grid_plan(1.0, 1.0, 1000, None)[0]
    assert np.mean(np.ldexp(y, -k) != np.round(np.ldexp(y, -k))) > 0.99
    i = M.laplace_mechanism(3, epsilon=1.0, mode="fast", rng=ChaCha20(8))
    assert isinstance(i, float)


def test_shapes_types_and_input_untouched():
    x = np.arange(12.0).reshape(3, 4)
    keep = x.copy()
    x.flags.writeable = False
    y = M.laplace_mechanism(x, epsilon=1.0, rng=ChaCha20(9))
    assert y.shape == (3, 4) and y.dtype == np.float64
    assert np.array_equal(x, keep)
    col = np.arange(20.0)[::2]  # non-contiguous
    assert M.gaussian_mechanism(col, epsilon=1.0, delta=1e-5).shape == (10,)
    assert isinstance(M.laplace_mechanism(1.5, epsilon=1.0), float)
    assert isinstance(M.laplace_mechanism(np.float32(1.5), epsilon=1.0), float)
    assert isinstance(M.laplace_mechanism(5, epsilon=1.0), int)
    assert isinstance(M.gaussian_mechanism(np.int16(5), epsilon=1.0, delta=1e-5), int)
    assert M.laplace_mechanism(np.array([], dtype=np.int64), epsilon=1.0).shape == (0,)
    assert M.geometric_mechanism([[1, 2], [3, 4]], epsilon=1.0).shape == (2, 2)
    assert (
        M.discrete_gaussian_mechanism(
            np.arange(5, dtype=np.uint8), epsilon=1.0, delta=1e-5
        ).dtype
        == np.int64
    )


def test_seeded_releases_reproduce():
    a = M.laplace_mechanism(np.arange(50.0), epsilon=1.0, rng=ChaCha20(10))
    b = M.laplace_mechanism(np.arange(50.0), epsilon=1.0, rng=ChaCha20(10))
    assert np.array_equal(a, b)
    c = M.laplace_mechanism(np.arange(50.0), epsilon=1.0, rng=np.random.PCG64(1))
    assert np.array_equal(
        c,
        M.laplace_mechanism(
            np.arange(50.0), epsilon=1.0, rng=np.random.Generator(np.random.PCG64(1))
        ),
    )


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: M.laplace_mechanism(float("nan"), epsilon=1.0),
            dpfast.PrivacyParameterError,
            "value",
        ),
        (
            lambda: M.laplace_mechanism([1.0, float("inf")], epsilon=1.0),
            dpfast.PrivacyParameterError,
            "value",
        ),
        (lambda: M.laplace_mechanism(True, epsilon=1.0), TypeError, "bool"),
        (lambda: M.laplace_mechanism(["a"], epsilon=1.0), TypeError, "dtype"),
        (
            lambda: M.laplace_mechanism(1.0, epsilon=0.0),
            dpfast.PrivacyParameterError,
            "epsilon",
        ),
        (
            lambda: M.laplace_mechanism(1.0, epsilon=float("nan")),
            dpfast.PrivacyParameterError,
            "epsilon",
        ),
        (lambda: M.laplace_mechanism(1.0, epsilon=1), dpfast.PrivacyParameterError, None),
        (
            lambda: M.laplace_mechanism(1.0, epsilon=1.0, sensitivity=-1.0),
            dpfast.PrivacyParameterError,
            "sensitivity",
        ),
        (
            lambda: M.laplace_mechanism(1.0, epsilon=1.0, mode="Fast"),
            dpfast.PrivacyParameterError,
            "mode",
        ),
        (lambda: M.laplace_mechanism(1.0, epsilon=1.0, rng=42), TypeError, "rng"),
        (
            lambda: M.gaussian_mechanism(1.0, epsilon=1.0, delta=0.0),
            dpfast.PrivacyParameterError,
            "delta",
        ),
        (
            lambda: M.gaussian_mechanism(
                1.0, epsilon=2.0, delta=1e-5, calibration="classic"
            ),
            dpfast.PrivacyParameterError,
            "classic",
        ),
        (lambda: M.geometric_mechanism(1.5, epsilon=1.0), TypeError, "integers"),
        (
            lambda: M.discrete_gaussian_mechanism([1.5], epsilon=1.0, delta=1e-5),
            TypeError,
            "integers",
        ),
        (
            lambda: M.laplace_mechanism(
                np.array([2**63], dtype=np.longdouble), epsilon=1.0
            ),
            TypeError,
            "dtype",
        ),
    ],
)
def test_validation(call, exc, match):
    if match is None:  # epsilon=1 (an int) is a valid number: no error
        assert isinstance(call(), float)
        return
    with pytest.raises(exc, match=match):
        call()


def test_integer_overflow_saturates_never_wraps_never_raises():
    # value + noise beyond int64 is saturated (post-processing); an error would depend on
    # the private value (docs/security-model.md)
    out = M.laplace_mechanism(
        np.full(10_000, 2**63 - 1, dtype=np.int64), epsilon=1.0, rng=ChaCha20(1)
    )
    assert out.max() == 2**63 - 1 and out.min() > 2**62


class Budget:
    def __init__(self, fail=False):
        self.calls, self.fail = [], fail

    def spend(self, epsilon, delta=0.0, *, label=None):
        if self.fail:
            raise dpfast.BudgetExceededError("no budget left")
        self.calls.append((epsilon, delta, label))


@pytest.mark.parametrize(
    "call, cost",
    [
        (lambda b, g: M.laplace_mechanism(1.0, epsilon=0.5, budget=b, rng=g), (0.5, 0.0)),
        (
            lambda b, g: M.laplace_mechanism([1.0, 2.0], epsilon=0.5, budget=b, rng=g),
            (0.5, 0.0),
        ),
        (lambda b, g: M.geometric_mechanism(3, epsilon=0.25, budget=b, rng=g), (0.25, 0.0)),
        (
            lambda b, g: M.gaussian_mechanism(
                1.0, epsilon=0.5, delta=1e-6, budget=b, rng=g
            ),
            (0.5, 1e-6),
        ),
        (
            lambda b, g: M.gaussian_mechanism(
                1.0, epsilon=0.5, delta=1e-6, mode="fast", budget=b, rng=g
            ),
            (0.5, 1e-6),
        ),
        (
            lambda b, g: M.laplace_mechanism(
                [1.0, 2.0], epsilon=0.5, mode="fast", budget=b, rng=g
            ),
            (0.5, 0.0),
        ),
        (
            lambda b, g: M.discrete_gaussian_mechanism(
                [1, 2], epsilon=0.5, delta=1e-6, budget=b, rng=g
            ),
            (0.5, 1e-6),
        ),
    ],
)
def test_budget_charged_once_before_drawing(call, cost):
    b = Budget()
    call(b, ChaCha20(11))
    assert [c[:2] for c in b.calls] == [cost]
    g = ChaCha20(12)
    before = g.state
    with pytest.raises(dpfast.BudgetExceededError):
        call(Budget(fail=True), g)
    assert g.state["buffer"].size == before["buffer"].size  # nothing was drawn
    b = Budget()
    with pytest.raises(TypeError):
        M.laplace_mechanism(1.0, epsilon=0.5, budget=b, rng="not a generator")
    assert b.calls == []  # a bad argument never spends privacy


def test_works_with_the_real_budget():
    from dpfast.accounting import PrivacyBudget

    b = PrivacyBudget(1.0)
    M.laplace_mechanism(1.0, epsilon=0.6, budget=b)
    with pytest.raises(dpfast.BudgetExceededError):
        M.laplace_mechanism(1.0, epsilon=0.6, budget=b)


def test_threads_with_own_generators_match_serial():
    x = np.linspace(-5, 5, 5000)
    serial = [M.laplace_mechanism(x, epsilon=1.0, rng=ChaCha20(s)) for s in range(4)]
    out = [None] * 4

    def work(s):
        out[s] = M.laplace_mechanism(x, epsilon=1.0, rng=ChaCha20(s))

    ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(a, b) for a, b in zip(serial, out))


def test_grid_rounding_is_half_even_and_never_negative_zero():
    # epsilon = 1e6 on a unit grid: the noise is 0 except with probability < 10^-200000,
    # so the release shows the rounding itself.
    x = np.array(
        [
            0.5,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -2.5,
            0.49999999999999994,
            3.7,
            -0.3,
            -0.0,
            2.0**52 + 1,
            -(2.0**53),
            1e300,
        ]
    )
    y = M.laplace_mechanism(x, epsilon=1e6, granularity=1.0, rng=ChaCha20(13))
    assert np.array_equal(y, np.rint(x))
    assert not np.any(np.signbit(y[y == 0]))  # a -0.0 would reveal the sign of the input


@pytest.mark.parametrize("eps", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-30])
@pytest.mark.parametrize("d", [1, 1000, 10**6])
def test_secure_vector_gaussian_sigma_is_within_0_1_percent_of_analytic(eps, delta, d):
    # issue 15: the secure float path's sigma (grid steps * grid, with the rounding's
    # sqrt(d) steps of sensitivity) against the continuous analytic sigma
    import dpfast.mechanisms as M

    k, sampler = M._gauss_grid_plan(eps, delta, 1.0, d, "analytic", None)
    num, den = sampler.sigma2
    secure = math.ldexp(math.sqrt(num / den), k)
    analytic = M.gaussian_sigma(eps, delta, 1.0)
    assert analytic <= secure <= analytic * 1.001


# ------------------------------------------------ zCDP charges of the selection mechanisms


def _rho_charged(mech, eps, **kw):
    from dpfast.accounting import PrivacyBudget

    b = PrivacyBudget(composition="zcdp", rho=1.0)
    mech([3.0, 1.0, 2.0], epsilon=eps, rng=ChaCha20(5), budget=b, **kw)
    (entry,) = b.ledger
    return Fraction(entry.rho)


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mechanism_charges_bounded_range_rho(mode, monotonic):
    # issue 15 item 5: the exponential mechanism (Gumbel-max in fast mode) is eps-BR,
    # hence eps^2/8-zCDP (Cesar & Rogers 2021), exactly
    rho = _rho_charged(M.exponential_mechanism, 0.75, mode=mode, monotonic=monotonic)
    assert rho == Fraction(0.75) ** 2 / 8


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize(
    "mech, kw",
    [
        (M.permute_and_flip, {}),
        (M.report_noisy_max, {"noise": "exponential"}),  # the law of permute-and-flip
        (M.report_noisy_max, {"noise": "laplace"}),
    ],
)
def test_permute_and_flip_and_noisy_max_keep_eps_squared_over_2(mech, kw, mode):
    # never eps^2/8 for these (the under-reporting of opendp#2911)
    rho = _rho_charged(mech, 0.75, mode=mode, **kw)
    assert rho >= Fraction(0.75) ** 2 / 2


def test_bounded_range_charge_admits_and_refuses_exactly():
    from dpfast import BudgetExceededError
    from dpfast.accounting import PrivacyBudget

    b = PrivacyBudget(composition="zcdp", rho=Fraction(1, 8))
    M.exponential_mechanism([1, 2], epsilon=1.0, rng=ChaCha20(1), budget=b)  # 1/8: admitted
    with pytest.raises(BudgetExceededError):
        M.exponential_mechanism([1, 2], epsilon=1e-3, rng=ChaCha20(1), budget=b)
    b = PrivacyBudget(composition="zcdp", rho=Fraction(1, 8))
    with pytest.raises(BudgetExceededError):  # 1/2 > 1/8
        M.permute_and_flip([1, 2], epsilon=1.0, rng=ChaCha20(1), budget=b)
    # a basic (epsilon, delta) budget is still charged epsilon
    b = PrivacyBudget(1.0)
    M.exponential_mechanism([1, 2], epsilon=0.25, rng=ChaCha20(1), budget=b)
    assert b.spent.epsilon == 0.25


# ------------------------------------------------ workers= (issue 15, item 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, w: M.laplace_mechanism(x, epsilon=1.0, rng=ChaCha20(3), workers=w),
        lambda x, w: M.laplace_mechanism(
            x.astype(np.int64), epsilon=1.0, rng=ChaCha20(3), workers=w
        ),
        lambda x, w: M.gaussian_mechanism(
            x, epsilon=1.0, delta=1e-5, rng=ChaCha20(3), workers=w
        ),
        lambda x, w: M.gaussian_mechanism(
            x.astype(np.int64), epsilon=1.0, delta=1e-5, rng=ChaCha20(3), workers=w
        ),
        lambda x, w: M.laplace_mechanism(
            x, epsilon=1.0, rng=ChaCha20(3), workers=w, mode="fast"
        ),
    ],
)
def test_vector_mechanisms_are_the_same_for_every_thread_count(call):
    x = np.arange(7 * 37561, dtype=np.float64).reshape(-1, 7) * 3.0  # > 2**18 values
    ref = call(x, 1)
    assert ref.shape == x.shape
    for w in (2, 4):
        assert np.array_equal(call(x, w), ref)
    noise = (ref - x).reshape(-1)
    assert not np.array_equal(noise[:1000], noise[65536:66536])


def test_parallel_secure_release_law():
    # the chunked secure integer release: exact discrete Laplace noise, chi-square
    x = np.zeros(2**18 + 5, dtype=np.int64)
    z = M.laplace_mechanism(x, epsilon=0.5, rng=ChaCha20(9), workers=2)
    q = math.exp(-0.5)
    ks = np.arange(-40, 41)
    probs = (1 - q) / (1 + q) * q ** np.abs(ks)
    probs[0] += q**41 / (1 + q)
    probs[-1] += q**41 / (1 + q)
    counts = np.array([np.sum(np.clip(z, -40, 40) == k) for k in ks])
    assert chi2_pvalue(counts, probs) > ALPHA


def test_workers_is_validated_before_the_budget_is_charged():
    from dpfast.accounting import PrivacyBudget

    b = PrivacyBudget(1.0)
    with pytest.raises(dpfast.PrivacyParameterError, match="workers"):
        M.laplace_mechanism(np.zeros(3), epsilon=0.5, workers=0, budget=b)
    with pytest.raises(TypeError, match="workers"):
        M.gaussian_mechanism(np.zeros(3), epsilon=0.5, delta=1e-5, workers=2.0, budget=b)
    assert b.spent.epsilon == 0


def test_scalar_call_validates_workers_like_the_general_path():
    # the inline scalar path used to skip workers=; a bad public argument must raise
    with pytest.raises(TypeError, match="workers"):
        M.laplace_mechanism(1.0, epsilon=1.0, workers="x")
    with pytest.raises(dpfast.PrivacyParameterError, match="workers"):
        M.laplace_mechanism(1.0, epsilon=1.0, workers=0)
    assert isinstance(M.laplace_mechanism(1.0, epsilon=1.0, workers=1), float)
