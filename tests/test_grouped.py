"""dpfast.grouped: contribution bounding (exact uniform sampling, L0/Linf bounds), the
partition-selection rule (its DP conditions and delta, its probabilities), the released
laws at fixed seeds, public partitions, pandas in/out, bad inputs, budget charging."""

import itertools
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import dpfast
from dpfast import _core
from dpfast import grouped as G
from dpfast.accounting import PrivacyBudget
from stat_helpers import ALPHA, chi2_pvalue


def bound(units, keys, values=None, l0=1, linf=1, grid=None, rng=None, want_units=True):
    u = np.asarray(units, dtype=np.int64)
    k = np.asarray(keys, dtype=np.int64)
    v = None if values is None else np.asarray(values, dtype=np.float64)
    return _core.bound_contributions(
        u, int(u.max()) + 1, k, int(k.max()) + 1, v, grid, l0, linf, want_units, rng
    )


# ------------------------------------------------------------------ contribution bounding


def test_every_unit_respects_l0_and_linf(seeded):
    rng = np.random.default_rng(0)
    n_units, n = 300, 20_000
    units = rng.integers(0, n_units, n)
    keys = rng.integers(0, 40, n)
    g = seeded(1)
    for l0, linf in [(1, 1), (3, 2), (7, 5)]:
        # one unit at a time: its kept records are in <= l0 partitions, <= linf each
        for u in range(0, n_units, 37):
            sel = units == u
            count, _, nunits = bound(
                np.zeros(sel.sum()), keys[sel], l0=l0, linf=linf, rng=g
            )
            d = np.unique(keys[sel]).size
            assert (count > 0).sum() == min(d, l0)
            assert count.max() <= linf
            assert nunits.sum() == min(d, l0)
            per_key = np.bincount(keys[sel])
            assert np.all(count <= np.minimum(per_key, linf))
            # kept partitions keep min(c, linf) records exactly
            kept = count > 0
            assert np.all(count[kept] == np.minimum(per_key[kept], linf))
        count, _, nunits = bound(units, keys, l0=l0, linf=linf, rng=g)
        assert nunits.sum() <= l0 * n_units and count.sum() <= l0 * linf * n_units


def test_totals_with_many_units_across_sort_blocks(seeded):
    # 200k unit codes: the kernel's two-level sort uses blocks of 256 codes here
    rng = np.random.default_rng(19)
    u, k = rng.integers(0, 200_000, 300_000), rng.integers(0, 50, 300_000)
    count, _, nunits = bound(u, k, l0=2, linf=1, rng=seeded(20))
    pairs = np.unique(u * 64 + k)
    d = np.bincount(pairs // 64)
    assert nunits.sum() == count.sum() == np.minimum(d, 2).sum()


def test_partition_subset_is_uniform(seeded):
    # one unit in 4 partitions, L0 = 2: each of the 6 pairs has probability 1/6
    g = seeded(2)
    pairs = list(itertools.combinations(range(4), 2))
    seen = np.zeros(len(pairs))
    for _ in range(12_000):
        count, _, _ = bound([0, 0, 0, 0, 0], [0, 1, 2, 3, 3], l0=2, linf=1, rng=g)
        seen[pairs.index(tuple(np.flatnonzero(count)))] += 1
    assert chi2_pvalue(seen, np.full(6, 1 / 6)) > ALPHA


def test_record_subset_is_uniform_and_values_are_clamped(seeded):
    # one unit, 5 records in one partition with values 1, 2, 4, 8, 16 (the sum names the
    # subset), Linf = 2: each of the 10 pairs has probability 1/10
    g = seeded(3)
    vals = [1.0, 2.0, 4.0, 8.0, 16.0]
    grid = (0.0, 100.0, 1.0, 0, 100)
    sums = [a + b for a, b in itertools.combinations(vals, 2)]
    seen = np.zeros(len(sums))
    for _ in range(10_000):
        count, qsum, _ = bound([0] * 5, [0] * 5, vals, l0=1, linf=2, grid=grid, rng=g)
        assert count[0] == 2
        seen[sums.index(qsum[0])] += 1
    assert chi2_pvalue(seen, np.full(10, 0.1)) > ALPHA
    # NaN dropped (before bounding), infinities and out-of-range values clamped
    count, qsum, _ = bound(
        [0, 1, 2, 3],
        [0, 0, 0, 0],
        [np.nan, np.inf, -np.inf, 250.0],
        l0=1,
        linf=1,
        grid=grid,
        rng=g,
    )
    assert count[0] == 3 and qsum[0] == 200


def test_bounding_kernel_ignores_negative_keys_and_handles_empty(seeded):
    count, qsum, nunits = bound([0, 0, 1], [-1, 2, -1], l0=1, linf=1, rng=seeded(4))
    assert count.tolist() == [0, 0, 1] and nunits.tolist() == [0, 0, 1] and qsum is None
    e = np.zeros(0, dtype=np.int64)
    count, _, _ = _core.bound_contributions(e, 0, e, 3, None, None, 1, 1, False, seeded(4))
    assert count.tolist() == [0, 0, 0]


# ------------------------------------------------------------------ partition selection


def _float_rule(eps, delta, n_max):
    """The optimal rule of Desfontaines et al. 2022 in floating point (reference)."""
    out = [0.0]
    for _ in range(n_max):
        p = out[-1]
        out.append(
            min(math.exp(eps) * p + delta, 1 - math.exp(-eps) * (1 - p - delta), 1.0)
        )
    return np.array(out)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.1, 1e-8), (5.0, 1e-3), (1e-3, 0.01)])
def test_selection_table_matches_the_optimal_rule(eps, delta):
    t = G._selection_table(Fraction(eps), Fraction(delta))
    ref = _float_rule(eps, delta, t.size + 2)
    pi = t.astype(np.float64) / 2.0**64
    # the certified rule is the optimal one up to the lower bound of e^eps and rounding
    assert np.allclose(pi, ref[: t.size], rtol=1e-6, atol=1e-15)
    assert ref[t.size] > 1 - 1e-6  # the table ends where the rule reaches 1
    assert t[0] == 0 and t[1] == math.floor(Fraction(delta) * 2**64)
    # closed form of the first phase (Desfontaines et al. 2022):
    # pi(n) = delta (e^(n eps) - 1) / (e^eps - 1) while it is below 1/2
    n = np.arange(t.size)
    first = delta * np.expm1(n * eps) / np.expm1(eps)
    low = first < 0.25
    assert np.allclose(pi[low], first[low], rtol=1e-6, atol=1e-15)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-6), (0.3, 1e-9), (4.0, 1e-4)])
def test_selection_rule_is_eps_delta_dp_exactly(eps, delta):
    """The two DP conditions between n-1 and n units, checked in exact arithmetic with
    e^eps to 40 digits: the released and the not-released events both satisfy
    P[n] <= e^eps P[n'] + delta (delta of the rule = delta, pi(1) = delta)."""
    t = [int(x) for x in G._selection_table(Fraction(eps), Fraction(delta))] + [2**64]
    mpmath.mp.dps = 40
    e = Fraction(str(mpmath.exp(mpmath.mpf(eps))))  # rounding is 1e-40: irrelevant
    e = e * (1 - Fraction(1, 10**30))  # a certified lower bound
    one, d = 2**64, Fraction(delta) * 2**64
    worst = Fraction(0)
    for a, b in zip(t, t[1:]):
        assert b >= a
        worst = max(
            worst,
            b - e * a,
            (one - a) - e * (one - b),
            a - e * b,
            (one - b) - e * (one - a),
        )
    assert worst <= d
    # and the rule is tight: the first step spends all of delta (up to 2^-64)
    assert d - t[1] < 1


def test_selection_probabilities_empirical(seeded):
    eps, delta = 1.0, 1e-3
    units = np.repeat(np.array([0, 1, 3, 5, 8, 30], dtype=np.int64), 20_000)
    table = G._selection_table(Fraction(eps), Fraction(delta))
    keep = _core.select_partitions(units, table, seeded(5))
    p = G.partition_selection_probability(
        np.array([0, 1, 3, 5, 8, 30]), epsilon=eps, delta=delta
    )
    assert p[0] == 0.0 and p[-1] == 1.0
    for j, pj in enumerate(p):
        k = int(keep[j * 20_000 : (j + 1) * 20_000].sum())
        if pj in (0.0, 1.0):
            assert k == 20_000 * pj
        else:
            from scipy import stats

            assert stats.binomtest(k, 20_000, pj).pvalue > ALPHA
    # max_partitions splits the budget per partition
    assert G.partition_selection_probability(
        3, epsilon=2.0, delta=2e-3, max_partitions=2
    ) == G.partition_selection_probability(3, epsilon=1.0, delta=1e-3)


def test_selection_refuses_unusable_parameters():
    with pytest.raises(dpfast.PrivacyParameterError):
        G.partition_selection_probability(1, epsilon=1.0, delta=1e-25)
    with pytest.raises(dpfast.PrivacyParameterError):
        G.partition_selection_probability(1, epsilon=1e-9, delta=1e-9)


# ------------------------------------------------------------------ released laws


def dlap_pmf(eps_over_sens, zs):
    q = math.exp(-eps_over_sens)
    return (1 - q) / (1 + q) * q ** np.abs(zs)


def test_released_count_law_on_a_tiny_instance(seeded):
    # 3 units; unit 0 has 3 records in partition "a", unit 1 two in "a" and one in "b",
    # unit 2 none in a public partition.  L0 = 1, Linf = 2: "a" keeps 2 (unit 0) plus
    # 2 or 0 (unit 1 keeps "a" or "b" with probability 1/2 each).
    units = [0, 0, 0, 1, 1, 1, 2]
    keys = ["a", "a", "a", "a", "a", "b", "z"]
    g = seeded(6)
    eps = 1.5  # one quantity (the count), public partitions
    outs = np.array(
        [
            G.grouped_release(
                units=units,
                keys=keys,
                epsilon=eps,
                max_partitions=1,
                max_contributions=2,
                public_partitions=["a", "b", "c"],
                rng=g,
            )["count"]
            for _ in range(20_000)
        ]
    )
    assert outs.dtype == np.int64
    # "c" has no record: pure discrete Laplace of scale L0 Linf / eps = 2/1.5
    c = outs[:, 2]
    zs = np.arange(c.min(), c.max() + 1)
    law = dlap_pmf(eps / 2, zs)
    law[0] += 1 - law.sum()
    assert chi2_pvalue([(c == z).sum() for z in zs], law) > ALPHA
    # "a": mixture 1/2 (2 + Z) + 1/2 (4 + Z)
    a = outs[:, 0]
    zs = np.arange(a.min(), a.max() + 1)
    law = 0.5 * dlap_pmf(eps / 2, zs - 2) + 0.5 * dlap_pmf(eps / 2, zs - 4)
    law[0] += 1 - law.sum()
    assert chi2_pvalue([(a == z).sum() for z in zs], law) > ALPHA


def test_sum_and_mean_are_on_the_grid_and_unbiased(seeded):
    rng = np.random.default_rng(7)
    n = 4000
    units = np.arange(n)
    keys = rng.integers(0, 3, n)
    vals = rng.uniform(-1, 3, n)
    out = G.grouped_release(
        units=units,
        keys=keys,
        values=vals,
        statistics=("count", "sum", "mean"),
        epsilon=30.0,
        max_partitions=1,
        lower=0.0,
        upper=2.0,
        public_partitions=[0, 1, 2],
        rng=seeded(8),
    )
    clamped = np.clip(vals, 0, 2)
    for p in range(3):
        true_s = clamped[keys == p].sum()
        assert abs(out["sum"][p] - true_s) < 3.0
        assert abs(out["mean"][p] - true_s / (keys == p).sum()) < 0.01
        assert abs(out["count"][p] - (keys == p).sum()) < 3
    assert np.all((out["mean"] >= 0) & (out["mean"] <= 2))


def test_private_selection_releases_only_partitions_with_units(seeded):
    units = np.arange(3000)
    keys = np.where(units < 2990, units % 3, 1000 + units)  # 10 singleton partitions
    out = G.grouped_release(
        units=units, keys=keys, epsilon=3.0, delta=1e-9, max_partitions=1, rng=seeded(9)
    )
    # pi(1) = 2 delta / 2 ... ~1e-9: singletons are (almost surely) never released, and
    # keys with no record never are
    assert out["key"].tolist() == [0, 1, 2]


def test_mean_with_empty_public_partition_is_the_midpoint(seeded):
    out = G.grouped_release(
        units=[1, 2],
        keys=[5, 5],
        values=[1.0, 1.0],
        statistics=("mean",),
        epsilon=1e-3,
        max_partitions=1,
        lower=-4.0,
        upper=10.0,
        public_partitions=[5, 6],
        rng=seeded(10),
    )
    assert set(out) == {"key", "mean"}
    assert np.all((out["mean"] >= -4.0) & (out["mean"] <= 10.0))


def test_gaussian_noise_and_delta_split(seeded):
    b = PrivacyBudget(10.0, 1e-3)
    out = G.grouped_release(
        units=np.arange(600),
        keys=np.arange(600) % 2,
        values=np.ones(600),
        statistics=("count", "sum"),
        epsilon=3.0,
        delta=1e-5,
        max_partitions=1,
        lower=0,
        upper=1,
        noise="gaussian",
        rng=seeded(11),
        budget=b,
    )
    assert out["key"].tolist() == [0, 1]
    assert abs(out["count"][0] - 300) < 40 and abs(out["sum"][1] - 300) < 40
    assert len(b.ledger) == 1


def test_unorderable_object_keys_and_units(seeded):
    keys = np.empty(300, dtype=object)
    keys[:150] = "x"
    keys[150:] = 7
    units = np.empty(300, dtype=object)
    units[:] = [("u", i) for i in range(300)]
    out = G.grouped_release(
        units=units, keys=keys, epsilon=5.0, delta=1e-6, max_partitions=1, rng=seeded(12)
    )
    assert sorted(map(str, out["key"].tolist())) == ["7", "x"]


# ------------------------------------------------------------------ pandas


def test_pandas_in_pandas_out(seeded):
    import pandas as pd  # the [test] extra installs it

    df = pd.DataFrame(
        {
            "user": np.arange(400) % 100,
            "day": np.arange(400) % 4,
            "spent": np.linspace(0, 5, 400),
        }
    )
    out = G.grouped_release(
        df,
        units="user",
        keys="day",
        values="spent",
        statistics=("count", "mean"),
        epsilon=5.0,
        max_partitions=4,
        max_contributions=1,
        lower=0,
        upper=5,
        public_partitions=[0, 1, 2, 3, 4],
        rng=seeded(13),
    )
    assert isinstance(out, pd.DataFrame)
    assert out.index.name == "day" and list(out.index) == [0, 1, 2, 3, 4]
    assert list(out.columns) == ["count", "mean"]
    assert out["count"].dtype == np.int64
    s = G.grouped_release(
        units=df["user"],
        keys=df["day"].astype(str),
        epsilon=5.0,
        delta=1e-6,
        max_partitions=1,
        rng=seeded(14),
    )
    assert isinstance(s, pd.DataFrame) and list(s.index) == ["0", "1", "2", "3"]


def test_numpy_in_dict_out(seeded):
    out = G.grouped_release(
        units=[1, 2, 3],
        keys=[0, 0, 1],
        epsilon=1.0,
        max_partitions=1,
        public_partitions=[0, 1],
        rng=seeded(15),
    )
    assert isinstance(out, dict) and list(out) == ["key", "count"]


# ------------------------------------------------------------------ validation, budget


class Recorder:
    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label))


BASE = dict(units=[1, 2, 3], keys=[0, 0, 1], epsilon=1.0, delta=1e-6, max_partitions=1)


@pytest.mark.parametrize(
    "change,exc",
    [
        (dict(epsilon=0.0), dpfast.PrivacyParameterError),
        (dict(epsilon=float("nan")), dpfast.PrivacyParameterError),
        (dict(delta=0.0), dpfast.PrivacyParameterError),  # private keys need delta
        (dict(delta=1.0), dpfast.PrivacyParameterError),
        (dict(max_partitions=0), dpfast.PrivacyParameterError),
        (dict(max_partitions=1.5), TypeError),
        (dict(max_contributions=True), TypeError),
        (dict(statistics=("count", "count")), dpfast.PrivacyParameterError),
        (dict(statistics=("median",)), dpfast.PrivacyParameterError),
        (dict(statistics=()), dpfast.PrivacyParameterError),
        (dict(statistics=("sum",)), TypeError),  # no values / bounds
        (
            dict(statistics=("sum",), values=[1.0, 2, 3], lower=1, upper=1),
            dpfast.PrivacyParameterError,
        ),
        (
            dict(statistics=("sum",), values=[1.0, 2, 3], lower=0, upper=float("inf")),
            dpfast.PrivacyParameterError,
        ),
        (dict(noise="cauchy"), dpfast.PrivacyParameterError),
        (
            dict(noise="gaussian", delta=0.0, public_partitions=[0]),
            dpfast.PrivacyParameterError,
        ),
        (dict(keys=np.array([0.5, 1.0, 2.0])), TypeError),  # a float array's dtype
        (dict(keys=[0, 1]), ValueError),  # lengths differ
        (dict(public_partitions=[0, 0]), dpfast.PrivacyParameterError),
        (
            dict(statistics=("sum",), values=np.array(["a", "b", "c"]), lower=0, upper=1),
            TypeError,
        ),
        (dict(epsilon=1e-12, delta=1e-12), dpfast.PrivacyParameterError),
    ],
)
def test_bad_public_parameters_spend_nothing(change, exc):
    rec = Recorder()
    with pytest.raises(exc):
        G.grouped_release(**{**BASE, **change}, budget=rec)
    assert rec.calls == []


def test_budget_charged_once_with_the_total_before_reading_values():
    rec = Recorder()
    G.grouped_release(**BASE, budget=rec)
    assert rec.calls == [(1.0, 1e-6, "grouped_release")]
    rec = Recorder()
    G.grouped_release(**{**BASE, "delta": 1e-6, "public_partitions": [0, 1]}, budget=rec)
    assert rec.calls == [(1.0, 0, "grouped_release")]  # Laplace: no delta used
    b = PrivacyBudget(1.5, 1e-6)
    G.grouped_release(**BASE, budget=b)
    with pytest.raises(dpfast.BudgetExceededError):
        G.grouped_release(**BASE, budget=b)


def test_private_values_never_raise(seeded):
    vals = [np.nan, np.inf, -np.inf, 1e308, -0.0, 5e-324]
    out = G.grouped_release(
        units=range(6),
        keys=[0] * 6,
        values=vals,
        statistics=("count", "sum", "mean"),
        epsilon=1.0,
        max_partitions=1,
        lower=-1,
        upper=1,
        public_partitions=[0],
        rng=seeded(16),
    )
    assert np.isfinite(out["sum"]).all() and -1 <= out["mean"][0] <= 1


def test_nan_values_drop_records_for_counts_too(seeded):
    out = G.grouped_release(
        units=range(4),
        keys=[0, 0, 0, 0],
        values=[1.0, np.nan, 2, 3],
        epsilon=1e4,
        max_partitions=1,
        public_partitions=[0],
        rng=seeded(17),
    )
    assert out["count"].tolist() == [3]


@pytest.mark.parametrize(
    "stats,noise,public",
    [
        (("count",), "laplace", None),
        (("count", "sum", "mean"), "laplace", None),
        (("sum",), "gaussian", [0, 1]),
        (("mean",), "gaussian", None),
    ],
)
def test_budget_shares_never_exceed_the_total(stats, noise, public):
    plan = G._Plan(
        stats, Fraction(0.3), Fraction(1e-6), 2, 3, 0.0, 1.0, noise, public is None
    )
    k = len(plan.quantities) + (public is None)
    assert Fraction(plan.eps_f) * len(plan.quantities) + plan.eps_each * (
        public is None
    ) <= Fraction(0.3)
    assert plan.eps_each * k == Fraction(0.3)
    if noise == "gaussian":
        assert Fraction(plan.delta_f) * len(plan.quantities) + plan.sel_delta <= Fraction(
            1e-6
        )


def test_threads_give_the_serial_results():
    import threading

    rng = np.random.default_rng(18)
    units, keys = rng.integers(0, 500, 5000), rng.integers(0, 20, 5000)
    vals = rng.uniform(0, 1, 5000)

    def run(seed):
        return G.grouped_release(
            units=units,
            keys=keys,
            values=vals,
            statistics=("count", "mean"),
            epsilon=2.0,
            delta=1e-6,
            max_partitions=2,
            max_contributions=3,
            lower=0,
            upper=1,
            rng=dpfast.random.ChaCha20(seed),
        )

    serial = [run(s) for s in range(4)]
    got = [None] * 4

    def work(i):
        got[i] = run(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(serial, got):
        assert all(np.array_equal(a[k], b[k]) for k in a)


def test_docs_examples_run():
    import doctest
    import pathlib

    doc = pathlib.Path(__file__).resolve().parent.parent / "docs" / "grouped.md"
    res = doctest.testfile(
        str(doc),
        module_relative=False,
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
    )
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize("l0,linf", [(1, 1), (3, 2), (4, 7)])
def test_plan_sensitivities(l0, linf):
    lap = G._Plan(
        ("count", "sum"), Fraction(1), Fraction(0), l0, linf, -3.0, 5.0, "laplace", False
    )
    step, qlo, qhi = lap.grid
    assert lap.sens["count"] == l0 * linf
    assert lap.sens["sum"] == l0 * linf * max(abs(qlo), abs(qhi))
    assert qlo * step <= -3.0 and qhi * step >= 5.0 and (qhi - qlo) * step < 8.0 + 2 * step
    mean = G._Plan(
        ("mean",), Fraction(1), Fraction(0), l0, linf, -3.0, 5.0, "laplace", False
    )
    _, qlo, qhi = mean.grid
    assert mean.sens["nsum"] == l0 * linf * (qhi - qlo)
    gau = G._Plan(
        ("count", "sum"),
        Fraction(1),
        Fraction(1, 10**6),
        l0,
        linf,
        -3.0,
        5.0,
        "gaussian",
        False,
    )
    _, qlo, qhi = gau.grid
    for name, per in (("count", 1), ("sum", max(abs(qlo), abs(qhi)))):
        s = Fraction(gau.sens[name])
        assert s * s >= l0 * (linf * per) ** 2  # l2 bound, rounded up
        assert float(s) <= math.sqrt(l0) * linf * per * (1 + 1e-12)
