"""Shared state under threads (docs/threads.md): the paths that must stay correct without
the GIL.  They run on the GIL build too, where the C loops already run in parallel; the
free-threaded job of .github/workflows/tests.yml runs them on CPython 3.14t, PYTHON_GIL=0."""

import sys
import sysconfig
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import dpfast
from dpfast import BudgetExceededError, mechanisms, randomized_response, sparse
from dpfast.accounting import Accountant, PrivacyBudget
from dpfast.random import ChaCha20

THREADS = 8
FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _together(fn, n=THREADS):
    """Run fn(i) on n threads released at the same moment; return the results in order."""
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(run, range(n)))


@pytest.mark.skipif(
    not FREE_THREADED,
    reason="the GIL can only be off on a free-threaded "
    "CPython; the 3.14t job of .github/workflows/tests.yml runs this test "
    "(no free-threaded build can be installed on the CI machine of .ci/run)",
)
def test_importing_dpfast_keeps_the_gil_off():
    # _core declares freethreading_compatible: importing it must not re-enable the GIL
    # (CPython would, with a RuntimeWarning, for an undeclared extension).
    assert dpfast._core is not None
    assert not sys._is_gil_enabled()


def test_one_chacha20_shared_by_threads_hands_out_the_serial_stream_once():
    g = ChaCha20(2026)
    sizes = [1, 7, 64, 1000, 3]  # odd sizes cross the 8-block buffer at many places

    def draw(i):
        out = []
        for _ in range(40):
            for s in sizes:
                out.append(
                    g.random_raw(s)
                    if s > 1
                    else np.array([g.random_raw()], dtype=np.uint64)
                )
        return np.concatenate(out)

    got = np.concatenate(_together(draw))
    serial = ChaCha20(2026).random_raw(got.size)
    # every word of the stream exactly once, whichever thread took it
    np.testing.assert_array_equal(np.sort(got), np.sort(serial))


def test_numpy_generator_over_a_shared_chacha20_is_serialised():
    g = ChaCha20(7)
    gen = np.random.Generator(g)
    draws = _together(lambda i: gen.integers(0, 2**63, size=5000, dtype=np.int64))
    got = np.sort(np.concatenate(draws))
    serial = np.sort(
        np.random.Generator(ChaCha20(7)).integers(0, 2**63, size=got.size, dtype=np.int64)
    )
    np.testing.assert_array_equal(got, serial)


def test_spawn_from_threads_gives_distinct_children():
    parent = ChaCha20(11)
    kids = _together(lambda i: [c.random_raw() for c in parent.spawn(4)])
    firsts = [w for ks in kids for w in ks]
    assert len(set(firsts)) == THREADS * 4
    # the same children as one serial spawn of that many
    assert set(firsts) == {c.random_raw() for c in ChaCha20(11).spawn(THREADS * 4)}


def test_chacha20_cannot_be_reinitialised():
    g = ChaCha20(3)
    with pytest.raises(TypeError, match="re-initialised"):
        g.__init__(4)
    assert g.random_raw() == ChaCha20(3).random_raw()  # untouched


def test_threads_charging_one_budget_release_exactly_what_fits():
    budget = PrivacyBudget(epsilon=4.0)
    rng = ChaCha20(5)  # one generator, shared too

    def run(i):
        ok = 0
        for _ in range(10):
            try:
                mechanisms.laplace_mechanism(
                    np.arange(100.0), epsilon=0.125, budget=budget, rng=rng
                )
                ok += 1
            except BudgetExceededError:
                pass
        return ok

    assert sum(_together(run)) == 32  # 4 / 0.125, never one more
    assert budget.remaining.epsilon == 0.0


@pytest.mark.parametrize("attempt", range(3))  # a race: without the lock 3 in 10 runs fail
def test_accountant_never_caches_a_stale_composition(attempt):
    acc = Accountant("pld")
    composers = 4
    done = threading.Event()
    sigmas = [[1.5 + 0.25 * j + 0.01 * i for j in range(8)] for i in range(composers)]

    def run(i):
        if i < composers:
            for s in sigmas[i]:
                acc.compose_gaussian(sigma=s)
            return None
        while not done.is_set():  # queries race with the composes
            acc.epsilon(1e-6)
        return None

    finished = []

    def compose_then_signal(i):
        try:
            return run(i)
        finally:
            if i < composers:  # even if a compose raised: never hang
                finished.append(i)
                if len(finished) == composers:
                    done.set()

    _together(compose_then_signal)
    fresh = Accountant("pld")
    for s in sorted(s for row in sigmas for s in row):
        fresh.compose_gaussian(sigma=s)
    assert acc.epsilon(1e-6) == pytest.approx(fresh.epsilon(1e-6), rel=1e-12)


def test_sparse_stream_shared_by_threads_stops_at_the_cutoff():
    svt = sparse.Sparse(threshold=0.0, cutoff=5, epsilon=1.0, rng=ChaCha20(9))

    def run(i):
        pos = 0
        for _ in range(50):
            try:
                pos += bool(svt.step(1e6))  # far above the threshold
            except dpfast.MechanismHaltedError:
                break
        return pos

    assert sum(_together(run)) == 5
    assert svt.halted


def test_cached_parameters_built_concurrently_match_serial():
    epsilons = [0.05 * (j + 1) for j in range(40)]
    randomized_response._flip_threshold.cache_clear()
    got = _together(
        lambda i: [randomized_response._flip_threshold(e, 2 + i % 3) for e in epsilons]
    )
    randomized_response._flip_threshold.cache_clear()
    for i, row in enumerate(got):
        assert row == [randomized_response._flip_threshold(e, 2 + i % 3) for e in epsilons]
