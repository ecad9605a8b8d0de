"""The active budget (``with budget.active():``), ``NO_BUDGET`` and ``label=`` (issue 14
item 3): thread- and task-local, nested, explicit budgets win, one charge per public call
for every entry point, charged before drawing."""

import asyncio
import contextvars
import pickle
import threading

import numpy as np
import pytest

import dpfast
import dpfast.random as dr
from dpfast import grouped, sparse
from dpfast import mechanisms as M
from dpfast import objects as O
from dpfast import selection as S
from dpfast import stats as R
from dpfast.accounting import PrivacyBudget
from dpfast.learn import PrivateBoostingClassifier
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    Domain,
    Histogram,
    MarginalWorkload,
    OnlinePMW,
    gaussian_marginals,
    gaussian_per_query,
    laplace_marginals,
    laplace_per_query,
)

SCORES = [3.0, 1.0, 2.0, 5.0]
VALS = np.array([1.0, 2.0, 3.0, 4.0, 9.0])


def _hist():
    dom = Domain(["a", "b"], [3, 4])
    return Histogram(dom, np.arange(12.0))


def _grouped(**kw):
    return grouped.grouped_release(
        units=[1, 2, 3, 3],
        keys=["a", "b", "a", "b"],
        epsilon=1.0,
        max_partitions=1,
        public_partitions=["a", "b"],
        **kw,
    )


def _learn(**kw):
    g = np.random.default_rng(1)
    X = g.integers(0, 10, size=(1000, 4))
    y = np.where(X[:, 0] >= 5, 1, -1)
    return PrivateBoostingClassifier(
        thresholds=list(range(1, 10)),
        n_rounds=2,
        sample_size=100,
        smoothness=200,
        epsilon_test=0.5,
        epsilon_threshold=0.5,
        base_epsilon=1.0,
        gamma=0.01,
        **kw,
    ).fit(X, y)


# Every public entry point that takes budget=: f(**kw) with kw = {} or {"budget": b}.
ENTRY_POINTS = {
    "laplace_float": lambda **kw: M.laplace_mechanism(1.5, epsilon=0.1, **kw),
    "laplace_int_vector": lambda **kw: M.laplace_mechanism([1, 2, 3], epsilon=0.1, **kw),
    "laplace_fast": lambda **kw: M.laplace_mechanism(1.5, epsilon=0.1, mode="fast", **kw),
    "geometric": lambda **kw: M.geometric_mechanism(4, epsilon=0.1, **kw),
    "gaussian": lambda **kw: M.gaussian_mechanism(1.5, epsilon=0.5, delta=1e-6, **kw),
    "gaussian_fast": lambda **kw: M.gaussian_mechanism(
        [1.5, 2.0], epsilon=0.5, delta=1e-6, mode="fast", **kw
    ),
    "discrete_gaussian": lambda **kw: M.discrete_gaussian_mechanism(
        3, epsilon=0.5, delta=1e-6, **kw
    ),
    "Laplace.release": lambda **kw: O.Laplace(0.1).release(2.0, **kw),
    "Laplace.release_vector": lambda **kw: O.Laplace(0.1).release([2.0, 3.0], **kw),
    "DiscreteLaplace.release": lambda **kw: O.DiscreteLaplace(0.1).release(2, **kw),
    "Gaussian.release": lambda **kw: O.Gaussian(epsilon=0.5, delta=1e-6).release(2.0, **kw),
    "Gaussian.release_vector": lambda **kw: O.Gaussian(epsilon=0.5, delta=1e-6).release(
        [2.0, 1.0], **kw
    ),
    "Gaussian(rho).release": lambda **kw: O.Gaussian(rho=0.1, delta=1e-6).release(2, **kw),
    "ExponentialMechanism.release": lambda **kw: O.ExponentialMechanism(0.5).release(
        SCORES, **kw
    ),
    "RandomizedResponse.release": lambda **kw: O.RandomizedResponse(1.0).release(
        [True, False], **kw
    ),
    "exponential_mechanism": lambda **kw: S.exponential_mechanism(
        SCORES, epsilon=0.5, **kw
    ),
    "report_noisy_max": lambda **kw: S.report_noisy_max(
        SCORES, epsilon=0.5, return_value=True, **kw
    ),
    "permute_and_flip": lambda **kw: S.permute_and_flip(SCORES, epsilon=0.5, **kw),
    "top_k": lambda **kw: S.top_k(SCORES, 2, epsilon=0.5, **kw),
    "coin_response": lambda **kw: dpfast.randomized_response.coin_response([True], **kw),
    "randomized_response": lambda **kw: M.randomized_response([True], epsilon=1.0, **kw),
    "kary_response": lambda **kw: M.kary_response([0, 2], 3, epsilon=1.0, **kw),
    "count": lambda **kw: R.count(VALS, epsilon=0.5, **kw),
    "sum": lambda **kw: R.sum(VALS, lower=0, upper=10, epsilon=0.5, **kw),
    "sum_fast": lambda **kw: R.sum(VALS, lower=0, upper=10, epsilon=0.5, mode="fast", **kw),
    "mean": lambda **kw: R.mean(VALS, lower=0, upper=10, epsilon=0.5, **kw),
    "sum_axis0": lambda **kw: R.sum(
        np.ones((5, 3)), lower=0, upper=10, epsilon=0.5, axis=0, **kw
    ),
    "quantiles_axis1": lambda **kw: R.quantiles(
        np.ones((2, 5)), [0.5], lower=0, upper=10, epsilon=0.5, axis=1, **kw
    ),
    "histogram": lambda **kw: R.histogram(VALS, 3, range=(0, 10), epsilon=0.5, **kw),
    "quantile": lambda **kw: R.quantile(VALS, 0.5, lower=0, upper=10, epsilon=0.5, **kw),
    "variance": lambda **kw: R.variance(VALS, lower=0, upper=10, epsilon=0.5, **kw),
    "std": lambda **kw: R.std(VALS, lower=0, upper=10, epsilon=0.5, **kw),
    "quantiles": lambda **kw: R.quantiles(
        VALS, [0.25, 0.75], lower=0, upper=10, epsilon=0.5, **kw
    ),
    "counts": lambda **kw: R.counts(["a", "b", "a"], ["a", "b"], epsilon=0.5, **kw),
    "estimate_bounds": lambda **kw: R.estimate_bounds(VALS, epsilon=0.5, **kw),
    "grouped_release": lambda **kw: _grouped(**kw),
    "AboveThreshold": lambda **kw: sparse.AboveThreshold(5.0, epsilon=0.5, **kw),
    "Sparse": lambda **kw: sparse.Sparse(5.0, cutoff=2, epsilon=0.5, **kw),
    "NumericSparse": lambda **kw: sparse.NumericSparse(5.0, cutoff=2, epsilon=0.5, **kw),
    "laplace_per_query": lambda **kw: laplace_per_query(
        MarginalWorkload.k_way(_hist().domain, 1), _hist(), epsilon=0.5, **kw
    ),
    "laplace_marginals": lambda **kw: laplace_marginals(
        MarginalWorkload.k_way(_hist().domain, 1), _hist(), epsilon=0.5, **kw
    ),
    "gaussian_marginals": lambda **kw: gaussian_marginals(
        MarginalWorkload.k_way(_hist().domain, 1), _hist(), epsilon=0.5, delta=1e-6, **kw
    ),
    "gaussian_per_query": lambda **kw: gaussian_per_query(
        MarginalWorkload.k_way(_hist().domain, 1), _hist(), epsilon=0.5, delta=1e-6, **kw
    ),
    "OnlinePMW.from_accuracy": lambda **kw: OnlinePMW.from_accuracy(
        _hist(), alpha=0.9, beta=0.1, epsilon=50.0, n_public=66.0, n_queries=10, **kw
    ),
    "MWEM.run": lambda **kw: MWEM(
        MarginalWorkload.k_way(_hist().domain, 1),
        epsilon=0.5,
        rounds=2,
        n_public=66.0,
        init=0.1,
        **kw,
    ).run(_hist()),
    "BoostingForQueries.run": lambda **kw: BoostingForQueries(
        MarginalWorkload.k_way(_hist().domain, 1),
        epsilon=1.0,
        n_public=66.0,
        rounds=3,
        k=4,
        **kw,
    ).run(_hist()),
    "OnlinePMW": lambda **kw: OnlinePMW(
        _hist(), epsilon=0.5, n_public=66.0, cutoff=2, threshold=1e6, init=0.2, **kw
    ),
    "PrivateBoostingClassifier.fit": lambda **kw: _learn(rng=None, **kw),
}


def _charges(budget):
    return [(e.label, e.epsilon, e.delta, e.rho) for e in budget.ledger]


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_every_entry_point_charges_the_active_budget_once_as_if_explicit(name):
    f = ENTRY_POINTS[name]
    explicit = PrivacyBudget(100.0, 0.5)
    f(budget=explicit)
    active, outer = PrivacyBudget(100.0, 0.5), PrivacyBudget(100.0, 0.5)
    with outer.active(), active.active():
        f()
        assert dpfast.active_budget() is active
    assert len(explicit.ledger) == 1, _charges(explicit)
    assert _charges(active) == _charges(explicit)
    assert outer.ledger == []
    # an explicit budget wins over the active one, NO_BUDGET charges nothing
    other = PrivacyBudget(100.0, 0.5)
    with active.active():
        f(budget=other)
        f(budget=dpfast.NO_BUDGET)
    assert _charges(other) == _charges(explicit)
    assert len(active.ledger) == 1


@pytest.mark.parametrize(
    "name",
    [
        "laplace_float",
        "Laplace.release",
        "count",
        "top_k",
        "grouped_release",
        "NumericSparse",
    ],
)
def test_no_budget_anywhere_charges_nothing_and_runs(name):
    assert dpfast.active_budget() is None
    ENTRY_POINTS[name]()  # allowed: the caller accounts for it


def test_axis_with_nothing_to_release_charges_nothing_even_when_active():
    b = PrivacyBudget(1.0)
    with b.active():
        out = R.sum(np.ones((0, 3)), lower=0, upper=10, epsilon=0.5, axis=1)
    assert np.shape(out) == (0,) and b.ledger == []


def test_nesting_restores_the_outer_budget_even_after_an_exception():
    a, b = PrivacyBudget(1.0), PrivacyBudget(1.0)
    with a.active():
        M.laplace_mechanism(1, epsilon=0.1)
        with pytest.raises(ZeroDivisionError):
            with b.active():
                M.laplace_mechanism(1, epsilon=0.2)
                1 / 0
        assert dpfast.active_budget() is a
        M.laplace_mechanism(1, epsilon=0.3)
        with dpfast._active.activate(dpfast.NO_BUDGET):  # suspend the outer one
            assert dpfast.active_budget() is None
            M.laplace_mechanism(1, epsilon=0.4)
    assert dpfast.active_budget() is None
    assert [e.epsilon for e in a.ledger] == [0.1, 0.3]
    assert [e.epsilon for e in b.ledger] == [0.2]


def test_refused_charge_draws_nothing_and_budget_is_charged_before_drawing():
    b = PrivacyBudget(0.25)
    g = dr.ChaCha20(5)
    before = g.state
    with b.active(), pytest.warns(dpfast.InsecureRandomnessWarning):
        with pytest.raises(dpfast.BudgetExceededError):
            M.laplace_mechanism(1.0, epsilon=0.5, rng=g)
        with pytest.raises(dpfast.BudgetExceededError):
            O.Laplace(0.5).release(1.0, rng=g)
        with pytest.raises(dpfast.BudgetExceededError):
            R.mean(VALS, lower=0, upper=10, epsilon=0.5, rng=g)
    assert g.state["counter"] == before["counter"] and b.ledger == []


def test_an_active_budget_fills_exactly_and_then_refuses():
    b = PrivacyBudget(1.0)
    with b.active():
        for _ in range(8):
            M.laplace_mechanism(3, epsilon=0.125)
        with pytest.raises(dpfast.BudgetExceededError):
            M.laplace_mechanism(3, epsilon=0.125)
    assert len(b.ledger) == 8


def test_a_new_thread_does_not_inherit_the_active_budget():
    b = PrivacyBudget(10.0)
    seen = []

    def work():
        seen.append(dpfast.active_budget())
        M.laplace_mechanism(1.0, epsilon=0.5)

    with b.active():
        t = threading.Thread(target=work)
        t.start()
        t.join()
        # passing the context on is explicit
        ctx = contextvars.copy_context()
        t = threading.Thread(target=ctx.run, args=(work,))
        t.start()
        t.join()
    assert seen == [None, b]
    assert [e.epsilon for e in b.ledger] == [0.5]


def test_threads_with_their_own_active_budgets_never_mix():
    n_threads, calls = 4, 200
    budgets = [PrivacyBudget(10_000.0) for _ in range(n_threads)]
    barrier = threading.Barrier(n_threads)
    errors = []

    def work(i):
        try:
            with budgets[i].active():
                barrier.wait()
                for _ in range(calls):
                    M.laplace_mechanism(1.0, epsilon=float(i + 1))
                    O.Laplace(float(i + 1)).release(2.0)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, b in enumerate(budgets):
        assert len(b.ledger) == 2 * calls
        assert {e.epsilon for e in b.ledger} == {float(i + 1)}
    assert dpfast.active_budget() is None


def test_asyncio_tasks_are_isolated_and_inherit_from_their_creator():
    a, b, outer = PrivacyBudget(100.0), PrivacyBudget(100.0), PrivacyBudget(100.0)

    async def request(budget, eps):
        with budget.active():
            for _ in range(5):
                M.laplace_mechanism(1.0, epsilon=eps)
                await asyncio.sleep(0)  # let the other task run in between

    async def child():
        M.laplace_mechanism(1.0, epsilon=0.25)

    async def main():
        await asyncio.gather(request(a, 0.5), request(b, 1.0))
        with outer.active():
            task = asyncio.create_task(child())  # created inside: inherits
        await task
        await asyncio.create_task(child())  # created outside: nothing

    asyncio.run(main())
    assert [e.epsilon for e in a.ledger] == [0.5] * 5
    assert [e.epsilon for e in b.ledger] == [1.0] * 5
    assert [e.epsilon for e in outer.ledger] == [0.25]


def test_ledger_budget_can_be_active():
    from dpfast import ledger

    led = ledger.open("memory:")
    b = led.budget("k", epsilon=1.0, create=True)
    with b.active() as same:
        assert same is b
        M.laplace_mechanism(1, epsilon=0.25, label="count")
        R.count(VALS, epsilon=0.25)
    assert [(r.label, float(r.epsilon)) for r in b.ledger] == [
        ("count", 0.25),
        ("count", 0.25),
    ]


def test_zcdp_active_budget_gets_rho():
    b = PrivacyBudget(rho=1.0, composition="zcdp")
    with b.active():
        S.exponential_mechanism(SCORES, epsilon=0.5)  # bounded range: eps^2/8
        O.Gaussian(rho=0.125).release(1.0)
    assert [e.rho for e in b.ledger] == [pytest.approx(0.03125), pytest.approx(0.125)]


def test_labels_are_recorded_and_validated_before_anything_is_charged():
    b = PrivacyBudget(10.0)
    with b.active():
        M.laplace_mechanism(1.0, epsilon=0.1, label="age sum")
        O.Laplace(0.1).release(1.0, label="obj")
        S.top_k(SCORES, 2, epsilon=0.1, label="top")
        R.quantiles(VALS, [0.5], lower=0, upper=10, epsilon=0.1, label="median")
        sparse.Sparse(1.0, cutoff=1, epsilon=0.1, label="svt")
        _grouped(label="by key")
        wl = MarginalWorkload.k_way(_hist().domain, 1)
        laplace_marginals(wl, _hist(), epsilon=0.1, label="marginals")
        MWEM(wl, epsilon=0.1, rounds=1, n_public=66.0, label="mwem").run(_hist())
        OnlinePMW(_hist(), epsilon=0.1, n_public=66.0, cutoff=1, threshold=1e6, label="pmw")
        for bad in (b"x", 3, ["x"]):
            with pytest.raises(TypeError, match="label"):
                M.laplace_mechanism(1.0, epsilon=0.1, label=bad)
            with pytest.raises(TypeError, match="label"):
                O.Laplace(0.1).release(1.0, label=bad)
            with pytest.raises(TypeError, match="label"):
                R.count(VALS, epsilon=0.1, label=bad)
            with pytest.raises(TypeError, match="label"):
                S.exponential_mechanism(SCORES, epsilon=0.1, label=bad)
    assert [e.label for e in b.ledger] == [
        "age sum",
        "obj",
        "top",
        "median",
        "svt",
        "by key",
        "marginals",
        "mwem",
        "pmw",
    ]


def test_bad_budgets_are_refused_by_type():
    with pytest.raises(TypeError, match="budget"):
        M.laplace_mechanism(1.0, epsilon=0.1, budget="b")
    with pytest.raises(TypeError, match="budget"):
        with dpfast._active.activate(object()):
            pass
    assert dpfast.active_budget() is None


def test_no_budget_is_a_singleton_that_charges_nothing():
    assert pickle.loads(pickle.dumps(dpfast.NO_BUDGET)) is dpfast.NO_BUDGET
    assert type(dpfast.NO_BUDGET)() is dpfast.NO_BUDGET
    assert dpfast.NO_BUDGET.spend(1.0, 0.0, label="x") is None
    assert repr(dpfast.NO_BUDGET) == "dpfast.NO_BUDGET"


def test_a_pandas_frame_by_column_is_one_charge_of_the_active_budget():
    import pandas as pd  # the [test] extra installs it

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    b = PrivacyBudget(1.0)
    with b.active():
        out = R.mean(frame, lower=0, upper=10, epsilon=0.5, axis=0, label="means")
    assert list(out.index) == ["a", "b"]
    assert [(e.label, e.epsilon) for e in b.ledger] == [("means", 0.5)]
