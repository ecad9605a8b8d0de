"""pandas in, pandas out, and numpy's ``axis=`` for dpfast.stats (issue 14, item 4):
labels kept, one release per column with the budget split and charged once, before any
noise, and after validation; numpy-only use never imports pandas."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpfast
import dpfast.stats as R
from dpfast.accounting import PrivacyBudget
from dpfast.random import ChaCha20
from stat_helpers import ALPHA

BOUNDS = {"lower": 0.0, "upper": 10.0}


def frame(n=500):
    x = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "age": x.uniform(0, 10, n),
            "visits": x.integers(0, 10, n),
            "score": x.normal(5, 2, n),
        },
        index=pd.RangeIndex(100, 100 + n, name="person"),
    )


# ------------------------------------------------------------------ Series in


@pytest.mark.parametrize(
    "fn, kw",
    [
        (R.sum, BOUNDS),
        (R.mean, BOUNDS),
        (R.variance, BOUNDS),
        (R.std, BOUNDS),
        (R.quantile, {"q": 0.5, **BOUNDS}),
    ],
)
def test_a_series_gives_what_its_array_gives(fn, kw):
    s = frame()["age"]
    a = fn(s, epsilon=1.0, rng=ChaCha20(1), **kw)
    b = fn(s.to_numpy(), epsilon=1.0, rng=ChaCha20(1), **kw)
    assert type(a) is float and a == b


def test_several_quantiles_of_a_series_are_a_series_indexed_by_the_levels():
    s = frame()["score"]
    out = R.quantiles(s, [0.9, 0.1, 0.5], epsilon=1.0, rng=ChaCha20(2), **BOUNDS)
    assert isinstance(out, pd.Series) and out.name == "score"
    assert list(out.index) == [0.9, 0.1, 0.5]
    ref = R.quantiles(s.to_numpy(), [0.9, 0.1, 0.5], epsilon=1.0, rng=ChaCha20(2), **BOUNDS)
    np.testing.assert_array_equal(out.to_numpy(), ref)


def test_counts_of_a_series_or_categorical_is_indexed_by_the_public_categories():
    s = pd.Series(["b", "a", "b", "zz"], name="letter")
    cats = ["a", "b", "c"]
    out = R.counts(s, cats, epsilon=1.0, rng=ChaCha20(3))
    assert isinstance(out, pd.Series) and out.name == "count"
    assert list(out.index) == cats and out.index.name == "letter"
    assert out.to_dict() == R.counts(s.to_numpy(), cats, epsilon=1.0, rng=ChaCha20(3))
    cat = pd.Categorical(["b", "a", "b"], categories=["a", "b", "c"])
    out = R.counts(cat, cats, epsilon=1.0, rng=ChaCha20(3))
    assert isinstance(out, pd.Series) and list(out.index) == cats


# ------------------------------------------------------------------ DataFrame, axis=


@pytest.mark.parametrize(
    "fn, kw",
    [
        (R.sum, BOUNDS),
        (R.mean, BOUNDS),
        (R.variance, BOUNDS),
        (R.std, BOUNDS),
        (R.quantile, {"q": 0.5, **BOUNDS}),
    ],
)
def test_axis_0_is_one_release_per_column_with_an_even_share(fn, kw):
    df = frame()
    out = fn(df, epsilon=1.5, axis=0, rng=ChaCha20(4), **kw)
    assert isinstance(out, pd.Series) and list(out.index) == list(df.columns)
    # the same as releasing each column in turn with epsilon / 3, from the same stream
    g = ChaCha20(4)
    ref = [fn(df[c].to_numpy(), epsilon=0.5, rng=g, **kw) for c in df.columns]
    np.testing.assert_array_equal(out.to_numpy(), ref)
    # numpy: the same values, unlabelled
    arr = fn(df.to_numpy(dtype=np.float64), epsilon=1.5, axis=0, rng=ChaCha20(4), **kw)
    assert isinstance(arr, np.ndarray) and arr.shape == (3,)
    np.testing.assert_array_equal(arr, ref)


def test_axis_1_is_one_release_per_row_labelled_by_the_index():
    df = frame(4)
    out = R.sum(df, epsilon=1.0, axis=1, rng=ChaCha20(5), **BOUNDS)
    assert isinstance(out, pd.Series) and out.index.equals(df.index)
    assert R.sum(
        df.to_numpy(dtype=float), epsilon=1.0, axis=-1, rng=ChaCha20(5), **BOUNDS
    ).shape == (4,)


def test_quantiles_of_a_frame_is_a_frame_levels_by_columns():
    df = frame()
    out = R.quantiles(df, [0.25, 0.75], epsilon=3.0, axis=0, rng=ChaCha20(6), **BOUNDS)
    assert isinstance(out, pd.DataFrame)
    assert list(out.index) == [0.25, 0.75] and list(out.columns) == list(df.columns)
    arr = R.quantiles(
        df.to_numpy(dtype=float),
        [0.25, 0.75],
        epsilon=3.0,
        axis=0,
        rng=ChaCha20(6),
        **BOUNDS,
    )
    assert arr.shape == (2, 3)  # np.quantile(a, qs, axis=0)'s shape
    np.testing.assert_array_equal(out.to_numpy(), arr)
    assert (out.loc[0.25] <= out.loc[0.75]).all()


def test_numpy_axis_matches_numpys_reduction_shape():
    a = np.zeros((2, 3, 4))
    for axis in (0, 1, 2, -1):
        assert (
            R.sum(a, epsilon=1.0, axis=axis, **BOUNDS).shape == np.sum(a, axis=axis).shape
        )
    assert type(R.sum(np.zeros(5), epsilon=1.0, axis=0, **BOUNDS)) is float
    # axis=None on a 2-d input is refused (issue 22 item 6): every cell as a record
    # would count one person once per column while charging them once
    with pytest.raises(dpfast.PrivacyParameterError, match="axis=0"):
        R.sum(a, epsilon=1.0, rng=ChaCha20(7), **BOUNDS)


def _budget():
    from dpfast.accounting import PrivacyBudget

    return PrivacyBudget(epsilon=10.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda x, b: R.sum(x, epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.mean(x, epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.variance(x, epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.std(x, epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.quantile(x, 0.5, epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.quantiles(x, [0.5], epsilon=1.0, budget=b, **BOUNDS),
        lambda x, b: R.histogram(x, 4, range=(0.0, 10.0), epsilon=1.0, budget=b),
        lambda x, b: R.estimate_bounds(x, epsilon=1.0, budget=b),
    ],
)
def test_a_two_column_frame_without_axis_is_refused_before_any_charge(call):
    """The DataFrame trap: count counts rows, so a release that took every cell of a
    two-column frame as a record would charge a person once for two contributions."""
    df = frame(50)
    for x in (df, df.to_numpy(dtype=float), df.to_numpy(dtype=float).tolist()):
        b = _budget()
        with pytest.raises(dpfast.PrivacyParameterError, match="axis=0|one column"):
            call(x, b)
        assert b.spent.epsilon == 0.0
    b = _budget()
    call(df[df.columns[0]], b)  # one column: one record per row
    assert b.spent.epsilon == 1.0


def test_each_column_gets_noise_of_its_share_not_of_the_total():
    # 2000 zero columns, epsilon 2000 in total: each sum (sensitivity 1) gets epsilon 1,
    # so its noise is Laplace(1) (on a grid of 2^-30), not Laplace(1/2000)
    k = 2000
    df = pd.DataFrame(np.zeros((3, k)))
    noise = R.sum(df, lower=0.0, upper=1.0, epsilon=float(k), axis=0, rng=ChaCha20(9))
    assert stats.kstest(noise.to_numpy(), stats.laplace(scale=1.0).cdf).pvalue > ALPHA


# ------------------------------------------------------------------ budget


def test_the_budget_is_charged_the_total_once():
    b = PrivacyBudget(2.0)
    R.mean(frame(), epsilon=1.5, axis=0, budget=b, **BOUNDS)
    assert len(b.ledger) == 1 and b.ledger[0].epsilon == 1.5 and b.ledger[0].label == "mean"
    R.quantiles(frame(), [0.5], epsilon=0.5, axis=0, budget=b, **BOUNDS)
    assert len(b.ledger) == 2 and b.spent.epsilon == 2.0


def test_a_refused_charge_draws_nothing():
    b = PrivacyBudget(1.0)
    g = ChaCha20(10)
    with pytest.raises(dpfast.BudgetExceededError):
        R.sum(frame(), epsilon=1.5, axis=0, budget=b, rng=g, **BOUNDS)
    assert g.random_raw() == ChaCha20(10).random_raw() and len(b.ledger) == 0


@pytest.mark.parametrize(
    "call, exc",
    [
        (
            lambda b: R.sum(frame(), lower=1.0, upper=0.0, epsilon=1.0, axis=0, budget=b),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda b: R.sum(frame(), epsilon=0.0, axis=0, budget=b, **BOUNDS),
            dpfast.PrivacyParameterError,
        ),
        (
            lambda b: R.sum(frame(), epsilon=1.0, axis=2, budget=b, **BOUNDS),
            dpfast.PrivacyParameterError,
        ),
        (lambda b: R.sum(frame(), epsilon=1.0, axis=True, budget=b, **BOUNDS), TypeError),
        (lambda b: R.sum(frame(), epsilon=1.0, axis=0.0, budget=b, **BOUNDS), TypeError),
        (
            lambda b: R.mean(
                frame().assign(name="x"), epsilon=1.0, axis=0, budget=b, **BOUNDS
            ),
            TypeError,
        ),
        (
            lambda b: R.sum(
                pd.DataFrame({"n": pd.array([True, None], dtype="boolean")}),
                epsilon=1.0,
                axis=0,
                budget=b,
                **BOUNDS,
            ),
            TypeError,
        ),
        (
            lambda b: R.sum(pd.Series(["1", "2"]), epsilon=1.0, budget=b, **BOUNDS),
            TypeError,
        ),
        (
            lambda b: R.quantiles(
                frame(), [0.5, 2.0], epsilon=1.0, axis=0, budget=b, **BOUNDS
            ),
            dpfast.PrivacyParameterError,
        ),
    ],
)
def test_bad_arguments_are_refused_before_the_charge(call, exc):
    b = PrivacyBudget(10.0)
    with pytest.raises(exc):
        call(b)
    assert len(b.ledger) == 0


def test_an_empty_frame_releases_nothing_and_charges_nothing():
    b = PrivacyBudget(1.0)
    out = R.sum(pd.DataFrame(index=[]), epsilon=1.0, axis=0, budget=b, **BOUNDS)
    assert isinstance(out, pd.Series) and out.empty and len(b.ledger) == 0
    with pytest.raises(dpfast.PrivacyParameterError):  # still validated
        R.sum(pd.DataFrame(), lower=2.0, upper=1.0, epsilon=1.0, axis=0)


def test_repeated_column_labels_are_released_column_by_column():
    df = pd.DataFrame(np.array([[1.0, 5.0], [2.0, 6.0]]), columns=["x", "x"])
    out = R.sum(df, epsilon=1.0, axis=0, rng=ChaCha20(14), **BOUNDS)
    g = ChaCha20(14)
    ref = [
        R.sum(np.array([1.0, 2.0]), epsilon=0.5, rng=g, **BOUNDS),
        R.sum(np.array([5.0, 6.0]), epsilon=0.5, rng=g, **BOUNDS),
    ]
    assert list(out.index) == ["x", "x"]
    np.testing.assert_array_equal(out.to_numpy(), ref)


def test_mixed_integer_and_float_columns_are_converted_one_by_one():
    # as a whole the frame would be upcast to float64, rounding 2**53 + 1; per column the
    # integers are converted exactly (clamped to +-2**53, the documented record policy)
    df = pd.DataFrame({"i": np.array([2**53 + 1, 3], dtype=np.int64), "f": [0.5, 1.5]})
    out = R.sum(df, lower=0.0, upper=4.0, epsilon=1.0, axis=0, rng=ChaCha20(11))
    g = ChaCha20(11)
    ref = [
        R.sum(np.array([2**53 + 1, 3]), lower=0.0, upper=4.0, epsilon=0.5, rng=g),
        R.sum(np.array([0.5, 1.5]), lower=0.0, upper=4.0, epsilon=0.5, rng=g),
    ]
    np.testing.assert_array_equal(out.to_numpy(), ref)


# ------------------------------------------------------------------ pandas stays optional


def test_numpy_only_use_never_imports_pandas():
    code = (
        "import sys, numpy as np, dpfast.stats as R\n"
        "R.sum(np.ones((3, 2)), lower=0, upper=1, epsilon=1.0, axis=0)\n"
        "R.quantiles(np.ones(9), [0.5], lower=0, upper=1, epsilon=1.0)\n"
        "R.counts(np.array([1, 2]), [1, 2], epsilon=1.0)\n"
        "assert 'pandas' not in sys.modules, 'pandas imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_nullable_columns_drop_missing_values_and_convert_exactly():
    # pd.NA is a missing record, dropped like NaN; Int64 beyond 2**53 is clamped exactly
    # (pandas' own to_numpy() would round it through float64)
    df = pd.DataFrame(
        {
            "i": pd.array([2**60 + 1, None, 3], dtype="Int64"),
            "f": pd.array([0.5, None, 1.5], dtype="Float64"),
        }
    )
    out = R.sum(df, lower=0.0, upper=4.0, epsilon=1.0, axis=0, rng=ChaCha20(12))
    g = ChaCha20(12)
    ref = [
        R.sum(np.array([2**53, 3.0]), lower=0.0, upper=4.0, epsilon=0.5, rng=g),
        R.sum(np.array([0.5, 1.5]), lower=0.0, upper=4.0, epsilon=0.5, rng=g),
    ]
    np.testing.assert_array_equal(out.to_numpy(), ref)
    assert R.mean(df["i"], epsilon=1.0, rng=ChaCha20(13), **BOUNDS) == R.mean(
        np.array([2**53, 3.0]), epsilon=1.0, rng=ChaCha20(13), **BOUNDS
    )
