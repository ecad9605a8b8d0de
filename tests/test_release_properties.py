"""Property checks of docs/security-model.md for dpfast.query_release and dpfast.learn (issue 22
items 7 and 11), in the style of tests/test_properties.py:

1. Hostile public parameters of every query-release mechanism (MWEM, OnlinePMW,
   BoostingForQueries, the baselines, the accuracy formulas) and of the classifier and
   its planners give only documented exceptions (TypeError, ValueError subclasses,
   dpfast's errors), and a refused call has charged nothing.
2. No run fails after its charge: a public noisy value far outside [0, n] cannot turn
   the multiplicative weights into a NaN that the next selection would refuse.
3. Neighbouring private values at every representability edge (2**53, 2**63, 2**64,
   -2**63), in lists and arrays -- histogram counts, record codes, features and labels --
   are both answered or both refused by type, never split by value.
"""

import math
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import query_release as Q
from dpfast.accounting import PrivacyBudget
from dpfast.random import ChaCha20

FEW = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)

HOSTILE = [
    math.nan,
    math.inf,
    -math.inf,
    0,
    0.0,
    -0.0,
    5e-324,
    1e-300,
    1e-30,
    1e30,
    1e308,
    10**400,
    -1,
    2**63,
    2**64,
    True,
    False,
    Fraction(1, 3),
    Fraction(-1, 10**400),
    Decimal("0.5"),
    "1",
    None,
    1j,
    np.float32(0.5),
    np.longdouble(0.5),
    np.uint64(2**64 - 1),
    np.int8(3),
]

DOM = Q.Domain(["a", "b"], [3, 2])
WL = Q.MarginalWorkload(DOM, [("a",), ("b",)])
LW = WL.to_linear()
HIST = Q.Histogram(DOM, np.arange(6.0))


def _documented(exc):
    """Whether an exception is one a public function may raise."""
    if isinstance(
        exc,
        (
            ZeroDivisionError,
            OverflowError,
            IndexError,
            AttributeError,
            FloatingPointError,
            AssertionError,
            SystemError,
        ),
    ):
        return False
    text = str(exc)
    if (
        "math domain error" in text
        or "math range error" in text
        or "internal error" in text
    ):
        return False
    return isinstance(exc, (TypeError, ValueError, dpfast.DPFastError))


def _outcome(call):
    """("answered" | "refused", exception type); an undocumented exception fails."""
    try:
        call()
    except MemoryError:
        return "refused", MemoryError
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        return "refused", type(exc)
    return "answered", None


def _budget():
    # as large as a budget goes: a huge public epsilon must reach the mechanism, not
    # stop at the budget's refusal
    return PrivacyBudget(sys.float_info.max, 0.5)


def _charged_only_if_answered(call):
    """Run call(budget): a refusal leaves the budget untouched."""
    b = _budget()
    outcome = _outcome(lambda: call(b))
    if outcome[0] == "refused":
        assert b.spent.epsilon == 0 and b.spent.delta == 0 and len(b.ledger) == 0, outcome
    return outcome


def g():
    return ChaCha20(5)


# ---------------------------------------------------------------- 1. public parameters


def _pmw(b, **kw):
    p = Q.OnlinePMW(
        HIST,
        **{
            "epsilon": 1.0,
            "n_public": 15.0,
            "cutoff": 2,
            "tau": 1.0,
            "rng": g(),
            "budget": b,
            **kw,
        },
    )
    for q in range(WL.n_queries):
        p.answer(WL.cell_query(q))
    p.answer(Q.LinearQuery(DOM, np.full(DOM.size, 0.5)))


RELEASE_CALLS = {
    "MWEM": (
        lambda b, **k: Q.MWEM(
            WL,
            **{"epsilon": 1.0, "rounds": 2, "n_public": 15.0, "rng": g(), "budget": b, **k},
        ).run(HIST),
        [
            "epsilon",
            "rounds",
            "n_public",
            "init",
            "passes",
            "unit",
            "select",
            "output",
            "replay",
            "exclude_measured",
            "mode",
        ],
    ),
    "MWEM_pf": (
        lambda b, **k: Q.MWEM(
            WL,
            **{
                "epsilon": 1.0,
                "rounds": 2,
                "n_public": 15.0,
                "select": "permute_and_flip",
                "rng": g(),
                "budget": b,
                **k,
            },
        ).run(HIST),
        ["epsilon", "rounds", "n_public", "init"],
    ),
    "MWEM_gaussian": (
        lambda b, **k: Q.MWEM(
            WL,
            **{
                "epsilon": 1.0,
                "rounds": 2,
                "n_public": 15.0,
                "measure": "gaussian",
                "delta": 1e-6,
                "rng": g(),
                "budget": b,
                **k,
            },
        ).run(HIST),
        ["epsilon", "delta", "rounds", "n_public", "init"],
    ),
    "MWEM_linear": (
        lambda b, **k: Q.MWEM(
            LW,
            **{"epsilon": 1.0, "rounds": 2, "n_public": 15.0, "rng": g(), "budget": b, **k},
        ).run(HIST),
        ["epsilon", "n_public", "init"],
    ),
    "Boosting": (
        lambda b, **k: Q.BoostingForQueries(
            WL,
            **{
                "epsilon": 1.0,
                "rounds": 3,
                "k": 2,
                "n_public": 15.0,
                "fit_passes": 2,
                "rng": g(),
                "budget": b,
                **k,
            },
        ).run(HIST),
        [
            "epsilon",
            "rounds",
            "k",
            "n_public",
            "eta",
            "sample_share",
            "lam",
            "fit_passes",
            "init",
            "round_to",
        ],
    ),
    "Boosting_advanced": (
        lambda b, **k: Q.BoostingForQueries(
            WL,
            **{
                "epsilon": 1.0,
                "rounds": 3,
                "k": 2,
                "n_public": 15.0,
                "fit_passes": 2,
                "composition": "advanced",
                "delta": 1e-6,
                "rng": g(),
                "budget": b,
                **k,
            },
        ).run(HIST),
        ["epsilon", "delta", "eta", "sample_share"],
    ),
    "Boosting_gaussian": (
        lambda b, **k: Q.BoostingForQueries(
            WL,
            **{
                "epsilon": 1.0,
                "rounds": 3,
                "k": 2,
                "n_public": 15.0,
                "fit_passes": 2,
                "noise": "gaussian",
                "delta": 1e-6,
                "rng": g(),
                "budget": b,
                **k,
            },
        ).run(HIST),
        ["epsilon", "delta", "eta", "sample_share", "init"],
    ),
    "OnlinePMW": (
        lambda b, **k: _pmw(b, **k),
        ["epsilon", "n_public", "cutoff", "tau", "alpha", "init", "replay"],
    ),
    "OnlinePMW_threshold": (
        lambda b, **k: _pmw(b, **{"tau": None, "threshold": 2.0, **k}),
        ["threshold", "delta", "epsilon", "n_public"],
    ),
    "OnlinePMW_from_accuracy": (
        lambda b, **k: Q.OnlinePMW.from_accuracy(
            HIST,
            **{
                "alpha": 4.0,
                "beta": 0.1,
                "epsilon": 1.0,
                "n_public": 15.0,
                "n_queries": 8,
                "rng": g(),
                "budget": b,
                **k,
            },
        ).answer(WL.cell_query(0)),
        ["alpha", "beta", "epsilon", "delta", "n_public", "n_queries"],
    ),
    "laplace_marginals": (
        lambda b, **k: Q.laplace_marginals(
            WL, HIST, **{"epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["epsilon", "n_public"],
    ),
    "laplace_per_query": (
        lambda b, **k: Q.laplace_per_query(
            WL, HIST, **{"epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["epsilon", "n_public"],
    ),
    "gaussian_marginals": (
        lambda b, **k: Q.gaussian_marginals(
            WL, HIST, **{"epsilon": 1.0, "delta": 1e-6, "rng": g(), "budget": b, **k}
        ),
        ["epsilon", "delta", "n_public"],
    ),
    "gaussian_per_query": (
        lambda b, **k: Q.gaussian_per_query(
            LW, HIST, **{"epsilon": 1.0, "delta": 1e-6, "rng": g(), "budget": b, **k}
        ),
        ["epsilon", "delta", "n_public"],
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASE_CALLS))
def test_hostile_public_parameters_of_release_charge_nothing_when_refused(name):
    call, params = RELEASE_CALLS[name]
    assert _charged_only_if_answered(call)[0] == "answered"  # the defaults are valid
    for p in params:
        for value in HOSTILE:
            _charged_only_if_answered(lambda b: call(b, **{p: value}))


PUBLIC_CALLS = {
    "Domain_size": lambda v: Q.Domain(["a", "b"], [3, v]),
    "Domain_names": lambda v: Q.Domain(v, [3]),
    "MarginalWorkload": lambda v: Q.MarginalWorkload(DOM, [v]),
    "k_way": lambda v: Q.MarginalWorkload.k_way(DOM, v),
    "LinearWorkload": lambda v: Q.LinearWorkload(DOM, [[v, 0, 0, 0, 0, 0]]),
    "from_csr_indptr": lambda v: Q.LinearWorkload.from_csr(DOM, [0, v], [0]),
    "from_csr_indices": lambda v: Q.LinearWorkload.from_csr(DOM, [0, 1], [v]),
    "from_csr_values": lambda v: Q.LinearWorkload.from_csr(DOM, [0, 1], [0], [v]),
    "CellQuery_value": lambda v: Q.CellQuery(DOM, "a", v),
    "CellQuery_attr": lambda v: Q.CellQuery(DOM, v, 0),
    "LinearQuery": lambda v: Q.LinearQuery(DOM, [v, 0, 0, 0, 0, 0]),
    "LinearQuery_cells": lambda v: Q.LinearQuery.from_cells(DOM, [v]),
    "cell_query": lambda v: WL.cell_query(v),
    "marginal_slice": lambda v: WL.marginal_slice(v),
    "marginal_slice_linear": lambda v: LW.marginal_slice(v),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_CALLS))
def test_hostile_public_parameters_of_domains_workloads_and_queries(name):
    """Only documented exceptions.  On main marginal_slice raised IndexError or
    OverflowError for a float, a huge or an out-of-range unit (and silently wrapped a
    negative one, or sliced with floats on a LinearWorkload)."""
    for v in HOSTILE + [2**1024, -(2**1024), 3, 2, 1, -2, 2**24 + 1, [], "a"]:
        _outcome(lambda: PUBLIC_CALLS[name](v))


def test_marginal_slice_refuses_units_out_of_range():
    assert WL.marginal_slice(1) == slice(3, 5) and LW.marginal_slice(4) == slice(4, 5)
    with pytest.raises(dpfast.PrivacyParameterError):
        WL.marginal_slice(-1)
    with pytest.raises(TypeError):
        LW.marginal_slice(1.5)


ACCURACY_FORMULAS = {
    "numeric_sparse_alpha": (
        lambda **k: Q.numeric_sparse_alpha(
            **{
                "c": 10,
                "epsilon": 1.0,
                "delta": 0.0,
                "n": 100.0,
                "n_queries": 10,
                "beta": 0.1,
                **k,
            }
        ),
        ["c", "epsilon", "delta", "n", "n_queries", "beta"],
    ),
    "pmw_theory_alpha": (
        lambda **k: Q.pmw_theory_alpha(
            **{
                "epsilon": 1.0,
                "delta": 0.0,
                "n": 1e4,
                "universe_size": 64,
                "n_queries": 10,
                "beta": 0.1,
                **k,
            }
        ),
        ["epsilon", "delta", "n", "universe_size", "n_queries", "beta"],
    ),
    "pmw_min_alpha": (
        lambda **k: Q.pmw_min_alpha(
            **{
                "epsilon": 1.0,
                "delta": 1e-6,
                "n": 1e4,
                "universe_size": 64,
                "n_queries": 10,
                "beta": 0.1,
                **k,
            }
        ),
        ["epsilon", "delta", "n", "universe_size", "n_queries", "beta"],
    ),
}


@pytest.mark.parametrize("name", sorted(ACCURACY_FORMULAS))
def test_hostile_parameters_of_the_accuracy_formulas(name):
    call, params = ACCURACY_FORMULAS[name]
    assert _outcome(call)[0] == "answered"
    for p in params:
        for value in HOSTILE:
            _outcome(lambda: call(**{p: value}))


@FEW
@given(
    eps=st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    n=st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    init=st.one_of(
        st.none(), st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)
    ),
)
def test_random_public_floats_of_release_charge_nothing_when_refused(eps, n, init):
    for name in ("MWEM", "MWEM_pf", "MWEM_gaussian", "Boosting", "OnlinePMW"):
        call = RELEASE_CALLS[name][0]
        _charged_only_if_answered(lambda b: call(b, epsilon=eps, n_public=n, init=init))


def test_warm_start_refused_before_the_charge():
    """init at 1e-300 cannot be served by the secure Laplace grid; on main the three
    mechanisms charged the budget first and then refused (issue 22 item 11)."""
    for name in ("MWEM", "MWEM_gaussian", "Boosting", "OnlinePMW"):
        call = RELEASE_CALLS[name][0]
        out = _charged_only_if_answered(lambda b: call(b, init=1e-300))
        assert out == ("refused", dpfast.PrivacyParameterError), name


def test_online_pmw_with_a_huge_n_public_refuses_or_answers_every_query():
    """Each query's threshold e + T lies within n + |T|; on main one beyond the secure
    grid's 2**41 was refused at the first query, after the charge."""
    for n in (1e13, 1e30, 1e308):
        b = _budget()
        out = _charged_only_if_answered(lambda b: _pmw(b, n_public=n))
        assert out[0] == "answered" or out[1] is dpfast.PrivacyParameterError, (n, out)
    b = _budget()
    _pmw(b, n_public=1e13)
    assert b.spent.epsilon == 1


def test_boosting_draw_plan_is_checked_before_the_charge():
    """sample_share = 1e-300 gives the draws a sensitivity below what the secure sampler
    serves, and round_to = 2**63 overflows the multinomial: both were refused after the
    charge on main."""
    for kw in (dict(sample_share=1e-300), dict(sample_share=5e-324), dict(round_to=2**63)):
        out = _charged_only_if_answered(lambda b: RELEASE_CALLS["Boosting"][0](b, **kw))
        assert out[0] == "refused", kw


def test_mwem_permute_and_flip_plan_is_checked_before_the_charge():
    """measure='gaussian' with many rounds gives permute-and-flip an epsilon its exact
    sampler refuses (noise beyond 2**40 grid steps): refused at construction, not after
    the charge at the first selection."""
    b = _budget()
    with pytest.raises(dpfast.PrivacyParameterError):
        Q.MWEM(
            WL,
            epsilon=1e-6,
            delta=1e-6,
            measure="gaussian",
            select="permute_and_flip",
            rounds=100_000,
            n_public=15.0,
            rng=g(),
            budget=b,
        ).run(HIST)
    assert b.spent.epsilon == 0 and len(b.ledger) == 0


# ---------------------------------------------------------------- 2. no failure after the charge

DOM3 = Q.Domain(["a", "b", "c"], [2, 3, 4])
WL3 = Q.MarginalWorkload.k_way(DOM3, 2)
HIST3 = Q.Histogram(DOM3, np.arange(24.0))


@pytest.mark.parametrize("workload", [WL3, WL3.to_linear()], ids=["marginal", "linear"])
@pytest.mark.parametrize(
    "kw",
    [dict(replay="sequential"), dict(unit="query"), dict(init=0.005), dict()],
    ids=["sequential", "query", "init", "joint"],
)
def test_mwem_never_fails_after_its_charge_when_noise_dwarfs_n(workload, kw):
    """epsilon = 0.01 against n_public = 1: noisy measurements far outside [0, n] used
    to drive the weights to 0 (sum NaN), and the next round's selection refused the NaN
    scores after the charge (main: 2-9 of these 30 seeds)."""
    for seed in range(30):
        b = PrivacyBudget(10.0)
        r = Q.MWEM(
            workload,
            epsilon=0.01,
            rounds=3,
            n_public=1.0,
            rng=ChaCha20(seed),
            budget=b,
            **kw,
        ).run(HIST3)
        assert np.isfinite(r.answers).all() and r.histogram.counts.sum() == pytest.approx(1)
        assert b.spent.epsilon == 0.01 and len(b.ledger) == 1


@pytest.mark.slow
@pytest.mark.parametrize(
    "what,kw",
    [
        ("MWEM", dict(measure="gaussian", delta=1e-6, epsilon=1e-100, n_public=1.0)),
        (
            "MWEM",
            dict(
                measure="gaussian",
                delta=1e-6,
                epsilon=1e-300,
                n_public=15.0,
                output="average",
            ),
        ),
        ("Boosting", dict(noise="gaussian", delta=1e-6, epsilon=1e-300, n_public=15.0)),
    ],
    ids=["mwem", "mwem-average", "boosting"],
)
def test_linear_joint_fit_never_fails_after_the_charge(what, kw):
    """A LinearWorkload's joint MW pass divided by the weights' sum: noise of scale
    ~1e100 against n = 1 left a pass with no mass, and the next pass raised
    ZeroDivisionError after the charge (on main: 9-12 of these 200 seeds)."""
    for seed in range(200):
        b = PrivacyBudget(1.0, 0.5)
        if what == "MWEM":
            r = Q.MWEM(LW, rounds=3, rng=ChaCha20(seed), budget=b, **kw).run(HIST)
        else:
            r = Q.BoostingForQueries(
                LW, rounds=3, k=2, rng=ChaCha20(seed), budget=b, **kw
            ).run(HIST)
        assert np.isfinite(r.answers).all(), seed
        assert len(b.ledger) == 1


def test_boosting_and_pmw_never_fail_after_their_charge_when_noise_dwarfs_n():
    for seed in range(30):
        for fit in ("joint", "sequential"):
            r = Q.BoostingForQueries(
                WL3, epsilon=0.01, rounds=3, k=4, n_public=1.0, fit=fit, rng=ChaCha20(seed)
            ).run(HIST3)
            assert np.isfinite(r.answers).all()
        for clip in (True, False):
            p = Q.OnlinePMW(
                HIST3,
                epsilon=0.01,
                n_public=1.0,
                cutoff=20,
                threshold=0.1,
                replay=3,
                clip=clip,
                rng=ChaCha20(seed),
            )
            for q in range(WL3.n_queries):
                assert math.isfinite(p.answer(WL3.cell_query(q))[0])
            for row in np.eye(DOM3.size)[:5]:
                assert math.isfinite(p.answer(Q.LinearQuery(DOM3, row))[0])


# ---------------------------------------------------------------- 3. neighbouring values

EDGES_INT = [
    2**53,
    2**63 - 1,
    2**63,
    2**64 - 1,
    2**64,
    -(2**63),
    -(2**63) - 1,
    10**30,
    2**1024,
    -(2**1024),
    10**400,
]  # 2**1024: beyond every double
FMAX = sys.float_info.max


def _int_pairs():
    out = []
    for x in EDGES_INT:
        out += [(x - 1, x), (x, x + 1)]
    return out


def _float_pairs():
    return [(x, math.nextafter(x, 0.0)) for x in (2.0**53, 2.0**63, 1e300, FMAX, -FMAX)]


def _same_fate(call, a, b):
    oa, ob = _outcome(lambda: call(a)), _outcome(lambda: call(b))
    assert oa[0] == ob[0] == "answered" or (oa == ob and oa[1] is TypeError), (a, b, oa, ob)
    return oa


RELEASE_NEIGHBOURS = {
    "counts_list": lambda x: Q.laplace_marginals(
        WL, Q.Histogram(DOM, [x, 1, 2, 3, 4, 5]), epsilon=1.0, rng=g()
    ),
    "counts_nested": lambda x: Q.Histogram(DOM, [[x, 1], [2, 3], [4, 5]]).counts,
    "counts_mixed": lambda x: Q.Histogram(DOM, [x, 1.5, 2, 3, 4, 5]).counts,
    "codes_list": lambda x: Q.Histogram.from_codes(DOM, [[x, 0], [1, 1]]).counts,
    "mwem_counts": lambda x: Q.MWEM(WL, epsilon=1.0, rounds=1, n_public=15.0, rng=g()).run(
        Q.Histogram(DOM, [x, 1, 2, 3, 4, 5])
    ),
    # exact answers of a workload or a query on counts given as a list
    "answer_marginals": lambda x: WL.answer([x, 1, 2, 3, 4, 5]),
    "answer_linear": lambda x: LW.answer([x, 1, 2, 3, 4, 5]),
    "evaluate_linear_query": lambda x: Q.LinearQuery(DOM, np.full(6, 0.5)).evaluate(
        [x, 1, 2, 3, 4, 5]
    ),
    "evaluate_cell_query": lambda x: Q.CellQuery(DOM, "a", 0).evaluate([x, 1, 2, 3, 4, 5]),
    # pandas types a column by its values ([2**63, 0] uint64, [2**64, 0] object)
    "codes_frame": lambda x: (
        Q.Histogram.from_codes(DOM, pd.DataFrame({"a": [x, 0, 1], "b": [0, 1, 1]})).counts
    ),
}


@pytest.mark.parametrize("name", sorted(RELEASE_NEIGHBOURS))
def test_release_neighbours_at_representability_edges(name):
    call = RELEASE_NEIGHBOURS[name]
    for a, b in _int_pairs():
        assert _same_fate(call, a, b)[0] == "answered", (name, a, b)
    if "codes" not in name:
        for a, b in _float_pairs():
            _same_fate(call, a, b)
    for dtype in (np.int64, np.uint64, np.float64, np.int32):
        for a, b in _int_pairs():
            try:
                xa, xb = np.array([a], dtype=dtype), np.array([b], dtype=dtype)
            except OverflowError:
                continue
            # an array of one dtype: refused by type or answered, never split by value
            _same_fate(lambda v: call(v[0]), xa, xb)


def test_histogram_counts_beyond_int64_are_clamped_not_refused():
    """A list count of 2**64 is clamped to the public bound 2**53 like 2**63 - 1 (it was
    a TypeError on main: numpy made the list an object array)."""
    for x in (2**63 - 1, 2**63, 2**64, 10**30):
        assert Q.Histogram(DOM, [x, 0, 0, 0, 0, 0]).counts[0] == 2.0**53
    for x in (-(2**63), -(2**63) - 1, -(10**30)):
        assert Q.Histogram(DOM, [x, 0, 0, 0, 0, 0]).counts[0] == 0.0
    # codes beyond int64 land in the last category, like any code beyond the range
    h = Q.Histogram.from_codes(DOM, [[2**64, 0], [-(2**63) - 1, 1]])
    assert h.counts.tolist() == [0, 1, 0, 0, 1, 0]


# ---------------------------------------------------------------- dpfast.learn

from dpfast import learn as L  # noqa: E402

_RNG = np.random.default_rng(0)
X_LEARN = _RNG.integers(0, 5, size=(120, 3))
Y_LEARN = np.where(_RNG.random(120) < 0.5, 1, -1)
CLF = dict(
    n_rounds=3,
    sample_size=20,
    smoothness=20,
    thresholds=[1, 2, 3],
    epsilon_test=0.5,
    epsilon_threshold=5.0,
    base_epsilon=0.5,
)


def _fit(b, X=X_LEARN, y=Y_LEARN, **kw):
    return L.PrivateBoostingClassifier(
        **{**CLF, "rng": ChaCha20(3), "budget": b, **kw}
    ).fit(X, y)


LEARN_PARAMS = [
    "variant",
    "n_rounds",
    "sample_size",
    "smoothness",
    "eta",
    "gamma",
    "epsilon_test",
    "epsilon_threshold",
    "base_epsilon",
    "thresholds",
    "grid_resolution",
    "tie_break",
    "classes",
    "allow_uncertified",
    "record_nonprivate_diagnostics",
]


def test_hostile_public_parameters_of_the_classifier_charge_nothing_when_refused():
    """On main: base_epsilon >= 1000 raised OverflowError, grid_resolution=5e-324
    ZeroDivisionError, n_rounds=10**29 OverflowError, and epsilon_threshold=1e308 gave
    an infinite cost whose charge raised OverflowError."""
    assert _charged_only_if_answered(_fit)[0] == "answered"
    for p in LEARN_PARAMS:
        for value in HOSTILE + [1000, 10**29]:
            _charged_only_if_answered(lambda b: _fit(b, **{p: value}))


def test_hostile_thresholds_and_base_learners_charge_nothing_when_refused():
    """Thresholds are public lists: an int beyond the doubles (10**400, 2**1024) raised
    OverflowError from np.asarray on main; the DPStumpLearner's own parameters too."""
    for v in HOSTILE + [2**1024, -(2**1024), 10**29]:
        for th in ([v], [1, v], [[1, 2], [v], [3]], v):
            out = _charged_only_if_answered(lambda b: _fit(b, thresholds=th))
            if isinstance(v, int) and not isinstance(v, bool) and abs(v) > 2**1023:
                assert out[0] == "refused", th
        for p in ("epsilon", "thresholds", "include_constant"):
            stump = {"epsilon": 0.5, "thresholds": [1, 2, 3], p: v}
            _charged_only_if_answered(
                lambda b: _fit(b, base_learner=L.DPStumpLearner(**stump))
            )
        _outcome(lambda: L.PrivateBoostingClassifier(**CLF).privacy_cost(v))


@FEW
@given(
    eps=st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    base=st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    res=st.floats(min_value=0.0, allow_nan=False, allow_infinity=False),
    eta=st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_random_public_floats_of_the_classifier_charge_nothing_when_refused(
    eps, base, res, eta
):
    _charged_only_if_answered(
        lambda b: _fit(
            b,
            epsilon_test=eps,
            epsilon_threshold=eps,
            base_epsilon=base,
            grid_resolution=res,
            eta=eta,
        )
    )
    _outcome(
        lambda: L.plan_grid(
            n_samples=5000,
            epsilon=max(eps, 5e-324),
            delta=1e-6,
            eta=eta,
            grid_resolution=res,
        )
    )


LEARN_FORMULAS = {
    "plan_grid": (
        lambda **k: L.plan_grid(**{"n_samples": 5000, "epsilon": 2.0, "delta": 1e-6, **k}),
        [
            "n_samples",
            "epsilon",
            "delta",
            "n_rounds",
            "sample_size",
            "smoothness",
            "eta",
            "noise_share",
            "grid_resolution",
        ],
    ),
    "boosting_privacy_cost": (
        lambda **k: L.boosting_privacy_cost(
            **{
                "n_samples": 5000,
                "n_rounds": 5,
                "sample_size": 100,
                "smoothness": 1000,
                "eta": 0.1,
                "epsilon_test": 0.1,
                "epsilon_threshold": 1.0,
                "base_epsilon": 0.1,
                **k,
            }
        ),
        [
            "n_samples",
            "n_rounds",
            "sample_size",
            "smoothness",
            "eta",
            "epsilon_test",
            "epsilon_threshold",
            "base_epsilon",
            "base_delta",
            "grid_resolution",
            "variant",
        ],
    ),
    "amplified_epsilon": (
        lambda **k: L.amplified_epsilon(**{"sigma": 0.1, "k": 10, "eps_b": 0.5, **k}),
        ["sigma", "k", "eps_b"],
    ),
    "amplified_delta": (
        lambda **k: L.amplified_delta(
            **{"sigma": 0.1, "k": 10, "eps_b": 0.5, "delta_b": 1e-6, **k}
        ),
        ["sigma", "k", "eps_b", "delta_b"],
    ),
    "smoothness_distance": (lambda **k: L.smoothness_distance(**{"ell": 10, **k}), ["ell"]),
    "grid_size_bound": (
        lambda **k: L.grid_size_bound(
            **{"t": 2, "m": 1000, "tau": 20.0, "alpha": 0.2, "c_grid": 1.0, **k}
        ),
        ["t", "m", "tau", "alpha", "c_grid"],
    ),
}


@pytest.mark.parametrize("name", sorted(LEARN_FORMULAS))
def test_hostile_parameters_of_the_learn_planners(name):
    call, params = LEARN_FORMULAS[name]
    assert _outcome(call)[0] == "answered"
    for p in params:
        for value in HOSTILE + [1, 2, 3, 100, 1000, 10**29]:
            _outcome(lambda: call(**{p: value}))


def test_amplification_bounds_beyond_the_exponent_range_are_finite_or_infinite():
    """eps_b = 1000 is a (useless) public choice: the bound is computed through logs, not
    an OverflowError; below 700 the formulas are the ones they always were."""
    a = L.amplified_epsilon(0.1, 10, 1000.0)
    assert a == pytest.approx(10 * (1000 + math.log(0.1) - math.log1p(-0.1)), rel=1e-12)
    assert L.amplified_delta(0.1, 10, 1000.0, 1e-6) == math.inf
    assert L.amplified_epsilon(0.1, 10, 0.5) == 10 * (
        math.log1p(0.1 * math.expm1(0.5)) - math.log1p(0.1 * math.expm1(-0.5))
    )


def _rows(x):
    rows = X_LEARN.tolist()
    rows[0] = [x, rows[0][1], rows[0][2]]
    return rows


LEARN_NEIGHBOURS = {
    "X_list": lambda x: _fit(None, X=_rows(x)),
    "X_list_float": lambda x: _fit(None, X=[[x, 0.5, 1.0]] + X_LEARN[1:].tolist()),
    "y_list": lambda x: _fit(None, y=[x] + Y_LEARN[1:].tolist()),
    "y_list_big_classes": lambda x: _fit(None, y=[x] + [2**64] * 119, classes=(0, 2**64)),
    "predict_list": lambda x: _fit(None).predict(_rows(x)),
    # a DataFrame / Series built from lists: pandas types each column by its values
    "X_frame": lambda x: _fit(None, X=pd.DataFrame(_rows(x), columns=["a", "b", "c"])),
    "y_series": lambda x: _fit(None, y=pd.Series([x] + Y_LEARN[1:].tolist())),
    "predict_frame": lambda x: _fit(None).predict(pd.DataFrame(_rows(x))),
}


@pytest.mark.parametrize("name", sorted(LEARN_NEIGHBOURS))
def test_learn_neighbours_at_representability_edges(name):
    """Lists of features and labels at 2**63 / 2**64 / -2**63: on main numpy typed the
    list uint64 or object, and the fit raised a TypeError for one neighbour only."""
    call = LEARN_NEIGHBOURS[name]
    for a, b in _int_pairs():
        assert _same_fate(call, a, b)[0] == "answered", (name, a, b)
    if name != "y_list_big_classes":
        for a, b in _float_pairs():
            assert _same_fate(call, a, b)[0] == "answered", (name, a, b)


def test_list_labels_compare_by_value():
    """A list of labels: each is the positive class iff it equals classes[1]."""
    from dpfast.learn import _data

    y = [1, -1, 2**64, "1", None, 1.0, True, -(2**63) - 1]
    assert _data.labels(y, (-1, 1), len(y)).tolist() == [1, -1, -1, -1, -1, 1, 1, -1]
    assert _data.labels([2**64, 2**64 - 1], (0, 2**64), 2).tolist() == [1, -1]
