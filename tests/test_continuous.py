"""Continuous (simulation-path) samplers: exact laws at a tiny alpha, edge cases, inputs."""

import math
import threading

import numpy as np
import pytest
from scipy import stats

import dpfast
import dpfast.random as dr
from stat_helpers import ALPHA, chi2_pvalue

N = 400_000

LAWS = [
    ("laplace", 2.5, stats.laplace(scale=2.5)),
    ("normal", 0.75, stats.norm(scale=0.75)),
    ("exponential", 3.0, stats.expon(scale=3.0)),
    ("gumbel", 1.5, stats.gumbel_r(scale=1.5)),
]


@pytest.mark.parametrize("name, scale, law", LAWS)
def test_kolmogorov_smirnov(name, scale, law, seeded):
    x = getattr(dr, name)(scale=scale, size=N, rng=seeded(1))
    assert stats.kstest(x, law.cdf).pvalue > ALPHA


@pytest.mark.parametrize("name, scale, law", LAWS)
def test_binned_chi_square_with_tails(name, scale, law, seeded):
    # 200 equiprobable cells resolve the body; the extreme cells test the tails, where a
    # ziggurat's base layer and wedges are most likely to be wrong.
    x = getattr(dr, name)(scale=scale, size=1_000_000, rng=seeded(2))
    edges = law.ppf(np.linspace(0, 1, 201))
    counts = np.histogram(x, bins=edges)[0]
    assert counts.sum() == x.size
    assert chi2_pvalue(counts, np.full(200, 1 / 200)) > ALPHA


@pytest.mark.parametrize(
    "name, r, law",
    [
        ("exponential", 7.69711747013104972, stats.expon()),
        ("normal", 3.6541528853610088, stats.norm()),
    ],
)
def test_ziggurat_tail_beyond_base_layer(name, r, law, seeded):
    # Draws past the base layer's edge come only from the tail algorithm.
    n = 4_000_000
    x = np.abs(getattr(dr, name)(scale=1.0, size=n, rng=seeded(3)))
    p = law.sf(r) * (2 if name == "normal" else 1)
    k = int((x > r).sum())
    assert stats.binomtest(k, n, p).pvalue > ALPHA
    beyond = x[x > r]
    cond = stats.expon(loc=r) if name == "exponential" else None
    if cond is not None:
        assert stats.kstest(beyond, cond.cdf).pvalue > ALPHA
    else:
        tail_cdf = lambda t: (law.cdf(t) - law.cdf(r)) / law.sf(r)
        assert stats.kstest(beyond, tail_cdf).pvalue > ALPHA


def test_uniform(seeded):
    x = dr.uniform(-2.0, 3.0, N, rng=seeded(4))
    assert x.min() >= -2.0 and x.max() < 3.0
    assert stats.kstest(x, stats.uniform(-2, 5).cdf).pvalue > ALPHA
    with pytest.raises(dpfast.PrivacyParameterError, match="high must be >= low"):
        dr.uniform(1.0, 0.0)


def test_laplace_is_symmetric(seeded):
    x = dr.laplace(scale=1.0, size=1_000_000, rng=seeded(5))
    k = int((x > 0).sum())
    assert stats.binomtest(k, x.size, 0.5).pvalue > ALPHA


@pytest.mark.parametrize("name", ["laplace", "normal", "exponential", "gumbel"])
def test_shapes_scalars_and_out(name, seeded):
    f = getattr(dr, name)
    v = f(scale=1.0, rng=seeded())
    assert type(v) is float
    assert f(scale=1.0, size=(2, 3), rng=seeded()).shape == (2, 3)
    assert f(scale=1.0, size=0, rng=seeded()).shape == (0,)
    assert np.all(f(scale=0.0, size=100, rng=seeded()) == 0.0)  # scale 0: no noise
    out = np.zeros(10)
    assert f(scale=1.0, out=out, rng=seeded()) is out and np.count_nonzero(out) == 10
    # a non-contiguous out is filled in place, with the same stream as a contiguous one
    big = np.zeros(20)
    f(scale=1.0, out=big[::2], rng=seeded(9))
    assert np.array_equal(big[::2], f(scale=1.0, size=10, rng=seeded(9)))
    assert np.all(big[1::2] == 0)
    with pytest.raises(TypeError, match="float64"):
        f(scale=1.0, out=np.zeros(3, dtype=np.float32))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writeable"):
        f(scale=1.0, out=ro)
    with pytest.raises(ValueError, match="shape"):
        f(scale=1.0, size=4, out=np.zeros(3))


@pytest.mark.parametrize("name", ["laplace", "normal", "exponential", "gumbel"])
@pytest.mark.parametrize(
    "bad, exc",
    [
        (float("nan"), dpfast.PrivacyParameterError),
        (float("inf"), dpfast.PrivacyParameterError),
        (-1.0, dpfast.PrivacyParameterError),
        (True, TypeError),
        ("1", TypeError),
        (None, TypeError),
    ],
)
def test_bad_scale(name, bad, exc):
    with pytest.raises(exc, match="scale"):
        getattr(dr, name)(scale=bad, size=3)
    with pytest.raises(exc, match="scale"):
        getattr(dr, name)(scale=bad)


def test_bad_size_and_rng():
    with pytest.raises(dpfast.PrivacyParameterError, match="size"):
        dr.laplace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match="size"):
        dr.laplace(0.0, 1.0, 2.5)
    with pytest.raises(TypeError, match="rng"):
        dr.laplace(0.0, 1.0, 3, rng=np.random.RandomState(0))
    with pytest.raises(TypeError, match="rng"):
        dr.laplace(0.0, 1.0, rng=object())


def test_foreign_generators_work_and_reproduce():
    a = dr.laplace(0.0, 1.0, 1000, rng=np.random.PCG64(3))
    b = dr.laplace(0.0, 1.0, 1000, rng=np.random.Generator(np.random.PCG64(3)))
    assert np.array_equal(a, b)
    assert (
        stats.kstest(
            dr.normal(0.0, 1.0, 50_000, rng=np.random.Philox(1)), stats.norm.cdf
        ).pvalue
        > ALPHA
    )


def test_default_generator_is_used_when_rng_is_none():
    a, b = dr.laplace(0.0, 1.0, 4), dr.laplace(0.0, 1.0, 4)
    assert not np.array_equal(a, b)


def test_threads_with_own_generators_match_serial():
    serial = [dr.normal(0.0, 1.0, 20_000, rng=dr.ChaCha20(s)) for s in range(4)]
    out = [None] * 4

    def work(s):
        out[s] = dr.normal(0.0, 1.0, 20_000, rng=dr.ChaCha20(s))

    ts = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert all(np.array_equal(a, b) for a, b in zip(serial, out))


# ------------------------------------------------ workers= (issue 15, item 3)

BIG = 2**18 + 12345  # above dpfast._parallel.PARALLEL_MIN, with a partial last chunk


@pytest.mark.parametrize("name", ["uniform", "laplace", "normal", "exponential", "gumbel"])
def test_parallel_fill_is_the_same_for_every_thread_count(name):
    fn = getattr(dr, name)
    ref = fn(size=BIG, rng=dr.ChaCha20(11), workers=1)
    for w in (2, 3, 8):
        assert np.array_equal(fn(size=BIG, rng=dr.ChaCha20(11), workers=w), ref)
    # chunks are distinct streams, and a different seed gives a different fill
    assert not np.array_equal(ref[:1000], ref[65536:66536])
    assert not np.array_equal(fn(size=BIG, rng=dr.ChaCha20(12), workers=2), ref)


def test_parallel_fill_law_and_independence():
    from dpfast import _parallel

    x = dr.laplace(0.0, 2.0, BIG, rng=dr.ChaCha20(13), workers=2)
    assert stats.kstest(x, stats.laplace(scale=2.0).cdf).pvalue > 1e-6
    c = _parallel.CHUNK
    r = np.corrcoef(x[:c], x[c : 2 * c])[0, 1]  # neighbouring chunks: independent
    assert abs(r) < 5.5 / math.sqrt(c)  # |r| sqrt(n) ~ N(0, 1); alpha ~ 1e-7


def test_parallel_chunks_run_once_each_and_a_paused_thread_holds_back_nothing():
    # chunks are taken from a shared queue: while the calling thread sleeps in its first
    # chunk, the other thread runs every other chunk; each chunk runs exactly once, on
    # its own sub-stream, so the fill is the same as on one thread
    import threading
    import time

    from dpfast import _parallel

    n = 10 * _parallel.CHUNK + 7
    ran = []
    main = threading.get_ident()
    first = threading.Event()

    def task(lo, hi, sub):
        if threading.get_ident() == main and not first.is_set():
            first.set()
            time.sleep(0.5)
        ran.append((lo, hi, threading.get_ident(), int(sub.random_raw())))

    _parallel.chunked(n, dr.ChaCha20(21), 2, task)
    spans = sorted((lo, hi) for lo, hi, _, _ in ran)
    assert spans == [
        (lo, min(lo + _parallel.CHUNK, n)) for lo in range(0, n, _parallel.CHUNK)
    ]
    by_main = sum(1 for _, _, t, _ in ran if t == main)
    assert by_main < 3  # the other thread took the chunks while it slept
    ref = []
    _parallel.chunked(
        n, dr.ChaCha20(21), 1, lambda lo, hi, sub: ref.append((lo, int(sub.random_raw())))
    )
    assert sorted((lo, w) for lo, _, _, w in ran) == sorted(ref)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (0, "PrivacyParameterError"),
        (-2, "PrivacyParameterError"),
        (True, "TypeError"),
        (1.5, "TypeError"),
        ("2", "TypeError"),
    ],
)
def test_workers_is_validated(bad, exc):
    import dpfast

    err = TypeError if exc == "TypeError" else dpfast.PrivacyParameterError
    with pytest.raises(err, match="workers"):
        dr.laplace(0.0, 1.0, 10, workers=bad)
