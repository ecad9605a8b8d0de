"""Regression against the numpy prototype (RELEASE.md §7): on a synthetic W2 workload each
compiled mechanism's mean max-error and mean mean-error over 20 seeds lie within 2
standard errors of the prototype's.  A noise-scale bug (smartnoise's under-noising by a
factor d, RELEASE.md §3.3.7) moves these means by many standard errors.

The prototype's numbers are pinned below; bench/release_pin_proto.py recomputes them from
RELEASE.md's prototype code on the same data and configurations.  UCI Adult itself is
evaluated by bench/bench_release.py, not here (the suite reads no downloaded data).
"""

import math

import numpy as np
import pytest

import dpfast.random as dr
from dpfast.query_release import (
    MWEM,
    BoostingForQueries,
    Domain,
    Histogram,
    MarginalWorkload,
    OnlinePMW,
    laplace_marginals,
)

SHAPE = (4, 5, 3, 2, 2, 3)
N_RECORDS = 4000
EPS = 0.5
SEEDS = 20

# method: [mean of max |err|/n, its SE, mean of mean |err|/n, its SE] over 20 seeds
PROTOTYPE = {
    "laplace_marginals": [0.042217, 0.00161, 0.0077046, 0.0001319],
    "mwem_group_warm": [0.044874, 0.001627, 0.0109362, 0.0002273],
    "mwem_query_warm": [0.081648, 0.002496, 0.0239254, 0.0003151],
    "pmw_warm_replay": [0.129983, 0.007603, 0.0290597, 0.0006312],
    "pmw_textbook": [0.295554, 0.035994, 0.0389774, 0.0005475],
    "boosting_warm": [0.156591, 0.005705, 0.0354068, 0.0005917],
}


def toy_codes():
    """The records of bench/release_pin_proto.py (seed 2024)."""
    g = np.random.default_rng(2024)
    z = g.integers(0, 3, N_RECORDS)
    cols = []
    for a, s in enumerate(SHAPE):
        p = np.array(
            [[(1 + (k + a + zz) % s) ** 2 for k in range(s)] for zz in range(3)],
            dtype=float,
        )
        p /= p.sum(axis=1, keepdims=True)
        u = g.random(N_RECORDS)
        cols.append((u[:, None] > np.cumsum(p[z], axis=1)).sum(axis=1))
    return np.stack(cols, axis=1)


@pytest.fixture(scope="module")
def setup():
    dom = Domain([f"a{i}" for i in range(len(SHAPE))], SHAPE)
    h = Histogram.from_codes(dom, toy_codes())
    wl = MarginalWorkload.k_way(dom, 2)
    return h, wl, wl.answer(h)


def _pmw_answers(p, wl, order):
    out = np.empty(wl.n_queries)
    for q in order:
        out[q] = p.answer(wl.cell_query(int(q)))[0]
    return out


def _run(name, h, wl, rng, how="joint"):
    """``how``: MWEM's replay / NoisyFit's fit ("joint" is the default; the prototype
    replays sequentially, so both orders must match it)."""
    n = float(N_RECORDS)
    if name == "laplace_marginals":
        return laplace_marginals(wl, h, epsilon=EPS, rng=rng)
    if name == "mwem_group_warm":
        # the prototype's group unit selects among all marginals every round
        return (
            MWEM(
                wl,
                epsilon=EPS,
                rounds=10,
                n_public=n,
                init=0.1 * EPS,
                exclude_measured=False,
                replay=how,
                rng=rng,
            )
            .run(h)
            .answers
        )
    if name == "mwem_query_warm":
        return (
            MWEM(
                wl,
                epsilon=EPS,
                rounds=10,
                n_public=n,
                init=0.1 * EPS,
                unit="query",
                exclude_measured=False,
                replay=how,
                rng=rng,
            )
            .run(h)
            .answers
        )
    order = np.random.default_rng(int(rng.random_raw() % 2**32)).permutation(wl.n_queries)
    if name == "pmw_warm_replay":
        p = OnlinePMW(
            h,
            epsilon=0.9 * EPS,
            init=0.1 * EPS,
            n_public=n,
            cutoff=10,
            tau=8,
            step="adaptive",
            replay=3,
            rng=rng,
        )
        return _pmw_answers(p, wl, order)
    if name == "pmw_textbook":
        p = OnlinePMW(
            h, epsilon=EPS, n_public=n, cutoff=40, tau=8, step="book", clip=False, rng=rng
        )
        return _pmw_answers(p, wl, order)
    return (
        BoostingForQueries(
            wl,
            epsilon=EPS,
            n_public=n,
            rounds=3,
            k=50,
            eta=0.2,
            sample_share=0.2,
            fit_passes=20,
            init=0.1 * EPS,
            fit=how,
            rng=rng,
        )
        .run(h)
        .answers
    )


@pytest.mark.parametrize(
    "name,order",
    [(nm, "joint") for nm in sorted(PROTOTYPE)]
    + [
        ("mwem_group_warm", "sequential"),
        ("mwem_query_warm", "sequential"),
        ("boosting_warm", "sequential"),
    ],
)
def test_error_distribution_matches_prototype(setup, name, order):
    h, wl, truth = setup
    res = []
    for seed in range(SEEDS):
        ans = _run(name, h, wl, dr.ChaCha20(1000 + seed), order)
        e = np.abs(ans - truth) / N_RECORDS
        res.append((e.max(), e.mean()))
    res = np.asarray(res)
    mine = res.mean(axis=0)
    se = res.std(axis=0, ddof=1) / math.sqrt(SEEDS)
    p_max, p_max_se, p_mean, p_mean_se = PROTOTYPE[name]
    assert abs(mine[0] - p_max) <= 2 * math.hypot(se[0], p_max_se), (mine, PROTOTYPE[name])
    assert abs(mine[1] - p_mean) <= 2 * math.hypot(se[1], p_mean_se), (
        mine,
        PROTOTYPE[name],
    )
