"""Neighbouring private values and hostile public parameters of grouped releases,
partition selection, ``releases.counts`` and the everyday statistics (issue 22 items 2,
3, 4, 6, 7 and 11), in the style of tests/test_properties.py; the companion of
tests/test_grouped_properties.py (which covers the extreme public parameters).

1. Hostile public parameters: only documented exceptions escape, a refused call charges
   nothing (validation comes before the charge), an answered call charges once.
2. Neighbouring private values at every representability edge (2**53, 2**63, 2**64,
   huge strings, NaN/None keys, mixed types, -0.0), in lists, object arrays, typed
   arrays and pandas columns: both neighbours are answered, with the same output type
   and dtype, and the released keys come in the same order (the canonical order of
   the released keys: docs/security-model.md, "Released keys: order and dtype").
"""

import math
import sys
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dpfast.stats as R
from dpfast import _keys
from test_properties import FEW, HOSTILE, _documented, g

FMAX = sys.float_info.max


class Spy:
    """A budget that records its charges (and refuses nothing)."""

    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta, *, label=None):
        self.calls.append((epsilon, delta, label))


def _charged_outcome(call):
    """('answered' | 'refused', exception type): a refusal must be documented and charge
    nothing; an answer charges exactly once."""
    spy = Spy()
    try:
        call(spy)
    except MemoryError:
        assert not spy.calls
        return "refused", MemoryError
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), f"{type(exc).__name__}: {exc}"
        assert not spy.calls, f"charged {spy.calls} before refusing: {exc!r}"
        return "refused", type(exc)
    assert len(spy.calls) == 1, spy.calls
    return "answered", None


# ---------------------------------------------------------------- 1. public parameters

UNITS = list(range(60)) * 2
KEYS = ["a", "b", "c"] * 40
VALS = [1.0, 2.5, 3.0, 0.5] * 30
X = np.linspace(0.0, 10.0, 41)

HOSTILE_LISTS = [
    [],
    [1, 1],
    [math.nan, float("nan")],
    [[1], [2]],
    [1, "1", 1.0, True],
    [None, math.nan],
    np.zeros((2, 2)),
    np.array([], dtype=np.float64),
    np.array([1.5, 2.5]),
    "ab",
    b"ab",
    range(3),
    [{}],
    [2**64, -(2**70)],
    ["x" * 10_000],
    (0.0, -0.0),
    [(1, 2), (1, None)],
]

PUBLIC = {
    "grouped": (
        lambda b, **k: R.grouped_release(
            **{
                "units": UNITS,
                "keys": KEYS,
                "values": VALS,
                "statistics": ("count", "sum", "mean"),
                "epsilon": 1.0,
                "delta": 1e-6,
                "max_partitions": 2,
                "max_contributions": 2,
                "lower": 0.0,
                "upper": 4.0,
                "rng": g(),
                "budget": b,
                **k,
            }
        ),
        [
            "epsilon",
            "delta",
            "max_partitions",
            "max_contributions",
            "lower",
            "upper",
            "noise",
            "statistics",
            "public_partitions",
            "label",
        ],
    ),
    "grouped_gaussian": (
        lambda b, **k: R.grouped_release(
            **{
                "units": UNITS,
                "keys": KEYS,
                "epsilon": 1.0,
                "delta": 1e-6,
                "max_partitions": 1,
                "noise": "gaussian",
                "rng": g(),
                "budget": b,
                **k,
            }
        ),
        ["epsilon", "delta", "max_partitions", "max_contributions", "public_partitions"],
    ),
    "grouped_public": (
        lambda b, **k: R.grouped_release(
            **{
                "units": UNITS,
                "keys": KEYS,
                "values": VALS,
                "statistics": "sum",
                "public_partitions": ["a", "z"],
                "lower": -1.0,
                "upper": 1.0,
                "epsilon": 1.0,
                "max_partitions": 1,
                "rng": g(),
                "budget": b,
                **k,
            }
        ),
        ["epsilon", "delta", "lower", "upper", "public_partitions", "statistics"],
    ),
    "counts": (
        lambda b, **k: R.counts(
            **{
                "values": KEYS,
                "categories": ["a", "b"],
                "epsilon": 1.0,
                "rng": g(),
                "budget": b,
                **k,
            }
        ),
        ["categories", "epsilon", "label"],
    ),
    "count": (
        lambda b, **k: R.count(X, **{"epsilon": 1.0, "rng": g(), "budget": b, **k}),
        ["epsilon", "mode"],
    ),
    "sum": (
        lambda b, **k: R.sum(
            X, **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["lower", "upper", "epsilon", "axis", "mode"],
    ),
    "mean": (
        lambda b, **k: R.mean(
            X, **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["lower", "upper", "epsilon", "axis"],
    ),
    "variance": (
        lambda b, **k: R.variance(
            X, **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["lower", "upper", "epsilon", "axis"],
    ),
    "std": (
        lambda b, **k: R.std(
            X, **{"lower": 0.0, "upper": 4.0, "epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["lower", "upper", "epsilon"],
    ),
    "histogram": (
        lambda b, **k: R.histogram(
            X,
            **{
                "bins": 4,
                "range": (0.0, 4.0),
                "epsilon": 1.0,
                "rng": g(),
                "budget": b,
                **k,
            },
        ),
        ["bins", "range", "epsilon", "mode"],
    ),
    "quantile": (
        lambda b, **k: R.quantile(
            X,
            **{
                "q": 0.5,
                "lower": 0.0,
                "upper": 4.0,
                "epsilon": 1.0,
                "candidates": 17,
                "rng": g(),
                "budget": b,
                **k,
            },
        ),
        ["q", "lower", "upper", "epsilon", "candidates", "axis"],
    ),
    "quantiles": (
        lambda b, **k: R.quantiles(
            X,
            **{
                "qs": [0.25, 0.75],
                "lower": 0.0,
                "upper": 4.0,
                "epsilon": 1.0,
                "candidates": 17,
                "rng": g(),
                "budget": b,
                **k,
            },
        ),
        ["qs", "lower", "upper", "epsilon", "candidates"],
    ),
    "estimate_bounds": (
        lambda b, **k: R.estimate_bounds(
            X, **{"epsilon": 1.0, "rng": g(), "budget": b, **k}
        ),
        ["epsilon", "quantile", "smallest", "largest"],
    ),
}


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_hostile_public_parameters_are_refused_before_any_charge(name):
    build, params = PUBLIC[name]
    assert _charged_outcome(lambda b: build(b)) == ("answered", None)  # valid defaults
    for p in params:
        for value in HOSTILE + HOSTILE_LISTS:
            _charged_outcome(lambda b: build(b, **{p: value}))


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_hostile_public_budgets_are_refused(name):
    build, _ = PUBLIC[name]
    for budget in (object(), 1.0, "budget", Spy):
        try:
            build(budget)
        except Exception as exc:  # noqa: BLE001
            assert _documented(exc), repr(exc)
        else:
            raise AssertionError(f"{name} accepted budget={budget!r}")


def test_partition_selection_probability_hostile_parameters():
    def call(**k):
        return R.partition_selection_probability(
            **{"units": [0, 1, 5], "epsilon": 1.0, "delta": 1e-6, **k}
        )

    assert call().shape == (3,)
    for p in ("units", "epsilon", "delta", "max_partitions"):
        for value in HOSTILE + HOSTILE_LISTS:
            try:
                out = call(**{p: value})
            except Exception as exc:  # noqa: BLE001
                assert _documented(exc), (p, value, repr(exc))
            else:
                arr = np.asarray(out)
                assert arr.dtype == np.float64 and ((arr >= 0) & (arr <= 1)).all(), (
                    p,
                    value,
                )


FLOATS = st.floats(allow_nan=True, allow_infinity=True)


@FEW
@given(eps=FLOATS, delta=FLOATS, l0=st.integers(-1, 2**40), linf=st.integers(-1, 2**40))
def test_random_public_numbers_of_grouped_release(eps, delta, l0, linf):
    for stats in ("count", ("count", "sum", "mean")):
        _charged_outcome(
            lambda b: R.grouped_release(
                units=UNITS,
                keys=KEYS,
                values=VALS,
                statistics=stats,
                epsilon=eps,
                delta=delta,
                max_partitions=l0,
                max_contributions=linf,
                lower=0.0,
                upper=4.0,
                rng=g(),
                budget=b,
            )
        )


@FEW
@given(eps=FLOATS, lo=FLOATS, hi=FLOATS)
def test_random_public_numbers_of_everyday_statistics(eps, lo, hi):
    for f in (R.sum, R.mean, R.variance, R.std):
        _charged_outcome(lambda b: f(X, lower=lo, upper=hi, epsilon=eps, rng=g(), budget=b))
    _charged_outcome(
        lambda b: R.quantiles(
            X, [0.5], lower=lo, upper=hi, epsilon=eps, candidates=9, rng=g(), budget=b
        )
    )
    _charged_outcome(
        lambda b: R.histogram(X, 3, range=(lo, hi), epsilon=eps, rng=g(), budget=b)
    )
    _charged_outcome(
        lambda b: R.grouped_release(
            units=UNITS,
            keys=KEYS,
            values=VALS,
            statistics="mean",
            epsilon=eps,
            delta=1e-6,
            max_partitions=2,
            lower=lo,
            upper=hi,
            rng=g(),
            budget=b,
        )
    )


@FEW
@given(eps=FLOATS, delta=FLOATS, l0=st.integers(-1, 2**40))
def test_random_public_numbers_of_partition_selection(eps, delta, l0):
    try:
        p = R.partition_selection_probability(
            [0, 1, 2, 10**9], epsilon=eps, delta=delta, max_partitions=l0
        )
    except Exception as exc:  # noqa: BLE001
        assert _documented(exc), repr(exc)
    else:
        assert p[0] == 0.0 and p[1] <= delta / l0 * (1 + 1e-9) and p[-1] == 1.0
        assert np.all(np.diff(p) >= 0)


TWO_D = [
    pd.DataFrame({"a": X, "b": X}),
    np.stack([X, X], axis=1),
    np.stack([X, X], axis=1).tolist(),
]


@pytest.mark.parametrize(
    "name",
    [
        "sum",
        "mean",
        "variance",
        "std",
        "histogram",
        "quantile",
        "quantiles",
        "estimate_bounds",
    ],
)
def test_two_dimensional_records_without_axis_are_refused_before_any_charge(name):
    """Item 6: every cell as a record would count a person once per column."""
    build, _ = PUBLIC[name]
    f = getattr(R, name)
    for data in TWO_D:

        def call(b, data=data):
            kw = {}
            if "lower" in f.__code__.co_varnames:
                kw = {"lower": 0.0, "upper": 4.0}
            if name == "histogram":
                return f(data, 4, range=(0.0, 4.0), epsilon=1.0, rng=g(), budget=b)
            if name == "quantile":
                return f(data, 0.5, epsilon=1.0, rng=g(), budget=b, **kw)
            if name == "quantiles":
                return f(data, [0.5], epsilon=1.0, rng=g(), budget=b, **kw)
            return f(data, epsilon=1.0, rng=g(), budget=b, **kw)

        out = _charged_outcome(call)
        assert out[0] == "refused", (name, type(data))
    # counts: one category per record; a frame is refused too
    assert (
        _charged_outcome(
            lambda b: R.counts(
                pd.DataFrame({"a": KEYS, "b": KEYS}), ["a"], epsilon=1.0, rng=g(), budget=b
            )
        )[0]
        == "refused"
    )


# ---------------------------------------------------------------- 2. neighbouring values

EDGE_INTS = [2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**30]
HUGE = "y" * 100_000


def _key_pairs():
    """Neighbouring stray keys: each pair differs in one element's value or type."""
    pairs = [(x, x + 1) for x in EDGE_INTS] + [(x - 1, x) for x in EDGE_INTS]
    pairs += [
        (float(2**53), float(2**53) + 2.0),
        (FMAX, -FMAX),
        (math.inf, math.nan),
        (0.0, -0.0),
        ("short", HUGE),
        (b"b", b"b" * 100_000),
        (None, math.nan),
        (1, "1"),
        (1, 1.0),
        (1, True),
        ("x", b"x"),
        (np.int64(5), np.uint64(2**64 - 1)),
        (np.float32(1.5), np.float32("nan")),
        ((1, "a"), (1, None)),
        ((1, 2), ("x", 2**70)),
        (Decimal(1), Decimal("NaN")),
        (np.datetime64("2024-01-01"), np.datetime64("NaT")),
        (None, [1, 2]),
        ({}, "z"),
    ]
    return pairs


def _containers():
    """How a list of private keys reaches grouped_release (and what it becomes)."""
    return {
        "list": lambda xs: list(xs),
        "tuple": lambda xs: tuple(xs),
        "object_array": lambda xs: _keys.from_sequence(xs),
        "pandas_object": lambda xs: pd.Series(_keys.from_sequence(xs), dtype=object),
    }


BASES = {
    # released keys (many units each) and the dtype they are released with
    "str": (["b", "a", "c"], np.dtype("<U1")),
    "int": ([7, -3, 2**40], np.dtype(np.int64)),
    "float": ([1.5, 0.0, -2.0, math.nan], np.dtype(np.float64)),
    "mixed": (["a", 3, None, (1, "x"), 2.5], np.dtype(object)),
    "objects": ([Decimal("2.5"), (1, "x"), Decimal(1), ("a", None)], np.dtype(object)),
}
SEL = dict(epsilon=20.0, delta=1e-9, max_partitions=1, max_contributions=1)


def _grouped(base, strays, container, seed=5, where="keys", values=None):
    keys = [k for k in base for _ in range(60)]
    units = list(range(len(keys)))
    ks = list(strays) + keys
    us = [10**9 + i for i in range(len(strays))] + units
    if where == "units":  # the strays are unit ids of one more record of "base[0]"
        ks, us = [base[0]] * len(strays) + keys, list(strays) + units
    wrap = _containers()[container]
    kw = {}
    if values is not None:  # values: a list, a tuple, float64 array or Series
        vals = list(values) + [1.0] * len(keys)
        vwrap = {
            "list": list,
            "tuple": tuple,
            "object_array": np.array,
            "pandas_object": pd.Series,
        }[container]
        kw = dict(
            values=vwrap(vals)
            if container in ("list", "tuple")
            else vwrap(vals, dtype=np.float64)
            if all(isinstance(v, float) for v in vals)
            else list(vals),
            statistics=("count", "sum", "mean"),
            lower=-4.0,
            upper=4.0,
        )
    return R.grouped_release(
        units=wrap(us),
        keys=wrap(ks),
        rng=g() if seed is None else _seeded(seed),
        **SEL,
        **kw,
    )


def _seeded(seed):
    from dpfast.random import ChaCha20

    return ChaCha20(seed)


def _plain(out):
    """A grouped release's output as a dict (a data frame's index is the key column)."""
    if isinstance(out, pd.DataFrame):
        return {"key": out.index.to_numpy(), **{c: out[c].to_numpy() for c in out.columns}}
    return out


def _same_keys(a, b):
    """The same released keys, in the same order, of the same types and dtype."""
    a, b = _plain(a), _plain(b)
    assert a["key"].dtype == b["key"].dtype
    ka, kb = a["key"].tolist(), b["key"].tolist()
    assert len(ka) == len(kb)
    for x, y in zip(ka, kb):
        assert type(x) is type(y) and (repr(x) == repr(y)), (x, y)
    for s in ("count", "sum", "mean"):
        if s in a:
            assert a[s].dtype == b[s].dtype and a[s].shape == b[s].shape


def _canonical_order_holds(out):
    out = _plain(out)
    keys = [_keys.canon(k) for k in out["key"].tolist()]
    ranked = [k for k in keys if k[0] != 9]  # numbers, strings, tuples ...: sorted
    assert keys[: len(ranked)] == ranked == sorted(ranked)
    objects = [k[2] for k in keys[len(ranked) :]]  # then objects (here Decimals: by <)
    assert all(k[0] == 9 for k in keys[len(ranked) :]) and objects == sorted(objects)


@pytest.mark.parametrize("container", sorted(_containers()))
@pytest.mark.parametrize("base", sorted(BASES))
def test_neighbouring_stray_keys_at_every_edge(base, container):
    """Two data sets that differ in one unit's key, across an edge of representability
    (or of type): both answered; the released keys, their order, types and dtype are
    those of the data set without that unit."""
    keys, dtype = BASES[base]
    plain = _plain(_grouped(keys, [], container))
    assert len(plain["key"]) == len(keys)
    if container != "pandas_object":  # (pandas picks the index's dtype itself)
        assert plain["key"].dtype == dtype
    _canonical_order_holds(plain)
    for a, b in _key_pairs():
        outs = [_grouped(keys, [x], container) for x in (a, b)]
        for out in outs:
            _same_keys(out, plain)


@pytest.mark.parametrize("container", sorted(_containers()))
def test_neighbouring_unit_ids_and_values_at_every_edge(container):
    keys = BASES["str"][0]
    plain = _grouped(keys, [], container)
    for a, b in _key_pairs():
        for x in (a, b):
            _same_keys(_grouped(keys, [x], container, where="units"), plain)
    plain = _grouped(keys, [], container, values=[])
    for a, b in [(x, x + 1) for x in EDGE_INTS] + [
        (FMAX, -FMAX),
        (math.inf, math.nan),
        (2.0**53, 2.0**53 + 2),
        (5e-324, -0.0),
    ]:
        for x in (a, b):
            _same_keys(_grouped(keys, [x], container, values=[x]), plain)


@pytest.mark.parametrize(
    "dtype,pair",
    [
        (np.int64, (2**63 - 1, -(2**63))),
        (np.uint64, (2**64 - 1, 2**63)),
        ("<U8", ("", "zzzzzzzz")),
        ("S3", (b"", b"\xff\xff\xff")),
        ("M8[D]", (np.datetime64("NaT"), np.datetime64("9999-12-31"))),
    ],
)
def test_neighbouring_stray_keys_in_typed_arrays(dtype, pair):
    """A numpy array's dtype is the caller's (public) choice: kept, whatever the values."""
    base = {
        np.int64: [1, 2],
        np.uint64: [1, 2],
        "<U8": ["a", "bb"],
        "S3": [b"a", b"b"],
        "M8[D]": [np.datetime64("2024-01-01"), np.datetime64("2024-01-02")],
    }[dtype]
    keys = [k for k in base for _ in range(60)]
    units = np.arange(len(keys) + 1)
    outs = []
    for x in pair:
        arr = np.array([x] + keys, dtype=dtype)
        outs.append(R.grouped_release(units=units, keys=arr, rng=_seeded(2), **SEL))
    _same_keys(*outs)
    assert outs[0]["key"].dtype == np.dtype(dtype)
    assert outs[0]["key"].tolist() == np.array(base, dtype=dtype).tolist()


# hypothesis: any mix of stray keys, one unit each, never changes the released keys

ANY_KEY = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=40),
    st.binary(max_size=6),
    st.none(),
    st.booleans(),
    st.tuples(st.integers(-3, 3), st.one_of(st.none(), st.text(max_size=2), st.floats())),
    st.just(Decimal("NaN")),
    st.decimals(allow_nan=False, places=2, max_value=10**6),
    st.lists(st.integers(), max_size=2),
)


@FEW
@given(
    strays=st.lists(ANY_KEY, max_size=8),
    base=st.sampled_from(sorted(BASES)),
    container=st.sampled_from(sorted(_containers())),
)
def test_unreleased_keys_change_neither_order_nor_dtype(strays, base, container):
    keys, _ = BASES[base]
    known = {_keys.canon(k) for k in keys}
    distinct, seen = [], set()
    for x in strays:  # one unit each, distinct keys: never released (delta)
        c = _keys.canon(x)
        if c is not None and (c in known or c in seen):
            continue
        if c is not None:
            seen.add(c)
        distinct.append(x)
    plain = _grouped(keys, [], container)
    out = _grouped(keys, distinct, container)
    _same_keys(out, plain)
    _canonical_order_holds(out)


@FEW
@given(keys=st.lists(ANY_KEY, min_size=1, max_size=6, unique_by=repr))
def test_released_keys_are_typed_and_ordered_from_themselves(keys):
    """Whatever the released keys (every key here has 60 units), their dtype is
    ``_keys.typed`` of them and their order the canonical one."""
    cands = []
    seen = set()
    for k in keys:
        c = _keys.canon(k)
        if c is not None and c not in seen:
            seen.add(c)
            cands.append(k)
    if not cands:
        return
    out = _grouped(cands, [], "list")
    canon = [_keys.canon(k) for k in out["key"].tolist()]
    assert sorted(map(repr, canon)) == sorted(repr(_keys.canon(k)) for k in cands)
    expected = _keys.typed([_keys.canon(k) for k in cands])
    assert out["key"].dtype == expected.dtype
    ranked = [c for c in canon if c[0] != 9]
    assert ranked == sorted(ranked)


@pytest.mark.parametrize(
    "a,b",
    [(x, x + 1) for x in EDGE_INTS]
    + [("NA", None), (math.nan, None), (HUGE, "1"), (2**64, "2**64"), (1.0, True)],
)
def test_counts_neighbours_at_every_edge(a, b):
    """releases.counts: one stray record, of any value or type, changes one count by at
    most one (here it is in no category) and never recasts the others."""
    data = [1, 2, 2, 3, 3, 3] * 20
    for wrap in _containers().values():
        plain = dict(R.counts(wrap(data), [1, 2, 3], epsilon=5.0, rng=_seeded(4)))
        for x in (a, b):
            out = dict(R.counts(wrap(data + [x]), [1, 2, 3], epsilon=5.0, rng=_seeded(4)))
            assert out == plain and all(type(v) is type(plain[k]) for k, v in out.items())


@pytest.mark.parametrize(
    "name",
    [
        "variance",
        "std",
        "quantiles",
        "estimate_bounds",
        "sum",
        "mean",
        "histogram",
        "quantile",
    ],
)
def test_everyday_statistics_neighbours_in_lists_and_arrays(name):
    f = getattr(R, name)
    kw = {} if name in ("histogram", "estimate_bounds") else {"lower": -4.0, "upper": 4.0}
    arg = {"histogram": (3,), "quantile": (0.5,), "quantiles": ([0.5],)}.get(name, ())
    if name == "histogram":
        kw = {"range": (-4.0, 4.0)}
    pairs = [(x, x + 1) for x in EDGE_INTS] + [
        (FMAX, -FMAX),
        (math.inf, math.nan),
        (2.0**53, 2.0**53 + 2),
        (5e-324, -0.0),
    ]
    for a, b in pairs:
        kinds = set()
        for x in (a, b):
            for data in (
                [x, 1.0, 2.0],
                [x, 1, 2],
                np.array([x, 1, 2], dtype=object)
                if isinstance(x, int)
                else np.array([x, 1.0, 2.0]),
            ):
                try:
                    out = f(data, *arg, epsilon=1.0, rng=_seeded(1), **kw)
                except Exception as exc:  # noqa: BLE001
                    assert _documented(exc)
                    kinds.add(("refused", type(exc), type(data)))
                else:
                    kinds.add(("answered", type(out).__name__, type(data)))
        # per container, both neighbours get the same kind of outcome
        by_container = {}
        for k in kinds:
            by_container.setdefault(k[2], set()).add(k[:2])
        assert all(len(v) == 1 for v in by_container.values()), (name, a, b, kinds)
