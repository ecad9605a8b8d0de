"""Property checks of the grouped releases (grouped, partition selection, counts, everyday
statistics): hostile public parameters, extreme values, stray and generated keys."""

import math
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpfast
from dpfast import _keys as K
from dpfast import grouped as G
from dpfast import random as dr
from dpfast import stats as R
from dpfast.accounting import PrivacyBudget

FEW = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
FMAX = sys.float_info.max
HOSTILE = [
    math.nan,
    math.inf,
    -math.inf,
    0,
    0.0,
    -0.0,
    5e-324,
    1e-300,
    1e-12,
    0.5,
    700,
    700.0,
    1e6,
    1e300,
    1e308,
    FMAX,
    -FMAX,
    10**400,
    -1,
    2**31,
    2**63,
    2**64,
    True,
    False,
    Fraction(1, 3),
    Fraction(-1, 10**400),
    Fraction(1, 10**400),
    Decimal("0.5"),
    Decimal("1e-400"),
    "1",
    None,
    1j,
    np.float32(0.5),
    np.longdouble(0.5),
    np.uint64(2**64 - 1),
    np.int8(3),
    np.float64(1e308),
]


def _documented(exc):
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
            KeyError,
        ),
    ):
        return False
    if "math domain error" in str(exc) or "math range error" in str(exc):
        return False
    return isinstance(exc, (TypeError, ValueError, dpfast.DPFastError))


def _finite(out):
    if isinstance(out, dict):
        return all(_finite(v) for k, v in out.items() if k != "key")
    if isinstance(out, tuple):
        return all(_finite(v) for v in out)
    if hasattr(out, "to_numpy"):
        return _finite(out.to_numpy())
    if isinstance(out, np.ndarray):
        return out.dtype.kind not in "fc" or bool(np.isfinite(out).all())
    if isinstance(out, float):
        return math.isfinite(out)
    return True


def _outcome(call):
    budget = PrivacyBudget(FMAX, Fraction(1, 2))
    try:
        out = call(budget)
    except MemoryError:
        return "refused", MemoryError
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        assert len(budget.ledger) == 0, f"charged, then {type(exc).__name__}: {exc}"
        return "refused", type(exc)
    assert len(budget.ledger) <= 1
    assert _finite(out), out
    return "answered", None


def g():
    return dr.ChaCha20(11)


X = [0.5, 1.5, 2.5, 3.5, 7.5, 9.0]
UNITS = [1, 2, 3, 1, 2, 3]
KEYS = ["a", "b", "a", "b", "a", "c"]


def _public_calls():
    def gr(**base):
        def build(budget, **k):
            args = dict(
                units=UNITS,
                keys=KEYS,
                values=X,
                statistics=("count", "sum", "mean"),
                epsilon=1.0,
                delta=1e-6,
                max_partitions=2,
                max_contributions=2,
                lower=0.0,
                upper=10.0,
                rng=g(),
            )
            args.update(base)
            args.update(k)
            return G.grouped_release(budget=budget, **args)

        return build

    def call(fn, *a, **base):
        return lambda budget, **k: fn(*a, **{"rng": g(), "budget": budget, **base, **k})

    bounds = dict(lower=0.0, upper=10.0, epsilon=1.0)
    gp = [
        "epsilon",
        "delta",
        "max_partitions",
        "max_contributions",
        "lower",
        "upper",
        "noise",
        "statistics",
    ]
    return {
        "grouped_release": (gr(), gp),
        "grouped_release_gaussian": (gr(noise="gaussian"), gp),
        "grouped_release_public": (
            gr(public_partitions=["a", "b", "z"]),
            gp + ["public_partitions"],
        ),
        "grouped_release_count": (
            gr(values=None, statistics="count"),
            ["epsilon", "delta", "max_partitions", "max_contributions"],
        ),
        "partition_selection_probability": (
            lambda budget, **k: G.partition_selection_probability(
                **{"units": [0, 1, 5, 100], "epsilon": 1.0, "delta": 1e-6, **k}
            ),
            ["units", "epsilon", "delta", "max_partitions"],
        ),
        "counts": (
            call(R.counts, KEYS, ["a", "b"], epsilon=1.0),
            ["epsilon", "categories"],
        ),
        "count": (call(R.count, X, epsilon=1.0), ["epsilon", "mode"]),
        "sum": (call(R.sum, X, **bounds), ["lower", "upper", "epsilon", "mode", "axis"]),
        "mean": (call(R.mean, X, **bounds), ["lower", "upper", "epsilon", "mode", "axis"]),
        "histogram": (
            call(R.histogram, X, 4, range=(0.0, 10.0), epsilon=1.0),
            ["bins", "range", "epsilon", "mode"],
        ),
        "quantile": (
            call(R.quantile, X, 0.5, candidates=33, **bounds),
            ["q", "lower", "upper", "epsilon", "candidates"],
        ),
        "quantiles": (
            call(R.quantiles, X, [0.25, 0.75], candidates=33, **bounds),
            ["qs", "lower", "upper", "epsilon", "candidates"],
        ),
        "variance": (call(R.variance, X, **bounds), ["lower", "upper", "epsilon", "ddof"]),
        "std": (call(R.std, X, **bounds), ["lower", "upper", "epsilon", "ddof"]),
        "estimate_bounds": (
            call(R.estimate_bounds, X, epsilon=1.0),
            ["epsilon", "quantile", "smallest", "largest"],
        ),
    }


PUBLIC = _public_calls()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_hostile_public_parameters(name):
    build, params = PUBLIC[name]
    assert _outcome(build)[0] == "answered"
    for p in params:
        for value in HOSTILE:
            _outcome(lambda b: build(b, **{p: value}))


def _call_with_data(name, data, lo, hi, budget, eps=1.0):
    kw = dict(lower=lo, upper=hi, epsilon=eps, rng=g(), budget=budget)
    if name == "sum":
        return R.sum(data, **kw)
    if name == "mean":
        return R.mean(data, **kw)
    if name == "variance":
        return R.variance(data, **kw)
    if name == "std":
        return R.std(data, **kw)
    if name == "quantile":
        return R.quantile(data, 0.5, candidates=9, **kw)
    if name == "quantiles":
        return R.quantiles(data, [0.1, 0.9], candidates=9, **kw)
    pub = {"public_partitions": ["a", "b"]} if name.endswith("public") else {}
    return G.grouped_release(
        units=[1, 2, 3],
        keys=["a", "a", "b"],
        values=data,
        statistics=("count", "sum", "mean"),
        delta=1e-6,
        max_partitions=1,
        **kw,
        **pub,
    )


BOUNDS = [
    (-FMAX, FMAX),
    (0.0, FMAX),
    (-1e308, 1e308),
    (0.0, 1e308),
    (-1e154, 1e154),
    (1e307, 1e308),
    (-5e-324, 5e-324),
    (0.0, 5e-324),
    (-1e-300, 1e-300),
    (1e308, FMAX),
]


@pytest.mark.parametrize("bounds", BOUNDS)
@pytest.mark.parametrize(
    "name",
    [
        "sum",
        "mean",
        "variance",
        "std",
        "quantile",
        "quantiles",
        "grouped_release",
        "grouped_release_public",
    ],
)
def test_extreme_bounds_with_extreme_data(name, bounds):
    lo, hi = bounds
    for data in ([FMAX, FMAX, -FMAX], [5e-324, -5e-324, 0.0], [lo, hi, hi]):
        for eps in (1.0, 5e-324, 1e300):
            _outcome(lambda b: _call_with_data(name, data, lo, hi, b, eps))


def test_selection_probability_is_a_probability_at_extreme_epsilon():
    for eps in (5e-324, 1e-300, 1e-12, 700, 700.0, 1e6, 1e300, FMAX, 10**400):
        for dl in (Fraction(1, 2**64), 1e-12, 0.5):
            try:
                p = G.partition_selection_probability(
                    [0, 1, 2, 3, 2**70], epsilon=eps, delta=dl
                )
            except dpfast.PrivacyParameterError:
                continue
            assert p[0] == 0.0 and p[-1] == 1.0 and np.all(np.diff(p) >= 0)
            assert p[1] <= float(dl) * (1 + 1e-12)


HUGE = "k" * 100_000
STRAYS = [
    None,
    math.nan,
    HUGE,
    2**64,
    -(2**63) - 1,
    2.5,
    True,
    b"\xff",
    (1, "x"),
    Decimal("NaN"),
    Decimal("sNaN"),
    np.datetime64("NaT"),
    [1, 2],
    {"a": 1},
    np.longdouble(1) / 3,
    1j,
    "",
    "a",
    7,
    object(),
]


def _signature(out):
    return ("dict", tuple(out), tuple(np.asarray(v).dtype.str for v in out.values()))


@pytest.mark.parametrize("base", [["a", "b"], [1, 2], [1.5, "x"], [None, "z"]])
def test_a_stray_key_or_unit_changes_no_public_shape(base):
    keys = [k for k in base for _ in range(300)]
    units = list(range(len(keys)))

    def run(ks, us):
        b = PrivacyBudget(FMAX, Fraction(1, 2))
        out = G.grouped_release(
            units=us, keys=ks, epsilon=50.0, delta=1e-9, max_partitions=1, rng=g(), budget=b
        )
        assert len(b.ledger) == 1
        return out

    ref = run(keys, units)
    for stray in STRAYS:
        for out in (
            run(keys + [stray], units + ["stray"]),
            run(keys + ["a"], units + [stray]),
        ):
            assert _signature(out) == _signature(ref), stray
            assert len(out["key"]) == len(ref["key"])
            assert all(
                x is y or x == y for x, y in zip(out["key"].tolist(), ref["key"].tolist())
            ), stray


@FEW
@given(
    st.lists(
        st.one_of(
            st.integers(-(2**70), 2**70),
            st.floats(),
            st.text(max_size=3),
            st.binary(max_size=2),
            st.none(),
            st.booleans(),
            st.tuples(st.integers(0, 3), st.text(max_size=1)),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_generated_mixed_keys_order_is_a_function_of_the_released_keys(kinds):
    keys = [k for k in kinds for _ in range(60)]
    a = G.grouped_release(
        units=range(len(keys)),
        keys=keys,
        epsilon=200.0,
        delta=0.4,
        max_partitions=1,
        rng=g(),
    )
    b = G.grouped_release(
        units=range(len(keys)),
        keys=keys[::-1],
        epsilon=200.0,
        delta=0.4,
        max_partitions=1,
        rng=g(),
    )
    ka, kb = a["key"].tolist(), b["key"].tolist()
    if len(ka) == len(kb) and {K.canon(x) for x in ka} == {K.canon(x) for x in kb}:
        assert [K.canon(x) for x in ka] == [K.canon(x) for x in kb]


# ---------------------------------------------------------------- 3. what they found on main

SMALL_EPS = [5e-324, 1e-300, 1e-12]


@pytest.mark.parametrize("eps", SMALL_EPS)
@pytest.mark.parametrize(
    "name",
    [
        "count",
        "sum",
        "mean",
        "histogram",
        "quantiles",
        "estimate_bounds",
        "variance",
        "std",
    ],
)
def test_an_epsilon_too_small_to_sample_is_refused_before_the_charge(name, eps):
    # on main these charged epsilon, then refused (or raised ZeroDivisionError)
    build = PUBLIC[name][0]
    budget = PrivacyBudget(1.0)
    try:
        build(budget, epsilon=eps)
    except dpfast.PrivacyParameterError:
        assert len(budget.ledger) == 0
    else:
        assert len(budget.ledger) == 1


@pytest.mark.parametrize("seed", range(5))
def test_mean_and_variance_of_the_largest_doubles_are_finite(seed):
    # the noisy ratio of the mean passed the doubles: OverflowError after the charge
    data = [FMAX, FMAX, -FMAX]
    m = R.mean(data, lower=-FMAX, upper=FMAX, epsilon=1.0, rng=dr.ChaCha20(seed))
    assert -FMAX <= m <= FMAX
    v = R.variance(
        [2.0**510, -(2.0**510)],
        lower=-(2.0**510),
        upper=2.0**510,
        epsilon=1e-6,
        rng=dr.ChaCha20(seed),
    )
    assert 0.0 <= v <= 2.0**1020
    s = R.sum(
        data, lower=-FMAX, upper=FMAX, epsilon=1.0, mode="fast", rng=dr.ChaCha20(seed)
    )
    assert -FMAX <= s <= FMAX


def test_candidates_over_the_whole_range_of_doubles_are_finite():
    # np.linspace(-FMAX, FMAX, k) has an infinite step: its candidates were inf and NaN
    for fn in (
        lambda: R.quantile(
            [1.0], 0.5, lower=-FMAX, upper=FMAX, epsilon=1.0, candidates=9, rng=g()
        ),
        lambda: R.quantiles(
            [1.0], [0.2, 0.8], lower=-FMAX, upper=FMAX, epsilon=1.0, candidates=9, rng=g()
        ),
    ):
        assert np.all(np.isfinite(fn()))
    grid = dpfast._validation.even_grid(-FMAX, FMAX, 5)
    assert grid[0] == -FMAX and grid[-1] == FMAX and np.all(np.diff(grid) > 0)
    np.testing.assert_array_equal(
        dpfast._validation.even_grid(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5)
    )


def test_grouped_sums_near_the_largest_double_are_finite():
    out = G.grouped_release(
        units=[1, 2, 3],
        keys=["a", "a", "b"],
        values=[FMAX] * 3,
        statistics=("count", "sum", "mean"),
        epsilon=1e300,
        max_partitions=1,
        lower=0.0,
        upper=FMAX,
        public_partitions=["a", "b"],
        rng=g(),
    )
    assert _finite(out)
    # Gaussian noise for bounds this wide: refused by its public parameters, before the
    # charge (was OverflowError)
    budget = PrivacyBudget(2.0, 1e-3)
    with pytest.raises(dpfast.PrivacyParameterError):
        G.grouped_release(
            units=[1, 2, 3],
            keys=["a", "a", "b"],
            values=[1.0] * 3,
            statistics=("sum", "mean"),
            epsilon=1.0,
            delta=1e-6,
            noise="gaussian",
            max_partitions=1,
            lower=-FMAX,
            upper=FMAX,
            public_partitions=["a"],
            rng=g(),
            budget=budget,
        )
    assert len(budget.ledger) == 0


def test_gaussian_grouped_release_at_a_huge_epsilon_needs_no_huge_array():
    # the discrete Gaussian's delta bound summed an array of j terms for a shift j of
    # 2^31 grid steps (epsilon huge, sigma small): 5 GiB here, the process OOM-killed
    import subprocess

    code = (
        "import resource, warnings\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 * 2 ** 30, 2 * 2 ** 30))\n"
        "warnings.simplefilter('ignore')\n"
        "from dpfast import grouped as G, _calibration as C\n"
        "lo, hi = C._dg_tail_bounds_direct(2 ** 31, 1.0)\n"
        "assert lo == 0.0 and 0.0 <= hi < 1e-300, (lo, hi)\n"
        "G.grouped_release(units=[1, 2, 3], keys=['a', 'b', 'a'], values=[1.0, 2.0, 3.0],"
        " statistics=('count', 'sum', 'mean'), epsilon=1e300, delta=1e-6,"
        " max_partitions=2, lower=0.0, upper=10.0, noise='gaussian')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]


def test_selection_probability_of_unit_counts_at_the_int64_edges():
    # [2**64] was refused (object dtype) while [2**64 - 1] was answered, and uint64
    # counts >= 2**63 wrapped to negative indices (IndexError)
    for units in (
        [2**63 - 1],
        [2**63],
        [2**64 - 1],
        [2**64],
        [10**30],
        np.array([2**63], dtype=np.uint64),
        np.array([2**64 - 1], np.uint64),
    ):
        p = G.partition_selection_probability(units, epsilon=1.0, delta=1e-6)
        assert p.tolist() == [1.0]
    with pytest.raises(TypeError):
        G.partition_selection_probability([1.0], epsilon=1.0, delta=1e-6)
    with pytest.raises(dpfast.PrivacyParameterError):
        G.partition_selection_probability([-1, 2**64], epsilon=1.0, delta=1e-6)
