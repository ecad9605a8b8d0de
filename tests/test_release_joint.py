"""The joint MW replay (MWEM ``replay="joint"``, NoisyFit ``fit="joint"``): the C kernel
and the CSR version against a numpy reference of the rule, the reduction plan's checks,
and the same privacy record as the sequential order (post-processing)."""

import numpy as np
import pytest

import dpfast
from dpfast import _core
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    Domain,
    Histogram,
    LinearWorkload,
    MarginalWorkload,
)
from dpfast.query_release._mw import MWState

SHAPE = (3, 4, 2, 5, 2)


@pytest.fixture
def dom():
    return Domain(["a", "b", "c", "d", "e"], SHAPE)


def joint_reference(M, w, targets, n, passes):
    """Every measured row's factor exp(M_q (t_q - n M_q w / Z) / (2n)) on the same w,
    all applied at once, ``passes`` times; then normalised."""
    w = w.copy()
    meas = ~np.isnan(targets)
    for _ in range(passes):
        est = n * (M @ w) / w.sum()
        e = np.where(meas, (np.nan_to_num(targets) - est) / (2 * n), 0.0)
        w = w * np.exp(M.T @ e)
    return w / w.sum()


@pytest.mark.parametrize(
    "shape,k",
    [
        (SHAPE, 1),
        (SHAPE, 2),
        (SHAPE, 3),
        ((7,), 1),
        ((2, 3), 1),
        ((2, 3), 2),
        ((4, 1, 3), 2),
    ],
)
def test_joint_pass_matches_reference(shape, k):
    dom = Domain([f"x{i}" for i in range(len(shape))], shape)
    g = np.random.default_rng(k)
    wl = MarginalWorkload.k_way(dom, k)
    lw = wl.to_linear()
    M = np.zeros((lw.n_queries, dom.size))
    for i in range(lw.n_queries):
        M[i, lw.indices[lw.indptr[i] : lw.indptr[i + 1]]] = 1.0
    n = 700.0
    targets = g.random(wl.n_queries) * 60
    targets[g.random(wl.n_queries) < 0.4] = np.nan  # unmeasured cells
    if wl.m > 1:
        targets[wl.marginal_slice(0)] = np.nan  # an unmeasured marginal
    targets[-1] = 5.0  # something is measured
    w0 = g.random(dom.size) + 0.1
    want = joint_reference(M, w0 / w0.sum(), targets, n, 4)
    for work in (wl, lw):
        st = MWState(dom, n, prior=w0)
        work._joint_fit(st, targets, 4)
        np.testing.assert_allclose(st.w, want, rtol=1e-10)
        assert st.Z == 1.0 and st.w.sum() == pytest.approx(1.0, rel=1e-13)
    # fractional rows through the CSR path
    F = g.random((6, dom.size)) * (g.random((6, dom.size)) < 0.5)
    fw = LinearWorkload(dom, F)
    t = g.random(6) * 200
    t[2] = np.nan
    st = MWState(dom, n, prior=w0)
    fw._joint_fit(st, t, 3)
    np.testing.assert_allclose(st.w, joint_reference(F, w0 / w0.sum(), t, n, 3), rtol=1e-10)


def test_nothing_measured_is_a_no_op(dom):
    wl = MarginalWorkload.k_way(dom, 2)
    st = MWState(dom, 10.0)
    before = st.w.copy()
    wl._joint_fit(st, np.full(wl.n_queries, np.nan), 5)
    np.testing.assert_array_equal(st.w, before)


def test_plan_is_checked(dom):
    wl = MarginalWorkload.k_way(dom, 2)
    good = [np.array(a) for a in wl._cplan.arrays[:10]]
    _core.RelPlan(*good)
    for i, bad in (
        (1, lambda a: a + 5),  # a parent that is not earlier
        (2, lambda a: a | np.uint32(1 << 20)),  # a mask beyond its source
        (5, lambda a: a + 1),  # a shape that is not kept
        (6, lambda a: a * 2),  # table offsets
        (8, lambda a: a ^ np.uint32(1)),  # a marginal of the wrong size
        (9, lambda a: a + 1),
    ):  # output offsets
        args = list(good)
        args[i] = bad(args[i].copy())
        with pytest.raises(ValueError):
            _core.RelPlan(*args)
    w = np.ones(dom.size)
    with pytest.raises(ValueError):
        _core.rel_plan_answer(wl._cplan, w[:-1], np.empty(wl.n_queries))
    with pytest.raises(ValueError):
        _core.rel_mw_joint(wl._cplan, w, np.zeros(3), 1, 10.0)


def test_orders_cost_the_same_and_differ_only_after_the_first_pass(dom, seeded):
    g = np.random.default_rng(3)
    h = Histogram(dom, g.integers(0, 9, dom.size))
    wl = MarginalWorkload.k_way(dom, 2)
    n = float(h.counts.sum())
    runs = {
        how: MWEM(wl, epsilon=1.0, rounds=4, n_public=n, replay=how, rng=seeded(2)).run(h)
        for how in ("joint", "sequential")
    }
    assert runs["joint"].privacy == runs["sequential"].privacy
    # passes=1: nothing is replayed, the two orders are the same algorithm
    one = [
        MWEM(
            wl, epsilon=1.0, rounds=4, n_public=n, replay=how, passes=1, rng=seeded(2)
        ).run(h)
        for how in ("joint", "sequential")
    ]
    np.testing.assert_array_equal(one[0].histogram.counts, one[1].histogram.counts)
    with pytest.raises(dpfast.PrivacyParameterError):
        MWEM(wl, epsilon=1.0, rounds=4, n_public=n, replay="gauss-seidel")
    b = [
        BoostingForQueries(
            wl, epsilon=1.0, n_public=n, rounds=3, k=20, fit=how, rng=seeded(4)
        )
        for how in ("joint", "sequential")
    ]
    assert b[0].privacy_cost == b[1].privacy_cost
    with pytest.raises(dpfast.PrivacyParameterError):
        BoostingForQueries(wl, epsilon=1.0, n_public=n, rounds=3, k=20, fit="lp")
