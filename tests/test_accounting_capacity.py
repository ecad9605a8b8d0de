"""max_releases / max_releases_gaussian: the largest k that fits by each method's own
bound, checked against hand computations (exact rationals, Thm 3.20 in mpmath, the zCDP
closed form, Gaussian DP) with k fitting and k + 1 not; and the budget agreeing."""

import doctest
import math
from fractions import Fraction

import mpmath
import pytest

from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast.accounting import (
    PrivacyBudget,
    advanced_composition,
    gaussian_zcdp,
    gdp_delta,
    max_releases,
    max_releases_gaussian,
    optimal_composition_delta,
    pld_compose,
    pld_pure_dp,
    zcdp_budget,
    zcdp_to_dp,
)


def _budget_admits(budget, charge, k):
    """spend(charge) succeeds k times on a fresh budget and the (k+1)-th is refused."""
    for _ in range(k):
        budget.spend(*charge)
    with pytest.raises(BudgetExceededError):
        budget.spend(*charge)


# ---- basic ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps0, d0, eps, d, k",
    [
        (Fraction(1, 10), 0, 1, 0, 10),  # floor(1 / (1/10))
        (
            Fraction(1, 4),
            Fraction(1, 10**6),
            5,
            Fraction(3, 10**6),
            3,
        ),  # delta binds: floor(3)
        (Fraction(1, 3), 0, Fraction(7, 3), Fraction(1, 10), 7),
        (0.25, 0.0, 1.0, 0.0, 4),
        (0.1, 0.0, 1.0, 0.0, 10),  # the float 0.1 means the decimal 1/10 (issue 14)
        (0.3, 0.0, 0.2, 0.0, 0),
    ],
)
def test_basic_is_floor_of_exact_rationals(eps0, d0, eps, d, k):
    got = max_releases(eps0, d0, eps, d)
    assert type(got) is int and got == k

    def dec(x):  # what a parameter means: a float the decimal it prints as (issue 14)
        return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)

    want = dec(eps) // dec(eps0)
    if d0:
        want = min(want, dec(d) // dec(d0))
    assert got == want
    _budget_admits(PrivacyBudget(eps, d), (eps0, d0), k)


# ---- advanced: Thm 3.20 evaluated directly ---------------------------------------------------


def _thm320_fits(eps0, d0, k, eps, d):
    mpmath.mp.dps = 50
    rest = mpmath.mpf(d) - k * mpmath.mpf(d0)
    if rest <= 0:
        return False, None
    e0 = mpmath.mpf(eps0)
    val = mpmath.sqrt(2 * k * mpmath.log(1 / rest)) * e0 + k * e0 * mpmath.expm1(e0)
    return val <= eps, val


@pytest.mark.parametrize(
    "eps0, d0, eps, d",
    [
        (0.01, 0.0, 1.0, 1e-6),
        (0.1, 1e-7, 2.0, 1e-5),
        (0.001, 0.0, 0.5, 1e-9),
        (0.5, 0.0, 3.0, 1e-3),
    ],
)
def test_advanced_matches_theorem_3_20(eps0, d0, eps, d):
    k = max_releases(eps0, d0, eps, d, method="advanced")
    assert k >= 1
    ok, val_k = _thm320_fits(eps0, d0, k, eps, d)
    bad, val_k1 = _thm320_fits(eps0, d0, k + 1, eps, d)
    assert ok and not bad
    # not within rounding of the boundary, so the exact and rounded answers agree
    assert val_k < eps * (1 - 1e-12) and (val_k1 is None or val_k1 > eps * (1 + 1e-12))
    # and the library's own rounded-up bound agrees at k
    assert advanced_composition(eps0, d0, k, d - k * d0 if d0 else d).epsilon <= eps


def test_advanced_known_answer_and_zero_delta():
    # Dwork & Roth Example 3.7 (corrected): k = 10,000 steps of 1/812.32 fit (1, e^-32)
    assert max_releases(0.00123104, 0.0, 1.0, math.exp(-32), method="advanced") == 10_000
    assert max_releases(0.00123105, 0.0, 1.0, math.exp(-32), method="advanced") == 9_999
    assert max_releases(0.01, 0.0, 1.0, 0.0, method="advanced") == 0  # needs delta' > 0
    assert (
        max_releases(0.01, 1e-6, 1.0, 1e-6, method="advanced") == 0
    )  # k delta0 leaves no delta'


# ---- optimal, pld -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps0, d0, eps, d",
    [(0.01, 0.0, 1.0, 1e-6), (0.1, 1e-8, 1.0, 1e-5), (0.5, 0.0, 2.0, 1e-6)],
)
def test_optimal_k_fits_and_k_plus_one_does_not(eps0, d0, eps, d):
    k = max_releases(eps0, d0, eps, d, method="optimal")
    assert (
        optimal_composition_delta(eps0, d0, k, eps)
        <= d
        < optimal_composition_delta(eps0, d0, k + 1, eps)
    )
    assert k >= max_releases(eps0, d0, eps, d, method="advanced")
    if d0 == 0.0:
        assert k >= max_releases(eps0, d0, eps, d)  # never worse than basic


def test_pld_k_fits_and_k_plus_one_does_not():
    eps0, eps, d = 0.05, 1.0, 1e-6
    k = max_releases(eps0, 0.0, eps, d, method="pld")
    assert pld_compose([(pld_pure_dp(eps0), k)]).delta(eps) <= d
    assert pld_compose([(pld_pure_dp(eps0), k + 1)]).delta(eps) > d
    opt = max_releases(eps0, 0.0, eps, d, method="optimal")
    assert opt - 3 <= k <= opt  # pessimistic, and within the PLD grid's accuracy


# ---- zCDP: the closed form -------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps0, eps, d", [(0.01, 1.0, 1e-6), (0.1, 2.0, 1e-5), (Fraction(1, 3), 5.0, 1e-9)]
)
def test_zcdp_closed_form(eps0, eps, d):
    k = max_releases(eps0, 0, eps, d, method="zcdp")
    rho = Fraction(zcdp_budget(eps, d))
    rho0 = Fraction(eps0) ** 2 / 2
    assert k == rho // rho0 and k * rho0 <= rho < (k + 1) * rho0
    assert zcdp_to_dp(float(k * rho0), d) <= eps
    _budget_admits(PrivacyBudget(eps, d, "zcdp"), (eps0, 0.0), k)


def test_zcdp_simple_conversion_hand_value():
    # rho* = (sqrt(eps + L) - sqrt(L))^2 with L = ln(1/delta) (Bun & Steinke Prop. 1.3) is a
    # lower bound of the tight budget, so k is at least floor(rho* / (eps0^2/2))
    eps, d, eps0 = 1.0, 1e-6, 0.01
    L = math.log(1 / d)
    rho_simple = (math.sqrt(eps + L) - math.sqrt(L)) ** 2
    assert max_releases(eps0, 0, eps, d, method="zcdp") >= math.floor(
        rho_simple / (eps0**2 / 2) * (1 - 1e-12)
    )
    assert max_releases(eps0, 0, eps, 0.0, method="zcdp") == 0


# ---- Gaussian ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sigma, sens, eps, d",
    [(10.0, 1.0, 1.0, 1e-5), (2.0, 0.1, 0.5, 1e-6), (50.0, 2.0, 3.0, 1e-7)],
)
def test_gaussian_gdp_and_zcdp(sigma, sens, eps, d):
    k = max_releases_gaussian(sigma, sens, eps, d)
    mu = lambda n: math.sqrt(n) * sens / sigma  # Dong, Roth & Su Cor. 3.3
    assert gdp_delta(mu(k), eps) <= d * (1 + 1e-9) and gdp_delta(mu(k + 1), eps) > d
    kz = max_releases_gaussian(sigma, sens, eps, d, method="zcdp")
    rho0 = gaussian_zcdp(sigma, sens)  # Delta^2 / (2 sigma^2), rounded up
    assert rho0 >= Fraction(sens) ** 2 / (2 * Fraction(sigma) ** 2)
    rho = Fraction(zcdp_budget(eps, d))
    assert kz * Fraction(rho0) <= rho < (kz + 1) * Fraction(rho0)
    b = PrivacyBudget(eps, d, "zcdp")
    for _ in range(kz):
        b.spend_rho(rho0)
    with pytest.raises(BudgetExceededError):
        b.spend_rho(rho0)
    kr = max_releases_gaussian(sigma, sens, eps, d, method="rdp")
    kp = max_releases_gaussian(sigma, sens, eps, d, method="pld")
    assert kz <= k and kr <= k and kp <= k and kp >= 0.97 * k  # gdp is exact for Gaussians


# ---- bad input ----------------------------------------------------------------------------------


def test_bad_parameters_are_refused():
    with pytest.raises(PrivacyParameterError):
        max_releases(0.0, 0.0, 1.0)
    with pytest.raises(PrivacyParameterError):
        max_releases(0.1, 1.0, 1.0, 0.5)
    with pytest.raises(PrivacyParameterError):
        max_releases(0.1, 0.0, -1.0)
    with pytest.raises(PrivacyParameterError, match="pure-DP"):
        max_releases(0.1, 1e-9, 1.0, 1e-6, method="zcdp")
    with pytest.raises(PrivacyParameterError, match="pure-DP"):
        max_releases(0.1, 1e-9, 1.0, 1e-6, method="pld")
    with pytest.raises(PrivacyParameterError):
        max_releases(0.1, 0.0, 1.0, method="rdp")
    with pytest.raises(TypeError):
        max_releases("0.1", 0.0, 1.0)
    with pytest.raises(TypeError):
        max_releases(True, 0.0, 1.0)
    with pytest.raises(PrivacyParameterError, match="more than"):
        max_releases(1e-300, 0.0, 1.0, 0.5, method="advanced")
    with pytest.raises(PrivacyParameterError):
        max_releases_gaussian(1.0, 1.0, 1.0, 0.0)
    with pytest.raises(PrivacyParameterError):
        max_releases_gaussian(1.0, 1.0, 1.0, 1e-5, method="basic")
    with pytest.raises(PrivacyParameterError):
        max_releases_gaussian(-1.0, 1.0, 1.0, 1e-5)


# ---- return types (item b) and the docstring examples --------------------------------------


def test_multi_value_returns_are_named_tuples():
    from dpfast.accounting import (
        EpsilonDelta,
        RDPConversion,
        basic_composition,
        heterogeneous_advanced_composition,
        optimal_composition,
        product_mechanism_privacy,
        rdp_to_dp,
    )

    results = [
        basic_composition([0.25, 0.5], [1e-6, 0.0]),
        advanced_composition(0.1, 1e-7, 10, 1e-6),
        heterogeneous_advanced_composition([0.1, 0.2], None, 1e-6),
        product_mechanism_privacy(0.1, 10),
        optimal_composition(0.1, 0.0, 10, 1e-6),
    ]
    for r in results:
        assert type(r) is EpsilonDelta and r == (r.epsilon, r.delta)
        eps, delta = r  # unpacking keeps working
        assert (eps, delta) == tuple(r)
    assert results[0] == (0.75, 1e-6)
    r = rdp_to_dp([2.0, 4.0], [0.1, 0.2], 1e-5)
    assert type(r) is RDPConversion and r == (r.epsilon, r.order) and r.order in (2.0, 4.0)


def test_docstring_examples_run():
    import dpfast.accounting.budget as bud
    import dpfast.accounting.capacity as cap

    for mod in (cap, bud):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.attempted > 0 and res.failed == 0


def test_accounting_doc_examples_run():
    import pathlib

    doc = pathlib.Path(__file__).resolve().parents[1] / "docs" / "accounting.md"
    res = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 8 and res.failed == 0


# ---- Laplace and the search itself -----------------------------------------------------------


def test_laplace_counts():
    from dpfast.accounting import Accountant, max_releases_laplace

    # epsilon0 = 1/10 exactly (the rational of the floats 1.0 / 10.0): ten fit in 1.0
    assert max_releases_laplace(10.0, 1.0, 1.0) == 10
    assert max_releases_laplace(4.0, 2.0, 1.0) == 2
    for m in ("advanced", "optimal", "zcdp"):
        assert max_releases_laplace(100.0, 1.0, 1.0, 1e-6, method=m) == max_releases(
            Fraction(1, 100), 0, 1.0, 1e-6, method=m
        )
    k = max_releases_laplace(100.0, 1.0, 1.0, 1e-6, method="pld")
    assert Accountant("pld").compose_laplace(100.0, 1.0, count=k).delta(1.0) <= 1e-6
    assert Accountant("pld").compose_laplace(100.0, 1.0, count=k + 1).delta(1.0) > 1e-6
    # the Laplace loss is tighter than a generic 0.01-DP release (optimal composition)
    assert k >= max_releases(0.01, 0.0, 1.0, 1e-6, method="optimal")
    with pytest.raises(PrivacyParameterError):
        max_releases_laplace(0.0, 1.0, 1.0)


@pytest.mark.parametrize("answer", [0, 1, 2, 3, 7, 100, 4097, 123_456, 10**9])
@pytest.mark.parametrize("hint", [None, 1, 50, 4096, 123_000, 10**9, 2 * 10**9])
def test_search_finds_the_threshold_from_any_start(answer, hint):
    from dpfast.accounting.capacity import _largest

    calls = []

    def fits(k):
        calls.append(k)
        assert 1 <= k <= 2 * 10**9
        return k <= answer

    assert _largest(fits, 2 * 10**9, hint) == answer
    assert len(calls) <= 2 * 32 + 2
    assert _largest(lambda k: True, 1000, hint) is None


def test_hostile_public_parameters_give_an_int_or_a_clean_error():
    import numpy as np

    from dpfast.accounting import max_releases_laplace

    values = [
        0.5,
        1e-300,
        5e-324,
        1e300,
        math.inf,
        math.nan,
        -0.0,
        0.0,
        -1.0,
        1.0,
        Fraction(1, 10**400),
        np.float32(0.25),
        np.float64(1e-5),
        np.longdouble(0.5),
        True,
        None,
        "1",
        3,
    ]
    calls = 0
    bases = (
        (max_releases, [0.5, 0.0, 1.0, 1e-6], ("basic", "advanced", "optimal", "zcdp")),
        (
            max_releases_laplace,
            [2.0, 1.0, 1.0, 1e-6],
            ("basic", "advanced", "optimal", "zcdp"),
        ),
        (max_releases_gaussian, [10.0, 1.0, 1.0, 1e-6], ("gdp", "zcdp", "rdp")),
    )
    for v in values:
        for pos in range(4):
            for fn, base, methods in bases:
                for m in methods:
                    args = list(base)
                    args[pos] = v
                    calls += 1
                    try:
                        k = fn(*args, method=m)
                    except (TypeError, PrivacyParameterError):
                        continue
                    assert type(k) is int and k >= 0
    assert calls > 500
