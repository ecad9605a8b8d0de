"""Input conversion for dpfast.learn: refuse by type and shape only, never by value.

Features are kept column by column (a pandas frame may mix dtypes).  A column is
accepted if its dtype converts exactly: bool, int8..int64, uint8..uint64 (uint64 clamped
to the int64 range, as everywhere in dpfast), float16..64.  Long double, complex, strings
and other dtypes are refused with a TypeError that names only the dtype.

Python lists are read by the types of their elements, never by their magnitudes
(``np.asarray`` makes ``[2**63]`` uint64 and ``[2**64]`` object): a list of ints is int64
with every int clamped to the int64 range, a list mixing ints and floats is float64
(``dpfast._validation.real_data``; docs/security-model.md "How data is converted"), a list
of bools is bool.  A pandas column of dtype object is read the same way, element by
element: pandas types a column built from ``[2**64, 0]`` or ``[-2**63 - 1, 0]`` object and
one built from ``[2**63, 0]`` uint64 by their values, so neither dtype may decide between
answering and refusing (a numpy object array stays refused by type).  Labels given as a
list or a pandas object Series are compared with the public classes one by one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .. import _validation as _v

_OK_KINDS = "biuf"


def _from_list(name: str, value: list[Any] | tuple[Any, ...]) -> npt.NDArray[Any]:
    """A list of features as an array, typed by its elements' types only."""
    try:
        obj = np.array(value, dtype=object)
    except ValueError:
        raise TypeError(
            f"{name} must be a rectangular list of numbers; got a ragged list"
        ) from None
    if obj.size and all(isinstance(x, (bool, np.bool_)) for x in obj.flat):
        return obj.astype(np.bool_)
    return _v.real_data(name, value)[1]


def _pandas_values(col: Any) -> Any:
    """A pandas column's values: its numpy array, or, for dtype object, the list of its
    elements (pandas typed it object by their values; read them like a list)."""
    arr = col.to_numpy()
    return arr.tolist() if getattr(arr, "dtype", None) == object else arr


def _column(name: str, col: npt.ArrayLike) -> npt.NDArray[Any]:
    col = _from_list(name, col) if isinstance(col, (list, tuple)) else np.asarray(col)
    if col.dtype == np.uint64:  # clamped to int64 (never above 2**53 later)
        col = _v.real_data(name, col)[1]
    dt = col.dtype
    if dt.kind not in _OK_KINDS or (dt.kind == "f" and dt.itemsize > 8):
        raise TypeError(
            f"{name} must hold bool, int or float (at most 64-bit) values that convert "
            f"exactly; got dtype {dt}. Encode categories with public codes first."
        )
    if dt.kind == "b":
        col = col.astype(np.int8)
    return col


def columns(X: Any, n_features: int | None = None) -> tuple[list[npt.NDArray[Any]], int]:
    """The feature columns of X (2-d array-like or pandas DataFrame) as 1-d arrays."""
    if hasattr(X, "columns") and hasattr(X, "iloc"):  # a pandas DataFrame
        cols = [_column(f"column {c!r} of X", _pandas_values(X[c])) for c in X.columns]
        n = len(X)
    else:
        arr = _from_list("X", X) if isinstance(X, (list, tuple)) else np.asarray(X)
        if arr.ndim != 2:
            raise ValueError(
                f"X must be 2-dimensional (rows, features); got shape {arr.shape}"
            )
        arr = _column("X", arr)
        cols = [arr[:, f] for f in range(arr.shape[1])]
        n = arr.shape[0]
    if n_features is not None and len(cols) != n_features:
        raise ValueError(f"X has {len(cols)} features, but the model expects {n_features}")
    if not cols:
        raise ValueError("X must have at least one feature; got 0 columns")
    return cols, n


def matrix(cols: list[npt.NDArray[Any]]) -> npt.NDArray[np.float64]:
    """float64 (n, d) matrix of the columns (for learners that take raw rows)."""
    out = np.empty((len(cols[0]), len(cols)), dtype=np.float64)
    for f, c in enumerate(cols):
        if c.dtype.kind in "iu" and c.dtype.itemsize == 8:
            # int64 beyond 2**53 would round: clamp to the exactly representable range
            # (a public rule on a private value; comparisons stay monotone).
            c = np.clip(c, -(2**53), 2**53)
        out[:, f] = c
    return out


def labels(
    y: Any, classes: tuple[Any, Any] | list[Any], n_rows: int
) -> npt.NDArray[np.int8]:
    """y mapped to int8 +-1 (classes[1] -> +1, every other label -> -1).

    The label set is public (``classes``), the labels are private.  Only the shape and
    the dtype can be refused; a label value never raises (that would tell whether some
    person's label lies outside the set).  A label equal to neither public class is
    counted as ``classes[0]``, the negative class: a fixed map of one record to one
    record, so neighbouring data sets stay neighbours and the guarantee is unchanged.
    """
    if hasattr(y, "to_numpy"):
        y = _pandas_values(y)
    listed = isinstance(y, (list, tuple))
    if listed:
        try:
            y = np.array(y, dtype=object)  # the elements as they are: no recast
        except ValueError:
            raise ValueError("y must be 1-dimensional; got a ragged list") from None
    else:
        y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-dimensional; got shape {y.shape}")
    if y.shape[0] != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {y.shape[0]}")
    if listed:
        # each label against the public positive class, by value and within Python's
        # own comparison: a label of any other type or size is simply not classes[1]
        pos = np.fromiter(
            (_is_label(v, classes[1]) for v in y), dtype=np.bool_, count=y.shape[0]
        )
        return np.where(pos, 1, -1).astype(np.int8)
    cls = np.asarray(classes)
    if y.dtype.kind in "biuf" and cls.dtype.kind in "biuf":
        if y.dtype.kind == "f" and y.dtype.itemsize > 8:
            raise TypeError(f"y must not be long double; got dtype {y.dtype}")
    elif not (y.dtype.kind in "USO" and cls.dtype.kind in "USO"):
        raise TypeError(
            f"y has dtype {y.dtype}, which cannot hold the labels of "
            f"classes={tuple(classes)!r}"
        )
    pos = y == classes[1]
    return np.where(pos, 1, -1).astype(np.int8)


def _is_label(value: Any, label: Any) -> bool:
    """Whether one private label equals the public class (never an error: a value whose
    comparison fails or is not a truth value is not the class)."""
    try:
        return bool(value == label)
    except Exception:  # noqa: BLE001  (e.g. an array-valued ==)
        return False
