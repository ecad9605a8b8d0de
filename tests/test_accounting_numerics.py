"""Issue 9 findings in dpfast.accounting: each test failed on main before the fix.

Exact values are 50-digit mpmath evaluations of the same formulas; "safe side" means the
returned epsilon/delta is >= the exact value.
"""

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from dpfast import PrivacyParameterError
from dpfast import accounting as A

mp = mpmath.mp
mp.dps = 50


# ------------------------------------------------------------------ optimal composition


def _kov_delta_exact(eps, k, eps_total):
    """delta_hom of Kairouz-Oh-Viswanath with the float inputs taken exactly."""
    e, g = mpmath.mpf(eps), mpmath.mpf(eps_total)
    s = 1 / (1 + mpmath.e**e)
    total = mpmath.mpf(0)
    for ell in range(k + 1):
        loss = (k - 2 * ell) * e
        if loss > g:
            total += (
                mpmath.binomial(k, ell)
                * s**ell
                * (1 - s) ** (k - ell)
                * (1 - mpmath.e ** (g - loss))
            )
    return total


@pytest.mark.parametrize("eps_total", [5.0, 30.0, 200.0])
def test_optimal_composition_delta_no_domain_error(eps_total):
    # main: "math domain error" (delta_hom rounded to >= 1 before log1p(-delta_hom))
    d = A.optimal_composition_delta(1.0, 0.0, 1000, eps_total)
    exact = _kov_delta_exact(1.0, 1000, eps_total)
    assert 0.0 <= d <= 1.0
    assert d >= min(exact, 1) * (1 - mpmath.mpf(10) ** -40)  # mpmath's own rounding
    assert d <= exact * (1 + 1e-9) + 1e-300


def _rounds_down_product():
    """(eps, k) with float(k * eps) below the exact product k * eps."""
    for i in range(1, 10_000):
        eps = 0.1 + i * 1e-6
        k = 3
        if Fraction(k * eps) < k * Fraction(eps):
            return eps, k
    raise AssertionError("no example")


def test_optimal_composition_delta_just_below_breakpoint():
    # main: the largest loss k*eps rounded to nearest fell below eps_total = fl(k eps),
    # dropping a positive term: delta 0 instead of ~1e-17.
    eps, k = _rounds_down_product()
    eps_total = k * eps  # the float, below the exact breakpoint
    exact = _kov_delta_exact(eps, k, eps_total)
    assert exact > 0
    d = A.optimal_composition_delta(eps, 0.0, k, eps_total)
    assert d >= exact


def test_optimal_composition_huge_epsilon():
    with pytest.raises(PrivacyParameterError):
        A.optimal_composition(1e308, 0.0, 10, 1e-5)
    eps, dlt = A.optimal_composition(800.0, 0.0, 10, 1e-5)  # s = 1/(1+e^800) underflows
    assert math.isfinite(eps) and 7999.0 < eps <= 8000.0


# ------------------------------------------------------------------ RDP of Laplace


def _rdp_laplace_exact(a, b):
    a, b = mpmath.mpf(a), mpmath.mpf(b)
    v = mpmath.log(
        a / (2 * a - 1) * mpmath.e ** ((a - 1) / b)
        + (a - 1) / (2 * a - 1) * mpmath.e ** (-a / b)
    ) / (a - 1)
    return min(v, 1 / b)


@pytest.mark.parametrize("scale", [0.3, 1.0, 7.0, 1e3, 1e5, 1e8, 1e12])
def test_rdp_laplace_safe_side_at_every_scale(scale):
    # main: up to 7.7e-9 relative too small at large scales (cancellation in the log form)
    got = A.rdp_laplace(scale)
    for a, v in zip(A.DEFAULT_RDP_ORDERS, got):
        exact = _rdp_laplace_exact(a, scale)
        assert v >= exact
        assert v <= exact * (1 + 1e-11)


@pytest.mark.parametrize("scale,k", [(1e3, 10**6), (1e4, 10**8), (1e5, 10**8)])
def test_rdp_laplace_final_epsilon_safe(scale, k):
    # main: the final epsilon was up to 3.4e-10 relative too small at large noise
    orders = A.DEFAULT_RDP_ORDERS
    curve = A.rdp_laplace(scale) * k
    eps, order = A.rdp_to_dp(orders, curve, 1e-6)
    a = mpmath.mpf(order)
    exact_curve = k * _rdp_laplace_exact(order, scale)
    exact = (
        exact_curve
        + mpmath.log1p(-1 / a)
        - (mpmath.log(mpmath.mpf(1e-6)) + mpmath.log(a)) / (a - 1)
    )
    assert eps >= exact


# ------------------------------------------------------------------ zCDP


def test_zcdp_delta_simple_safe_side_large_exponents():
    # main: up to 1.1e-13 relative too small (exp magnifies the exponent's rounding)
    rng = np.random.default_rng(7)
    for _ in range(300):
        rho = float(10 ** rng.uniform(-4, 1))
        eps = rho + math.sqrt(4 * rho * float(rng.uniform(50, 740)))
        d = A.zcdp_delta(rho, eps, method="simple")
        r, e = mpmath.mpf(rho), mpmath.mpf(eps)
        exact = mpmath.e ** (-((e - r) ** 2) / (4 * r))
        assert d >= exact, (rho, eps)


def _zcdp_tight_exact(rho, delta):
    """min over alpha of the CKS 2020 Cor. 13 expression, 50 digits (golden section on
    ln(alpha - 1); the objective is unimodal)."""
    r, L = mpmath.mpf(rho), -mpmath.log(mpmath.mpf(delta))

    def f(u):
        t = mpmath.e**u
        a = 1 + t
        return a * r + (L - mpmath.log(a)) / t + mpmath.log(t / a)

    lo, hi = mpmath.mpf(-40), mpmath.mpf(800)
    g = (mpmath.sqrt(5) - 1) / 2
    for _ in range(300):
        m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
        if f(m1) < f(m2):
            hi = m2
        else:
            lo = m1
    return max(mpmath.mpf(0), f((lo + hi) / 2))


# main returned values below the exact minimum for the first four (cancellation)
@pytest.mark.parametrize(
    "rho",
    [
        4.641588833612772e-11,
        1e-10,
        4.6415888336127727e-10,
        2.154434690031878e-09,
        1e-11,
        1e-7,
        1e-5,
        1e-3,
        0.1,
        3.0,
    ],
)
def test_zcdp_to_dp_tight_safe_side_small_rho(rho):
    got = A.zcdp_to_dp(rho, 1e-6)
    exact = _zcdp_tight_exact(rho, 1e-6)
    assert got >= exact
    assert got <= exact * (1 + 1e-6) + 1e-12


def test_zcdp_to_dp_subnormal_rho_is_finite():
    # main: returned inf (sqrt(L / rho) overflowed)
    for rho in (5e-324, 1e-310, 1e-300):
        for method in ("tight", "simple"):
            v = A.zcdp_to_dp(rho, 1e-6, method=method)
            assert math.isfinite(v) and v >= 0.0
    assert A.zcdp_to_dp(5e-324, 1e-6, method="simple") > 0.0  # exact value > 0


def test_zcdp_delta_never_rounds_a_positive_bound_to_zero():
    assert A.zcdp_delta(1e-300, 1.0) > 0.0
    assert A.zcdp_delta(1e-3, 100.0, method="simple") > 0.0


# ------------------------------------------------------------------ extreme public parameters


@pytest.mark.parametrize(
    "call",
    [
        lambda: A.optimal_composition(1e308, 0.0, 10, 1e-5),
        lambda: A.gaussian_zcdp(1e-300),
        lambda: A.rdp_gaussian(1e-300),
        lambda: A.advanced_composition(800.0, 0.0, 10, 1e-5),
        lambda: A.heterogeneous_advanced_composition([800.0], None, 1e-5),
        lambda: A.product_mechanism_privacy(800.0, 3),
        lambda: A.basic_composition([1e308, 1e308]),
        lambda: A.pure_dp_to_zcdp(1e200),
        lambda: A.zcdp_compose([1e308, 1e308]),
    ],
)
def test_extreme_parameters_refused_cleanly(call):
    with pytest.raises(PrivacyParameterError):
        call()


def test_hockey_stick_large_epsilon():
    # main: OverflowError from math.exp(800)
    assert A.hockey_stick_divergence([0.5, 0.5], [0.25, 0.75], 800.0) == 0.0
    assert A.hockey_stick_divergence([0.5, 0.5], [0.0, 1.0], 800.0) == 0.5


def test_gaussian_zcdp_tiny_ratio_not_zero():
    rho = A.gaussian_zcdp(1e200, 1e-200)  # exact 5e-801: underflows, must stay > 0
    assert rho > 0.0
    curve = A.rdp_gaussian(1e200, sensitivity=1e-200)
    assert (curve > 0.0).all()


# ------------------------------------------------------------------ sweep (rules 3 and 4)

# 10**400 is left out: float(10**400) raises OverflowError inside the shared
# dpfast._validation helpers, which the hardening work of issue 9 owns.
HOSTILE = [
    float("nan"),
    float("inf"),
    -float("inf"),
    0.0,
    -0.0,
    5e-324,
    1e-300,
    1e308,
    -1.0,
    True,
    Fraction(1, 3),
    "1",
    None,
    800.0,
    1e-12,
    2**70,
    1.7e308,
]

# (function, default positional arguments) for every public function taking numbers
SWEEP = [
    (A.advanced_composition, (0.1, 1e-6, 10, 1e-5)),
    (A.advanced_composition_per_step, (1.0, 1e-5, 10)),
    (A.product_mechanism_privacy, (0.1, 10)),
    (A.optimal_composition, (0.1, 0.0, 10, 1e-5)),
    (A.optimal_composition_delta, (0.1, 0.0, 10, 1.0)),
    (A.gaussian_zcdp, (1.0, 1.0)),
    (A.pure_dp_to_zcdp, (1.0,)),
    (A.zcdp_to_dp, (0.1, 1e-5)),
    (A.zcdp_delta, (0.1, 1.0)),
    (A.zcdp_budget, (1.0, 1e-5)),
    (A.rdp_gaussian, (1.0,)),
    (A.rdp_laplace, (1.0,)),
    (A.gaussian_gdp, (1.0, 1.0)),
    (A.gdp_delta, (1.0, 1.0)),
    (A.gdp_to_dp, (1.0, 1e-5)),
    (A.gdp_mu, (1.0, 1e-5)),
    (A.gdp_sigma, (1.0, 1e-5, 10, 1.0)),
    (A.hockey_stick_divergence, ([0.5, 0.5], [0.25, 0.75], 1.0)),
    (A.calibrate_gaussian, (1.0, 1e-5, 10, 1.0)),
]


def _check_result(value):
    values = value if isinstance(value, tuple) else (value,)
    for v in values:
        arr = np.asarray(v, dtype=np.float64)
        assert np.isfinite(arr).all(), value
        assert (arr >= 0.0).all(), value


@pytest.mark.parametrize("fn,args", SWEEP, ids=[f.__name__ for f, _ in SWEEP])
def test_only_documented_exceptions(fn, args):
    for i in range(len(args)):
        if isinstance(args[i], list):
            continue
        for bad in HOSTILE:
            a = list(args)
            a[i] = bad
            try:
                out = fn(*a)
            except (TypeError, PrivacyParameterError):
                continue
            _check_result(out)


BUILDERS = [
    (A.pld_gaussian, (1.0, 1.0, 0.5)),
    (A.pld_laplace, (1.0, 1.0, 0.5)),
    (A.pld_discrete_laplace, (1.0, 1)),
    (A.pld_discrete_gaussian, (1.0, 1)),
    (A.pld_randomized_response, (1.0, 2)),
    (A.pld_pure_dp, (1.0,)),
]


@pytest.mark.parametrize("fn,args", BUILDERS, ids=[f.__name__ for f, _ in BUILDERS])
def test_pld_builders_and_accountant_only_documented_exceptions(fn, args):
    for i in range(len(args)):
        for bad in HOSTILE:
            a = list(args)
            a[i] = bad
            try:
                m = fn(*a)
            except (TypeError, PrivacyParameterError):
                continue
            # accepted: it must compose and answer finitely (or refuse a delta it cannot meet)
            pld = A.pld_compose([(m, 3)])
            _check_result(pld.delta(1.0))
            try:
                _check_result(pld.epsilon(1e-6))
            except PrivacyParameterError:
                pass


def test_accountant_queries_with_hostile_parameters():
    acc = A.Accountant("pld")
    acc.compose_gaussian(sigma=2.0, count=3)
    for bad in HOSTILE:
        for call in (acc.epsilon, acc.delta):
            try:
                out = call(bad)
            except (TypeError, PrivacyParameterError):
                continue
            _check_result(out)
