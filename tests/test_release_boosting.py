"""Boosting for Queries under advanced composition (erratum B2 with B5's per-round ε_t):
the privacy statement against a hand computation, the solved μ, and the refusals."""

import math

import numpy as np
import pytest

import dpfast
from dpfast.accounting import PrivacyBudget, heterogeneous_advanced_composition
from dpfast.query_release import BoostingForQueries, Domain, Histogram, MarginalWorkload


@pytest.fixture
def wl():
    return MarginalWorkload.k_way(Domain(["a", "b", "c"], [3, 4, 2]), 2)


def by_hand(alpha, k, T, mu, delta):
    """sqrt(2 ln(1/δ) k Σ_t ε_t²) + k Σ_t ε_t (e^{ε_t} − 1), ε_t = 4α(t−1)/μ, t = 2..T."""
    e = [4 * alpha * (t - 1) / mu for t in range(2, T + 1)]
    return math.sqrt(2 * math.log(1 / delta) * k * sum(x * x for x in e)) + k * sum(
        x * math.expm1(x) for x in e
    )


@pytest.mark.parametrize("k,T,delta", [(400, 3, 1e-6), (50, 9, 1e-8), (2000, 5, 1e-5)])
def test_advanced_statement_by_hand(wl, k, T, delta):
    b = BoostingForQueries(
        wl,
        epsilon=1.0,
        n_public=100.0,
        rounds=T,
        k=k,
        eta=0.2,
        sample_share=0.2,
        init=0.1,
        composition="advanced",
        delta=delta,
    )
    alpha = 0.5 * math.log(1.4 / 0.6)
    assert b.alpha == pytest.approx(alpha, rel=1e-15)
    c = b.privacy_cost
    assert c.epsilon == 1.0 and float(c.delta) == pytest.approx(delta, rel=1e-15)
    parts = dict(c.parts)
    hand = by_hand(alpha, k, T, b.mu, delta)
    assert parts["sampling"] >= hand  # rounded up
    assert parts["sampling"] == pytest.approx(hand, rel=1e-10)
    assert hand <= 0.2 * 0.9 * (1 + 1e-12)  # s (ε − ε_init)
    assert hand >= 0.2 * 0.9 * (1 - 1e-9)  # μ is the smallest that fits
    assert parts["base"] == pytest.approx(0.8 * 0.9) and float(
        parts["init"]
    ) == pytest.approx(0.1)
    # the same number through dpfast.accounting (k copies of each ε_t)
    eps_t = [4 * alpha * (t - 1) / b.mu for t in range(2, T + 1)]
    ref = heterogeneous_advanced_composition(np.repeat(eps_t, k), None, delta)
    assert ref.epsilon == pytest.approx(hand, rel=1e-9) and ref.delta == pytest.approx(
        delta
    )
    # against the pure reading: a smaller μ (a better λ + μ) for the same ε
    pure = BoostingForQueries(wl, epsilon=1.0, n_public=100.0, rounds=T, k=k, init=0.1)
    assert b.mu < pure.mu
    assert pure.privacy_cost.delta == 0.0


def test_basic_wins_for_few_draws(wl):
    """With k = 1 the basic sum is smaller than the advanced bound: μ is the pure one."""
    b = BoostingForQueries(
        wl, epsilon=1.0, n_public=10.0, rounds=3, k=1, composition="advanced", delta=1e-6
    )
    p = BoostingForQueries(wl, epsilon=1.0, n_public=10.0, rounds=3, k=1)
    assert b.mu == pytest.approx(p.mu, rel=1e-9)
    assert dict(b.privacy_cost.parts)["sampling"] <= 0.2 * (1 + 1e-12)


def test_one_round_is_free(wl):
    b = BoostingForQueries(
        wl, epsilon=0.5, n_public=10.0, rounds=1, k=100, composition="advanced", delta=1e-6
    )
    assert b.mu == math.inf and b.privacy_cost.epsilon == 0.5


@pytest.mark.parametrize(
    "kw",
    [
        dict(delta=0.0),
        dict(noise="gaussian", delta=1e-6),
        dict(delta=1e-6, composition="optimal"),
    ],
)
def test_refusals(wl, kw):
    args = dict(epsilon=1.0, n_public=10.0, rounds=3, k=10, composition="advanced")
    args.update(kw)
    with pytest.raises(dpfast.PrivacyParameterError):
        BoostingForQueries(wl, **args)
    with pytest.raises(dpfast.PrivacyParameterError):  # δ without advanced: refused
        BoostingForQueries(wl, epsilon=1.0, n_public=10.0, rounds=3, k=10, delta=1e-6)


def test_charges_epsilon_and_delta(wl, seeded):
    h = Histogram(wl.domain, np.arange(wl.domain.size) % 7)
    bud = PrivacyBudget(1.0, 1e-5)
    r = BoostingForQueries(
        wl,
        epsilon=1.0,
        n_public=float(h.counts.sum()),
        rounds=3,
        k=30,
        composition="advanced",
        delta=1e-6,
        budget=bud,
        rng=seeded(1),
    ).run(h)
    assert bud.spent.epsilon == 1.0 and bud.spent.delta == 1e-6
    assert np.isfinite(r.answers).all()
