"""dpfast.query_release: data model, strided kernels, baselines, MWEM, Boosting for Queries,
privacy costs."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from dpfast import _core
from dpfast.accounting import PrivacyBudget
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    CellQuery,
    Domain,
    Histogram,
    MarginalWorkload,
    boosting_alpha,
    gaussian_marginals,
    laplace_marginals,
    laplace_per_query,
    marginal_sensitivity,
    reweight,
)
from release_helpers import SHAPE, Spy
from stat_helpers import ALPHA, chi2_pvalue

# ------------------------------------------------------------------ data model


def test_from_codes_known_answer(dom):
    codes = np.array([[0, 0, 0, 0], [2, 3, 1, 4], [2, 3, 1, 4], [1, 2, 0, 3]])
    h = Histogram.from_codes(dom, codes)
    assert h.counts.sum() == 4
    assert h.counts[np.ravel_multi_index((2, 3, 1, 4), SHAPE)] == 2
    assert h.counts[np.ravel_multi_index((1, 2, 0, 3), SHAPE)] == 1
    assert "counts" not in repr(h) and "2.0" not in repr(h)


def test_from_codes_clamps_private_codes_never_raises(dom):
    codes = np.array([[-5, 0, 0, 0], [99, 7, 3, 10**12]])
    h = Histogram.from_codes(dom, codes)
    assert h.counts[0] == 1
    assert h.counts[np.ravel_multi_index((2, 3, 1, 4), SHAPE)] == 1


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((2, 4)),
        np.zeros((2, 4), dtype=bool),
        np.zeros((2, 4), dtype=object),
        [[0, 0, 0, 0.0], [0, 0, 0, 0]],
    ],
)
def test_from_codes_refuses_by_dtype(dom, bad):
    with pytest.raises(TypeError):
        Histogram.from_codes(dom, bad)


def test_from_codes_clamps_uint64_codes_like_int64(dom):
    """uint64 codes are integers: clamped like any code, not refused by dtype (the
    project's conversion rule, docs/security-model.md)."""
    codes = np.array([[2**64 - 1, 0, 0, 0], [0, 0, 0, 0]], dtype=np.uint64)
    h = Histogram.from_codes(dom, codes)
    assert h.counts[0] == 1
    assert h.counts[np.ravel_multi_index((SHAPE[0] - 1, 0, 0, 0), SHAPE)] == 1


def test_from_codes_refuses_by_shape(dom):
    with pytest.raises(dpfast.PrivacyParameterError):
        Histogram.from_codes(dom, np.zeros((3, 3), dtype=np.int64))


def test_from_dataframe(dom):
    import pandas as pd  # the [test] extra installs it

    df = pd.DataFrame({"d": [4, 0], "c": [1, 0], "b": [3, 0], "a": [2, 0], "x": [9, 9]})
    h = Histogram.from_codes(dom, df)
    assert h.counts[0] == 1 and h.counts[-1] == 1
    df["a"] = df["a"].astype(float)
    with pytest.raises(TypeError):
        Histogram.from_codes(dom, df)


def test_histogram_counts_clamped_and_typed(dom):
    c = np.full(dom.size, 1.0)
    c[0], c[1], c[2] = -3.0, np.nan, np.inf
    h = Histogram(dom, c)
    assert h.counts[0] == 0 and h.counts[1] == 0 and h.counts[2] == 2.0**53
    with pytest.raises(TypeError):
        Histogram(dom, np.ones(dom.size, dtype=np.longdouble))
    with pytest.raises(TypeError):
        Histogram(dom, np.ones(dom.size, dtype=complex))


def test_domain_validation():
    with pytest.raises(dpfast.PrivacyParameterError):
        Domain(["a", "a"], [2, 2])
    with pytest.raises(dpfast.PrivacyParameterError):
        Domain(["a", "b"], [2**13, 2**12])
    with pytest.raises(TypeError):
        Domain(["a"], [2.0])
    with pytest.raises(dpfast.PrivacyParameterError):
        Domain(["a"], [0])


# ------------------------------------------------------------------ kernels


def _marg(t, keep):
    d = t.ndim
    return t.sum(axis=tuple(a for a in range(d) if not keep >> a & 1)).ravel()


@pytest.mark.parametrize("shape", [(7,), (3, 1, 4), SHAPE, (2, 3, 2, 1, 3, 2)])
def test_reduce_expand_every_mask(shape):
    g = np.random.default_rng(1)
    N = math.prod(shape)
    h = g.random(N)
    t = h.reshape(shape)
    shp = np.asarray(shape, dtype=np.int64)
    for keep in range(1 << len(shape)):
        ref = _marg(t, keep)
        out = np.empty(ref.size)
        _core.rel_reduce(h, shp, keep, out)
        np.testing.assert_allclose(out, ref, rtol=1e-12)
        f = g.random(ref.size)
        w = h.copy()
        _core.rel_expand_mul(w, shp, keep, f)
        fb = f.reshape([shape[a] if keep >> a & 1 else 1 for a in range(len(shape))])
        np.testing.assert_allclose(w.reshape(shape), t * fb, rtol=1e-12)


def test_slice_sum_and_scale(dom):
    g = np.random.default_rng(2)
    h = g.random(dom.size)
    t = h.reshape(SHAPE)
    for attrs in itertools.chain.from_iterable(
        itertools.combinations(range(4), k) for k in range(5)
    ):
        vals = tuple(SHAPE[a] - 1 for a in attrs)
        q = CellQuery(dom, attrs, vals)
        idx = tuple(SHAPE[a] - 1 if a in attrs else slice(None) for a in range(4))
        assert q.evaluate(h) == pytest.approx(t[idx].sum(), rel=1e-12)
        assert q.n_cells == t[idx].size
        w = h.copy()
        before = _core.rel_slice_scale(
            w, np.asarray(SHAPE, dtype=np.int64), q.mask, q.vals, 3.0
        )
        assert before == pytest.approx(t[idx].sum(), rel=1e-12)
        ref = t.copy()
        ref[idx] *= 3.0
        np.testing.assert_allclose(w.reshape(SHAPE), ref, rtol=1e-12)


def test_kernels_refuse_bad_arrays(dom):
    shp = np.asarray(SHAPE, dtype=np.int64)
    with pytest.raises(ValueError):
        _core.rel_reduce(np.zeros(5), shp, 1, np.zeros(3))
    with pytest.raises(ValueError):
        _core.rel_slice_sum(np.zeros(dom.size), shp, 1, np.array([7, 0, 0, 0]))
    with pytest.raises(TypeError):
        _core.rel_slice_sum(
            np.zeros(dom.size, dtype=np.float32), shp, 1, np.zeros(4, np.int64)
        )
    with pytest.raises(ValueError):
        CellQuery(dom, ("a",), (1, 2))
    with pytest.raises(dpfast.PrivacyParameterError):
        CellQuery(dom, ("a",), (3,))


@pytest.mark.parametrize("k", [1, 2, 3])
def test_workload_answers_and_sensitivity(dom, hist, k):
    wl = MarginalWorkload.k_way(dom, k)
    t = hist.counts.reshape(SHAPE)
    ref = np.concatenate([_marg(t, int(mk)) for mk in wl.masks])
    np.testing.assert_allclose(wl.answer(hist), ref)
    assert wl.n_queries == ref.size and wl.m == math.comb(4, k)
    for q in (0, wl.n_queries // 2, wl.n_queries - 1):
        assert wl.cell_query(q).evaluate(hist.counts) == ref[q]
    # exact L1 / L2 sensitivity: one added record moves every marginal by one cell
    l1, l2 = marginal_sensitivity(wl)
    c = hist.counts.copy()
    c[17] += 1
    diff = wl.answer(c) - wl.answer(hist)
    assert np.abs(diff).sum() == l1 == wl.m
    assert math.isclose(np.sqrt((diff**2).sum()), l2)


def test_mw_marginal_equals_cell_by_cell(dom):
    """One marginal's C update equals MWEM's rule applied cell by cell in order."""
    from dpfast.query_release._mw import MWState

    g = np.random.default_rng(3)
    wl = MarginalWorkload(dom, [("b", "d")])
    n = 500.0
    targets = g.random(wl.n_queries) * 60
    targets[[2, 5]] = np.nan
    a = MWState(dom, n, g.random(dom.size))
    b = MWState(dom, n, a.w.copy())
    a.fit_marginal(int(wl.masks[0]), targets)
    for q in range(wl.n_queries):
        if targets[q] == targets[q]:
            cq = wl.cell_query(q)
            est = b.estimate(cq)
            b.scale(cq, math.exp((targets[q] - est) / (2 * n)))
    np.testing.assert_allclose(a.distribution(), b.distribution(), rtol=1e-12)


# ------------------------------------------------------------------ baselines


def test_baseline_noise_scales(dom, hist, seeded):
    wl = MarginalWorkload.k_way(dom, 2)
    truth = wl.answer(hist)
    eps = 0.5
    for fn, scale in (
        (laplace_marginals, wl.m / eps),
        (laplace_per_query, wl.n_queries / eps),
    ):
        noise = np.concatenate(
            [fn(wl, hist, epsilon=eps, rng=seeded(s)) - truth for s in range(40)]
        )
        assert stats.kstest(noise / scale, stats.laplace.cdf).pvalue > ALPHA
    clipped = laplace_marginals(wl, hist, epsilon=0.01, n_public=300.0, rng=seeded(1))
    assert clipped.min() >= 0 and clipped.max() <= 300.0
    g = gaussian_marginals(wl, hist, epsilon=1.0, delta=1e-6, rng=seeded(2))
    sigma = dpfast.mechanisms.gaussian_sigma(1.0, 1e-6, math.sqrt(wl.m))
    assert 0.8 < np.std(g - truth) / sigma < 1.25


def test_baselines_charge_before_reading(dom):
    wl = MarginalWorkload.k_way(dom, 2)
    spy = Spy(dom, np.ones(dom.size))
    b = PrivacyBudget(0.3)
    with pytest.raises(dpfast.BudgetExceededError):
        laplace_marginals(wl, spy, epsilon=0.5, budget=b)
    assert spy.reads == 0
    with pytest.raises(dpfast.PrivacyParameterError):
        laplace_marginals(wl, spy, epsilon=-1.0, budget=b)
    assert spy.reads == 0 and b.spent.epsilon == 0
    laplace_marginals(wl, spy, epsilon=0.25, budget=b)
    assert b.spent.epsilon == 0.25 and spy.reads > 0


# ------------------------------------------------------------------ MWEM


def test_mwem_one_round_two_cells_exact_law(seeded):
    """T = 1 on a 2-cell universe: the selection is the exponential mechanism with
    exponent ε_r |n/2 - x_i| / 2, the measurement is x_q + Lap(1/ε_r), and the synthetic
    histogram is A_0 exp(q (m - n/2)/(2n)) renormalised (Hardt et al. Alg. 1)."""
    dom = Domain(["v"], [2])
    x = np.array([30.0, 10.0])
    h = Histogram(dom, x)
    wl = MarginalWorkload(dom, [("v",)])
    n, eps, T = 40.0, 0.4, 1
    e_r = eps / (2 * T)
    picks = np.zeros(2)
    noise = []
    rng = seeded(7)
    for _ in range(3000):
        r = MWEM(
            wl, epsilon=eps, rounds=T, n_public=n, unit="query", passes=1, rng=rng
        ).run(h)
        ((_, q, m),) = r.log
        picks[q] += 1
        noise.append(m[0] - x[q])
        f = math.exp((m[0] - n / 2) / (2 * n))
        want = np.where(np.arange(2) == q, f, 1.0)
        np.testing.assert_allclose(r.histogram.counts, n * want / want.sum(), rtol=1e-9)
    s = np.abs(n / 2 - x)
    p = np.exp(e_r * s / 2)
    assert chi2_pvalue(picks, p / p.sum()) > ALPHA
    assert stats.kstest(np.asarray(noise) * e_r, stats.laplace.cdf).pvalue > ALPHA


def test_mwem_cost_and_budget(dom, hist, seeded):
    wl = MarginalWorkload.k_way(dom, 2)
    m = MWEM(wl, epsilon=1.0, rounds=5, n_public=hist.counts.sum(), init=0.1, rng=seeded())
    e_r = 0.9 / 10
    c = m.privacy_cost
    assert c.epsilon == 1.0 and c.delta == 0.0
    assert c.rho == pytest.approx(0.1**2 / 2 + 5 * (e_r**2 / 8 + e_r**2 / 2))
    assert c.rho >= 0.1**2 / 2 + 5 * (e_r**2 / 8 + e_r**2 / 2)
    b = PrivacyBudget(1.0)
    spy = Spy(dom, hist.counts)
    r = MWEM(wl, epsilon=1.0, rounds=5, n_public=300.0, budget=b, rng=seeded()).run(spy)
    assert b.spent.epsilon == 1.0 and len(b.ledger) == 1
    assert len(r.log) == 5 and r.histogram.counts.sum() == pytest.approx(300.0)
    spy.reads = 0
    with pytest.raises(dpfast.BudgetExceededError):
        MWEM(wl, epsilon=1.0, rounds=5, n_public=300.0, budget=b).run(spy)
    assert spy.reads == 0


def test_mwem_variants_run(dom, hist, seeded):
    wl = MarginalWorkload.k_way(dom, 2)
    n = hist.counts.sum()
    truth = wl.answer(hist)
    errs = {}
    for kw in (
        dict(unit="group"),
        dict(unit="query"),
        dict(select="permute_and_flip"),
        dict(output="average", passes=1),
        dict(mode="fast"),
        dict(init=0.2, exclude_measured=False),
    ):
        r = MWEM(wl, epsilon=2.0, rounds=6, n_public=n, rng=seeded(3), **kw).run(hist)
        assert np.isfinite(r.answers).all()
        errs[str(kw)] = np.abs(r.answers - truth).max() / n
    assert max(errs.values()) < 0.5
    # group units: all six rounds measured distinct marginals
    r = MWEM(wl, epsilon=2.0, rounds=6, n_public=n, rng=seeded(4)).run(hist)
    assert sorted(u for _, u, _ in r.log) == list(range(6))


@pytest.mark.parametrize(
    "kw",
    [
        dict(rounds=0),
        dict(epsilon=0.0),
        dict(init=2.0),
        dict(unit="cells"),
        dict(passes=0),
        dict(n_public=-1.0),
    ],
)
def test_mwem_validation(dom, kw):
    wl = MarginalWorkload.k_way(dom, 2)
    args = dict(epsilon=1.0, rounds=3, n_public=10.0)
    args.update(kw)
    with pytest.raises(dpfast.PrivacyParameterError):
        MWEM(wl, **args)


# ------------------------------------------------------------------ boosting


def test_reweight_bounds():
    g = np.random.default_rng(4)
    lam, mu, rho = 5.0, 40.0, 1.0
    d = g.random(10000) * 100
    a = reweight(d, lam, mu)
    assert a.min() >= -1 and a.max() <= 1
    assert (a[d <= lam] == 1).all() and (a[d >= lam + mu] == -1).all()
    d2 = np.clip(d + g.uniform(-rho, rho, d.size), 0, None)
    assert np.abs(reweight(d2, lam, mu) - a).max() <= 2 * rho / mu + 1e-12
    assert (reweight(d, lam, math.inf) == 1).all()


def test_boosting_cost_by_hand(dom):
    wl = MarginalWorkload.k_way(dom, 2)
    b = BoostingForQueries(
        wl, epsilon=1.0, n_public=500.0, rounds=3, k=40, eta=0.2, sample_share=0.2, init=0.1
    )
    alpha = 0.5 * math.log(1.4 / 0.6)
    assert boosting_alpha(0.2) == pytest.approx(alpha)
    mu = 2 * alpha * 40 * 3 * 2 / (0.2 * 0.9)
    assert b.mu == pytest.approx(mu, rel=1e-9) and b.mu >= mu
    assert b.eps_base == pytest.approx(0.8 * 0.9 / 3)
    c = b.privacy_cost
    eps_t = [0.0, 4 * alpha / b.mu, 8 * alpha / b.mu]
    sample = 40 * sum(eps_t)
    assert sample == pytest.approx(0.2 * 0.9, rel=1e-9)
    assert c.epsilon == pytest.approx(1.0, rel=1e-12) and c.epsilon <= 1.0 + 1e-15
    rho = 0.1**2 / 2 + 3 * b.eps_base**2 / 2 + 40 * sum(e * e for e in eps_t) / 8
    assert c.rho == pytest.approx(rho) and c.rho >= rho
    assert b.lam == pytest.approx(2 * 40 / b.eps_base)
    one = BoostingForQueries(wl, epsilon=1.0, n_public=500.0, rounds=1, k=40)
    assert one.mu == math.inf and one.eps_base == 1.0 and one.privacy_cost.epsilon == 1.0


def test_boosting_runs_and_charges(dom, hist, seeded):
    wl = MarginalWorkload.k_way(dom, 2)
    n = hist.counts.sum()
    b = PrivacyBudget(2.0)
    r = BoostingForQueries(
        wl, epsilon=2.0, n_public=n, rounds=3, k=30, fit_passes=5, rng=seeded(), budget=b
    ).run(hist, return_weights=True)
    assert b.spent.epsilon == pytest.approx(2.0) and len(b.ledger) == 1
    assert r.synopses.shape == (3, wl.n_queries)
    np.testing.assert_array_equal(r.answers, np.median(r.synopses, axis=0))
    assert r.weights.sum() == pytest.approx(1.0) and (r.weights > 0).all()
    r2 = BoostingForQueries(
        wl, epsilon=2.0, n_public=n, rounds=1, k=30, round_to=50, rng=seeded()
    ).run(hist)
    assert r2.weights is None and np.isfinite(r2.answers).all()
    with pytest.raises(dpfast.PrivacyParameterError):
        BoostingForQueries(wl, epsilon=2.0, n_public=n, rounds=2, k=30)
    with pytest.raises(dpfast.PrivacyParameterError):
        BoostingForQueries(wl, epsilon=2.0, n_public=n, rounds=3, k=30, eta=0.5)


def test_boosting_first_round_draws_uniform(dom, seeded):
    wl = MarginalWorkload(dom, [("a",)])
    b = BoostingForQueries(wl, epsilon=1.0, n_public=10.0, rounds=3, k=6000, rng=seeded(9))
    draws = b._draw(np.zeros(wl.n_queries), 1)
    assert chi2_pvalue(np.bincount(draws, minlength=3), [1 / 3] * 3) > ALPHA
    cum = np.array([0.0, 1.0, 3.0])
    draws = b._draw(cum, 2)
    p = np.exp(-b.alpha * cum)
    assert chi2_pvalue(np.bincount(draws, minlength=3), p / p.sum()) > ALPHA


def test_release_exported():
    assert "query_release" in dpfast.__all__ and dpfast.query_release.MWEM is MWEM
    assert dr.ChaCha20 is not None


def test_mwem_gaussian_zcdp(seeded):
    """measure="gaussian": ρ = zcdp_budget(ε, δ), ε_sel = 2 sqrt(ρ_r), σ² = 1/ρ_r, and the
    measurement noise has that law (T = 1 on a 2-cell universe)."""
    from dpfast.accounting import zcdp_budget, zcdp_to_dp

    dom = Domain(["v"], [2])
    h = Histogram(dom, [30.0, 10.0])
    wl = MarginalWorkload(dom, [("v",)])
    m = MWEM(
        wl, epsilon=1.0, delta=1e-6, measure="gaussian", rounds=4, n_public=40.0, init=0.1
    )
    rho = zcdp_budget(1.0, 1e-6)
    rho_r = (rho - 0.1**2 / 2) / 4
    assert m.rho == rho and zcdp_to_dp(rho, 1e-6) <= 1.0
    assert m.eps_round == pytest.approx(2 * math.sqrt(rho_r))
    assert m.eps_round <= 2 * math.sqrt(rho_r)
    assert m.sigma2 == pytest.approx(1 / rho_r) and m.sigma2 >= 1 / rho_r
    c = m.privacy_cost
    assert (c.epsilon, c.delta, c.rho) == (1.0, 1e-6, rho)
    b = PrivacyBudget(1.0, 1e-6)
    MWEM(
        wl,
        epsilon=1.0,
        delta=1e-6,
        measure="gaussian",
        rounds=2,
        n_public=40.0,
        rng=seeded(11),
        budget=b,
    ).run(h)
    assert b.spent.epsilon == 1.0 and b.spent.delta == 1e-6 and len(b.ledger) == 1
    m1 = MWEM(
        wl,
        epsilon=1.0,
        delta=1e-6,
        measure="gaussian",
        rounds=1,
        n_public=40.0,
        unit="query",
        passes=1,
        rng=seeded(12),
    )
    noise = []
    for _ in range(3000):
        ((_, q, meas),) = m1.run(h).log
        noise.append(int(meas[0] - h.counts[q]))
    sigma = math.sqrt(m1.sigma2)
    support = np.arange(-int(10 * sigma), int(10 * sigma) + 1)
    pmf = np.exp(-(support.astype(float) ** 2) / (2 * m1.sigma2))
    counts = np.bincount(np.asarray(noise) - support[0], minlength=support.size)
    assert counts.size == support.size
    assert chi2_pvalue(counts, pmf / pmf.sum()) > ALPHA
    for bad in (dict(measure="gaussian"), dict(delta=1e-6)):
        with pytest.raises(dpfast.PrivacyParameterError):
            MWEM(wl, epsilon=1.0, rounds=2, n_public=40.0, **bad)


def test_boosting_gaussian_zcdp(dom, hist, seeded):
    from dpfast.accounting import zcdp_budget

    wl = MarginalWorkload.k_way(dom, 2)
    b = BoostingForQueries(
        wl,
        epsilon=1.0,
        delta=1e-6,
        noise="gaussian",
        n_public=hist.counts.sum(),
        rounds=3,
        k=30,
        init=0.1,
        sample_share=0.2,
        fit_passes=3,
        rng=seeded(),
    )
    rho = zcdp_budget(1.0, 1e-6)
    rest = rho - 0.1**2 / 2
    c = b.privacy_cost
    assert (c.epsilon, c.delta, c.rho) == (1.0, 1e-6, rho)
    parts = dict(c.parts)
    assert parts["base_rho"] == pytest.approx(0.8 * rest)
    assert (
        parts["sampling_rho"] == pytest.approx(0.2 * rest)
        and parts["sampling_rho"] <= 0.2 * rest
    )
    assert sum(parts.values()) <= rho * (1 + 1e-12)
    assert b.sigma2 == pytest.approx(30 / (2 * 0.8 * rest / 3))
    r = b.run(hist)
    assert np.isfinite(r.answers).all()
    with pytest.raises(dpfast.PrivacyParameterError):
        BoostingForQueries(wl, epsilon=1.0, noise="gaussian", n_public=10.0, rounds=3, k=5)
