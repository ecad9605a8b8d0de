"""dpfast._stat_releases: variance/std sensitivities, joint quantiles (recursion, budget,
the exponential mechanism's law), categorical counts, private bounds estimation, the
record policy (NaN dropped, ±inf clamped), bad inputs and budget charging."""

import math

import numpy as np
import pytest

import dpfast
from dpfast import _stat_releases as S
from dpfast.accounting import PrivacyBudget
from stat_helpers import ALPHA, chi2_pvalue


class Recorder:
    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label))


def test_finite_records_policy():
    out = S.finite_records([np.nan, np.inf, -np.inf, 0.5, 7.0], -1.0, 2.0)
    assert out.tolist() == [2.0, -1.0, 0.5, 2.0]
    with pytest.raises(TypeError):
        S.finite_records(np.array([1, 2], dtype=np.longdouble), 0, 1)
    with pytest.raises(TypeError):
        S.finite_records(np.array(["a"]), 0, 1)
    with pytest.raises(TypeError):
        S.finite_records(np.array([1.0, 2.0], dtype=object), 0, 1)


# ------------------------------------------------------------------ variance


def _spy_variance(monkeypatch, x, lo, hi, eps):
    seen = []

    def spy(value, epsilon, sensitivity, gen):
        seen.append((value, epsilon, sensitivity))
        return value

    monkeypatch.setattr(S, "_noisy_int", spy)
    S.variance(x, lower=lo, upper=hi, epsilon=eps, rng=dpfast.random.ChaCha20(1))
    return seen


@pytest.mark.parametrize("lo,hi", [(-3.0, 5.0), (100.0, 100.5), (-1e-3, 0.0)])
def test_variance_sensitivities_hold_for_extreme_neighbours(monkeypatch, lo, hi):
    rng = np.random.default_rng(0)
    base = rng.uniform(lo - 1, hi + 1, 200)
    ref = _spy_variance(monkeypatch, base, lo, hi, 0.9)
    assert math.isclose(sum(e for _, e, _ in ref), 0.9)
    for extra in [lo, hi, (lo + hi) / 2, -np.inf, np.inf, lo - 10, np.nan]:
        nb = _spy_variance(monkeypatch, np.append(base, extra), lo, hi, 0.9)
        for (a, _, sens), (b, _, _) in zip(ref, nb):
            assert abs(a - b) <= sens
    # one of the bounds is attained: the sensitivities are tight
    nb = _spy_variance(monkeypatch, np.append(base, hi), lo, hi, 0.9)
    assert any(abs(a - b) == sens for (a, _, sens), (b, _, _) in zip(ref, nb) if sens > 1)


def test_variance_and_std_are_accurate_at_large_epsilon(seeded):
    x = np.random.default_rng(1).normal(1.0, 2.0, 50_000)
    lo, hi = -8.0, 8.0
    c = np.clip(x, lo, hi)
    for ddof in (0, 1):
        v = S.variance(x, lower=lo, upper=hi, epsilon=50.0, ddof=ddof, rng=seeded(2))
        assert abs(v - np.var(c, ddof=ddof)) < 0.01
    s = S.std(x, lower=lo, upper=hi, epsilon=50.0, rng=seeded(3))
    assert abs(s - np.std(c)) < 0.01


def test_variance_range_and_tiny_data(seeded):
    g = seeded(4)
    for n in (0, 1, 3):
        v = S.variance(np.ones(n), lower=0, upper=2, epsilon=0.1, rng=g)
        assert 0.0 <= v <= 1.0
    assert S.variance([], lower=0, upper=2, epsilon=1e6, ddof=1, rng=g) == 1.0


def test_variance_noise_law_of_the_count(monkeypatch, seeded):
    """The count is released with discrete Laplace noise of scale 3/epsilon."""
    from dpfast import _draw  # the Laplace draw the release calls after its charge

    eps = 1.2
    g = seeded(5)
    vals = []
    real = _draw.laplace_release

    def grab(value, epsilon, sensitivity, *args, **kw):
        out = real(value, epsilon, sensitivity, *args, **kw)
        if sensitivity == 1.0:
            vals.append(out - value)
        return out

    monkeypatch.setattr(_draw, "laplace_release", grab)
    for _ in range(8_000):
        S.variance([0.5] * 10, lower=0, upper=1, epsilon=eps, rng=g)
    z = np.array(vals)
    zs = np.arange(z.min(), z.max() + 1)
    q = math.exp(-eps / 3)
    law = (1 - q) / (1 + q) * q ** np.abs(zs)
    law[0] += 1 - law.sum()
    assert chi2_pvalue([(z == k).sum() for k in zs], law) > ALPHA


# ------------------------------------------------------------------ quantiles


def test_quantiles_accuracy_order_and_shape(seeded):
    x = np.random.default_rng(6).uniform(0, 100, 20_000)
    qs = [0.9, 0.1, 0.5, 0.25, 0.75]
    out = S.quantiles(x, qs, lower=0, upper=100, epsilon=2.0, rng=seeded(7))
    assert out.shape == (5,)
    assert np.all(np.abs(out - np.quantile(x, qs)) < 1.0)
    srt = np.sort(qs)
    assert np.all(np.diff(out[np.argsort(qs)]) >= 0)
    assert srt.tolist() == sorted(qs)
    one = S.quantiles(x, 0.5, lower=0, upper=100, epsilon=2.0, rng=seeded(8))
    assert one.shape == (1,) and abs(one[0] - 50) < 2


@pytest.mark.parametrize("m,depth", [(1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4)])
def test_quantiles_budget_per_level_and_disjoint_nodes(monkeypatch, m, depth):
    calls = []
    real = S._em_quantile

    def spy(srt, level, cand, eps, gen):
        calls.append((srt.size, eps))
        return real(srt, level, cand, eps, gen)

    monkeypatch.setattr(S, "_em_quantile", spy)
    x = np.random.default_rng(9).normal(size=1000)
    S.quantiles(
        x,
        np.linspace(0.05, 0.95, m),
        lower=-4,
        upper=4,
        epsilon=1.0,
        rng=dpfast.random.ChaCha20(10),
    )
    assert S._depth(m) == depth
    assert len(calls) == m
    assert all(math.isclose(e, 1.0 / depth) for _, e in calls)
    # the nodes of one level hold disjoint records: at most n records per level
    assert sum(size for size, _ in calls) <= depth * 1000


def test_single_quantile_has_the_exponential_mechanisms_law(seeded):
    # median of [0, 0, 1, 2, 2, 2] over candidates 0, 1, 2: utilities from counts
    x = np.array([0.0, 0.0, 1.0, 2.0, 2.0, 2.0])
    cand = np.array([0.0, 1.0, 2.0])
    eps = 1.0
    b = 2**16
    a = b // 2
    less = np.array([0, 2, 3])
    greater = np.array([4, 3, 0])
    u = -np.abs((b - a) * less - a * greater)
    delta_u = max(a, b - a)
    w = np.exp(eps * u / (2 * delta_u))  # Thm 3.10, non-monotone utility
    p = w / w.sum()
    g = seeded(11)
    got = np.array(
        [
            S.quantiles(x, 0.5, lower=0, upper=2, epsilon=eps, candidates=cand, rng=g)[0]
            for _ in range(20_000)
        ]
    )
    counts = [(got == c).sum() for c in cand]
    assert chi2_pvalue(counts, p) > ALPHA


# ------------------------------------------------------------------ counts


def test_counts_law_and_layout(seeded):
    g = seeded(12)
    vals = ["a"] * 5 + ["b"] * 2 + ["other"] * 3
    eps = 0.8
    got = np.array(
        [
            list(S.counts(vals, ["a", "b", "c"], epsilon=eps, rng=g).values())
            for _ in range(10_000)
        ]
    )
    z = (got - np.array([5, 2, 0])).ravel()
    zs = np.arange(z.min(), z.max() + 1)
    q = math.exp(-eps)
    law = (1 - q) / (1 + q) * q ** np.abs(zs)
    law[0] += 1 - law.sum()
    assert chi2_pvalue([(z == k).sum() for k in zs], law) > ALPHA
    out = S.counts(np.array([3, 1, 3]), [3, 1, 2], epsilon=1.0, rng=g)
    assert list(out) == [3, 1, 2] and all(isinstance(v, int) for v in out.values())


def test_counts_pandas(seeded):
    import pandas as pd  # the [test] extra installs it

    out = S.counts(pd.Series(["x", "y", "x"]), ["x", "y"], epsilon=1.0, rng=seeded(13))
    assert isinstance(out, pd.Series) and list(out.index) == ["x", "y"]


@pytest.mark.parametrize(
    "cats,exc",
    [
        ([], dpfast.PrivacyParameterError),
        (["a", "a"], dpfast.PrivacyParameterError),
        ([["a"]], TypeError),
        ("ab", dpfast.PrivacyParameterError),
    ],
)
def test_counts_bad_categories(cats, exc):
    rec = Recorder()
    with pytest.raises(exc):
        S.counts(["a"], cats, epsilon=1.0, budget=rec)
    assert rec.calls == []


# ------------------------------------------------------------------ bounds estimation


def test_estimate_bounds(seeded):
    x = np.random.default_rng(14).lognormal(3, 1, 20_000)
    rec = Recorder()
    b = S.estimate_bounds(x, epsilon=1.0, rng=seeded(15), budget=rec)
    assert rec.calls == [(1.0, 0.0, "estimate_bounds")]
    assert b.lower < b.upper
    for v in b:
        assert v == 0 or 2.0 ** round(math.log2(abs(v))) == abs(v)
    hi = np.quantile(x, 0.99)
    assert hi / 2 <= b.upper <= hi * 2 and b.lower <= np.quantile(x, 0.01) * 2
    # degenerate data: still a proper interval
    c = S.estimate_bounds(np.zeros(1000), epsilon=5.0, rng=seeded(16))
    assert c.lower < c.upper


@pytest.mark.parametrize(
    "kw",
    [
        dict(quantile=0.5),
        dict(quantile=1.0),
        dict(smallest=0),
        dict(smallest=4, largest=2),
        dict(largest=float("inf")),
        dict(epsilon=-1),
    ],
)
def test_estimate_bounds_bad(kw):
    rec = Recorder()
    with pytest.raises(dpfast.PrivacyParameterError):
        S.estimate_bounds([1.0], **{"epsilon": 1.0, **kw}, budget=rec)
    assert rec.calls == []


# ------------------------------------------------------------------ validation, budget


@pytest.mark.parametrize("fn", [S.variance, S.std])
@pytest.mark.parametrize(
    "kw,exc",
    [
        (dict(lower=1, upper=1), dpfast.PrivacyParameterError),
        (dict(lower=0, upper=float("nan")), dpfast.PrivacyParameterError),
        (dict(epsilon=0), dpfast.PrivacyParameterError),
        (dict(ddof=2), dpfast.PrivacyParameterError),
        (dict(values=np.array(["x"])), TypeError),
        (dict(values=[1 + 2j]), TypeError),
    ],
)
def test_variance_bad_inputs_spend_nothing(fn, kw, exc):
    rec = Recorder()
    args = {"values": [1.0, 2.0], "lower": 0, "upper": 3, "epsilon": 1.0, **kw}
    with pytest.raises(exc):
        fn(**args, budget=rec)
    assert rec.calls == []


@pytest.mark.parametrize(
    "kw,exc",
    [
        (dict(qs=[]), dpfast.PrivacyParameterError),
        (dict(qs=[0.5, 1.5]), dpfast.PrivacyParameterError),
        (dict(qs=[float("nan")]), dpfast.PrivacyParameterError),
        (dict(candidates=1), dpfast.PrivacyParameterError),
        (dict(candidates=[]), dpfast.PrivacyParameterError),
        (dict(candidates=[0.0, np.inf]), dpfast.PrivacyParameterError),
        (dict(lower=2, upper=1), dpfast.PrivacyParameterError),
    ],
)
def test_quantiles_bad_inputs_spend_nothing(kw, exc):
    rec = Recorder()
    args = {"values": [1.0, 2.0], "qs": [0.5], "lower": 0, "upper": 3, "epsilon": 1.0, **kw}
    with pytest.raises(exc):
        S.quantiles(**args, budget=rec)
    assert rec.calls == []


def test_budget_charged_once_and_refusal_draws_nothing(seeded):
    b = PrivacyBudget(1.0)
    S.variance([1.0, 2.0], lower=0, upper=3, epsilon=0.6, budget=b, rng=seeded(17))
    assert len(b.ledger) == 1
    with pytest.raises(dpfast.BudgetExceededError):
        S.quantiles([1.0], [0.1, 0.9], lower=0, upper=3, epsilon=0.6, budget=b)
    assert len(b.ledger) == 1


def test_private_values_never_raise(seeded):
    bad = [np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324]
    g = seeded(18)
    assert 0 <= S.variance(bad, lower=-1, upper=1, epsilon=1.0, rng=g) <= 1
    q = S.quantiles(bad, [0.2, 0.8], lower=-1, upper=1, epsilon=1.0, rng=g)
    assert np.all((q >= -1) & (q <= 1))
    assert set(S.counts(bad, [np.inf, 1.0], epsilon=1.0, rng=g)) == {np.inf, 1.0}
    S.estimate_bounds(bad, epsilon=1.0, rng=g)
