"""The speed work of issues 14/15 that changes a code path, not only its cost.

The prepared scalar release (``_core.ScalarPlan``) behind the mechanism objects'
``release(value)`` with ``rng=None`` and no budget: the same C calls as the general path
on the same plan, so the same law; a private per-thread OS-keyed stream; any value it does
not take goes to the general path unchanged.  The process id read from a wipe-on-fork
page (the streams' fork check without a system call per query)."""

import math
import os
import platform
import sys
import threading

import numpy as np
import pytest

from dpfast import _core
from dpfast import mechanisms as M
from dpfast._errors import MechanismHaltedError, PrivacyParameterError
from dpfast.objects import DiscreteLaplace, Gaussian, Laplace
from dpfast.random import ChaCha20


@pytest.fixture(autouse=True)
def _fresh_stream():
    yield
    _core._seed_scalar_stream(None)  # never leave a seeded stream behind


def _grid_plan(obj):
    return obj._plan if isinstance(obj, Laplace) else obj._scalar


@pytest.mark.parametrize(
    "obj",
    [
        Laplace(epsilon=0.7, sensitivity=2.0),
        Laplace(epsilon=50.0),
        Gaussian(epsilon=1.0, delta=1e-6),
        Gaussian(rho=0.3),
    ],
    ids=repr,
)
@pytest.mark.parametrize("x", [1.0, -3.25, 0.0, 1e300, -5e-324, 2.0**60 + 2.0**8])
def test_float_release_is_grid_release_on_the_same_stream(obj, x):
    k, sampler = _grid_plan(obj)
    _core._seed_scalar_stream(11)
    fast = [obj.release(x) for _ in range(50)]
    ref = ChaCha20(11)
    slow = [_core.grid_release(sampler, x, k, ref) for _ in range(50)]
    assert fast == slow
    assert all(type(y) is float for y in fast)


@pytest.mark.parametrize("x", [0, 3, -7, 2**63 - 1, -(2**63)])
def test_integer_release_is_int_release_on_the_same_stream(x):
    obj = DiscreteLaplace(epsilon=0.5, sensitivity=3)
    _core._seed_scalar_stream(5)
    fast = [obj.release(x) for _ in range(50)]
    ref = ChaCha20(5)
    slow = [_core.int_release(obj._sampler, x, ref) for _ in range(50)]
    assert fast == slow
    assert all(type(y) is int and -(2**63) <= y < 2**63 for y in fast)


def test_law_of_the_scalar_path():
    # the discrete Laplace noise in grid steps, from 40000 fast-path releases of 0.0,
    # against its exact law: P[Z = z] proportional to exp(-|z| / t) with t the sampler's
    # scale (chi-square on bins of equal width in units of the scale, fixed seed)
    lap = Laplace(epsilon=1.0)
    k, sampler = lap._plan
    _core._seed_scalar_stream(2026)
    z = np.array([lap.release(0.0) for _ in range(40_000)]) / 2.0**k
    assert np.all(z == np.round(z))  # on the grid
    num, den = sampler.scale
    t = num / den
    u = z / t
    edges = np.array([-np.inf, -3, -2, -1, -0.5, 0, 0.5, 1, 2, 3, np.inf])
    obs, _ = np.histogram(u, bins=edges)
    cdf = np.where(
        edges < 0,
        0.5 * np.exp(np.minimum(edges, 0)),
        1 - 0.5 * np.exp(-np.maximum(edges, 0)),
    )
    exp = np.diff(cdf) * z.size
    from scipy import stats

    assert stats.chisquare(obs, exp).pvalue > 1e-6


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_take_the_general_path(value):
    with pytest.raises(PrivacyParameterError) as e:
        Laplace(epsilon=1.0).release(value)
    assert "nan" not in str(e.value).lower().replace("nan and", "")
    with pytest.raises(PrivacyParameterError):
        Gaussian(epsilon=1.0, delta=1e-6).release(value)


def test_other_values_keep_the_general_path():
    lap = Laplace(epsilon=1.0)
    assert type(lap.release(np.float64(2.0))) in (float, np.float64)
    assert isinstance(lap.release(3), int) or np.issubdtype(
        type(lap.release(3)), np.integer
    )
    assert lap.release(np.zeros(3)).shape == (3,)
    with pytest.raises(TypeError):
        lap.release(np.longdouble(1.0))
    dl = DiscreteLaplace(epsilon=1.0)
    big = dl.release(10**30)  # beyond int64: clamped by the general path
    assert big > 2**62
    assert _core.ScalarPlan(dl._sampler).integer(True) is None
    assert _core.ScalarPlan(dl._sampler).integer(2.0) is None
    k, s = lap._plan
    assert _core.ScalarPlan(s, k).grid(1) is None
    with pytest.raises(TypeError):
        _core.ScalarPlan(object())


def test_rng_budget_and_workers_still_take_their_paths():
    lap = Laplace(epsilon=1.0)
    a = lap.release(1.0, rng=ChaCha20(3))
    assert a == M.laplace_mechanism(1.0, epsilon=1.0, rng=ChaCha20(3))
    with pytest.raises(TypeError):
        lap.release(1.0, rng="seed")
    with pytest.raises(TypeError):
        lap.release(1.0, workers="many")
    with pytest.raises(PrivacyParameterError):
        lap.release(1.0, workers=0)
    assert type(lap.release(1.0, workers=1)) is float


def test_each_thread_has_its_own_stream():
    lap = Laplace(epsilon=1.0)
    _core._seed_scalar_stream(9)  # this thread only
    out = {}

    def draw(name):
        out[name] = [lap.release(0.0) for _ in range(20)]

    ts = [threading.Thread(target=draw, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    mine = [lap.release(0.0) for _ in range(20)]
    ref = [
        _core.grid_release(lap._plan[1], 0.0, lap._plan[0], g)
        for g in [ChaCha20(9)]
        for _ in range(20)
    ]
    assert mine == ref  # the others did not touch it
    seqs = [tuple(v) for v in out.values()]
    assert len(set(seqs)) == 4 and tuple(ref) not in seqs


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_rekeys_the_private_stream():
    lap = Laplace(epsilon=1.0)
    lap.release(0.0)  # the stream exists before the fork
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            vals = [lap.release(0.0) for _ in range(8)]
            os.write(w, repr(vals).encode())
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 65536):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    child = eval(data.decode())
    parent = [lap.release(0.0) for _ in range(8)]
    assert child != parent


_RAW_FORK = {"x86_64": (57,), "aarch64": (220, 17, 0, 0, 0, 0)}  # fork(2); clone(SIGCHLD)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.machine() not in _RAW_FORK,
    reason="a raw fork system call is a Linux-specific way to skip atfork handlers",
)
def test_process_id_page_after_a_raw_fork():
    # dpf_process_id reads the id from a wipe-on-fork page: in a raw-fork child (no
    # atfork handler ran) the parent's stream must halt, and a stream started in the
    # child (which re-reads its own id) must answer.
    import ctypes

    from dpfast.sparse import AboveThreshold

    libc = ctypes.CDLL(None, use_errno=True)
    s = AboveThreshold(0.0, epsilon=1.0, rng=ChaCha20())
    s.feed(np.full(3, -1e6))
    r, w = os.pipe()
    pid = libc.syscall(*_RAW_FORK[platform.machine()])
    if pid == 0:
        try:
            try:
                s.step(-1e6)
                old = b"A"
            except MechanismHaltedError:
                old = b"H"
            t = AboveThreshold(0.0, epsilon=1.0, rng=ChaCha20())
            new = b"A" if t.feed(np.full(5, -1e6)).size == 5 and not t.halted else b"H"
            os.write(w, old + new)
        finally:
            os._exit(0)
    os.close(w)
    data = os.read(r, 2)
    os.close(r)
    os.waitpid(pid, 0)
    assert data == b"HA"
    assert s.step(-1e6) is False and s.consumed == 4  # the parent's stream goes on


def test_active_budget_and_label_take_the_charging_path():
    # the fast path runs only when nothing is to be charged: an active budget (ctx) or a
    # label must reach the general path, which charges before drawing
    from dpfast.accounting import PrivacyBudget

    lap, dl = Laplace(epsilon=0.25), DiscreteLaplace(epsilon=0.25)
    gau = Gaussian(epsilon=0.5, delta=1e-6)
    b = PrivacyBudget(epsilon=10.0, delta=1e-3)
    with b.active():
        assert type(lap.release(1.0)) is float
        assert type(dl.release(4)) is int
        assert type(gau.release(1.0)) is float
    assert float(b.spent.epsilon) == pytest.approx(1.0)
    c = PrivacyBudget(epsilon=1.0)
    lap.release(1.0, budget=c, label="mine")
    assert float(c.spent.epsilon) == pytest.approx(0.25)
    with pytest.raises(TypeError):
        lap.release(1.0, label=3)


def test_scalar_laplace_mechanism_uses_the_prepared_plan():
    # laplace_mechanism(float, epsilon=float) with rng=None draws from the same private
    # per-thread stream as the objects' scalar release, on the same plan as grid_release
    M._SCALAR_LAPLACE_PLANS.clear()
    k, sampler = M._laplace_grid_plan(0.7, 2.0, 1, None)
    _core._seed_scalar_stream(17)
    fast = [M.laplace_mechanism(-3.25, epsilon=0.7, sensitivity=2.0) for _ in range(50)]
    ref = ChaCha20(17)
    assert fast == [_core.grid_release(sampler, -3.25, k, ref) for _ in range(50)]
    assert all(type(y) is float for y in fast)
    # an explicit generator still draws from that generator (and warns: it is seeded)
    with pytest.warns(Warning):
        a = M.laplace_mechanism(1.0, epsilon=0.7, sensitivity=2.0, rng=ChaCha20(4))
    assert a == _core.grid_release(sampler, 1.0, k, ChaCha20(4))


def test_scalar_laplace_mechanism_charges_before_drawing_and_refuses_bad_rng_first():
    from dpfast._errors import BudgetExceededError
    from dpfast.accounting import PrivacyBudget

    b = PrivacyBudget(epsilon=1.0)
    M.laplace_mechanism(2.0, epsilon=0.6, budget=b)
    _core._seed_scalar_stream(3)
    with pytest.raises(BudgetExceededError):
        M.laplace_mechanism(2.0, epsilon=0.6, budget=b)
    # the refused call drew nothing from the stream
    k, sampler = M._laplace_grid_plan(0.6, 1.0, 1, None)
    assert M.laplace_mechanism(2.0, epsilon=0.6) == _core.grid_release(
        sampler, 2.0, k, ChaCha20(3)
    )
    with pytest.raises(TypeError):
        M.laplace_mechanism(2.0, epsilon=0.6, rng="seed", budget=b)
