"""Private keys are read element by element (dpfast._keys): a stray element never
recasts the others, and the order and dtype of released keys depend on the released keys
only (issue 22, items 2, 3, 4 and 7; docs/security-model.md "Released keys")."""

import numpy as np
import pytest

import dpfast.random as dr
from dpfast import _keys
from dpfast import releases as R

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
    assert plain == stray                                  # the same draws, same counts
    assert abs(plain[2] - 150) < 40 and abs(plain[1] - 100) < 40


def test_a_stray_string_does_not_recast_public_partition_keys():
    units, keys = _many_units({7: 300, 8: 200})
    kw = dict(public_partitions=[7, 8, 9], **BIG)
    plain = R.grouped_release(units=units, keys=keys, rng=_g(), **kw)
    stray = R.grouped_release(units=units + [10 ** 6], keys=keys + ["NA"], rng=_g(), **kw)
    for out in (plain, stray):
        assert out["key"].dtype == np.int64 and out["key"].tolist() == [7, 8, 9]
    np.testing.assert_array_equal(plain["count"], stray["count"])
    assert abs(plain["count"][0] - 300) < 10


def test_a_stray_string_does_not_recast_privately_selected_keys():
    units, keys = _many_units({7: 300, 8: 200})
    out = R.grouped_release(units=units + [10 ** 6], keys=keys + ["NA"], rng=_g(), **BIG)
    assert out["key"].dtype == np.int64 and out["key"].tolist() == [7, 8]
    assert abs(out["count"][0] - 300) < 10 and abs(out["count"][1] - 200) < 10


def test_keys_compare_within_their_own_type():
    keys = [1] * 300 + [1.0] * 300 + [True] * 300        # (a dict would merge them)
    units = list(range(len(keys)))
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert [type(k) for k in out["key"]] == [bool, int, float]     # three keys, one each
    assert out["key"].dtype == object
    assert all(abs(c - 300) < 10 for c in out["count"])


def test_unit_ids_of_mixed_types_are_distinct_units():
    # "1" and 1 are two privacy units: with max_contributions=1 both records count
    out = R.grouped_release(units=[1, "1"] * 200 + list(range(2, 600)),
                            keys=["a", "a"] * 200 + ["b"] * 598, rng=_g(),
                            public_partitions=["a", "b"], **BIG)
    assert out["key"].tolist() == ["a", "b"]
    assert abs(out["count"][0] - 2) < 10          # 2 units, one record each kept


def test_unhashable_keys_are_records_of_no_partition():
    units, keys = _many_units({"x": 300})
    out = R.grouped_release(units=units + [999], keys=keys + [["a", "list"]], rng=_g(),
                            **BIG)
    assert out["key"].tolist() == ["x"]
    assert R.counts(["x", ["y"], {"z": 1}], ["x"], epsilon=1.0, rng=_g()) == \
        R.counts(["x"], ["x"], epsilon=1.0, rng=_g())


# ------------------------------------------------------------------ item 3


@pytest.mark.parametrize("stray", [None, float("nan"), 5, b"x"])
def test_order_of_released_keys_does_not_depend_on_an_unreleased_key(stray):
    """One user with a key that is never released (None, NaN, another type) used to
    switch the output from sorted to shuffled."""
    counts = {"d": 300, "b": 300, "c": 300, "a": 300, "e": 300}
    units, keys = _many_units(counts)
    for seed in range(20):
        out = R.grouped_release(units=units + [10 ** 6], keys=keys + [stray], rng=_g(seed),
                                **BIG)
        assert out["key"].tolist() == ["a", "b", "c", "d", "e"]
        assert out["key"].dtype == np.dtype("<U1")


def test_canonical_order_is_a_total_order_over_mixed_types():
    keys = [(4, "b"), (1, 3), (3,), (2, -0.5), (6,), (0, False), (1, -(2 ** 70)), (5, b"a"),
            (4, "a")]
    ordered = [keys[i] for i in _keys.order(keys)]
    assert ordered == [(0, False), (1, -(2 ** 70)), (1, 3), (2, -0.5), (3,), (4, "a"),
                       (4, "b"), (5, b"a"), (6,)]


# ------------------------------------------------------------------ item 4


def test_released_string_dtype_is_sized_by_released_keys_only():
    units, keys = _many_units({"short": 300, "tiny": 300})
    out = R.grouped_release(units=units + [10 ** 6], keys=keys + ["y" * 50], rng=_g(),
                            **BIG)
    assert out["key"].tolist() == ["short", "tiny"] and out["key"].dtype == np.dtype("<U5")


@pytest.mark.parametrize("huge", [2 ** 64, 2 ** 63, -(2 ** 63) - 1, 10 ** 30])
def test_released_int_dtype_ignores_an_unreleased_huge_key(huge):
    units, keys = _many_units({3: 300, 4: 300})
    out = R.grouped_release(units=units + [10 ** 6], keys=keys + [huge], rng=_g(), **BIG)
    assert out["key"].dtype == np.int64 and out["key"].tolist() == [3, 4]


def test_a_released_huge_key_is_an_object():
    units, keys = _many_units({3: 300, 2 ** 64: 300})
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert out["key"].dtype == object and out["key"].tolist() == [3, 2 ** 64]


def test_numpy_arrays_keep_their_public_dtype():
    units = np.arange(600)
    keys = np.array(["aa"] * 300 + ["b" * 9] * 300)
    out = R.grouped_release(units=units, keys=keys, rng=_g(), **BIG)
    assert out["key"].dtype == keys.dtype


# ------------------------------------------------------------------ item 7

EDGES = [(2 ** 63 - 1, 2 ** 63), (2 ** 64 - 1, 2 ** 64), (-(2 ** 63), -(2 ** 63) - 1)]


@pytest.mark.parametrize("a,b", EDGES)
def test_neighbouring_ids_keys_and_values_at_the_int64_edges(a, b):
    """Lists that differ in one element across a representability edge are both
    answered, with the same output types."""
    base_units, base_keys = _many_units({"k": 300})
    outs = []
    for x in (a, b):
        out = R.grouped_release(
            units=base_units + [x], keys=base_keys + [x], values=[1.0] * 300 + [x],
            statistics=("count", "sum"), lower=0.0, upper=2.0, rng=_g(), **BIG)
        outs.append(out)
        assert R.counts([x, 1, 1], [1, x], epsilon=1.0, rng=_g()) is not None
    assert outs[0]["key"].tolist() == outs[1]["key"].tolist() == ["k"]
    assert [o["sum"].dtype for o in outs] == [np.float64, np.float64]
    assert outs[0]["count"].dtype == outs[1]["count"].dtype == np.int64
