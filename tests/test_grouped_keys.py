"""Private keys are read element by element (dpfast._keys): a stray element never
recasts the others, and the order and dtype of released keys depend on the released keys
only (issue 22, items 2, 3, 4 and 7; docs/security-model.md "Released keys")."""

import collections
import datetime as dt
import math
from decimal import Decimal

import numpy as np
import pytest

import dpfast.random as dr
from dpfast import _keys
from dpfast import stats as R

BIG = dict(epsilon=20.0, delta=1e-6, max_partitions=1, max_contributions=1)


def _g(seed=3):
    return dr.ChaCha20(seed)


def _many_units(key_counts):
    """One record per unit: key k repeated key_counts[k] times."""
    keys = [k for k, c in key_counts.items() for _ in range(c)]
    return list(range(len(keys))), keys


# ------------------------------------------------------------------ item 2


def test_a_stray_string_does_not_recast_integer_categories():
    data = [1, 1, 2, 2, 2, 3] * 50
    plain = R.counts(data, [1, 2, 3], epsilon=1.0, rng=_g())
    stray = R.counts(data + ["NA"], [1, 2, 3], epsilon=1.0, rng=_g())
    assert plain == stray  # the same draws, same counts
    assert abs(plain[2] - 150) < 40 and abs(plain[1] - 100) < 40


def test_a_stray_string_does_not_recast_public_partition_keys():
    units, keys = _many_units({7: 300, 8: 200})
    kw = dict(public_partitions=[7, 8, 9], **BIG)
    plain = R.grouped_release(units=units, keys=keys, rng=_g(), **kw)
    stray = R.grouped_release(units=units + [10**6], keys=keys + ["NA"], rng=_g(), **kw)
    for out in (plain, stray):
        assert out["key"].dtype == np.int64 and out["key"].tolist() == [7, 8, 9]
    np.testing.assert_array_equal(plain["count"], stray["count"])
    assert abs(plain["count"][0] - 300) < 10


def test_a_stray_string_does_not_recast_privately_selected_keys():
    units, keys = _many_units({7: 300, 8: 200})
    out = R.grouped_release(units=units + [10**6], keys=keys + ["NA"], rng=_g(), **BIG)
    assert out["key"].dtype == np.int64 and out["key"].tolist() == [7, 8]
    assert abs(out["count"][0] - 300) < 10 and abs(out["count"][1] - 200) < 10


def test_keys_compare_within_their_own_type():
    keys = [1] * 300 + [1.0] * 300 + [True] * 300  # (a dict would merge them)
    units = list(range(len(keys)))
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert [type(k) for k in out["key"]] == [bool, int, float]  # three keys, one each
    assert out["key"].dtype == object
    assert all(abs(c - 300) < 10 for c in out["count"])


def test_unit_ids_of_mixed_types_are_distinct_units():
    # "1" and 1 are two privacy units: with max_contributions=1 both records count
    out = R.grouped_release(
        units=[1, "1"] * 200 + list(range(2, 600)),
        keys=["a", "a"] * 200 + ["b"] * 598,
        rng=_g(),
        public_partitions=["a", "b"],
        **BIG,
    )
    assert out["key"].tolist() == ["a", "b"]
    assert abs(out["count"][0] - 2) < 10  # 2 units, one record each kept


def test_unhashable_keys_are_records_of_no_partition():
    units, keys = _many_units({"x": 300})
    out = R.grouped_release(
        units=units + [999], keys=keys + [["a", "list"]], rng=_g(), **BIG
    )
    assert out["key"].tolist() == ["x"]
    assert R.counts(["x", ["y"], {"z": 1}], ["x"], epsilon=1.0, rng=_g()) == R.counts(
        ["x"], ["x"], epsilon=1.0, rng=_g()
    )


# ------------------------------------------------------------------ item 3


@pytest.mark.parametrize("stray", [None, float("nan"), 5, b"x"])
def test_order_of_released_keys_does_not_depend_on_an_unreleased_key(stray):
    """One user with a key that is never released (None, NaN, another type) used to
    switch the output from sorted to shuffled."""
    counts = {"d": 300, "b": 300, "c": 300, "a": 300, "e": 300}
    units, keys = _many_units(counts)
    for seed in range(20):
        out = R.grouped_release(
            units=units + [10**6], keys=keys + [stray], rng=_g(seed), **BIG
        )
        assert out["key"].tolist() == ["a", "b", "c", "d", "e"]
        assert out["key"].dtype == np.dtype("<U1")


def test_canonical_order_is_a_total_order_over_mixed_types():
    keys = [
        (4, "b"),
        (1, 3),
        (3,),
        (2, -0.5),
        (6,),
        (0, False),
        (1, -(2**70)),
        (5, b"a"),
        (4, "a"),
        (8, ((4, "a"), (6,))),
        (8, ((4, "a"), (1, 2))),
    ]
    ordered = [keys[i] for i in _keys.order(keys, _g())]
    assert ordered == [
        (0, False),
        (1, -(2**70)),
        (1, 3),
        (2, -0.5),
        (3,),
        (4, "a"),
        (4, "b"),
        (5, b"a"),
        (6,),
        (8, ((4, "a"), (1, 2))),
        (8, ((4, "a"), (6,))),
    ]


# ------------------------------------------------------------------ item 4


def test_released_string_dtype_is_sized_by_released_keys_only():
    units, keys = _many_units({"short": 300, "tiny": 300})
    out = R.grouped_release(units=units + [10**6], keys=keys + ["y" * 50], rng=_g(), **BIG)
    assert out["key"].tolist() == ["short", "tiny"] and out["key"].dtype == np.dtype("<U5")


@pytest.mark.parametrize("huge", [2**64, 2**63, -(2**63) - 1, 10**30])
def test_released_int_dtype_ignores_an_unreleased_huge_key(huge):
    units, keys = _many_units({3: 300, 4: 300})
    out = R.grouped_release(units=units + [10**6], keys=keys + [huge], rng=_g(), **BIG)
    assert out["key"].dtype == np.int64 and out["key"].tolist() == [3, 4]


def test_a_released_huge_key_is_an_object():
    units, keys = _many_units({3: 300, 2**64: 300})
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert out["key"].dtype == object and out["key"].tolist() == [3, 2**64]


def test_numpy_arrays_keep_their_public_dtype():
    units = np.arange(600)
    keys = np.array(["aa"] * 300 + ["b" * 9] * 300)
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert out["key"].dtype == keys.dtype


# ------------------------------------------------------------------ item 7

EDGES = [(2**63 - 1, 2**63), (2**64 - 1, 2**64), (-(2**63), -(2**63) - 1)]


@pytest.mark.parametrize("a,b", EDGES)
def test_neighbouring_ids_keys_and_values_at_the_int64_edges(a, b):
    """Lists that differ in one element across a representability edge are both
    answered, with the same output types."""
    base_units, base_keys = _many_units({"k": 300})
    outs = []
    for x in (a, b):
        out = R.grouped_release(
            units=base_units + [x],
            keys=base_keys + [x],
            values=[1.0] * 300 + [x],
            statistics=("count", "sum"),
            lower=0.0,
            upper=2.0,
            rng=_g(),
            **BIG,
        )
        outs.append(out)
        assert R.counts([x, 1, 1], [1, x], epsilon=1.0, rng=_g()) is not None
    assert outs[0]["key"].tolist() == outs[1]["key"].tolist() == ["k"]
    assert [o["sum"].dtype for o in outs] == [np.float64, np.float64]
    assert outs[0]["count"].dtype == outs[1]["count"].dtype == np.int64


# ------------------------------------------------------------------ keys beyond numbers
# and strings: tuples, other objects, -0.0, NUL-terminated strings, hostile objects


def _released(keys, extra=None, seed=3, **kw):
    """The released keys of 300 units per key, plus one unit with the key ``extra``."""
    ks = [k for k in keys for _ in range(300)]
    units = list(range(len(ks)))
    if extra is not None:
        ks, units = [extra] + ks, [10**7] + units  # the stray record comes first
    return R.grouped_release(units=units, keys=ks, rng=_g(seed), **BIG, **kw)["key"]


class _Unordered:
    """A hashable key type without an order (like most user objects)."""

    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, _Unordered) and self.v == other.v

    def __hash__(self):
        return hash(self.v)

    def __repr__(self):
        return f"_Unordered({self.v})"


class _HashRaises:
    def __hash__(self):
        raise ValueError("a private object's hash")


class _EqRaises:
    def __hash__(self):
        return 1

    def __eq__(self, other):
        raise ValueError("a private object's ==")


STRAYS = {
    # released keys, and an unreleased key that once switched them to another order
    "tuples": ([(10, 0), (2, 0)], ("x",)),
    "tuples_with_none": ([("a", 10), ("a", 2)], ("a", None)),
    "naive_datetimes": (
        [dt.datetime(2024, 1, 10), dt.datetime(2024, 1, 9)],
        dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc),
    ),
    "decimals": ([Decimal(10), Decimal(2)], Decimal("NaN")),
    "frozensets": ([frozenset({2}), frozenset({1, 2, 3})], frozenset({1, 5})),
}


@pytest.mark.parametrize("name", sorted(STRAYS))
def test_order_of_released_tuples_and_objects_ignores_an_unreleased_key(name):
    """Objects used to be sorted as a block with every key of their type, released or
    not: one unreleased key that did not compare (a tuple of other types, an aware
    datetime among naive ones, Decimal NaN, which raised) switched the order of the
    released keys, or raised."""
    keys, stray = STRAYS[name]
    for seed in range(12):
        plain = _released(keys, seed=seed)
        with_stray = _released(keys, stray, seed=seed)
        assert with_stray.tolist() == plain.tolist()
        assert sorted(map(repr, plain.tolist())) == sorted(map(repr, keys))


def test_tuples_are_ordered_element_by_element_in_the_canonical_order():
    keys = [("b", None), ("a", 2), ("a", None), ("a", 10), ("a", 1.5), (1, "z")]
    out = _released(keys)
    assert out.dtype == object
    assert out.tolist() == [
        (1, "z"),
        ("a", 2),
        ("a", 10),
        ("a", 1.5),
        ("a", None),
        ("b", None),
    ]


def test_tuple_keys_compare_element_by_element_within_their_own_type():
    # (1, "a") and (1.0, "a") are two keys, as 1 and 1.0 are; every NaN is one key
    out = _released([(1, "a"), (1.0, "a")])
    assert [type(k[0]) for k in out.tolist()] == [int, float]
    nans = [(float("nan"),) for _ in range(300)]  # 300 distinct NaN objects
    out = R.grouped_release(units=list(range(300)), keys=nans, rng=_g(), **BIG)
    assert len(out["key"]) == 1 and math.isnan(out["key"][0][0])


def test_objects_without_an_order_come_in_a_uniformly_random_order():
    keys = [_Unordered(v) for v in (3, 1, 2)]
    seen = collections.Counter()
    for seed in range(40):
        out = _released(keys, seed=seed)
        assert sorted(k.v for k in out) == [1, 2, 3]
        seen[tuple(k.v for k in out)] += 1
    assert len(seen) >= 3  # one order 40 times: probability 6 / 6**40
    # the law, on the ordering step alone: all 6 orders, each about 1/6 of 1200
    counts = collections.Counter()
    ckeys = [_keys.canon(k) for k in keys]
    rng = _g(5)
    for _ in range(1200):
        counts[tuple(_keys.order(ckeys, rng))] += 1
    assert len(counts) == 6 and all(120 <= c <= 280 for c in counts.values())  # 1e-9


def test_minus_zero_is_released_as_zero_whichever_comes_first():
    """-0.0 == 0.0 is one key; the one released was the first in the data."""
    for stray in (-0.0, np.float32(-0.0), 0.0):
        out = _released([0.0, 1.5], stray)
        assert out.dtype == np.float64 and not np.signbit(out).any()


def test_equal_objects_written_differently_release_one_representative():
    utc = dt.timezone.utc
    plus1 = dt.timezone(dt.timedelta(hours=1))
    for key, other in [
        (Decimal("1"), Decimal("1.00")),
        (
            dt.datetime(2024, 1, 1, 12, tzinfo=utc),
            dt.datetime(2024, 1, 1, 13, tzinfo=plus1),
        ),
    ]:
        a = _released([key], other)  # the other spelling first
        b = _released([key])
        assert repr(a.tolist()) == repr(b.tolist())
        c = _released([other], key)
        assert repr(c.tolist()) == repr(b.tolist())  # the smaller repr, always


def test_strings_ending_in_nul_stay_distinct_released_keys():
    out = _released(["a", "a\0"])
    assert out.tolist() == ["a", "a\0"] and out.dtype == object
    out = _released([b"a", b"a\0"])
    assert out.tolist() == [b"a", b"a\0"] and out.dtype == object
    assert _released(["a", "bb"]).dtype == np.dtype("<U2")


@pytest.mark.parametrize("bad", [_HashRaises, _EqRaises])
def test_a_key_whose_hash_or_eq_raises_is_a_record_of_no_partition(bad):
    out = _released(["x"], bad())
    assert out.tolist() == ["x"]
    units, keys = _many_units({"x": 300})
    out = R.grouped_release(
        units=[bad()] + units, keys=["x"] + keys, rng=_g(), public_partitions=["x"], **BIG
    )
    assert out["key"].tolist() == ["x"]
    assert set(R.counts([bad(), "x", bad()], ["x"], epsilon=1.0, rng=_g())) == {"x"}


def test_public_tuples_and_objects_match_records():
    recs = [("a", 1)] * 300 + [Decimal("2.0")] * 300
    out = R.grouped_release(
        units=list(range(600)),
        keys=recs,
        rng=_g(),
        public_partitions=[Decimal(2), ("a", 1), ("z", 0)],
        **BIG,
    )
    assert out["key"].tolist() == [Decimal(2), ("a", 1), ("z", 0)]
    assert abs(out["count"][0] - 300) < 10 and abs(out["count"][1] - 300) < 10


# ------------------------------------------------------------------ public units


@pytest.mark.parametrize(
    "units,expected",
    [
        (np.uint64(2**64 - 1), 1.0),
        ([2**63], [1.0]),
        ([1, 2**64], [1e-6, 1.0]),
        (2**64, 1.0),
        (np.array([2**63], dtype=np.uint64), [1.0]),
        ([0, 2**63 - 1], [0.0, 1.0]),
    ],
)
def test_partition_selection_probability_at_the_int64_edges(units, expected):
    """uint64 beyond 2**63 wrapped to a negative index (a wrong probability, or
    IndexError); a list with 2**64 was refused while 2**64 - 1 was answered."""
    p = R.partition_selection_probability(units, epsilon=1.0, delta=1e-6)
    assert np.allclose(p, expected, rtol=1e-9, atol=0)
    assert np.ndim(p) == np.ndim(expected)
