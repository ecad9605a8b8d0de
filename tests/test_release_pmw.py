"""dpfast.query_release.OnlinePMW: exact law on a 2-element universe, ⊥ is free, at most c
updates, no data access after the halt, erratum E7, Thm 4.10, the theory fixed point."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

import dpfast
from dpfast.accounting import PrivacyBudget, max_divergence
from dpfast.query_release import (
    CellQuery,
    Domain,
    Histogram,
    MarginalWorkload,
    OnlinePMW,
    pmw_min_alpha,
    pmw_theory_alpha,
)
from dpfast.query_release._mw import MWState
from stat_helpers import ALPHA, chi2_pvalue
from test_release import Spy

DOM2 = Domain(["v"], [2])


def first_query_law(f, e, T, sigma):
    """Exact law of NumericSparse's answers to the first PMW query (δ = 0, continuous
    Laplace): threshold noise R ~ Lap(σ), query noise ν ~ Lap(2σ).
    (⊤ on f - e >= T, ⊥ then ⊤ on e - f >= T, ⊥ ⊥)."""
    a1, a2 = e + T - f, T - e + f
    F = stats.laplace(scale=2 * sigma).cdf
    dens = stats.laplace(scale=sigma).pdf

    def p(g):
        return integrate.quad(
            lambda r: dens(r) * g(r), -60 * sigma, 60 * sigma, limit=400, points=[0.0]
        )[0]

    top1 = p(lambda r: 1 - F(r + a1))
    top2 = p(lambda r: F(r + a1) * (1 - F(r + a2)))
    return np.array([top1, top2, 1 - top1 - top2])


def test_exact_law_two_element_universe(seeded):
    """The implementation's first-query outcome matches the exact law, and the law on
    neighbouring databases is within e^{ε1} (the comparisons' share of ε)."""
    eps, c, T = 1.0, 1, 3.0
    eps1 = 8 * eps / 9
    sigma = 2 * c / eps1
    x = np.array([22.0, 18.0])
    n = 40.0
    q = CellQuery(DOM2, ("v",), (0,))
    law = first_query_law(x[0], n / 2, T, sigma)
    counts = np.zeros(3)
    vals = []
    rng = seeded(31)
    h = Histogram(DOM2, x)
    for _ in range(4000):
        p = OnlinePMW(
            h, epsilon=eps, n_public=n, cutoff=c, threshold=T, clip=False, rng=rng
        )
        v, kind = p.answer(q)
        if kind == "hypothesis":
            counts[2] += 1
            assert v == n / 2
        else:
            assert kind == "measured"
            counts[p._ns.consumed - 1] += 1  # E7: 1 query if the first fired
            if p._ns.consumed == 1:
                vals.append(v - x[0])
    assert chi2_pvalue(counts, law) > ALPHA
    sigma2 = 2 * c / (2 * eps / 9)
    assert stats.kstest(np.asarray(vals) / sigma2, stats.laplace.cdf).pvalue > ALPHA
    # neighbours (one record of cell 0 removed; n is public)
    nb = first_query_law(x[0] - 1, n / 2, T, sigma)
    assert max(max_divergence(law, nb), max_divergence(nb, law)) <= eps1 + 1e-9


def test_bottom_costs_nothing(seeded):
    dom = Domain(["a", "b"], [3, 4])
    h = Histogram(dom, np.arange(12.0))
    wl = MarginalWorkload.k_way(dom, 1)
    b = PrivacyBudget(1.0)
    p = OnlinePMW(
        h,
        epsilon=0.5,
        n_public=66.0,
        cutoff=3,
        threshold=1e6,
        init=0.2,
        budget=b,
        rng=seeded(),
    )
    assert len(b.ledger) == 1 and b.spent.epsilon == pytest.approx(0.7)
    for _ in range(20):
        for q in range(wl.n_queries):
            _, kind = p.answer(wl.cell_query(q))
            assert kind == "hypothesis"
    assert p.updates_used == 0 and not p.halted
    assert len(b.ledger) == 1 and b.spent.epsilon == pytest.approx(0.7)
    assert p.privacy_cost.epsilon == pytest.approx(0.7) and p.privacy_cost.delta == 0.0
    assert p.synthetic().counts.sum() == pytest.approx(66.0)


@pytest.mark.parametrize("ask_both", [False, True])
def test_at_most_c_updates_and_no_data_after_halt(seeded, ask_both):
    dom = Domain(["a", "b"], [3, 4])
    spy = Spy(dom, np.arange(12.0))
    wl = MarginalWorkload.k_way(dom, 2)
    c = 5
    p = OnlinePMW(
        spy,
        epsilon=1.0,
        n_public=66.0,
        cutoff=c,
        threshold=-1e6,
        ask_both=ask_both,
        rng=seeded(),
    )
    assert spy.reads <= 1  # the warm start is off: nothing read yet
    spy.reads = 0
    kinds = []
    reads_at_halt = None
    for q in range(wl.n_queries):
        _, kind = p.answer(wl.cell_query(q))
        kinds.append(kind)
        if p.halted and reads_at_halt is None:
            reads_at_halt = (spy.reads, p.data_reads)
        assert p.updates_used <= c
    assert p.updates_used == c and p.halted
    per = 2 if ask_both else 1  # with T = -1e6 every asked comparison fires
    n_measured = math.ceil(c / per)
    assert kinds[:n_measured] == ["measured"] * n_measured
    assert set(kinds[n_measured:]) == {"exhausted"}
    assert p.data_reads == n_measured
    assert (spy.reads, p.data_reads) == reads_at_halt  # nothing read after the halt
    assert p._ns.consumed == c


def test_e7_second_query_only_after_bottom(seeded):
    """With the first one-sided query above threshold, the second is never asked."""
    dom = Domain(["a"], [4])
    h = Histogram(dom, np.array([50.0, 0.0, 0.0, 0.0]))
    p = OnlinePMW(h, epsilon=1.0, n_public=50.0, cutoff=100, threshold=-1e6, rng=seeded())
    for i in range(10):
        p.answer(CellQuery(dom, ("a",), (0,)))
        assert p._ns.consumed == i + 1
    p = OnlinePMW(h, epsilon=1.0, n_public=50.0, cutoff=100, threshold=1e6, rng=seeded())
    for i in range(10):
        p.answer(CellQuery(dom, ("a",), (0,)))
        assert p._ns.consumed == 2 * (i + 1)


def test_thm_4_10_update_bound_with_exact_answers():
    """Book MW steps (η = α/2) with exact values, only on queries off by more than α:
    fewer than 4 ln|X|/α² updates (Dwork & Roth Thm 4.10, erratum E4)."""
    dom = Domain(["a", "b", "c", "d"], [2, 2, 3, 2])
    g = np.random.default_rng(8)
    x = g.integers(0, 30, dom.size).astype(float)
    x[:5] = 0
    n = x.sum()
    qs = []
    for k in (1, 2, 3, 4):
        wl = MarginalWorkload.k_way(dom, k)
        qs += [wl.cell_query(q) for q in range(wl.n_queries)]
    for alpha in (0.2, 0.1):
        eta = alpha / 2
        st = MWState(dom, n)
        updates = 0
        changed = True
        while changed:
            changed = False
            for q in qs:
                v = q.evaluate(x)
                est = st.estimate(q)
                if abs(v - est) / n > alpha:
                    st.scale(q, math.exp(eta if v > est else -eta))
                    updates += 1
                    changed = True
        assert 0 < updates <= 4 * math.log(dom.size) / alpha**2


@pytest.mark.parametrize(
    "eps,delta,alpha,c",
    [
        (0.1, 0.0, 1.07, 39),
        (0.5, 0.0, 0.64, 107),
        (1.0, 0.0, 0.51, 167),
        (2.0, 0.0, 0.41, 261),
        (0.1, 1e-9, 1.47, 21),
        (0.5, 1e-9, 0.69, 92),
        (1.0, 1e-9, 0.50, 177),
        (2.0, 1e-9, 0.36, 341),
    ],
)
def test_fixed_point_matches_prototype_table(eps, delta, alpha, c):
    a, cc = pmw_theory_alpha(eps, delta, 48842, 57600, 659, 0.05)
    assert round(a, 2) == alpha and cc == c


def test_from_accuracy(seeded):
    dom = Domain(["a", "b"], [4, 4])
    h = Histogram(dom, np.full(16, 1000.0))
    n = 16000.0
    a_min, _ = pmw_theory_alpha(1.0, 0.0, n, 16, 10, 0.05)
    with pytest.raises(dpfast.PrivacyParameterError, match="at least"):
        OnlinePMW.from_accuracy(
            h, alpha=0.9 * a_min, beta=0.05, epsilon=1.0, n_public=n, n_queries=10
        )
    feasible = pmw_min_alpha(1.0, 0.0, n, 16, 10, 0.05)
    assert a_min <= feasible < 1.1 * a_min
    OnlinePMW.from_accuracy(
        h, alpha=feasible, beta=0.05, epsilon=1.0, n_public=n, n_queries=10, rng=seeded()
    )
    with pytest.raises(dpfast.PrivacyParameterError):
        OnlinePMW.from_accuracy(
            h, alpha=feasible * (1 - 1e-6), beta=0.05, epsilon=1.0, n_public=n, n_queries=10
        )
    p = OnlinePMW.from_accuracy(
        h, alpha=1.2 * a_min, beta=0.05, epsilon=1.0, n_public=n, n_queries=10, rng=seeded()
    )
    alpha = 1.2 * a_min
    c = math.ceil(4 * math.log(16) / alpha**2)
    a_sv = 9 * c * (math.log(20) + math.log(4 * c / 0.05)) / n
    assert p.cutoff == c and p.threshold == pytest.approx((alpha + a_sv) * n)
    assert p.eta == pytest.approx(alpha / 2) and p.guarantee == pytest.approx(3 * alpha * n)
    wl = MarginalWorkload.k_way(dom, 1)
    for q in range(wl.n_queries):  # uniform data: the uniform start is exact
        v, kind = p.answer(wl.cell_query(q))
        assert kind == "hypothesis" and v == pytest.approx(4000.0)


def test_budget_charged_once_before_anything(seeded):
    dom = Domain(["a", "b"], [3, 4])
    spy = Spy(dom, np.arange(12.0))
    b = PrivacyBudget(1.0)
    with pytest.raises(dpfast.BudgetExceededError):
        OnlinePMW(
            spy, epsilon=0.95, n_public=66.0, cutoff=3, threshold=5.0, init=0.1, budget=b
        )
    assert spy.reads == 0 and b.spent.epsilon == 0
    p = OnlinePMW(
        spy,
        epsilon=0.9,
        n_public=66.0,
        cutoff=3,
        threshold=5.0,
        init=0.1,
        budget=b,
        rng=seeded(),
    )
    assert b.spent.epsilon == pytest.approx(1.0) and len(b.ledger) == 1
    assert p.privacy_cost.rho == pytest.approx(0.5)


@pytest.mark.parametrize(
    "kw,exc",
    [
        (dict(threshold=1.0, tau=2.0), dpfast.PrivacyParameterError),
        (dict(), dpfast.PrivacyParameterError),
        (dict(threshold=1.0, step="newton"), dpfast.PrivacyParameterError),
        (dict(threshold=1.0, cutoff=0), dpfast.PrivacyParameterError),
        (dict(threshold=float("nan")), dpfast.PrivacyParameterError),
        (dict(threshold=1.0, clip=1), TypeError),
    ],
)
def test_validation(kw, exc):
    h = Histogram(DOM2, [1.0, 2.0])
    args = dict(epsilon=1.0, n_public=3.0, cutoff=2)
    args.update(kw)
    with pytest.raises(exc):
        OnlinePMW(h, **args)


def test_query_must_match_domain(seeded):
    h = Histogram(DOM2, [1.0, 2.0])
    p = OnlinePMW(h, epsilon=1.0, n_public=3.0, cutoff=2, threshold=1.0, rng=seeded())
    other = Domain(["w"], [2])
    with pytest.raises(TypeError):
        p.answer(CellQuery(other, ("w",), (0,)))
    with pytest.raises(TypeError):
        p.answer(0)


@pytest.mark.parametrize("step", ["adaptive", "book", "project"])
def test_steps_and_replay_learn(seeded, step):
    """A measured answer moves the hypothesis toward it (all three rules)."""
    dom = Domain(["a"], [4])
    h = Histogram(dom, np.array([70.0, 10.0, 10.0, 10.0]))
    p = OnlinePMW(
        h,
        epsilon=2.0,
        n_public=100.0,
        cutoff=20,
        threshold=-1e6,
        step=step,
        alpha=0.2,
        replay=2 if step == "adaptive" else 0,
        rng=seeded(),
    )
    q = CellQuery(dom, ("a",), (0,))
    before = p.synthetic().counts[0]
    v, kind = p.answer(q)
    assert kind == "measured"
    # toward the noisy measurement, whichever side of the hypothesis the noise put it on
    assert (p.synthetic().counts[0] - before) * (v - before) > 0


def test_linear_queries(seeded):
    """General [0, 1] queries: validated as public, answered through the same stream
    with the same E7 rule; updates move the hypothesis; project needs a 0/1 query."""
    from dpfast.query_release import LinearQuery

    dom = Domain(["a", "b"], [3, 4])
    counts = np.arange(12.0)
    spy = Spy(dom, counts)
    f = LinearQuery(dom, np.linspace(0, 1, 12))
    assert not f.binary and f.evaluate(counts) == pytest.approx(np.dot(f.weights, counts))
    g = LinearQuery.from_cells(dom, [0, 5, 11])
    assert g.binary and g.evaluate(counts) == 16.0
    for bad in (np.full(12, 1.5), np.full(12, np.nan), np.ones(5)):
        with pytest.raises(dpfast.PrivacyParameterError):
            LinearQuery(dom, bad)
    with pytest.raises(TypeError):
        LinearQuery(dom, np.ones(12, dtype=object))
    with pytest.raises(dpfast.PrivacyParameterError):
        LinearQuery.from_cells(dom, [12])
    n = counts.sum()
    p = OnlinePMW(spy, epsilon=1.0, n_public=n, cutoff=3, threshold=1e6, rng=seeded())
    v, kind = p.answer(f)
    assert kind == "hypothesis" and v == pytest.approx(n * f.weights.mean())
    assert p._ns.consumed == 2
    for step in ("adaptive", "book"):
        p = OnlinePMW(
            spy,
            epsilon=1.0,
            n_public=n,
            cutoff=3,
            threshold=-1e6,
            step=step,
            alpha=0.2,
            replay=1,
            rng=seeded(),
        )
        before = p.synthetic().counts
        v, kind = p.answer(g)
        assert kind == "measured" and p._ns.consumed == 1
        after = p.synthetic().counts
        assert after.sum() == pytest.approx(n)
        cells = [0, 5, 11]
        # the hypothesis moves toward the measured value
        assert (after[cells].sum() - before[cells].sum()) * (v - before[cells].sum()) > 0
        p.answer(f)
        p.answer(
            CellQuery(dom, ("a",), (1,))
        )  # a cell query after linear ones: mixed replay
    p = OnlinePMW(
        spy, epsilon=1.0, n_public=n, cutoff=3, threshold=-1e6, step="project", rng=seeded()
    )
    reads = spy.reads
    with pytest.raises(TypeError):
        p.answer(f)
    assert spy.reads == reads
    assert p.answer(g)[1] == "measured"


def test_threads_share_one_pmw(seeded):
    """Concurrent answers: no error, never more than c updates, the stream's count of
    queries equals what the answers imply."""
    import threading

    dom = Domain(["a", "b"], [3, 4])
    h = Histogram(dom, np.arange(12.0) * 10)
    wl = MarginalWorkload.k_way(dom, 2)
    p = OnlinePMW(h, epsilon=1.0, n_public=660.0, cutoff=15, threshold=5.0, rng=seeded())
    kinds = []

    def work():
        for q in range(wl.n_queries):
            kinds.append(p.answer(wl.cell_query(q))[1])

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(kinds) == 4 * wl.n_queries
    assert kinds.count("measured") == p.updates_used <= 15
    # ⊥⊥ asks two comparisons, ⊤ one or two (E7), an exhausted answer none
    hyp, meas = kinds.count("hypothesis"), kinds.count("measured")
    assert 2 * hyp + meas <= p._ns.consumed <= 2 * hyp + 2 * meas


@pytest.mark.parametrize("step", ["adaptive", "book", "project"])
def test_cached_hypothesis_marginals_stay_exact(seeded, step):
    """The hypothesis' marginal tables are updated in place on every cell update; they
    must equal fresh reductions of the weights after any sequence of updates."""
    dom = Domain(["a", "b", "c", "d"], [3, 4, 2, 3])
    g = np.random.default_rng(6)
    h = Histogram(dom, g.integers(0, 40, dom.size))
    wls = [MarginalWorkload.k_way(dom, k) for k in (1, 2, 3, 4)]
    n = h.counts.sum()
    p = OnlinePMW(
        h,
        epsilon=2.0,
        n_public=n,
        cutoff=60,
        threshold=0.02 * n,
        step=step,
        alpha=0.3,
        rng=seeded(5),
    )
    for _ in range(3):
        for wl in wls:
            for q in range(wl.n_queries):
                p.answer(wl.cell_query(q))
    assert 0 < p.updates_used
    st = p._state
    assert st._tables
    for wl in wls:
        for q in range(wl.n_queries):
            cq = wl.cell_query(q)
            direct = n * cq.evaluate(st.w) / st.Z
            assert st.estimate(cq) == pytest.approx(direct, rel=1e-9, abs=1e-9 * n)
