"""dpfast.stats: noise laws and sensitivities, exactness of the secure integer paths,
public bounds required, validation, budget charged once before drawing."""

import math

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from dpfast import stats as R
from stat_helpers import ALPHA, chi2_pvalue


def dlap_pmf(eps, zs):
    q = math.exp(-eps)
    return (1 - q) / (1 + q) * q ** np.abs(zs)


def assert_dlap(noise, eps):
    zs = np.arange(noise.min(), noise.max() + 1)
    counts = np.array([(noise == z).sum() for z in zs])
    law = dlap_pmf(eps, zs)
    law[0] += 1 - law.sum()  # the two tails beyond the observed range
    assert chi2_pvalue(counts, law) > ALPHA


def test_count_secure_is_the_geometric_mechanism(seeded):
    data = list(range(137))
    g = seeded(1)
    out = np.array([R.count(data, epsilon=0.7, rng=g) for _ in range(40_000)])
    assert out.dtype.kind == "i"
    assert_dlap(out - 137, 0.7)


def test_count_fast(seeded):
    out = np.array(
        [
            R.count(np.zeros((50, 3)), epsilon=2.0, rng=seeded(2), mode="fast")
            for _ in range(2)
        ]
    )
    assert out.dtype == np.float64


def test_sum_secure_exact_grid_and_noise_scale(seeded):
    lo, hi, eps = -3.0, 5.0, 0.5
    x = np.random.default_rng(0).uniform(-10, 10, 1001)
    step = 2.0 ** (math.floor(math.log2(5.0)) - 30)
    exact = np.clip(x, lo, hi)
    q = np.rint(exact / step)
    true_sum = float(q.sum()) * step
    g = seeded(3)
    out = np.array(
        [R.sum(x, lower=lo, upper=hi, epsilon=eps, rng=g) for _ in range(20_000)]
    )
    # every release is a grid point
    assert np.all(out / step == np.rint(out / step))
    # noise: discrete Laplace of scale B/eps, B = max(|lo|, |hi|), on a 2^-28 grid
    assert stats.kstest(out - true_sum, stats.laplace(scale=5.0 / eps).cdf).pvalue > ALPHA
    assert abs(true_sum - exact.sum()) <= x.size * step / 2


def test_sum_and_mean_with_bounds_narrower_than_a_grid_step(seeded):
    lo, hi = 1.0, 1.0 + 1e-12
    x = np.full(10, 1.0)
    out = R.sum(x, lower=lo, upper=hi, epsilon=1e6, rng=seeded(13))
    assert abs(out - 10.0) < 1e-4  # noise scale B/eps = 1e-6
    assert lo <= R.mean(x, lower=lo, upper=hi, epsilon=1.0, rng=seeded(13)) <= hi


def test_sum_fast_noise_scale(seeded):
    x = np.random.default_rng(1).uniform(0, 1, 300)
    g = seeded(4)
    out = np.array(
        [
            R.sum(x, lower=0.0, upper=2.0, epsilon=1.0, rng=g, mode="fast")
            for _ in range(20_000)
        ]
    )
    assert stats.kstest(out - math.fsum(x), stats.laplace(scale=2.0).cdf).pvalue > ALPHA


@pytest.mark.parametrize("mode", ["secure", "fast"])
def test_mean(mode, seeded):
    x = np.random.default_rng(2).normal(3.0, 1.0, 100_000)
    g = seeded(5)
    outs = [
        R.mean(x, lower=0.0, upper=6.0, epsilon=1.0, rng=g, mode=mode) for _ in range(200)
    ]
    assert all(0.0 <= m <= 6.0 for m in outs)
    clamped = np.clip(x, 0.0, 6.0).mean()
    # noise ~ (upper-lower)/2 / (n eps/2) = 6e-5 on the sum part plus the count's
    assert np.max(np.abs(np.array(outs) - clamped)) < 2e-3
    for tiny in ([], [10.0]):
        m = R.mean(tiny, lower=-1.0, upper=1.0, epsilon=0.5, rng=g, mode=mode)
        assert -1.0 <= m <= 1.0


def test_mean_secure_centred_sum_noise(seeded):
    # Values at the centre of the bounds: the centred sum is 0, so the released mean is
    # centre + L / (n + Z) with L the sum's noise (Laplace of scale ((upper-lower)/2)/(eps/2)
    # on a 2^-29 grid) and Z the count's (negligible against n).
    n = 100_000
    x = np.full(n, 2.0)
    g = seeded(6)
    outs = np.array(
        [R.mean(x, lower=0.0, upper=4.0, epsilon=2.0, rng=g) for _ in range(2000)]
    )
    assert stats.kstest((outs - 2.0) * n, stats.laplace(scale=2.0).cdf).pvalue > ALPHA


def test_histogram_secure_law_and_shape(seeded):
    x = np.random.default_rng(3).uniform(0, 10, 5000)
    edges = [0.0, 1.0, 2.5, 7.0, 10.0]
    exact, _ = np.histogram(x, bins=edges)
    g = seeded(7)
    noise = []
    for _ in range(5000):
        counts, e = R.histogram(x, edges, epsilon=0.9, rng=g)
        assert counts.dtype == np.int64 and counts.shape == (4,)
        noise.append(counts - exact)
    np.testing.assert_array_equal(e, edges)
    assert_dlap(np.concatenate(noise), 0.9)


def test_histogram_counts_only_inside_the_bins(seeded):
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, np.nan, np.inf, 3.0])
    counts, edges = R.histogram(x, 2, range=(0.0, 2.0), epsilon=1e6, rng=seeded(8))
    np.testing.assert_array_equal(counts, [2, 2])
    np.testing.assert_allclose(edges, [0.0, 1.0, 2.0])
    counts, _ = R.histogram(x, 2, range=(0.0, 2.0), epsilon=1.0, rng=seeded(8), mode="fast")
    assert counts.dtype == np.float64


@pytest.mark.parametrize("mode", ["secure", "fast"])
def test_quantile(mode, seeded):
    x = np.random.default_rng(4).uniform(0, 100, 20_001)
    g = seeded(9)
    for q in [0.0, 0.1, 0.5, 0.9, 1.0]:
        out = R.quantile(x, q, lower=0.0, upper=100.0, epsilon=5.0, rng=g, mode=mode)
        cand = np.linspace(0, 100, 1025)
        assert out in cand
        assert abs(out - np.quantile(x, q)) < 0.5
    out = R.quantile(
        x,
        0.5,
        lower=0.0,
        upper=100.0,
        epsilon=5.0,
        candidates=[10.0, 49.9, 70.0],
        rng=g,
        mode=mode,
    )
    assert out == 49.9


def test_quantile_accuracy_in_ranks(seeded):
    # Cor. 3.12 with Delta = max(a, 2^16 - a): the chosen candidate's utility is within
    # (2 Delta/eps)(ln K + ln(1/beta)) of the best with probability >= 1 - beta.
    from dpfast import accuracy as A

    x = np.arange(200.0)
    eps, beta, K = 0.5, 0.05, 201
    cand = np.arange(-0.5, 200.0, 1.0)  # K = 201 candidates between points
    a, b = 2**15, 2**16
    alpha = A.exponential_mechanism_error(eps, n_candidates=K, beta=beta, sensitivity=a)
    g = seeded(10)
    fails = 0
    for _ in range(4000):
        c = R.quantile(x, 0.5, lower=-1.0, upper=201.0, epsilon=eps, candidates=cand, rng=g)
        less = (x < c).sum()
        util = -abs((b - a) * less - a * (x.size - less))
        fails += util <= 0 - alpha
    assert stats.binomtest(int(fails), 4000, beta, alternative="greater").pvalue > ALPHA


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "call, exc",
    [
        (lambda: R.count([1, 2], epsilon=0.0), dpfast.PrivacyParameterError),
        (lambda: R.count([1, 2], epsilon=1.0, mode="exact"), dpfast.PrivacyParameterError),
        (lambda: R.count(5, epsilon=1.0), TypeError),
        (lambda: R.count([1], epsilon=1.0, rng="x"), TypeError),
        (lambda: R.sum([1.0], epsilon=1.0), TypeError),
        (
            lambda: R.sum([1.0], lower=1.0, upper=1.0, epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.sum([1.0], lower=2.0, upper=1.0, epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.sum([1.0], lower=float("nan"), upper=1.0, epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.sum([1.0], lower=0.0, upper=float("inf"), epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (lambda: R.sum(["a"], lower=0.0, upper=1.0, epsilon=1.0), TypeError),
        (lambda: R.sum([True], lower=0.0, upper=1.0, epsilon=1.0), TypeError),
        (lambda: R.mean([1.0], lower=0.0, epsilon=1.0), TypeError),
        (
            lambda: R.mean([1.0], lower=0.0, upper=1.0, epsilon=-1.0),
            dpfast.PrivacyParameterError,
        ),
        (lambda: R.histogram([1.0], 3, epsilon=1.0), TypeError),
        (
            lambda: R.histogram([1.0], 0, range=(0, 1), epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (lambda: R.histogram([1.0], [0.0], epsilon=1.0), dpfast.PrivacyParameterError),
        (
            lambda: R.histogram([1.0], [0.0, 2.0, 1.0], epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.histogram([1.0], [0.0, float("nan")], epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.histogram([1.0], 2, range=(1.0, 0.0), epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (lambda: R.histogram(["x"], [0.0, 1.0], epsilon=1.0), TypeError),
        (lambda: R.quantile([1.0], 0.5, epsilon=1.0), TypeError),
        (
            lambda: R.quantile([1.0], 1.5, lower=0.0, upper=1.0, epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.quantile([1.0], -0.1, lower=0.0, upper=1.0, epsilon=1.0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.quantile([1.0], 0.5, lower=0.0, upper=1.0, epsilon=1.0, candidates=0),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.quantile(
                [1.0], 0.5, lower=0.0, upper=1.0, epsilon=1.0, candidates=[]
            ),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda: R.quantile(
                [1.0],
                0.5,
                lower=0.0,
                upper=1.0,
                epsilon=1.0,
                candidates=[0.0, float("inf")],
            ),
            dpfast.PrivacyParameterError,
        ),
    ],
)
def test_validation(call, exc):
    with pytest.raises(exc):
        call()


def test_inputs_not_modified(seeded):
    x = np.array([5.0, -3.0, 20.0])
    x.flags.writeable = False
    R.sum(x, lower=0.0, upper=10.0, epsilon=1.0, rng=seeded(11))
    R.mean(x, lower=0.0, upper=10.0, epsilon=1.0, rng=seeded(11))
    R.quantile(x, 0.5, lower=0.0, upper=10.0, epsilon=1.0, rng=seeded(11))
    R.histogram(x, [0.0, 10.0], epsilon=1.0, rng=seeded(11))
    np.testing.assert_array_equal(x, [5.0, -3.0, 20.0])


# ---------------------------------------------------------------- budget


class Stub:
    def __init__(self, rng, fail=False):
        self.calls, self.rng, self.fail = [], rng, fail

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label, self.rng.state))
        if self.fail:
            raise dpfast.BudgetExceededError("stub")


X = [0.5, 1.5, 2.5, 9.0]
CALLS = [
    lambda **kw: R.count(X, epsilon=0.3, **kw),
    lambda **kw: R.sum(X, lower=0.0, upper=3.0, epsilon=0.3, **kw),
    lambda **kw: R.mean(X, lower=0.0, upper=3.0, epsilon=0.3, **kw),
    lambda **kw: R.histogram(X, [0.0, 1.0, 3.0], epsilon=0.3, **kw),
    lambda **kw: R.quantile(X, 0.5, lower=0.0, upper=3.0, epsilon=0.3, **kw),
]


def _same(a, b):
    return a["key"] == b["key"] and np.array_equal(a["buffer"], b["buffer"])


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("call", CALLS)
def test_budget_charged_once_before_drawing(call, mode):
    g = dr.ChaCha20(12)
    start = g.state
    stub = Stub(g)
    call(rng=g, mode=mode, budget=stub)
    ((eps, delta, label, state),) = stub.calls
    assert eps == 0.3 and delta == 0.0 and isinstance(label, str)
    assert _same(state, start) and not _same(g.state, start)
    g2 = dr.ChaCha20(12)
    with pytest.raises(dpfast.BudgetExceededError):
        call(rng=g2, mode=mode, budget=Stub(g2, fail=True))
    assert _same(g2.state, start)
