"""The zCDP charge of a selection (one rule: dpfast.selection.selection_rho) and the
exact split of MWEM's and BoostingForQueries' budgets (issue 22, items 5 and 12)."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from dpfast import objects as O
from dpfast import query_release as Q
from dpfast import selection as S
from dpfast._validation import charged, decimal_of, epsilon

# ------------------------------------------------------------------ exact laws


def _pf_law(u, eps):
    """Permute-and-flip's output law, enumerated over every order (McKenna & Sheldon
    2020, Alg. 1): candidate r is accepted with probability exp(eps (u_r - u*)/2)."""
    m, top = len(u), max(u)
    q = [math.exp(eps * (x - top) / 2) for x in u]
    law = [0.0] * m
    orders = list(itertools.permutations(range(m)))
    for order in orders:
        alive = 1.0 / len(orders)
        for r in order:
            law[r] += alive * q[r]
            alive *= 1 - q[r]
    return np.array(law)


def _em_law(u, eps):
    w = np.exp(eps * (np.asarray(u, float) - max(u)) / 2)
    return w / w.sum()


def _renyi(p, q, alpha):
    t = alpha * np.log(p) + (1 - alpha) * np.log(q)  # in logs: no overflow
    return (t.max() + math.log(float(np.exp(t - t.max()).sum()))) / (alpha - 1)


ALPHAS = [1.01, 1.1, 1.5, 2, 3, 5, 10, 50, 200]
# MWEM's scores are errors |true - estimate| of its units: one record moves one unit's
# error up by 1 and another's down by 1 (non-monotone, sensitivity 1)
NEIGHBOURS = [
    ((0.0, 1.0), (1.0, 0.0)),
    ((0.0, 2.0, 1.0), (1.0, 1.0, 1.0)),
    ((3.0, 0.0, 1.0, 2.0), (2.0, 1.0, 1.0, 2.0)),
]


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0])
def test_permute_and_flip_is_not_bounded_range_on_mwem_scores(eps):
    """One permute-and-flip selection between MWEM neighbours exceeds the eps^2/8-zCDP
    MWEM used to charge it (so the old charge under-reported), and stays within the
    eps^2/2 it is charged now; the exponential mechanism stays within eps^2/8."""
    worst_pf = worst_em = 0.0
    for u, v in NEIGHBOURS:
        for a, b in ((u, v), (v, u)):
            for alpha in ALPHAS:
                pf = _renyi(_pf_law(a, eps), _pf_law(b, eps), alpha) / alpha
                em = _renyi(_em_law(a, eps), _em_law(b, eps), alpha) / alpha
                worst_pf, worst_em = max(worst_pf, pf), max(worst_em, em)
    assert worst_pf > 1.5 * float(S.selection_rho("exponential", eps))  # the old charge
    assert worst_pf <= float(S.selection_rho("permute_and_flip", eps)) * (1 + 1e-12)
    assert worst_em <= float(S.selection_rho("exponential", eps)) * (1 + 1e-12)


@pytest.mark.parametrize("eps,delta,T", [(1.0, 1e-6, 10), (1.0, 1e-6, 30), (0.5, 1e-9, 5)])
def test_mwem_gaussian_permute_and_flip_charge_covers_its_selection(eps, delta, T):
    """MWEM's own parameters (measure="gaussian"): each round gives the selection rho_r/2.
    The old rule ran permute-and-flip at eps_sel = sqrt(4 rho_r) (eps_sel^2/8 = rho_r/2);
    on the worst MWEM neighbours (two units whose errors are 1/2 apart and swap order) its
    Renyi divergence D_alpha exceeds alpha rho_r/2 -- the zCDP claim fails.  At the
    eps_round MWEM now uses, D_alpha <= alpha eps_r^2/2 <= alpha rho_r/2 for every alpha.
    (Composed with the Gaussian over T = 10 rounds at eps = 1, delta = 1e-6, the old
    curve converts to eps ~ 1.40, the new one to ~ 0.95; docs/release.md.)"""
    m = Q.MWEM(
        WL,
        epsilon=eps,
        delta=delta,
        rounds=T,
        n_public=100.0,
        measure="gaussian",
        select="permute_and_flip",
    )
    rho_r = m.privacy_cost.rho / T
    e_new, e_old = m.eps_round, math.sqrt(4 * rho_r)
    u, v = (1.5, 1.0), (0.5, 2.0)
    alphas = np.exp(np.linspace(math.log(1.01), math.log(2000), 300))
    old = max(
        max(
            _renyi(_pf_law(a, e_old), _pf_law(b, e_old), al) / al
            for a, b in ((u, v), (v, u))
        )
        for al in alphas
    )
    new = max(
        max(
            _renyi(_pf_law(a, e_new), _pf_law(b, e_new), al) / al
            for a, b in ((u, v), (v, u))
        )
        for al in alphas
    )
    assert old > 1.5 * rho_r / 2  # the old charge under-reported
    assert new <= float(S.selection_rho("permute_and_flip", e_new)) <= rho_r / 2


def test_selection_rho_is_the_one_rule():
    e = Fraction(3, 10)
    assert S.selection_rho("exponential", e) == S.selection_rho("gumbel", e) == e * e / 8
    for m in ("permute_and_flip", "report_noisy_max", "report_noisy_max_exponential"):
        assert S.selection_rho(m, e) == e * e / 2
    assert S.selection_rho("exponential", epsilon(0.1)) == Fraction(1, 800)  # its decimal
    with pytest.raises(ValueError, match="method"):
        S.selection_rho("laplace", 1.0)
    assert O.ExponentialMechanism(0.3).privacy_cost.rho >= float(e * e / 8)


# ------------------------------------------------------------------ MWEM's charge

DOM = Q.Domain(["a", "b", "c"], [3, 2, 4])
WL = Q.MarginalWorkload(DOM, [("a", "b"), ("b", "c"), ("a",), ("c",)])


def _dec(x):
    return max(Fraction(x), decimal_of(x))


@pytest.mark.parametrize(
    "select,law", [("exponential", 8), ("gumbel", 8), ("permute_and_flip", 2)]
)
@pytest.mark.parametrize("init", [None, 0.05])
def test_mwem_laplace_rho_by_hand(select, law, init):
    T, eps = 5, 1.3
    m = Q.MWEM(WL, epsilon=eps, rounds=T, n_public=500.0, select=select, init=init)
    e = _dec(m.eps_round)
    e0 = Fraction(decimal_of(init)) if init else 0
    want = e0**2 / 2 + T * (e * e / law + e * e / 2)
    assert (
        m.privacy_cost.rho >= want
        and m.privacy_cost.rho == float(want)
        or m.privacy_cost.rho == math.nextafter(float(want), math.inf)
    )


@pytest.mark.parametrize(
    "select,law", [("exponential", 8), ("gumbel", 8), ("permute_and_flip", 2)]
)
@pytest.mark.parametrize("eps,delta,T", [(1.0, 1e-6, 4), (0.3, 1e-9, 10), (4.0, 1e-5, 1)])
def test_mwem_gaussian_parts_sum_within_rho(select, law, eps, delta, T):
    """Per round: the selection's selection_rho plus the discrete Gaussian's 1/(2 sigma^2),
    T times, is at most the charged rho = zcdp_budget(eps, delta), and each half is
    within 2**-30 of rho/(2T) (the split is not lopsided)."""
    m = Q.MWEM(
        WL,
        epsilon=eps,
        rounds=T,
        n_public=500.0,
        select=select,
        delta=delta,
        measure="gaussian",
    )
    e = _dec(m.eps_round)
    sel = e * e / law
    meas = 1 / (2 * Fraction(m.sigma2))
    rho = Fraction(m.privacy_cost.rho)
    assert T * (sel + meas) <= rho
    for half in (sel, meas):
        assert abs(half / (rho / (2 * T)) - 1) < 2**-30


def test_mwem_permute_and_flip_gets_half_the_epsilon_of_the_exponential_mechanism():
    kw = dict(epsilon=1.0, rounds=4, n_public=100.0, measure="gaussian", delta=1e-6)
    em = Q.MWEM(WL, **kw)
    pf = Q.MWEM(WL, select="permute_and_flip", **kw)
    assert pf.eps_round == pytest.approx(em.eps_round / 2, rel=1e-15)
    assert pf.privacy_cost.rho == em.privacy_cost.rho


# ------------------------------------------------------------------ exact splits

EPSILONS = [0.1, 0.3, 0.7, 1.0, 1.1, 2.0, 0.05, 3.3, 0.9, 1.7, 0.2, 0.15]


def test_mwem_laplace_parts_never_exceed_epsilon():
    """eps_init + 2T eps_r <= eps exactly (the decimals the mechanisms calibrate for):
    on main the round-to-nearest split exceeded it for 0.1 with T = 7, among others."""
    for eps in EPSILONS:
        for T in list(range(1, 40)) + [97, 1000]:
            for init in (None, eps / 7):
                m = Q.MWEM(WL, epsilon=eps, rounds=T, n_public=100.0, init=init)
                e0 = decimal_of(m.init) if m.init else 0
                assert e0 + 2 * T * decimal_of(m.eps_round) <= decimal_of(eps), (eps, T)


def test_boosting_laplace_parts_never_exceed_epsilon():
    for eps in EPSILONS:
        for T in (1, 3, 5, 7, 11):
            b = Q.BoostingForQueries(WL, epsilon=eps, n_public=500.0, rounds=T, k=3)
            e0 = 0
            sample = Fraction(b.privacy_cost.parts[-1][1])
            total = e0 + T * decimal_of(b.eps_base) + (0 if T == 1 else sample)
            assert total <= decimal_of(eps) * (1 + Fraction(1, 2**40)), (eps, T)
            assert T * decimal_of(b.eps_base) <= decimal_of(eps) * (
                1 - Fraction(b.sample_share) if T > 1 else 1
            )


def test_boosting_zcdp_parts_use_the_selection_rule():
    b = Q.BoostingForQueries(WL, epsilon=1.0, n_public=500.0, rounds=5, k=3)
    parts = dict(b.privacy_cost.parts)
    assert parts["sampling"] > 0
    rho = b.privacy_cost.rho
    want = 5 * b.eps_base**2 / 2 + sum(
        3 * float(S.selection_rho("exponential", b._eps_draw(t))) for t in range(1, 6)
    )
    assert rho == pytest.approx(want, rel=1e-9) and rho >= want


def test_online_pmw_reports_the_exact_sum_it_charges():
    """OnlinePMW charges NumericSparse's epsilon plus the warm start's, exactly; its
    privacy_cost reported their float sum, rounded to nearest -- below the charge for
    2.508 + 0.26 (2.7679999999999993) and 1.82434 + 0.6844 among these.  Charging the
    reported cost must charge what the mechanism charged."""
    from dpfast._privacy import charge
    from dpfast.accounting import PrivacyBudget
    from dpfast.query_release.cost import charged_amounts

    hist = Q.Histogram(Q.Domain(["a", "b"], [3, 2]), np.ones(6))
    pairs = [(2.508, 0.26), (1.82434, 0.6844), (2.9, 0.101), (0.1, 0.2), (1.0, 1e-3)]
    rnd = np.random.default_rng(5)
    pairs += [
        (
            round(float(rnd.uniform(0.01, 3)), int(rnd.integers(1, 6))),
            round(float(rnd.uniform(0.01, 1)), int(rnd.integers(1, 6))),
        )
        for _ in range(60)
    ]
    for eps, init in pairs:
        if init <= 0:
            continue
        b = PrivacyBudget(100.0)
        p = Q.OnlinePMW(
            hist, epsilon=eps, n_public=6.0, cutoff=3, threshold=2.0, init=init, budget=b
        )
        want = decimal_of(eps) + decimal_of(init)
        cost = p.privacy_cost
        assert charged(cost.epsilon) == want, (eps, init)
        assert Fraction(cost.rho) >= want * want / 2
        again = PrivacyBudget(100.0)
        charge(again, charged_amounts(cost), "again")  # as the release systems charge
        assert again.spent == b.spent, (eps, init)


@pytest.mark.parametrize("init", [None, 1 / 9])
def test_boosting_laplace_draws_and_fits_sum_within_epsilon_exactly(init):
    """Every epsilon a BoostingForQueries run calibrates for, at its decimal value (what
    the Laplace fits and each exponential-mechanism draw are DP for): the warm start,
    T NoisyFits and the k(T - 1) draws sum to at most epsilon, exactly -- no 2**-40
    allowance."""
    for eps in EPSILONS:
        for T in (3, 5, 9):
            for k in (1, 4, 17):
                for share in (0.2, 0.05, 0.5):
                    b = Q.BoostingForQueries(
                        WL,
                        epsilon=eps,
                        n_public=500.0,
                        rounds=T,
                        k=k,
                        sample_share=share,
                        init=None if init is None else eps * init,
                    )
                    total = (
                        (decimal_of(b.init) if b.init else 0)
                        + T * decimal_of(b.eps_base)
                        + k * sum(decimal_of(b._eps_draw(t)) for t in range(2, T + 1))
                    )
                    assert total <= decimal_of(eps), (eps, T, k, share)
