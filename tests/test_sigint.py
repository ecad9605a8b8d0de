"""Ctrl-C in the bulk fills and releases (issue 9): they stop between two slices of the
C loop, leave the generator consistent, and slicing changes no seeded output.

Every test here installs the signal handler it relies on (SIGALRM's own, or Python's
SIGINT handler): a non-interactive shell starts a background job (``cmd &``) with SIGINT
ignored, and exec keeps it ignored, so a test that counted on Python's default Ctrl-C
handler failed there (issue 22 item 13)."""

import contextlib
import hashlib
import pathlib
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import dpfast.random as dr
from dpfast import _core, _parallel
from dpfast import selection as S

SLICE = _core._SLICE
N = SLICE + 1000  # two slices, the second one short (below DPF_EXACT_FILL_MIN)

needs_timer = pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
# SIGINT sent to the main thread from a timer thread: POSIX only (Windows has no
# pthread_kill, and no way to deliver SIGINT to one thread of a process)
needs_kill = pytest.mark.skipif(
    not hasattr(signal, "pthread_kill"),
    reason="needs pthread_kill to deliver SIGINT to a thread",
)


def cc(seed):
    return _core.ChaCha20(seed)


def _h(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]


X_FLOAT = np.linspace(-1e3, 1e3, N)
X_INT = np.arange(N) - N // 2

# Each fill of N values, and its SHA-256 prefix computed on main before the fills were
# sliced (1ac6b8a: one C call per fill).  Integer samplers only: their outputs do not
# depend on the platform's libm.  The prepared exact geometric / discrete Laplace /
# discrete Gaussian (and the releases on them) were replaced in issue 15: their digests
# were recomputed then (the discrete Gaussian's again for the block sampler of
# csrc/dgauss.c), and tests/test_samplers.py checks directly that their fills equal
# the concatenation of fills of at most one slice.
INTEGER_FILLS = {
    "bernoulli": (
        lambda: _core.discrete(_core.BERNOULLI, 1, 3, N, cc(2)),
        "8874ff8f6b892c4d",
    ),
    "bernoulli_exp": (
        lambda: _core.discrete(_core.BERNOULLI_EXP, 1, 2, N, cc(2)),
        "5baa27a2a7f20624",
    ),
    "geometric": (
        lambda: _core.discrete(_core.GEOMETRIC, 3, 2, N, cc(2)),
        "76782578c84ce1ac",
    ),
    "discrete_laplace": (
        lambda: _core.discrete(_core.DISCRETE_LAPLACE, 3, 2, N, cc(2)),
        "173370a37df68471",
    ),
    "discrete_gaussian": (
        lambda: _core.discrete(_core.DISCRETE_GAUSSIAN, 9, 4, N, cc(2)),
        "eea042decf167105",
    ),
    "bernoulli_big": (
        lambda: _core.discrete_big(_core.BERNOULLI, 2**100 + 7, 3 * 2**100, N, cc(3)),
        "1a2da7963493de82",
    ),
    "uniform_below": (lambda: _core.uniform_below(1000, N, cc(4)), "877fce5b3ec1cf90"),
    "geometric_ct": (
        lambda: _core.DiscreteLaplaceCT(3, 2).draw(True, N, cc(5)),
        "58cced947b2157c9",
    ),
    "discrete_laplace_ct": (
        lambda: _core.DiscreteLaplaceCT(3, 2).draw(False, N, cc(5)),
        "c3bcca6bec61183c",
    ),
    "discrete_gaussian_ct": (
        lambda: _core.DiscreteGaussianCT(9, 4).draw(N, cc(6)),
        "47cc81448760a6ba",
    ),
    "geometric_exact": (
        lambda: _core.DiscreteLaplaceExact(3, 2).draw(True, N, cc(7)),
        "54adc6b50719bd06",
    ),
    "discrete_laplace_exact": (
        lambda: _core.DiscreteLaplaceExact(3, 2).draw(False, N, cc(7)),
        "fda00f9298122262",
    ),
    "discrete_gaussian_exact": (
        lambda: _core.DiscreteGaussianExact(9, 4).draw(N, cc(8)),
        "7bf4892f1ef6d7a0",
    ),
    "grid_release": (
        lambda: _core.grid_release(_core.DiscreteLaplaceExact(3, 2), X_FLOAT, -10, cc(9)),
        "4c17fd849b6cef30",
    ),
    "int_release": (
        lambda: _core.int_release(_core.DiscreteGaussianExact(9, 4), X_INT, cc(10)),
        "85176407b4f9a978",
    ),
}


@pytest.mark.parametrize("name", sorted(INTEGER_FILLS))
def test_sliced_integer_fill_equals_the_unsliced_one_of_main(name):
    fill, digest = INTEGER_FILLS[name]
    assert _h(fill()) == digest


@pytest.mark.parametrize(
    "kind", [_core.UNIFORM, _core.EXPONENTIAL, _core.NORMAL, _core.LAPLACE, _core.GUMBEL]
)
def test_sliced_continuous_fill_equals_smaller_unsliced_fills(kind):
    # the continuous C fills keep no state between values, so fills of at most one slice
    # each, concatenated, are what a single C call over N values gave on main
    whole = _core.continuous(kind, 1.5, 2.0, N, cc(1), None)
    g = cc(1)
    parts = [
        _core.continuous(kind, 1.5, 2.0, m, g, None) for m in (SLICE // 2, SLICE // 2, 1000)
    ]
    assert np.array_equal(whole, np.concatenate(parts))


# Randomized response: the C loops take whole keystream words per batch of 8 or 32
# respondents, and _SLICE is a multiple of both, so a call over N respondents (sliced)
# equals calls over consecutive pieces of at most one slice (what one C call gave before).
RR_TRUTH8 = (np.arange(6 * SLICE) % 2).astype(np.uint8)
RR_TRUTH64 = (np.arange(6 * SLICE) % 7).astype(np.int64)
RR = {
    "rr_coins": lambda g, lo, hi: _core.rr_coins(RR_TRUTH8[lo:hi], g),
    "rr_binary": lambda g, lo, hi: _core.rr_binary(RR_TRUTH8[lo:hi], 2**63 + 12345, g),
    "rr_kary": lambda g, lo, hi: _core.rr_kary(RR_TRUTH64[lo:hi], 7, 2**62 + 999, g),
}


@pytest.mark.parametrize("name", sorted(RR))
def test_sliced_randomized_response_equals_smaller_unsliced_calls(name):
    call = RR[name]
    whole = call(cc(12), 0, N)
    g = cc(12)
    cuts = [0, SLICE // 2, SLICE, N]
    parts = [call(g, a, b) for a, b in zip(cuts, cuts[1:])]
    assert np.array_equal(whole, np.concatenate(parts))


# ------------------------------------------------------------------ Ctrl-C, serial


def _pos(bg):
    # PCG64's state is readable without its lock, which the interrupted fill holds
    return bg.state["state"]["state"]


def _interrupt_when(ready, call):
    """call() with SIGALRM every 0.5 ms; the handler raises KeyboardInterrupt once, at the
    first signal check after ready() is true.  Returns once it was raised."""
    fired = []

    def handler(signum, frame):
        if not fired and ready():
            fired.append(True)
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)
    assert fired


def _interrupt_inside(call, bg):
    """call(bg), interrupted once the generator has moved (so inside the fill: a signal
    handler runs between slices only)."""
    start = _pos(bg)
    _interrupt_when(lambda: _pos(bg) != start, lambda: call(bg))


SLICES = 6
BIG = SLICES * SLICE
BIG_FLOAT = np.zeros(BIG)
BIG_INT = np.zeros(BIG, dtype=np.int64)

# call(rng, n): a fill of n values; every one is run with n = BIG and interrupted
SERIAL = {
    "uniform_out": lambda g, n: dr.uniform(size=n, rng=g, out=np.empty(n)),
    "normal_out": lambda g, n: dr.normal(size=n, rng=g, out=np.empty(n)),
    "laplace_out": lambda g, n: dr.laplace(size=n, rng=g, out=np.empty(n)),
    "exponential_out": lambda g, n: dr.exponential(size=n, rng=g, out=np.empty(n)),
    "gumbel_out": lambda g, n: dr.gumbel(size=n, rng=g, out=np.empty(n)),
    "bernoulli": lambda g, n: _core.discrete(_core.BERNOULLI, 1, 3, n, g),
    "bernoulli_exp": lambda g, n: _core.discrete(_core.BERNOULLI_EXP, 1, 2, n, g),
    "geometric": lambda g, n: dr.geometric(1.5, size=n, rng=g),
    "discrete_laplace": lambda g, n: _core.discrete(_core.DISCRETE_LAPLACE, 3, 2, n, g),
    "discrete_gaussian": lambda g, n: _core.discrete(_core.DISCRETE_GAUSSIAN, 9, 4, n, g),
    "bernoulli_big": lambda g, n: _core.discrete_big(
        _core.BERNOULLI, 2**100 + 7, 3 * 2**100, n, g
    ),
    "uniform_below": lambda g, n: _core.uniform_below(1000, n, g),
    "geometric_ct": lambda g, n: _core.DiscreteLaplaceCT(3, 2).draw(True, n, g),
    "discrete_laplace_ct": lambda g, n: _core.DiscreteLaplaceCT(3, 2).draw(False, n, g),
    "discrete_gaussian_ct": lambda g, n: _core.DiscreteGaussianCT(9, 4).draw(n, g),
    "geometric_exact": lambda g, n: _core.DiscreteLaplaceExact(3, 2).draw(True, n, g),
    "discrete_laplace_exact": lambda g, n: _core.DiscreteLaplaceExact(3, 2).draw(
        False, n, g
    ),
    "discrete_gaussian_exact": lambda g, n: _core.DiscreteGaussianExact(9, 4).draw(n, g),
    "grid_release": lambda g, n: _core.grid_release(
        _core.DiscreteLaplaceExact(3, 2), BIG_FLOAT[:n], -10, g
    ),
    "int_release": lambda g, n: _core.int_release(
        _core.DiscreteGaussianExact(9, 4), BIG_INT[:n], g
    ),
    "rr_coins": lambda g, n: RR["rr_coins"](g, 0, n),
    "rr_binary": lambda g, n: RR["rr_binary"](g, 0, n),
    "rr_kary": lambda g, n: RR["rr_kary"](g, 0, n),
}


@needs_timer
@pytest.mark.parametrize("name", sorted(SERIAL))
def test_ctrl_c_stops_a_bulk_fill_between_slices(name):
    call = SERIAL[name]
    bg = np.random.PCG64(11)
    _interrupt_inside(lambda g: call(g, BIG), bg)  # main: one C call, no check
    # the generator stands where a fill of a whole number of slices leaves it (so it
    # stopped between two slices, before the end), and its stream goes on from there
    for j in range(1, SLICES):
        ref = np.random.PCG64(11)
        call(ref, j * SLICE)
        if _pos(ref) == _pos(bg):
            break
    else:
        pytest.fail("the generator is not at a slice boundary inside the fill")
    assert np.array_equal(call(bg, 100), call(ref, 100))


@needs_timer
def test_ctrl_c_leaves_out_partly_written_as_documented():
    out = np.full(BIG, np.nan)
    _interrupt_inside(lambda g: dr.uniform(size=BIG, rng=g, out=out), np.random.PCG64(12))
    done = int(np.count_nonzero(~np.isnan(out)))
    assert done % SLICE == 0 and 0 < done < BIG
    assert np.isnan(out[done:]).all()


def test_docstrings_say_what_an_interrupt_leaves():
    for f in (dr.uniform, dr.laplace, dr.normal, dr.exponential, dr.gumbel):
        assert "KeyboardInterrupt" in f.__doc__
    assert "Ctrl-C" in _parallel.__doc__


# ------------------------------------------------------------------ Ctrl-C, threads


@needs_timer
@pytest.mark.parametrize("nworkers", [1, 2])
def test_ctrl_c_stops_scheduling_chunks(nworkers):
    nchunks = 64
    done = []

    def task(lo, hi, sub):
        time.sleep(0.002)  # a chunk of a few milliseconds, as a real fill
        done.append(lo)

    _interrupt_when(
        lambda: bool(done),
        lambda: _parallel.chunked(nchunks * _parallel.CHUNK, cc(13), nworkers, task),
    )
    n_after = len(done)
    time.sleep(0.05)
    assert len(done) == n_after  # no thread goes on after the raise
    assert n_after <= nchunks // 4  # main: the other thread ran all of its half


@needs_timer
def test_ctrl_c_stops_a_threaded_fill():
    bg = np.random.PCG64(14)
    _interrupt_inside(lambda g: dr.laplace(size=BIG, rng=g, workers=2), bg)
    # the key was drawn (four words), then the chunks stopped: the generator is usable
    ref = np.random.PCG64(14)
    ref.random_raw(4)
    assert _pos(bg) == _pos(ref)


# ------------------------------------------------------------------ Ctrl-C, SIGINT itself


@contextlib.contextmanager
def _python_sigint_handler():
    """Python's own SIGINT handler (it raises KeyboardInterrupt) inside the block, the
    previous disposition restored after.  Needed because a background job starts with
    SIGINT ignored (module docstring); ``None`` (a handler not set from Python) cannot be
    restored, so Python's stays then."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGINT, old)


def _interrupt_soon(seconds=0.05):
    t = threading.Timer(
        seconds, lambda: signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    )
    t.start()
    return t


@needs_kill
def test_ctrl_c_stops_a_long_secure_top_k():
    scores = np.arange(200_000, dtype=np.float64)
    with _python_sigint_handler():
        t = _interrupt_soon()
        try:
            with pytest.raises(KeyboardInterrupt):
                S.top_k(
                    scores, 100_000, epsilon=1.0, rng=cc(1)
                )  # minutes without the check
        finally:
            t.join()


ROOT = pathlib.Path(__file__).resolve().parent.parent
_IGNORING_SIGINT = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider'] + sys.argv[1:]))"
)


@pytest.mark.slow
@needs_kill
@needs_timer
def test_the_ctrl_c_tests_pass_in_a_background_job():
    """As ``python -m pytest ... &`` from a script: a child whose SIGINT is ignored (the
    disposition a shell gives a background job) runs the SIGINT test and a SIGALRM one.
    The SIGINT test failed there before it installed Python's handler (the top-k ran to
    the end: DID NOT RAISE KeyboardInterrupt)."""
    tests = [
        f"{__file__}::test_ctrl_c_stops_a_long_secure_top_k",
        f"{__file__}::test_ctrl_c_leaves_out_partly_written_as_documented",
    ]
    r = subprocess.run(
        [sys.executable, "-c", _IGNORING_SIGINT, *tests],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" in r.stdout
