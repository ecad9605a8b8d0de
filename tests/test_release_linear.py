"""General linear query workloads (dpfast.query_release.LinearWorkload): construction and
refusals by type/shape/public value, exact sensitivities, the CSR kernels against numpy,
MWEM's exact law at T = 1 with a fractional query, the baselines' noise scale, and the
marginal path reproduced when the matrix encodes the same marginal cells."""

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import sparse, stats

import dpfast
from dpfast import _core
from dpfast.accounting import PrivacyBudget
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    CellQuery,
    Domain,
    Histogram,
    LinearQuery,
    LinearWorkload,
    MarginalWorkload,
    gaussian_marginals,
    laplace_marginals,
    laplace_per_query,
    marginal_sensitivity,
)
from release_helpers import SHAPE, Spy
from stat_helpers import ALPHA, chi2_pvalue

# ------------------------------------------------------------------ data model


def test_dense_sparse_csr_and_queries_agree(dom, hist):
    g = np.random.default_rng(1)
    M = g.random((6, dom.size)) * (g.random((6, dom.size)) < 0.3)
    M[2] = 0.0  # an empty query answers 0
    dense = LinearWorkload(dom, M)
    sp = LinearWorkload(dom, sparse.csr_matrix(M))
    coo = LinearWorkload(dom, sparse.coo_matrix(M))
    csr = sparse.csr_matrix(M)
    raw = LinearWorkload.from_csr(dom, csr.indptr, csr.indices, csr.data)
    byq = LinearWorkload.from_queries(dom, [LinearQuery(dom, row) for row in M])
    want = M @ hist.counts
    for w in (dense, sp, coo, raw, byq):
        assert w.n_queries == 6 and not w.binary
        np.testing.assert_allclose(w.answer(hist), want, rtol=1e-12, atol=1e-12)
    nd = LinearWorkload(dom, M.reshape((6,) + SHAPE))
    np.testing.assert_array_equal(nd.answer(hist), dense.answer(hist))
    out = np.empty(6)
    assert dense.answer(hist.counts, out=out) is out


def test_cell_queries_and_marginals_as_rows(dom, hist):
    wl = MarginalWorkload.k_way(dom, 2)
    lw = wl.to_linear()
    assert lw.binary and lw.values is None and lw.n_queries == wl.n_queries
    assert lw.indices.size == wl.m * dom.size
    np.testing.assert_array_equal(lw.answer(hist), wl.answer(hist))
    assert lw.sensitivity() == wl.sensitivity() == marginal_sensitivity(lw)
    qs = [
        CellQuery(dom, ("a", "d"), (2, 4)),
        CellQuery(dom, "b", 1),
        LinearQuery.from_cells(dom, [0, 5, 7]),
    ]
    w = LinearWorkload.from_queries(dom, qs)
    assert w.binary
    np.testing.assert_allclose(w.answer(hist), [q.evaluate(hist.counts) for q in qs])


def test_exact_sensitivity(dom):
    M = np.zeros((3, dom.size))
    M[0, :] = 1.0
    M[1, :10] = 1.0
    M[2, 5] = 1.0
    w = LinearWorkload(dom, M)
    l1, l2 = w.sensitivity()  # cell 5 is in all three
    assert l1 == 3.0 and Fraction(l2) ** 2 >= 3 and l2 == pytest.approx(math.sqrt(3.0))
    F = np.full((4, dom.size), 0.1)
    f = LinearWorkload(dom, F)
    l1, l2 = f.sensitivity()
    assert l1 >= math.fsum([0.1] * 4) and l1 == pytest.approx(0.4, rel=1e-14)
    assert l2 >= math.sqrt(math.fsum([0.01] * 4)) and l2 == pytest.approx(0.2, rel=1e-14)


@pytest.mark.parametrize(
    "bad",
    [
        np.array([[0.5]], dtype=object),
        np.ones((2, 120), dtype=np.complex128),
        np.ones((2, 120), dtype=np.longdouble),
        [["a"] * 120],
    ],
)
def test_refused_by_type(dom, bad):
    with pytest.raises(TypeError):
        LinearWorkload(dom, bad)


@pytest.mark.parametrize(
    "bad",
    [
        np.full((2, 120), 1.5),
        np.full((2, 120), -0.1),
        np.full((2, 120), np.nan),
        np.full((2, 120), np.inf),
        np.ones((2, 119)),
        np.ones(120),
        np.ones((0, 120)),
    ],
)
def test_refused_by_public_value_or_shape(dom, bad):
    with pytest.raises(dpfast.PrivacyParameterError):
        LinearWorkload(dom, bad)


def test_from_csr_validation(dom):
    ok = LinearWorkload.from_csr(dom, [0, 2, 3], [4, 1, 119])
    assert ok.binary and ok.n_queries == 2
    np.testing.assert_array_equal(ok.indices, [1, 4, 119])  # sorted within rows
    # explicit zeros are dropped, empty rows (also the last ones) answer 0
    z = LinearWorkload.from_csr(dom, [0, 2, 2, 3, 3], [4, 1, 7], [0.5, 0.0, 0.0])
    np.testing.assert_array_equal(z.indptr, [0, 1, 1, 1, 1])
    np.testing.assert_array_equal(z.answer(np.ones(dom.size)), [0.5, 0, 0, 0])
    with pytest.raises(TypeError):
        LinearWorkload.from_csr(dom, [0, 1], [1.0])
    with pytest.raises(TypeError):
        LinearWorkload.from_csr(dom, np.array([0, 1], dtype=np.uint64), [1])
    for ptr, idx in (
        ([0, 2], [1]),
        ([1, 1], [1]),
        ([0, 2, 1], [1, 2]),
        ([0], []),
        ([0, 1], [120]),
        ([0, 1], [-1]),
        ([0, 2], [3, 3]),
    ):
        with pytest.raises(dpfast.PrivacyParameterError):
            LinearWorkload.from_csr(dom, ptr, idx)
    with pytest.raises(dpfast.PrivacyParameterError):
        LinearWorkload.from_csr(dom, [0, 1], [1], [2.0])
    with pytest.raises(dpfast.PrivacyParameterError):
        LinearWorkload.from_queries(Domain(["z"], [120]), [CellQuery(dom, "a", 0)])
    with pytest.raises(TypeError):
        LinearWorkload.from_queries(dom, [np.ones(120)])


def test_kernels_refuse_malformed_rows():
    w = np.ones(10)
    out = np.empty(1)
    ptr = np.array([0, 2], dtype=np.int64)
    with pytest.raises(ValueError):
        _core.rel_csr_matvec(w, ptr, np.array([0, 10], dtype=np.int32), None, out)
    with pytest.raises(ValueError):
        _core.rel_csr_matvec(w, ptr, np.array([0], dtype=np.int32), None, out)
    with pytest.raises(ValueError):
        _core.rel_csr_matvec(w, ptr, np.array([0, 1], dtype=np.int32), np.ones(1), out)
    with pytest.raises(ValueError):
        _core.rel_mw_rows(
            w,
            ptr,
            np.array([0, 1], dtype=np.int32),
            None,
            np.array([1], dtype=np.int64),
            np.ones(1),
            1,
            10.0,
            1.0,
        )


def test_mw_rows_matches_sequential_reference(dom):
    """The C step A(x) <- A(x) exp(q(x)(m - q(A))/(2n)), query after query, pass after
    pass, against numpy on a fractional and a 0/1 workload."""
    g = np.random.default_rng(2)
    n = 500.0
    for M in (
        g.random((5, dom.size)) * (g.random((5, dom.size)) < 0.5),
        (g.random((5, dom.size)) < 0.3).astype(float),
    ):
        w = LinearWorkload(dom, M)
        rows = np.array([3, 0, 4, 0], dtype=np.int64)
        targets = g.random(4) * n
        ref = np.full(dom.size, 1.0 / dom.size)
        for _ in range(3):
            for r, t in zip(rows, targets):
                est = n * (M[r] @ ref) / ref.sum()
                ref = ref * np.exp(M[r] * (t - est) / (2 * n))
        got = np.full(dom.size, 1.0 / dom.size)
        z = _core.rel_mw_rows(got, w.indptr, w.indices, w.values, rows, targets, 3, n, 1.0)
        assert z == 1.0
        np.testing.assert_allclose(got, ref / ref.sum(), rtol=1e-11)


# ------------------------------------------------------------------ MWEM


def test_mwem_one_round_general_query_exact_law(seeded):
    """T = 1 on a 2-cell universe with fractional queries: the selection is the
    exponential mechanism with exponent ε_r |q(A_0) - q(x)| / 2, the measurement
    q(x) + Lap(1/ε_r), and A = A_0 exp(q (m - q(A_0))/(2n)) renormalised (Hardt, Ligett,
    McSherry 2012, Alg. 1)."""
    dom = Domain(["v"], [2])
    x = np.array([30.0, 10.0])
    h = Histogram(dom, x)
    Q = np.array([[1.0, 0.5], [0.25, 1.0], [0.0, 0.0]])
    wl = LinearWorkload(dom, Q)
    n, eps = 40.0, 0.4
    e_r = eps / 2
    qa0 = n * Q @ np.array([0.5, 0.5])
    truth = Q @ x
    picks = np.zeros(3)
    noise = []
    rng = seeded(11)
    for i in range(3000):
        r = MWEM(
            wl,
            epsilon=eps,
            rounds=1,
            n_public=n,
            unit=("query", "group")[i % 2],
            passes=1,
            rng=rng,
        ).run(h)
        ((_, q, m),) = r.log
        picks[q] += 1
        noise.append(m[0] - truth[q])
        want = np.exp(Q[q] * (m[0] - qa0[q]) / (2 * n))
        np.testing.assert_allclose(r.histogram.counts, n * want / want.sum(), rtol=1e-9)
    p = np.exp(e_r * np.abs(qa0 - truth) / 2)
    assert chi2_pvalue(picks, p / p.sum()) > ALPHA
    assert stats.kstest(np.asarray(noise) * e_r, stats.laplace.cdf).pvalue > ALPHA


def test_matrix_of_marginal_cells_reproduces_marginal_path(dom, hist, seeded):
    """Same seed, same measurements and the same synthetic data when the matrix encodes
    the marginal workload's cells (the answers agree to rounding, and the exponential
    mechanism's secure grid sees the same scores)."""
    wl = MarginalWorkload.k_way(dom, 2)
    lw = wl.to_linear()
    n = float(hist.counts.sum())
    for kw in (dict(unit="query"), dict(unit="query", init=0.2, output="average")):
        a = MWEM(wl, epsilon=2.0, rounds=8, n_public=n, rng=seeded(3), **kw).run(hist)
        b = MWEM(lw, epsilon=2.0, rounds=8, n_public=n, rng=seeded(3), **kw).run(hist)
        assert [u for _, u, _ in a.log] == [u for _, u, _ in b.log]
        for (_, _, ma), (_, _, mb) in zip(a.log, b.log):
            np.testing.assert_array_equal(ma, mb)
        np.testing.assert_allclose(b.histogram.counts, a.histogram.counts, rtol=1e-9)
        assert a.privacy == b.privacy
    # a LinearWorkload's group unit is one query: the same run as unit="query"
    c = MWEM(lw, epsilon=2.0, rounds=8, n_public=n, unit="group", rng=seeded(3)).run(hist)
    d = MWEM(lw, epsilon=2.0, rounds=8, n_public=n, unit="query", rng=seeded(3)).run(hist)
    np.testing.assert_array_equal(c.histogram.counts, d.histogram.counts)
    # boosting: the same draws, noisy answers and fits
    ba = BoostingForQueries(wl, epsilon=1.0, n_public=n, rounds=3, k=40, rng=seeded(4)).run(
        hist
    )
    bb = BoostingForQueries(lw, epsilon=1.0, n_public=n, rounds=3, k=40, rng=seeded(4)).run(
        hist
    )
    np.testing.assert_allclose(bb.answers, ba.answers, rtol=1e-9)
    assert ba.privacy == bb.privacy


def test_mwem_and_boosting_on_fractional_workload(dom, hist, seeded):
    g = np.random.default_rng(8)
    M = g.random((40, dom.size)) * (g.random((40, dom.size)) < 0.2)
    wl = LinearWorkload(dom, M)
    n = float(hist.counts.sum())
    truth = wl.answer(hist)
    r = MWEM(wl, epsilon=4.0, rounds=10, n_public=n, rng=seeded(5)).run(hist)
    assert len({u for _, u, _ in r.log}) == 10  # exclude_measured
    assert r.histogram.counts.sum() == pytest.approx(n)
    base = np.abs(n / dom.size * M.sum(axis=1) - truth).max()
    assert np.abs(r.answers - truth).max() < base  # it learned something
    b = BoostingForQueries(wl, epsilon=2.0, n_public=n, rounds=3, k=30, rng=seeded(6))
    res = b.run(hist)
    assert res.synopses.shape == (3, 40) and np.isfinite(res.answers).all()
    assert b.privacy_cost.epsilon == 2.0


def test_costs_and_budget_before_reading(dom, hist):
    M = np.random.default_rng(3).random((5, dom.size))
    wl = LinearWorkload(dom, M)
    mk = MarginalWorkload.k_way(dom, 1)
    a = MWEM(wl, epsilon=1.0, rounds=4, n_public=10.0, init=0.2).privacy_cost
    b = MWEM(mk, epsilon=1.0, rounds=4, n_public=10.0, init=0.2).privacy_cost
    assert a == b  # the cost ignores the workload
    spy = Spy(dom, hist.counts)
    bud = PrivacyBudget(0.5)
    for call in (
        lambda: MWEM(wl, epsilon=1.0, rounds=2, n_public=10.0, budget=bud).run(spy),
        lambda: laplace_marginals(wl, spy, epsilon=1.0, budget=bud),
        lambda: BoostingForQueries(
            wl, epsilon=1.0, n_public=10.0, rounds=1, k=3, budget=bud
        ).run(spy),
    ):
        with pytest.raises(dpfast.BudgetExceededError):
            call()
    assert spy.reads == 0 and bud.spent.epsilon == 0


def test_baselines_noise_scale(dom, hist, seeded):
    g = np.random.default_rng(4)
    M = g.random((30, dom.size)) * (g.random((30, dom.size)) < 0.4)
    wl = LinearWorkload(dom, M)
    truth = M @ hist.counts
    l1, l2 = wl.sensitivity()
    assert l1 == pytest.approx(M.sum(axis=0).max())
    eps = 0.7
    for fn, scale in ((laplace_marginals, l1 / eps), (laplace_per_query, 30 / eps)):
        noise = np.concatenate(
            [fn(wl, hist, epsilon=eps, rng=seeded(s)) - truth for s in range(20)]
        )
        assert stats.kstest(noise / scale, stats.laplace.cdf).pvalue > ALPHA
    sig = dpfast.mechanisms.gaussian_sigma(1.0, 1e-6, l2)
    noise = np.concatenate(
        [
            gaussian_marginals(wl, hist, epsilon=1.0, delta=1e-6, rng=seeded(s)) - truth
            for s in range(20)
        ]
    )
    assert stats.kstest(noise / sig, stats.norm.cdf).pvalue > ALPHA
