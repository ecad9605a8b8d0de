"""Property-based checks of the rules of docs/security-model.md (issue 9), with hypothesis.

1. Hostile public parameters: only documented exceptions escape (TypeError, ValueError
   subclasses, dpfast's own errors), never ZeroDivisionError / OverflowError / IndexError /
   AttributeError / "math domain error", and no NaN where a number is promised.
2. Hostile data layouts and dtypes: the same.
3. Neighbouring private values at every representability edge (2**53, 2**63, the largest
   double, the secure grid's range) are both answered or both refused by type.
"""

import math
import sys
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings  # the [test] extra installs it
from hypothesis import strategies as st

import dpfast  # noqa: E402
from dpfast import accuracy as A  # noqa: E402
from dpfast import mechanisms as M  # noqa: E402
from dpfast import random as dr  # noqa: E402
from dpfast import selection as S  # noqa: E402
from dpfast import sparse as SP  # noqa: E402
from dpfast import stats as R  # noqa: E402
from dpfast.randomized_response import kary_response, randomized_response  # noqa: E402

FEW = settings(
    max_examples=60,
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


def _documented(exc):
    """Whether an exception is one a public function may raise (rule 3)."""
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
    if "math domain error" in str(exc) or "math range error" in str(exc):
        return False
    return isinstance(exc, (TypeError, ValueError, dpfast.DPFastError))


def _outcome(call, nan_ok=False):
    try:
        out = call()
    except MemoryError:
        return "refused", MemoryError
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        return "refused", type(exc)
    if isinstance(out, float) and not nan_ok:  # (NumericSparse's NaN means "below")
        assert not math.isnan(out), "NaN from a function that promises a number"
    return "answered", None


def g():
    return dr.ChaCha20(11)


# ---------------------------------------------------------------- 1. public parameters


def _public_calls():
    """(name, builder(**overrides)) for every public function, valid by default."""
    sp_kw = dict(threshold=0.0, epsilon=1.0, sensitivity=1.0, rng=None)
    return {
        "laplace_mechanism": (
            lambda **k: M.laplace_mechanism(
                1.5, **{"epsilon": 1.0, "sensitivity": 1.0, "rng": g(), **k}
            ),
            ["epsilon", "sensitivity", "granularity", "mode"],
        ),
        "laplace_int": (
            lambda **k: M.laplace_mechanism(
                3, **{"epsilon": 1.0, "sensitivity": 1.0, "rng": g(), **k}
            ),
            ["epsilon", "sensitivity", "granularity"],
        ),
        "gaussian_mechanism": (
            lambda **k: M.gaussian_mechanism(
                [1.0, 2.0],
                **{"epsilon": 1.0, "delta": 1e-6, "l2_sensitivity": 1.0, "rng": g(), **k},
            ),
            ["epsilon", "delta", "l2_sensitivity", "granularity", "calibration"],
        ),
        "gaussian_fast": (
            lambda **k: M.gaussian_mechanism(
                1.0, **{"epsilon": 1.0, "delta": 1e-6, "mode": "fast", "rng": g(), **k}
            ),
            ["epsilon", "delta", "l2_sensitivity"],
        ),
        "geometric": (
            lambda **k: M.geometric_mechanism(
                3, **{"epsilon": 1.0, "sensitivity": 1, "rng": g(), **k}
            ),
            ["epsilon", "sensitivity"],
        ),
        "discrete_gaussian": (
            lambda **k: M.discrete_gaussian_mechanism(
                [3], **{"epsilon": 1.0, "delta": 1e-6, "rng": g(), **k}
            ),
            ["epsilon", "delta", "l2_sensitivity"],
        ),
        "AboveThreshold": (
            lambda **k: SP.AboveThreshold(**{**sp_kw, "rng": g(), **k}).feed([0.5, -1.0]),
            ["threshold", "epsilon", "sensitivity", "granularity", "value_range"],
        ),
        "Sparse": (
            lambda **k: SP.Sparse(
                **{**sp_kw, "cutoff": 2, "delta": 1e-6, "rng": g(), **k}
            ).step(0.5),
            ["threshold", "epsilon", "sensitivity", "cutoff", "delta"],
        ),
        "NumericSparse": (
            lambda **k: SP.NumericSparse(
                **{**sp_kw, "cutoff": 2, "delta": 0.0, "rng": g(), **k}
            ).feed([2.0]),
            ["threshold", "epsilon", "sensitivity", "cutoff", "delta", "value_range"],
        ),
        "NumericSparse_fast": (
            lambda **k: SP.NumericSparse(
                **{**sp_kw, "cutoff": 1, "mode": "fast", "rng": g(), **k}
            ).step(2.0),
            ["threshold", "epsilon", "sensitivity", "cutoff"],
        ),
        "exponential_mechanism": (
            lambda **k: S.exponential_mechanism(
                [1.0, 2.0], **{"epsilon": 1.0, "sensitivity": 1.0, "rng": g(), **k}
            ),
            ["epsilon", "sensitivity", "monotonic", "mode"],
        ),
        "report_noisy_max": (
            lambda **k: S.report_noisy_max(
                [1, 2],
                **{
                    "epsilon": 1.0,
                    "sensitivity": 1.0,
                    "return_value": True,
                    "rng": g(),
                    **k,
                },
            ),
            ["epsilon", "sensitivity", "value_epsilon", "noise"],
        ),
        "permute_and_flip": (
            lambda **k: S.permute_and_flip(
                [1.0, 2.0], **{"epsilon": 1.0, "sensitivity": 1.0, "rng": g(), **k}
            ),
            ["epsilon", "sensitivity"],
        ),
        "top_k": (
            lambda **k: S.top_k(
                [1.0, 2.0, 3.0],
                **{"k": 2, "epsilon": 1.0, "sensitivity": 1.0, "rng": g(), **k},
            ),
            ["k", "epsilon", "sensitivity"],
        ),
        "count": (
            lambda **k: R.count([1, 2], **{"epsilon": 1.0, "rng": g(), **k}),
            ["epsilon", "mode"],
        ),
        "sum": (
            lambda **k: R.sum(
                [1.0, 2.0], **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), **k}
            ),
            ["lower", "upper", "epsilon"],
        ),
        "mean": (
            lambda **k: R.mean(
                [1.0, 2.0], **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), **k}
            ),
            ["lower", "upper", "epsilon"],
        ),
        "histogram": (
            lambda **k: R.histogram(
                [1.0, 2.0],
                **{"bins": 4, "range": (0.0, 4.0), "epsilon": 1.0, "rng": g(), **k},
            ),
            ["bins", "epsilon"],
        ),
        "quantile": (
            lambda **k: R.quantile(
                [1.0, 2.0],
                **{
                    "q": 0.5,
                    "lower": 0.0,
                    "upper": 4.0,
                    "epsilon": 1.0,
                    "candidates": 17,
                    "rng": g(),
                    **k,
                },
            ),
            ["q", "lower", "upper", "epsilon", "candidates"],
        ),
        "randomized_response": (
            lambda **k: randomized_response([True], **{"epsilon": 1.0, "rng": g(), **k}),
            ["epsilon"],
        ),
        "kary_response": (
            lambda **k: kary_response([1], **{"k": 3, "epsilon": 1.0, "rng": g(), **k}),
            ["k", "epsilon"],
        ),
        "laplace_error": (
            lambda **k: A.laplace_error(**{"epsilon": 1.0, "beta": 0.05, **k}),
            ["epsilon", "beta", "sensitivity", "k"],
        ),
        "randomized_response_error": (
            lambda **k: A.randomized_response_error(
                **{"epsilon": 1.0, "n": 100, "beta": 0.05, **k}
            ),
            ["epsilon", "n", "beta", "k"],
        ),
        "uniform": (
            lambda **k: dr.uniform(**{"low": 0.0, "high": 1.0, "rng": g(), **k}),
            ["low", "high", "size"],
        ),
        "laplace": (
            lambda **k: dr.laplace(**{"scale": 1.0, "rng": g(), **k}),
            ["scale", "size"],
        ),
        "discrete_laplace": (
            lambda **k: dr.discrete_laplace(**{"scale": 1.0, "rng": g(), **k}),
            ["scale", "size"],
        ),
        "discrete_gaussian_rng": (
            lambda **k: dr.discrete_gaussian(**{"sigma": 1.0, "rng": g(), **k}),
            ["sigma", "size"],
        ),
        "os_entropy": (lambda **k: dr.os_entropy(k.get("n", 8)), ["n"]),
    }


PUBLIC = _public_calls()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_hostile_public_parameters_give_documented_errors(name):
    build, params = PUBLIC[name]
    assert _outcome(build)[0] == "answered"  # the defaults are valid
    for p in params:
        for value in HOSTILE:
            _outcome(lambda: build(**{p: value}), nan_ok="Numeric" in name)
        _outcome(lambda: build(budget=object()) if "budget" not in p else None)


@FEW
@given(
    eps=st.floats(allow_nan=True, allow_infinity=True),
    sens=st.floats(allow_nan=True, allow_infinity=True),
)
def test_random_public_floats(eps, sens):
    for call in (
        lambda: M.laplace_mechanism(1.0, epsilon=eps, sensitivity=sens, rng=g()),
        lambda: M.gaussian_mechanism(
            1.0, epsilon=eps, delta=1e-9, l2_sensitivity=sens, rng=g()
        ),
        lambda: SP.AboveThreshold(0.0, epsilon=eps, sensitivity=sens, rng=g()).step(1.0),
        lambda: S.exponential_mechanism([0.0, 1.0], epsilon=eps, sensitivity=sens, rng=g()),
    ):
        _outcome(call)


# ---------------------------------------------------------------- 2. hostile data


def _hostile_data():
    base = np.arange(6, dtype=np.float64)
    ro = base.copy()
    ro.flags.writeable = False
    return [
        np.float64(1.5),
        np.array(1.5),
        np.array([]),
        base[::2],
        ro,
        base.astype(">f8"),
        base.astype(object),
        base.astype(np.longdouble),
        np.array([2**64 - 1, 0], dtype=np.uint64),
        [1, 2.5],
        [2**64, 1],
        [1, "a"],
        [[1.0, 2.0], [3.0]],
        Decimal(1),
        "abc",
        None,
        [True, False],
        base.astype(np.float32),
        base.reshape(2, 3),
        base.astype(np.int8),
    ]


PRIVATE_CALLS = {
    "laplace": lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g()),
    "laplace_fast": lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g(), mode="fast"),
    "gaussian": lambda x: M.gaussian_mechanism(x, epsilon=1.0, delta=1e-6, rng=g()),
    "geometric": lambda x: M.geometric_mechanism(x, epsilon=1.0, rng=g()),
    "svt_feed": lambda x: SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g()).feed(
        np.ravel(x) if isinstance(x, np.ndarray) else x
    ),
    "svt_fast": lambda x: SP.AboveThreshold(0.0, epsilon=1.0, rng=g(), mode="fast").feed(x),
    "em": lambda x: S.exponential_mechanism(x, epsilon=1.0, rng=g()),
    "rnm": lambda x: S.report_noisy_max(x, epsilon=1.0, rng=g(), return_value=True),
    "topk_fast": lambda x: S.top_k(x, 1, epsilon=1.0, rng=g(), mode="fast"),
    "sum": lambda x: R.sum(x, lower=0.0, upper=10.0, epsilon=1.0, rng=g()),
    "mean": lambda x: R.mean(x, lower=0.0, upper=10.0, epsilon=1.0, rng=g()),
    "quantile": lambda x: R.quantile(x, 0.5, lower=0.0, upper=10.0, epsilon=1.0, rng=g()),
    "histogram": lambda x: R.histogram(x, 4, range=(0.0, 8.0), epsilon=1.0, rng=g()),
}


@pytest.mark.parametrize("name", sorted(PRIVATE_CALLS))
def test_hostile_data_gives_documented_errors(name):
    for data in _hostile_data():
        _outcome(lambda: PRIVATE_CALLS[name](data))


# ---------------------------------------------------------------- 3. neighbouring values

FMAX = sys.float_info.max
# the secure SVT grid at sensitivity 1 is 2**-20: its range ends just below 2**41
GRID_EDGE = 2.0**41
EDGES_INT = [2**53, 2**63 - 1, 2**63, 2**64, -(2**63), -(2**63) - 1, 10**30]
EDGES_FLOAT = [2.0**53, FMAX, -FMAX, GRID_EDGE, 2.0**63, 1e300]


def _pairs():
    out = []
    for x in EDGES_INT:
        out += [(x - 1, x), (x, x + 1)]
    for x in EDGES_FLOAT:
        out += [(x, math.nextafter(x, 0.0)), (x, x - math.copysign(1.0, x))]
    return out


def _neighbour_calls():
    """Calls whose one private argument is a scalar query value / record / score, with
    sensitivity 1 (the neighbouring values above differ by at most 1)."""
    return {
        "laplace": lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g()),
        "laplace_list": lambda x: M.laplace_mechanism([x, 0], epsilon=1.0, rng=g()),
        "laplace_mixed": lambda x: M.laplace_mechanism([x, 0.5], epsilon=1.0, rng=g()),
        "laplace_fast": lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g(), mode="fast"),
        "gaussian": lambda x: M.gaussian_mechanism(x, epsilon=1.0, delta=1e-6, rng=g()),
        "geometric": lambda x: (
            M.geometric_mechanism(x, epsilon=1.0, rng=g()) if isinstance(x, int) else 0
        ),
        "dgauss": lambda x: (
            M.discrete_gaussian_mechanism([x], epsilon=1.0, delta=1e-6, rng=g())
            if isinstance(x, int)
            else 0
        ),
        "at_step": lambda x: SP.AboveThreshold(0.0, epsilon=1.0, rng=g()).step(x),
        "at_feed": lambda x: SP.AboveThreshold(0.0, epsilon=1.0, rng=g()).feed([1, x]),
        "sparse_fast": lambda x: SP.Sparse(
            0.0, cutoff=1, epsilon=1.0, rng=g(), mode="fast"
        ).feed([x]),
        "numeric": lambda x: SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g()).step(x),
        "numeric_fast": lambda x: SP.NumericSparse(
            0.0, cutoff=1, epsilon=1.0, rng=g(), mode="fast"
        ).feed([x]),
        "em": lambda x: S.exponential_mechanism([x, 0], epsilon=1.0, rng=g()),
        "em_fast": lambda x: S.exponential_mechanism(
            [x, 0], epsilon=1.0, rng=g(), mode="fast"
        ),
        "rnm": lambda x: S.report_noisy_max(
            [x, 0], epsilon=1.0, rng=g(), return_value=True
        ),
        "pf": lambda x: S.permute_and_flip([x, 1], epsilon=1.0, rng=g()),
        "topk": lambda x: S.top_k([x, 1, 2], 2, epsilon=1.0, rng=g()),
        "sum": lambda x: R.sum([x, 1.0], lower=-5.0, upper=5.0, epsilon=1.0, rng=g()),
        "mean": lambda x: R.mean([x], lower=-5.0, upper=5.0, epsilon=1.0, rng=g()),
        "quantile": lambda x: R.quantile(
            [x, 1], 0.5, lower=0.0, upper=4.0, epsilon=1.0, rng=g()
        ),
        "histogram": lambda x: R.histogram([x], 2, range=(0.0, 4.0), epsilon=1.0, rng=g()),
    }


NEIGHBOUR = _neighbour_calls()


@pytest.mark.parametrize("name", sorted(NEIGHBOUR))
def test_neighbours_at_representability_edges(name):
    call = NEIGHBOUR[name]
    nan_ok = name.startswith("numeric")
    for a, b in _pairs():
        oa, ob = _outcome(lambda: call(a), nan_ok), _outcome(lambda: call(b), nan_ok)
        assert oa[0] == ob[0] == "answered" or (oa == ob and oa[1] is TypeError), (
            a,
            b,
            oa,
            ob,
        )
        for dtype in (np.int64, np.uint64, np.float64, np.float32, np.longdouble):
            # an array of one dtype: refused by type or answered, never split by value
            try:
                with np.errstate(over="ignore"):
                    xa, xb = np.array([a], dtype=dtype), np.array([b], dtype=dtype)
            except OverflowError:
                continue
            if np.isinf(xa).any() or np.isinf(xb).any():
                continue  # float32 turns FMAX into inf: no longer neighbours
            oa = _outcome(lambda: call(xa[0]), nan_ok)
            ob = _outcome(lambda: call(xb[0]), nan_ok)
            assert oa == ob or (oa[0] == ob[0] == "answered"), (name, dtype, a, b, oa, ob)


@FEW
@given(st.sampled_from(EDGES_INT), st.integers(-3, 3))
def test_generated_integer_neighbours(edge, off):
    x = edge + off
    for name in ("laplace", "at_step", "at_feed", "em", "rnm", "numeric", "sum"):
        oa = _outcome(lambda: NEIGHBOUR[name](x), name == "numeric")
        ob = _outcome(lambda: NEIGHBOUR[name](x + 1), name == "numeric")
        assert oa[0] == ob[0] == "answered", (name, x, oa, ob)
