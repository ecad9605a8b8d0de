"""Tests of dpfast.accounting against hand-computed and published values, brute force,
and 50-digit mpmath evaluations of the same formulas.

Every mpmath comparison asks for 1e-9 relative agreement.  The library rounds its
results up by a few ulps (and its root finders return the safe end of a bracket), so
"agreement" is checked as |ours - exact| <= 1e-9 |exact| plus, where it matters, that
ours is on the safe side.
"""

import dataclasses
import itertools
import math
import random
import sys
import threading
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

import dpfast
from dpfast import BudgetExceededError, PrivacyParameterError
from dpfast import accounting as A

mp = mpmath.mp
mp.dps = 50
REL = 1e-9


def close(ours, exact, rel=REL):
    exact = mpmath.mpf(exact)
    return abs(mpmath.mpf(ours) - exact) <= rel * abs(exact)


# ------------------------------------------------------------------------------------
# module wiring
# ------------------------------------------------------------------------------------


def test_module_is_exported_from_the_installed_package():
    assert dpfast.accounting is A
    assert "accounting" in dpfast.__all__
    # Tests must run against the installed package, not the source tree.
    assert "site-packages" in A.__file__ or "dist-packages" in A.__file__


# ------------------------------------------------------------------------------------
# basic composition
# ------------------------------------------------------------------------------------


def test_basic_composition_sums_and_rounds_up():
    # decimal parameters (issue 14): each float means the decimal it prints as, and the
    # exact sums 0.6 and 3e-6 print as floats, so they come back exactly
    eps, dlt = A.basic_composition([0.1, 0.2, 0.3], [1e-6, 0.0, 2e-6])
    assert (eps, dlt) == (0.6, 3e-6)
    assert Fraction(repr(eps)) == Fraction("0.6") and Fraction(repr(dlt)) == Fraction(
        "3e-6"
    )
    assert A.basic_composition(np.full(1000, 0.001))[0] == pytest.approx(1.0, rel=1e-15)
    assert A.basic_composition([0.5, 0.25]) == (0.75, 0.0)


def test_large_sums_are_rounded_up():
    # Beyond 2**14 terms the sum is numpy's pairwise sum plus a rigorous error bound.
    x = np.random.default_rng(7).random(100_000) * 1e-3
    exact = sum(map(Fraction, x.tolist()), Fraction(0))
    eps, _ = A.basic_composition(x)
    assert Fraction(eps) >= exact
    assert eps == pytest.approx(float(exact), rel=1e-12)
    rho = A.zcdp_compose(x)
    assert Fraction(rho) >= exact


def test_basic_composition_invalid():
    with pytest.raises(PrivacyParameterError, match=r"epsilons\[1\]"):
        A.basic_composition([0.1, float("nan")])
    with pytest.raises(PrivacyParameterError, match=r"epsilons\[0\]"):
        A.basic_composition([-0.1])
    with pytest.raises(TypeError, match=r"epsilons\[0\]"):
        A.basic_composition([True])
    with pytest.raises(PrivacyParameterError, match="deltas"):
        A.basic_composition([0.1], [1.0])
    with pytest.raises(PrivacyParameterError, match="deltas"):
        A.basic_composition([0.1, 0.2], [0.0])
    with pytest.raises(TypeError, match="epsilons"):
        A.basic_composition(0.5)
    with pytest.raises(PrivacyParameterError, match="epsilons"):
        A.basic_composition(np.array([0.1, np.inf]))


# ------------------------------------------------------------------------------------
# advanced composition
# ------------------------------------------------------------------------------------


def mp_advanced(eps, k, delta_prime):
    e = mpmath.mpf(eps)
    return mpmath.sqrt(
        2 * k * mpmath.log(1 / mpmath.mpf(delta_prime))
    ) * e + k * e * mpmath.expm1(e)


@pytest.mark.parametrize(
    "eps,delta,k,dp",
    [
        (0.1, 0.0, 100, 1e-5),
        (0.001, 1e-9, 10_000, 1e-6),
        (1.0, 0.0, 3, 0.5),
        (2.5, 1e-7, 1, 1e-10),
        (1e-6, 0.0, 10**6, 1e-12),
    ],
)
def test_advanced_composition_matches_mpmath(eps, delta, k, dp):
    e, d = A.advanced_composition(eps, delta, k, dp)
    assert close(e, mp_advanced(eps, k, dp))
    assert e >= float(mp_advanced(eps, k, dp))  # rounded up, never down
    assert close(d, mpmath.mpf(k) * mpmath.mpf(delta) + mpmath.mpf(dp))


def test_advanced_composition_hand_value():
    # sqrt(2 * 100 * ln 1e5) * 0.1 + 100 * 0.1 * (e^0.1 - 1) = 4.798526... + 1.051709...
    e, _ = A.advanced_composition(0.1, 0.0, 100, 1e-5)
    assert e == pytest.approx(
        math.sqrt(200 * math.log(1e5)) * 0.1 + 10 * (math.exp(0.1) - 1), rel=1e-14
    )
    assert e == pytest.approx(5.850235, abs=1e-6)


def test_heterogeneous_advanced_composition():
    eps = [0.1, 0.05, 0.2, 0.01]
    dels = [1e-7, 0.0, 2e-7, 0.0]
    e, d = A.heterogeneous_advanced_composition(eps, dels, 1e-6)
    sq = mpmath.fsum(mpmath.mpf(x) ** 2 for x in eps)
    exact = mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(1e-6)) * sq) + mpmath.fsum(
        mpmath.mpf(x) * mpmath.expm1(mpmath.mpf(x)) for x in eps
    )
    assert close(e, exact) and e >= float(exact)
    assert close(d, mpmath.mpf(1e-7) + mpmath.mpf(2e-7) + mpmath.mpf(1e-6))
    # Equal epsilons reduce to the homogeneous theorem.
    he, hd = A.heterogeneous_advanced_composition([0.01] * 500, None, 1e-8)
    e2, d2 = A.advanced_composition(0.01, 0.0, 500, 1e-8)
    assert he == pytest.approx(e2, rel=1e-13) and hd == pytest.approx(d2, rel=1e-15)
    with pytest.raises(PrivacyParameterError, match="epsilons"):
        A.heterogeneous_advanced_composition([], None, 1e-6)
    with pytest.raises(PrivacyParameterError, match="delta_prime"):
        A.heterogeneous_advanced_composition([0.1], None, 0.0)


def test_per_step_exact_example_3_7():
    dp = math.exp(-32)
    eps0 = A.advanced_composition_per_step(1.0, dp, 10_000)
    assert eps0 == pytest.approx(0.00123104, abs=5e-9)
    assert 1.0 / eps0 == pytest.approx(812.32, abs=0.01)
    # It is the largest: it composes to <= 1 and anything 1e-9 larger composes to > 1.
    assert A.advanced_composition(eps0, 0.0, 10_000, dp)[0] <= 1.0
    assert mp_advanced(eps0, 10_000, dp) <= 1
    assert mp_advanced(eps0 * (1 + 1e-9), 10_000, dp) > 1
    # And agrees with a 50-digit root of the same equation.
    root = mpmath.findroot(lambda x: mp_advanced(x, 10_000, dp) - 1, mpmath.mpf("0.00123"))
    assert close(eps0, root)


def test_book_rounding_1_over_801_overshoots():
    # Dwork & Roth Example 3.7 claims eps0 <= 1/801 suffices; it composes to ~1.0143 > 1.
    e, _ = A.advanced_composition(1 / 801, 0.0, 10_000, math.exp(-32))
    assert e == pytest.approx(1.0143, abs=1e-4)
    assert e > 1.0
    assert close(e, mp_advanced(1 / 801, 10_000, math.exp(-32)))


def test_per_step_closed_form_cor_3_21():
    dp = math.exp(-32)
    e = A.advanced_composition_per_step(0.99, dp, 10_000, method="closed_form")
    assert e == pytest.approx(0.99 / 1600, rel=1e-13)
    assert A.advanced_composition(e, 0.0, 10_000, dp)[0] <= 0.99
    assert e < A.advanced_composition_per_step(0.99, dp, 10_000)  # exact is larger
    with pytest.raises(PrivacyParameterError, match="epsilon_total"):
        A.advanced_composition_per_step(1.0, dp, 10_000, method="closed_form")


def test_per_step_closed_form_refused_where_cor_3_21_proof_fails():
    # k = 1, delta' = 0.99, eps' = 0.9: eps' < 1 as Cor. 3.21 asks, yet the closed form
    # eps = 0.9 / (2 sqrt(2 ln(1/0.99))) ~ 3.17 composes to ~73 by Thm 3.20.
    closed = 0.9 / (2 * math.sqrt(2 * math.log(1 / 0.99)))
    assert mp_advanced(closed, 1, 0.99) > 0.9
    with pytest.raises(PrivacyParameterError, match="closed form"):
        A.advanced_composition_per_step(0.9, 0.99, 1, method="closed_form")
    exact = A.advanced_composition_per_step(0.9, 0.99, 1)
    assert mp_advanced(exact, 1, 0.99) <= 0.9


@pytest.mark.parametrize(
    "target,dp,k", [(0.5, 1e-6, 1), (2.0, 1e-9, 37), (10.0, 1e-5, 10**6), (1e-3, 0.1, 5)]
)
def test_per_step_exact_matches_mpmath(target, dp, k):
    e = A.advanced_composition_per_step(target, dp, k)
    root = mpmath.findroot(lambda x: mp_advanced(x, k, dp) - target, mpmath.mpf(e))
    assert close(e, root) and e <= root


# ------------------------------------------------------------------------------------
# product mechanism (seed 004 Thm 4, corrected)
# ------------------------------------------------------------------------------------


def test_product_mechanism_threshold_constant():
    t = A.PRODUCT_MECHANISM_EPSILON_MAX
    root = mpmath.findroot(lambda x: mpmath.expm1(x) - 2 * x, mpmath.mpf("1.25"))
    assert close(t, root, 1e-14) and t <= root
    assert t == pytest.approx(1.2564, abs=1e-4)
    assert math.expm1(t) <= 2 * t


@pytest.mark.parametrize("eps", [0.05, 0.1, 0.5, 0.9, 1.1, 1.25, 1.5, 1.79])
@pytest.mark.parametrize("k", [1, 10, 100])
def test_product_mechanism_never_returns_printed_delta(eps, k):
    e, d = A.product_mechanism_privacy(eps, k)
    assert d == pytest.approx(math.exp(-k * eps * eps / 2), rel=1e-14)  # corrected delta
    printed = math.exp(-k * eps / 2)
    assert abs(d - printed) > 1e-6 * printed  # never the printed e^(-k eps / 2)
    exact = k * mpmath.mpf(eps) ** 2 + k * mpmath.mpf(eps) * mpmath.expm1(mpmath.mpf(eps))
    assert close(e, exact) and e >= float(exact)
    # It is advanced composition with delta' = e^(-k eps^2 / 2).
    assert e == pytest.approx(
        A.advanced_composition(eps, 0.0, k, math.exp(-k * eps * eps / 2))[0], rel=1e-12
    )


def test_product_mechanism_simplification_only_below_1_2564():
    e, _ = A.product_mechanism_privacy(1.25, 100, simplified=True)
    assert e == pytest.approx(3 * 100 * 1.25**2, rel=1e-14)
    assert e >= A.product_mechanism_privacy(1.25, 100)[0]
    for eps in (1.26, 1.5, 1.79):
        with pytest.raises(PrivacyParameterError, match="epsilon"):
            A.product_mechanism_privacy(eps, 100, simplified=True)
    # The printed "eps <= 1.79 => 3 k eps^2" is false: at eps = 1.5 the bound is larger.
    assert A.product_mechanism_privacy(1.5, 100)[0] > 3 * 100 * 1.5**2
    with pytest.raises(TypeError, match="simplified"):
        A.product_mechanism_privacy(0.5, 10, simplified=1)


# ------------------------------------------------------------------------------------
# optimal composition (Kairouz-Oh-Viswanath)
# ------------------------------------------------------------------------------------


def mp_kov_delta_hom(eps, k, eg):
    e, eg = mpmath.mpf(eps), mpmath.mpf(eg)
    total = mpmath.mpf(0)
    for ell in range(k + 1):
        if (k - ell) * e <= eg + ell * e:
            break
        total += mpmath.binomial(k, ell) * (
            mpmath.exp((k - ell) * e) - mpmath.exp(eg + ell * e)
        )
    return total / (1 + mpmath.exp(e)) ** k


def mp_kov_solve(eps, k, target):
    """Smallest eps_g with delta_hom <= target: walk the segments in 50-digit arithmetic."""
    e, target = mpmath.mpf(eps), mpmath.mpf(target)
    S = (1 + mpmath.exp(e)) ** k
    Asum = Bsum = mpmath.mpf(0)
    for m in range(1, (k + 1) // 2 + 1):
        ell = m - 1
        Asum += mpmath.binomial(k, ell) * mpmath.exp((k - ell) * e) / S
        Bsum += mpmath.binomial(k, ell) * mpmath.exp(ell * e) / S
        lower = max((k - 2 * m) * e, 0)
        if Asum - mpmath.exp(lower) * Bsum > target:
            return mpmath.log((Asum - target) / Bsum)
    return mpmath.mpf(0)


@pytest.mark.parametrize(
    "eps,k,dp",
    [
        (0.1, 100, 1e-5),
        (0.01, 1000, 1e-9),
        (1.0, 50, 1e-3),
        (0.05, 2000, 1e-6),
        (0.5, 7, 0.01),
        (2.0, 1, 1e-6),
        (0.3, 2, 0.05),
    ],
)
def test_optimal_composition_matches_mpmath(eps, k, dp):
    eg, dg = A.optimal_composition(eps, 0.0, k, dp)
    exact = mp_kov_solve(eps, k, dp)
    assert close(eg, exact)
    assert eg >= exact  # safe side
    assert mp_kov_delta_hom(eps, k, eg) <= dp
    assert dg == pytest.approx(dp, rel=1e-14)


def test_optimal_composition_k1_closed_form():
    # One eps-randomized response: delta(e) = p - e^e q, so eps_g = ln((p - delta')/q).
    eps, dp = 0.7, 1e-4
    p = mpmath.exp(eps) / (1 + mpmath.exp(eps))
    assert close(A.optimal_composition(eps, 0.0, 1, dp)[0], mpmath.log((p - dp) / (1 - p)))


def kov_theorem_delta(eps, delta, k, i):
    """KOV 2015 Thm 3.3 at eps_g = (k - 2i) eps, as printed in the paper, in mpmath."""
    e = mpmath.mpf(eps)
    d_i = (
        mpmath.fsum(
            mpmath.binomial(k, l)
            * (mpmath.exp((k - l) * e) - mpmath.exp((k - 2 * i + l) * e))
            for l in range(i)
        )
        / (1 + mpmath.exp(e)) ** k
    )
    return 1 - (1 - mpmath.mpf(delta)) ** k * (1 - d_i)


@pytest.mark.parametrize("eps,delta,k", [(0.2, 0.0, 20), (1.0, 1e-3, 9), (0.05, 1e-6, 200)])
def test_optimal_delta_matches_kov_theorem_3_3(eps, delta, k):
    for i in range(0, k // 2 + 1, max(1, k // 10)):
        ours = A.optimal_composition_delta(eps, delta, k, (k - 2 * i) * eps)
        exact = kov_theorem_delta(eps, delta, k, i)
        if exact == 0:
            # The float (k - 2i) eps can sit an ulp below the exact breakpoint, where the
            # exact delta is ~1e-16 of one term: the safe-side answer is that tiny value.
            assert ours <= 1e-18
        else:
            assert close(ours, exact) and ours >= exact * (1 - 1e-15)


def rr_product(eps, delta, k):
    """Exact laws of k independent copies of the (eps, delta) dominating mechanism of KOV
    (a randomized response that, with probability delta, reveals the input) on the two
    inputs, by enumeration of all 4^k (or 2^k when delta = 0) outcomes."""
    p = math.exp(eps) / (1 + math.exp(eps))
    q = 1 - p
    if delta == 0.0:
        P1, Q1 = [p, q], [q, p]
    else:
        P1 = [delta, (1 - delta) * p, (1 - delta) * q, 0.0]
        Q1 = [0.0, (1 - delta) * q, (1 - delta) * p, delta]
    P, Q = [], []
    for outcome in itertools.product(range(len(P1)), repeat=k):
        P.append(math.prod(P1[o] for o in outcome))
        Q.append(math.prod(Q1[o] for o in outcome))
    return np.array(P), np.array(Q)


@pytest.mark.parametrize("eps", [0.1, 0.7, 1.5])
@pytest.mark.parametrize("delta,k", [(0.0, 1), (0.0, 3), (0.0, 8), (0.01, 2), (1e-3, 5)])
def test_optimal_delta_equals_brute_force_privacy_region(eps, delta, k):
    P, Q = rr_product(eps, delta, k)
    for eg in [0.0, 0.5 * eps, eps, 1.7 * eps, (k - 1) * eps, k * eps, k * eps + 0.1]:
        brute = A.hockey_stick_divergence(P, Q, eg)
        ours = A.optimal_composition_delta(eps, delta, k, eg)
        assert ours == pytest.approx(brute, rel=1e-9, abs=1e-15)
        assert (
            ours >= brute * (1 - 1e-12) - 1e-15
        )  # brute force leaves ~1e-16 residues at true zeros
    # The optimal eps_g at a target delta' reproduces the brute-force region.
    dp = 0.01
    eg, dg = A.optimal_composition(eps, delta, k, dp)
    assert A.hockey_stick_divergence(P, Q, eg) <= dg * (1 + 1e-12)
    if eg > 1e-9:
        assert A.hockey_stick_divergence(P, Q, eg * (1 - 1e-6)) > dg


def test_optimal_composition_large_k_against_scipy_binomial():
    eps, k, dp = 0.001, 10**6, 1e-8
    eg, _ = A.optimal_composition(eps, 0.0, k, dp)
    # delta_hom(e) = Pr[X <= m-1] - e^e Pr[Y <= m-1], X ~ Bin(k, s), Y ~ Bin(k, 1-s),
    # s = 1/(1+e^eps), m = number of flip counts with positive loss excess.
    s = 1 / (1 + math.exp(eps))
    m = math.ceil((k * eps - eg) / (2 * eps))
    d = stats.binom.cdf(m - 1, k, s) - math.exp(eg) * stats.binom.cdf(m - 1, k, 1 - s)
    assert d == pytest.approx(dp, rel=1e-5)
    assert d <= dp * (1 + 1e-6)
    assert 1.0 < eg < A.advanced_composition(eps, 0.0, k, dp)[0]


@pytest.mark.parametrize(
    "eps,k,log_t", [(0.01, 100_000, -50.0), (0.3, 20_001, -120.0), (2.0, 5_000, -700.0)]
)
def test_kov_pruning_is_rigorous(eps, k, log_t):
    # White-box check of the one approximation in the optimal accountant: binomial terms
    # outside the kept window must each be <= e^log_t, and their total must be covered
    # by the bound that is added to every delta.
    from dpfast.accounting.optimal import _KOVTerms

    terms = _KOVTerms(eps, k, log_t)
    s = 1 / (1 + math.exp(eps))
    ell_all = np.arange((k + 1) // 2)
    kept = np.zeros(ell_all.shape, bool)
    kept[terms.ell.astype(int)] = True
    dropped = stats.binom.logpmf(ell_all[~kept], k, s)  # scipy: ~1e-9 absolute error
    assert (dropped <= log_t + 1e-6).all()
    if dropped.size:
        assert terms.log_pruned >= np.logaddexp.reduce(dropped) - 1e-6
    # The kept log-pmf values (Loader's saddle-point form) against 50-digit mpmath.
    e = mpmath.mpf(eps)
    s_mp = 1 / (1 + mpmath.exp(e))
    for i in np.linspace(0, terms.ell.size - 1, 15).astype(int):
        ell = int(terms.ell[i])
        exact = (
            mpmath.log(mpmath.binomial(k, ell))
            + ell * mpmath.log(s_mp)
            + (k - ell) * mpmath.log(1 - s_mp)
        )
        assert abs(terms.log_a[i] - exact) <= 1e-11 * max(1, abs(exact))


@pytest.mark.parametrize(
    "eps,k", [(0.01, 10), (0.1, 1000), (0.01, 10**6), (1.0, 5000), (0.5, 3)]
)
def test_ordering_optimal_advanced_basic(eps, k):
    dp = 1e-6
    delta = 1e-9
    eo, do = A.optimal_composition(eps, delta, k, dp)
    ea, da = A.advanced_composition(eps, delta, k, dp)
    eb, db = A.basic_composition(np.full(k, eps), np.full(k, delta))
    assert eo <= ea and do <= da
    assert eo <= eb * (1 + 1e-12)
    if k >= 1000 and eps <= 0.1:  # where advanced composition applies, it beats basic
        assert ea < eb


def test_optimal_composition_edges():
    # delta' = 0: nothing but basic composition's k eps is possible for pure DP.
    assert A.optimal_composition(0.3, 0.0, 10, 0.0)[0] == pytest.approx(3.0, rel=1e-14)
    # delta' >= total variation: eps_g = 0.
    assert A.optimal_composition(0.1, 0.0, 4, 0.9) == (0.0, pytest.approx(0.9))
    eg, dg = A.optimal_composition(0.1, 1e-3, 10, 1e-5)
    assert dg == pytest.approx(1 - (1 - 1e-3) ** 10 * (1 - 1e-5), rel=1e-12)
    assert dg <= 10 * 1e-3 + 1e-5


@pytest.mark.parametrize(
    "kwargs,exc,name",
    [
        (dict(k=0), PrivacyParameterError, "k"),
        (dict(k=True), TypeError, "k"),
        (dict(k=2.0), TypeError, "k"),
        (dict(k=10**8), PrivacyParameterError, "k"),
        (dict(epsilon=0.0), PrivacyParameterError, "epsilon"),
        (dict(epsilon=float("nan")), PrivacyParameterError, "epsilon"),
        (dict(epsilon=float("inf")), PrivacyParameterError, "epsilon"),
        (dict(epsilon="1"), TypeError, "epsilon"),
        (dict(delta=1.0), PrivacyParameterError, "delta"),
        (dict(delta=-1e-9), PrivacyParameterError, "delta"),
        (dict(delta_prime=1.0), PrivacyParameterError, "delta_prime"),
        (dict(delta_prime=False), TypeError, "delta_prime"),
    ],
)
def test_optimal_composition_invalid(kwargs, exc, name):
    args = dict(epsilon=0.1, delta=0.0, k=10, delta_prime=1e-6)
    args.update(kwargs)
    with pytest.raises(exc, match=name):
        A.optimal_composition(**args)


# ------------------------------------------------------------------------------------
# zCDP
# ------------------------------------------------------------------------------------


def test_zcdp_basic_values():
    assert A.gaussian_zcdp(2.0) == pytest.approx(0.125, rel=1e-14)
    assert A.gaussian_zcdp(2.0, sensitivity=3.0) == pytest.approx(9 / 8, rel=1e-14)
    assert A.pure_dp_to_zcdp(0.5) == pytest.approx(0.125, rel=1e-14)
    assert A.zcdp_compose([0.1, 0.2, 0.05]) == pytest.approx(0.35, rel=1e-15)
    assert A.zcdp_to_dp(0.0, 1e-6) == 0.0


def mp_golden_min(f, lo, hi, iters=300):
    lo, hi = mpmath.mpf(lo), mpmath.mpf(hi)
    g = (mpmath.sqrt(5) - 1) / 2
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(iters):
        if fc < fd:
            hi, d, fd = d, c, fc
            c = hi - g * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + g * (hi - lo)
            fd = f(d)
    return min(fc, fd)


def mp_zcdp_eps_tight(rho, delta):
    rho, L = mpmath.mpf(rho), -mpmath.log(mpmath.mpf(delta))

    def eps_at(alpha):
        return (
            alpha * rho + (L - mpmath.log(alpha)) / (alpha - 1) + mpmath.log(1 - 1 / alpha)
        )

    return mp_golden_min(
        eps_at, 1 + mpmath.mpf(10) ** -30, 1 + 4 * mpmath.sqrt(L / rho) + 10
    )


def mp_zcdp_delta_tight(rho, eps):
    rho, eps = mpmath.mpf(rho), mpmath.mpf(eps)

    def log_delta(alpha):  # the brief's form: exp((a-1)(a rho - eps))/(a-1) * (1 - 1/a)^a
        return (
            (alpha - 1) * (alpha * rho - eps)
            - mpmath.log(alpha - 1)
            + alpha * mpmath.log(1 - 1 / alpha)
        )

    return mpmath.exp(
        mp_golden_min(log_delta, 1 + mpmath.mpf(10) ** -30, 4 + 2 * (eps + 1) / rho)
    )


@pytest.mark.parametrize(
    "rho,delta", [(0.5, 1e-6), (0.01, 1e-5), (2.0, 1e-10), (1e-4, 0.1), (50.0, 1e-3)]
)
def test_zcdp_to_dp_matches_mpmath(rho, delta):
    simple = A.zcdp_to_dp(rho, delta, method="simple")
    exact_simple = mpmath.mpf(rho) + 2 * mpmath.sqrt(
        mpmath.mpf(rho) * mpmath.log(1 / mpmath.mpf(delta))
    )
    assert close(simple, exact_simple) and simple >= exact_simple
    tight = A.zcdp_to_dp(rho, delta)
    exact_tight = max(mp_zcdp_eps_tight(rho, delta), 0)
    assert close(tight, exact_tight) and tight >= exact_tight
    assert tight <= simple
    # zcdp_delta is its inverse, and agrees with 50-digit optimisation of the brief's form.
    d = A.zcdp_delta(rho, tight)
    assert close(d, mp_zcdp_delta_tight(rho, tight))
    if tight > 0.0:
        assert d == pytest.approx(delta, rel=1e-6)
    else:  # (0, delta)-DP already holds: the inverse is a smaller delta
        assert d <= delta


def test_zcdp_simple_delta_inverse():
    rho, eps = 0.3, 3.0
    assert close(
        A.zcdp_delta(rho, eps, method="simple"),
        mpmath.exp(-((mpmath.mpf(eps) - rho) ** 2) / (4 * mpmath.mpf(rho))),
    )
    assert A.zcdp_delta(rho, 0.1, method="simple") == 1.0
    assert A.zcdp_delta(rho, eps) <= A.zcdp_delta(rho, eps, method="simple")


@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0, 10.0])
def test_zcdp_tight_conversion_is_valid_for_the_gaussian(sigma):
    # The exact (eps, delta) curve of the Gaussian mechanism (Balle & Wang 2018):
    # delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), mu = 1/sigma.
    mu = 1 / sigma
    rho = A.gaussian_zcdp(sigma)
    for delta in (1e-3, 1e-6, 1e-9):
        eps = A.zcdp_to_dp(rho, delta)
        true_delta = stats.norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * stats.norm.cdf(
            -mu / 2 - eps / mu
        )
        assert true_delta <= delta


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.1, 1e-9), (8.0, 1e-5)])
def test_zcdp_budget(eps, delta):
    for method in ("tight", "simple"):
        rho = A.zcdp_budget(eps, delta, method=method)
        assert A.zcdp_to_dp(rho, delta, method=method) <= eps
        assert A.zcdp_to_dp(rho * (1 + 1e-9), delta, method=method) > eps
    L = math.log(1 / delta)
    assert A.zcdp_budget(eps, delta, method="simple") == pytest.approx(
        (math.sqrt(eps + L) - math.sqrt(L)) ** 2, rel=1e-10
    )
    assert A.zcdp_budget(eps, delta) >= A.zcdp_budget(eps, delta, method="simple")


def test_zcdp_invalid():
    with pytest.raises(PrivacyParameterError, match="delta"):
        A.zcdp_to_dp(0.5, 0.0)
    with pytest.raises(PrivacyParameterError, match="rho"):
        A.zcdp_to_dp(-0.5, 1e-6)
    with pytest.raises(TypeError, match="rho"):
        A.zcdp_to_dp(True, 1e-6)
    with pytest.raises(PrivacyParameterError, match="method"):
        A.zcdp_to_dp(0.5, 1e-6, method="fast")
    with pytest.raises(PrivacyParameterError, match="sigma"):
        A.gaussian_zcdp(0.0)
    with pytest.raises(PrivacyParameterError, match="rhos"):
        A.zcdp_compose([0.1, float("nan")])


# ------------------------------------------------------------------------------------
# RDP
# ------------------------------------------------------------------------------------


def mp_laplace_rdp(b, alpha):
    """D_alpha(Lap(0,b) || Lap(1,b)) by 50-digit numerical integration."""
    b, alpha = mpmath.mpf(b), mpmath.mpf(alpha)

    def integrand(x):
        lp = -abs(x) / b
        lq = -abs(x - 1) / b
        return mpmath.exp(alpha * lp + (1 - alpha) * lq) / (2 * b)

    integral = mpmath.quad(integrand, [-mpmath.inf, 0, 1, mpmath.inf])
    return mpmath.log(integral) / (alpha - 1)


@pytest.mark.parametrize("b", [0.5, 1.0, 4.0])
def test_rdp_laplace_matches_integration(b):
    orders = [1.5, 2.0, 3.0, 10.0, 64.0]
    ours = A.rdp_laplace(b, orders)
    for a, v in zip(orders, ours):
        assert close(v, mp_laplace_rdp(b, a))
    assert (ours <= 1 / b).all()
    # Sensitivity rescales the scale: Lap(b) for sensitivity 2 is Lap(b/2) for sensitivity 1.
    np.testing.assert_allclose(
        A.rdp_laplace(b, orders, sensitivity=2.0), A.rdp_laplace(b / 2, orders), rtol=1e-14
    )


def test_rdp_gaussian_and_composition():
    orders = [2.0, 4.0, 32.0]
    np.testing.assert_allclose(
        A.rdp_gaussian(2.0, orders), np.array(orders) / 8, rtol=1e-14
    )
    assert (A.rdp_gaussian(2.0, orders) >= np.array(orders) / 8).all()  # rounded up
    total = A.rdp_compose(A.rdp_gaussian(2.0, orders), A.rdp_laplace(1.0, orders))
    np.testing.assert_allclose(
        total, A.rdp_gaussian(2.0, orders) + A.rdp_laplace(1.0, orders), rtol=1e-15
    )
    with pytest.raises(PrivacyParameterError, match="curves"):
        A.rdp_compose([0.1, 0.2], [0.1])
    with pytest.raises(PrivacyParameterError, match="orders"):
        A.rdp_gaussian(1.0, [1.0, 2.0])
    with pytest.raises(PrivacyParameterError, match="orders"):
        A.rdp_gaussian(1.0, [2.0, float("inf")])


def test_rdp_to_dp_published_cross_check():
    # Values computed with Google's dp_accounting 0.6.0 (RdpAccountant, same orders),
    # which uses the same tight conversion: 10 Laplace(b=2) releases at delta = 1e-6,
    # and 5 Gaussians (sigma = 3) at delta = 1e-5.
    orders = [1.5, 2.0, 3.0, 10.0, 100.0]
    lap = A.rdp_compose(*[A.rdp_laplace(2.0, orders)] * 10)
    assert A.rdp_to_dp(orders, lap, 1e-6)[0] == pytest.approx(5.013474855910258, rel=1e-12)
    gau = A.rdp_compose(*[A.rdp_gaussian(3.0, orders)] * 5)
    assert A.rdp_to_dp(orders, gau, 1e-5) == (
        pytest.approx(3.6957884145617492, rel=1e-12),
        10.0,
    )


def test_rdp_to_dp_matches_mpmath_and_orders():
    orders = A.DEFAULT_RDP_ORDERS
    rdp = A.rdp_gaussian(1.5, orders) * 20
    delta = 1e-7
    tight, a_t = A.rdp_to_dp(orders, rdp, delta)
    classic, a_c = A.rdp_to_dp(orders, rdp, delta, method="classic")
    assert tight <= classic
    exact_classic = min(
        mpmath.mpf(r) + mpmath.log(1 / mpmath.mpf(delta)) / (mpmath.mpf(a) - 1)
        for a, r in zip(orders, rdp)
    )
    assert close(classic, exact_classic)
    exact_tight = min(
        mpmath.mpf(r)
        + mpmath.log(1 - 1 / mpmath.mpf(a))
        - (mpmath.log(mpmath.mpf(delta)) + mpmath.log(mpmath.mpf(a))) / (mpmath.mpf(a) - 1)
        for a, r in zip(orders, rdp)
    )
    assert close(tight, exact_tight)


@pytest.mark.parametrize("b", [0.5, 2.0, 10.0])
def test_rdp_conversion_is_valid_for_laplace(b):
    # A single Laplace(b) mechanism (sensitivity 1) has the exact curve
    # delta(eps) = 1 - exp((eps - 1/b)/2) for 0 <= eps <= 1/b.
    for delta in (1e-2, 1e-5):
        eps, _ = A.rdp_to_dp(A.DEFAULT_RDP_ORDERS, A.rdp_laplace(b), delta)
        true_delta = max(0.0, -math.expm1((eps - 1 / b) / 2))
        assert true_delta <= delta


# ------------------------------------------------------------------------------------
# divergences on finite supports
# ------------------------------------------------------------------------------------


def subsets(n):
    for r in range(1, n + 1):
        yield from itertools.combinations(range(n), r)


def random_pair(rng, n, zeros=False):
    p = rng.random(n)
    q = rng.random(n)
    if zeros:
        p[0] = 0.0
        q[1] = 0.0
    return p / p.sum(), q / q.sum()


def test_kl_and_max_divergence_known_values():
    eps = 0.8
    pt = math.exp(eps) / (1 + math.exp(eps))
    p, q = [pt, 1 - pt], [1 - pt, pt]
    assert A.max_divergence(p, q) == pytest.approx(eps, rel=1e-14)
    assert A.max_divergence(q, p) == pytest.approx(eps, rel=1e-14)
    kl = (2 * pt - 1) * eps  # pt ln(pt/(1-pt)) + (1-pt) ln((1-pt)/pt)
    assert A.kl_divergence(p, q) == pytest.approx(kl, rel=1e-13)
    assert A.kl_divergence([0.5, 0.5, 0.0], [0.25, 0.25, 0.5]) == pytest.approx(
        math.log(2), rel=1e-14
    )
    assert A.kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert A.max_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert A.kl_divergence(p, p) == 0.0


@pytest.mark.parametrize("seed", range(6))
def test_approximate_max_divergence_brute_force(seed):
    rng = np.random.default_rng(seed)
    p, q = random_pair(rng, 7, zeros=seed % 2 == 1)
    for delta in (0.0, 0.01, 0.1, 0.3):
        best = -math.inf
        for S in subsets(7):
            S = [i for i in S if p[i] > 0]
            if not S:
                continue
            ps, qs = p[S].sum(), q[S].sum()
            if ps > delta:
                best = max(best, math.inf if qs == 0 else math.log((ps - delta) / qs))
        ours = A.approximate_max_divergence(p, q, delta)
        assert ours == pytest.approx(best, rel=1e-12, abs=1e-12)
        # Consistency with the hockey stick: D^delta <= e  <=>  H_e <= delta.
        if math.isfinite(ours) and ours > 0:
            assert A.hockey_stick_divergence(p, q, ours) == pytest.approx(delta, abs=1e-12)
    if seed % 2 == 0:
        assert A.approximate_max_divergence(p, q, 0.0) == pytest.approx(
            A.max_divergence(p, q), rel=1e-12
        )


@pytest.mark.parametrize("seed", range(4))
def test_statistical_distance_and_hockey_stick_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    p, q = random_pair(rng, 6)
    tv = max(abs(p[list(S)].sum() - q[list(S)].sum()) for S in subsets(6))
    assert A.statistical_distance(p, q) == pytest.approx(tv, rel=1e-12)
    for e in (0.0, 0.3, 1.0):
        hs = max(
            max(p[list(S)].sum() - math.exp(e) * q[list(S)].sum() for S in subsets(6)), 0.0
        )
        assert A.hockey_stick_divergence(p, q, e) == pytest.approx(hs, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(8))
def test_lemma_3_18_holds(seed):
    rng = np.random.default_rng(200 + seed)
    p, q = random_pair(rng, 5)
    res = A.check_kl_bound(p, q)
    eps = max(A.max_divergence(p, q), A.max_divergence(q, p))
    assert res.epsilon == pytest.approx(eps)
    assert res.kl == pytest.approx(A.kl_divergence(p, q))
    assert res.bound == pytest.approx(eps * math.expm1(eps), rel=1e-14)
    assert res.holds and res.kl <= res.bound
    # A larger epsilon also works; a smaller one is refused.
    assert A.check_kl_bound(p, q, epsilon=eps * 1.5).holds
    with pytest.raises(PrivacyParameterError, match="epsilon"):
        A.check_kl_bound(p, q, epsilon=eps * 0.5)


def test_lemma_3_18_near_tight_for_randomized_response():
    eps = 0.01
    pt = math.exp(eps) / (1 + math.exp(eps))
    res = A.check_kl_bound([pt, 1 - pt], [1 - pt, pt])
    assert res.holds
    assert res.kl / res.bound == pytest.approx(0.5, rel=1e-2)  # KL ~ eps^2/2, bound ~ eps^2


@pytest.mark.parametrize(
    "p,q,exc,name",
    [
        ([0.5, 0.6], [0.5, 0.5], PrivacyParameterError, "p"),
        ([0.5, 0.5], [-0.5, 1.5], PrivacyParameterError, "q"),
        ([0.5, float("nan")], [0.5, 0.5], PrivacyParameterError, "p"),
        ([True, False], [0.5, 0.5], TypeError, "p"),
        ([[0.5, 0.5]], [[0.5, 0.5]], PrivacyParameterError, "p"),
        ([0.5, 0.5], [0.2, 0.3, 0.5], PrivacyParameterError, "same support"),
        (["a", "b"], [0.5, 0.5], TypeError, "p"),
    ],
)
def test_divergence_invalid(p, q, exc, name):
    with pytest.raises(exc, match=name):
        A.kl_divergence(p, q)


def test_approximate_max_divergence_invalid_delta():
    with pytest.raises(PrivacyParameterError, match="delta"):
        A.approximate_max_divergence([0.5, 0.5], [0.5, 0.5], 1.0)


# ------------------------------------------------------------------------------------
# PrivacyBudget
# ------------------------------------------------------------------------------------


def test_budget_basic_spend_and_refusal_records_nothing():
    b = A.PrivacyBudget(1.0, 1e-6)
    e = b.spend(0.5, 1e-7, label="mean")
    assert isinstance(e, A.LedgerEntry)
    assert (e.index, e.label, e.epsilon, e.delta, e.status) == (
        0,
        "mean",
        0.5,
        1e-7,
        "spent",
    )
    b.spend(0.25)
    assert b.spent == A.PrivacyAmount(0.75, 1e-7, None)
    assert b.remaining.epsilon == 0.25
    with pytest.raises(BudgetExceededError):
        b.spend(0.3)
    with pytest.raises(BudgetExceededError):
        b.spend(0.1, 1e-6)  # delta would exceed
    assert len(b.ledger) == 2 and b.spent.epsilon == 0.75
    assert b.can_spend(0.25) and not b.can_spend(0.2500001)
    b.spend(0.25)
    assert b.remaining.epsilon == 0.0
    with pytest.raises(BudgetExceededError):
        b.spend(1e-300)
    b.spend(0.0)  # a free charge is fine
    assert isinstance(BudgetExceededError("x"), RuntimeError)


def test_budget_exact_fractions_ten_thousand_charges():
    b = A.PrivacyBudget(1.0)
    step = Fraction(1, 10_000)
    for _ in range(10_000):
        b.spend(step)
    assert b.spent.epsilon == 1.0
    with pytest.raises(BudgetExceededError):
        b.spend(step)  # the 10,001st is refused
    assert len(b.ledger) == 10_000


def test_budget_float_charges_never_underspend():
    # Decimal parameters (issue 14): the float 1e-4 charges the decimal 1/10^4 it prints
    # as (its binary value is slightly more), so exactly 10,000 of them fill 1.0.
    assert Fraction(1e-4) * 10_000 > 1
    b = A.PrivacyBudget(1.0)
    admitted = 0
    while True:
        try:
            b.spend(1e-4)
        except BudgetExceededError:
            break
        admitted += 1
    assert admitted == 10_000
    assert b.spent.epsilon == 1.0 and b.remaining.epsilon == 0.0
    # Naive float summation would have admitted a 10,000th charge.
    assert sum([1e-4] * 10_000) <= 1.0
    # Exactly representable steps fill the budget exactly.
    b2 = A.PrivacyBudget(1.0)
    for _ in range(8):
        b2.spend(0.125)
    with pytest.raises(BudgetExceededError):
        b2.spend(2.0**-60)


def test_budget_reserve_commit_rollback():
    b = A.PrivacyBudget(1.0, 1e-5)
    r1 = b.reserve(0.4, 1e-6, label="a")
    r2 = b.reserve(0.4, label="b")
    assert isinstance(r1, A.Reservation)
    assert b.spent.epsilon == pytest.approx(0.8)
    with pytest.raises(BudgetExceededError):
        b.reserve(0.3)
    assert b.commit(r1).status == "committed"
    assert b.rollback(r2).status == "rolled_back"
    assert b.spent == A.PrivacyAmount(0.4, 1e-6, None)
    assert b.remaining.epsilon == 0.6
    with pytest.raises(RuntimeError, match="already settled"):
        b.commit(r1)
    with pytest.raises(RuntimeError, match="already settled"):
        b.rollback(r2)
    with pytest.raises(RuntimeError, match="already settled"):
        b.commit(r2)
    other = A.PrivacyBudget(1.0)
    with pytest.raises(ValueError, match="another"):
        other.commit(b.reserve(0.1))
    with pytest.raises(TypeError, match="reservation"):
        b.commit(b.ledger[0])
    statuses = [(e.index, e.label, e.status) for e in b.ledger]
    assert statuses == [
        (0, "a", "committed"),
        (1, "b", "rolled_back"),
        (2, None, "reserved"),
    ]
    # 0.4 committed + 0.1 still reserved: the rolled-back 0.4 is available again.
    b.spend(0.49)
    assert b.spent.epsilon == pytest.approx(0.99)
    with pytest.raises(BudgetExceededError):
        b.spend(0.011)


def test_budget_ledger_is_immutable_copy():
    b = A.PrivacyBudget(1.0)
    b.spend(0.1, label="x")
    led = b.ledger
    with pytest.raises(dataclasses.FrozenInstanceError):
        led[0].epsilon = 0.0
    led.clear()
    assert len(b.ledger) == 1


def test_budget_concurrent_charges_never_overspend():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # force frequent thread switches
    try:
        b = A.PrivacyBudget(1.0, 1e-6)
        n_threads = 16
        barrier = threading.Barrier(n_threads)
        admitted = [[] for _ in range(n_threads)]
        amounts = [Fraction(1, 10_000), 0.003, 1e-4, Fraction(1, 7_777), 0.0125]

        def worker(i):
            rnd = random.Random(i)
            barrier.wait()
            for _ in range(1_000):
                eps = rnd.choice(amounts)
                dlt = rnd.choice([0.0, 0.0, 1e-9])
                try:
                    if rnd.random() < 0.2:
                        r = b.reserve(eps, dlt)
                        if rnd.random() < 0.5:
                            b.rollback(r)
                            continue
                        b.commit(r)
                    else:
                        b.spend(eps, dlt)
                except BudgetExceededError:
                    continue
                # what each charge means: a float the decimal it prints as (issue 14)
                admitted[i].append((dec(eps), dec(dlt)))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old)
    total_eps = sum((e for lst in admitted for e, _ in lst), Fraction(0))
    total_dlt = sum((d for lst in admitted for _, d in lst), Fraction(0))
    assert total_eps <= 1 and total_dlt <= Fraction("1e-6")
    # The budget is (nearly) exhausted: 16,000 attempts at these sizes far exceed it.
    assert total_eps > 1 - Fraction(1, 80)
    # Ledger, totals and the threads' own records agree exactly.
    live = [e for e in b.ledger if e.status in ("spent", "committed")]
    assert len(live) == sum(len(x) for x in admitted)
    assert dec(b.spent.epsilon) >= total_eps
    assert b.spent.epsilon == pytest.approx(float(total_eps), rel=1e-15)


def dec(x):
    return Fraction(repr(x)) if isinstance(x, float) else Fraction(x)


def test_budget_concurrent_exact_count():
    b = A.PrivacyBudget(1.0)
    step = Fraction(1, 1_000)
    counts = [0] * 16
    barrier = threading.Barrier(16)

    def worker(i):
        barrier.wait()
        for _ in range(100):
            try:
                b.spend(step)
                counts[i] += 1
            except BudgetExceededError:
                pass

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(counts) == 1_000  # 1,600 attempts, exactly the budget admitted


def test_budget_advanced_mode_admits_what_advanced_composition_allows():
    eps_budget, delta, dp = 1.0, 1e-5, 1e-6
    b = A.PrivacyBudget(eps_budget, delta, "advanced", delta_prime=dp)
    n = 0
    while True:
        try:
            b.spend(0.01)
        except BudgetExceededError:
            break
        n += 1
    # Largest n with min(n eps, advanced(n)) <= 1, from the 50-digit formula.
    best = max(
        m
        for m in range(1, 2000)
        if min(m * mpmath.mpf(0.01), mp_advanced(0.01, m, dp)) <= 1
    )
    assert n in (best, best - 1)  # the budget rounds against the caller
    assert n > 100  # more than basic composition would admit
    assert mp_advanced(0.01, n, dp) <= 1
    spent = b.spent
    assert spent.epsilon <= 1.0 and spent.delta == pytest.approx(dp)
    # Deltas of charges come out of delta - delta_prime.
    b2 = A.PrivacyBudget(1.0, 1e-5, "advanced", delta_prime=4e-6)
    b2.spend(0.01, 6e-6)
    with pytest.raises(BudgetExceededError):
        b2.spend(0.01, 1e-9)
    # Only the binary representation gap of 1e-5 - 4e-6 - 6e-6 is left.
    assert 0.0 <= b2.remaining.delta < 1e-20


def test_budget_zcdp_mode():
    b = A.PrivacyBudget(rho=0.5, composition="zcdp")
    e = b.spend(0.6)  # pure 0.6-DP costs 0.18
    assert e.rho == pytest.approx(0.18, rel=1e-15)
    b.spend_rho(A.gaussian_zcdp(2.0), label="gauss")  # 0.125
    assert b.spent.rho == pytest.approx(0.305, rel=1e-14)
    # Fraction(0.6)^2/2 is a little above 0.18 and rho values are rounded up, so a
    # charge of exactly 0.195 no longer fits.
    assert b.can_spend_rho(0.1949999) and not b.can_spend_rho(0.195)
    with pytest.raises(BudgetExceededError):
        b.spend(0.7)  # 0.245 > 0.195
    with pytest.raises(PrivacyParameterError, match="delta"):
        b.spend(0.1, 1e-6)
    r = b.reserve_rho(0.1)
    b.rollback(r)
    assert b.remaining.rho == pytest.approx(0.195, rel=1e-13) and b.remaining.rho < 0.195
    # Given (epsilon, delta), the budget is the tight zcdp_budget.
    b2 = A.PrivacyBudget(1.0, 1e-6, "zcdp")
    assert b2.rho == A.zcdp_budget(1.0, 1e-6)
    assert A.zcdp_to_dp(b2.rho, 1e-6) <= 1.0
    with pytest.raises(ValueError, match="zcdp"):
        A.PrivacyBudget(1.0).spend_rho(0.1)


@pytest.mark.parametrize(
    "args,kwargs,exc,name",
    [
        ((float("nan"),), {}, PrivacyParameterError, "epsilon"),
        ((float("inf"),), {}, PrivacyParameterError, "epsilon"),
        ((True,), {}, TypeError, "epsilon"),
        ((-1.0,), {}, PrivacyParameterError, "epsilon"),
        ((0.0,), {}, PrivacyParameterError, "epsilon"),
        (("1.0",), {}, TypeError, "epsilon"),
        ((1.0, 1.0), {}, PrivacyParameterError, "delta"),
        ((1.0, 0.0, "renyi"), {}, PrivacyParameterError, "composition"),
        ((1.0, 1e-5, "advanced"), {}, PrivacyParameterError, "delta_prime"),
        (
            (1.0, 1e-5, "advanced"),
            {"delta_prime": 1e-4},
            PrivacyParameterError,
            "delta_prime",
        ),
        ((1.0, 0.0, "advanced"), {"delta_prime": 1e-6}, PrivacyParameterError, "delta"),
        ((1.0,), {"delta_prime": 1e-6}, PrivacyParameterError, "delta_prime"),
        ((), {"composition": "zcdp"}, PrivacyParameterError, "rho"),
        ((), {"composition": "zcdp", "rho": float("nan")}, PrivacyParameterError, "rho"),
        ((1.0,), {"composition": "zcdp", "rho": 0.5}, PrivacyParameterError, "rho"),
        ((1.0,), {"rho": 0.5}, PrivacyParameterError, "rho"),
    ],
)
def test_budget_constructor_invalid(args, kwargs, exc, name):
    with pytest.raises(exc, match=name):
        A.PrivacyBudget(*args, **kwargs)


@pytest.mark.parametrize(
    "args,kwargs,exc,name",
    [
        ((float("nan"),), {}, PrivacyParameterError, "epsilon"),
        ((-0.1,), {}, PrivacyParameterError, "epsilon"),
        ((np.bool_(True),), {}, TypeError, "epsilon"),
        ((None,), {}, TypeError, "epsilon"),
        ((0.1, 1.0), {}, PrivacyParameterError, "delta"),
        ((0.1, float("inf")), {}, PrivacyParameterError, "delta"),
        ((0.1,), {"label": 3}, TypeError, "label"),
    ],
)
def test_budget_spend_invalid_records_nothing(args, kwargs, exc, name):
    b = A.PrivacyBudget(1.0, 1e-6)
    for method in (b.spend, b.reserve):
        with pytest.raises(exc, match=name):
            method(*args, **kwargs)
    assert b.ledger == [] and b.spent == A.PrivacyAmount(0.0, 0.0, None)


def test_budget_repr_and_numpy_scalars():
    b = A.PrivacyBudget(np.float64(2.0), np.float32(1e-6))
    b.spend(np.float64(0.5), label="np")
    assert "PrivacyBudget(" in repr(b) and "basic" in repr(b)
    assert b.spent.epsilon == 0.5


def test_bisect_least_returns_the_safe_end():
    from dpfast.accounting._numeric import bisect_least

    calls = []

    def ok(x):
        calls.append(x)
        return x >= 0.3

    x = bisect_least(ok, 0.0, 1.0, rel=1e-9)
    assert x >= 0.3 and x - 0.3 <= 1e-9
    assert len(calls) < 40
    # without a tolerance it stops at adjacent floats: the least float >= 0.3
    assert bisect_least(lambda v: v >= 0.3, 0.0, 1.0) == 0.3
    # geometric midpoints over a wide bracket
    g = bisect_least(lambda v: v >= 1e-5, 1e-12, 1.0, rel=2.0**-40, geometric=True)
    assert 1e-5 <= g <= 1e-5 * (1 + 2.0**-39)
    # the step cap returns hi, where ok holds
    assert bisect_least(ok, 0.0, 1.0, steps=1) == 0.5
