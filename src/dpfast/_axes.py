"""numpy's ``axis=`` and pandas in/out for the everyday releases of :mod:`dpfast.stats`.

A release with ``axis=k`` treats the positions along axis k as the records and releases
one statistic per position of the other axes (numpy's ``np.sum(a, axis=k)``: that axis is
reduced).  A record then contributes to *every* statistic released (a row of a data frame
is one person with a value in each column), so the k releases compose: they are not
parallel (Dwork & Roth 2014, Thm 3.14).  ``epsilon`` is therefore the total of the call:
each of the k releases gets ``epsilon / k`` (rounded down, so the shares never add up to
more), and ``budget`` is charged ``(epsilon, 0)`` once, after the first release has
validated its arguments and before any noise is drawn.

pandas is optional and never imported unless the data is a pandas object: a Series gives
what the release gives for a 1-d array (a ``Series`` indexed by the levels for several
quantiles), a DataFrame with ``axis=0`` a ``Series`` indexed by its columns, with
``axis=1`` one indexed by its index.  Columns are converted to float64 one at a time, by
their own dtype (a frame with int64 and float64 columns is never upcast as a whole, which
would round integers beyond 2**53; refused by type: object, nullable and extension dtypes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _core
from . import _validation as _v
from ._active import NO_BUDGET
from ._errors import PrivacyParameterError
from ._privacy import Cost, charge
from ._privacy import float_down as _down

__all__ = ["along", "is_pandas", "ChargeOnce"]


def is_pandas(x: object) -> bool:
    mod = type(x).__module__
    return mod == "pandas" or mod.startswith("pandas.")


def _is_frame(x: object) -> bool:
    return is_pandas(x) and getattr(x, "ndim", 0) == 2


class ChargeOnce:
    """A budget for the k releases of one call: the first ``spend`` (made by the first
    release after its validation, before its noise) charges the call's whole ``epsilon``
    to the caller's budget; the others charge nothing more.  For the pure-epsilon
    releases of dpfast.stats only (delta 0)."""

    def __init__(self, budget: Any, epsilon: Any) -> None:
        self._budget = _v.budget(budget)
        self._epsilon = epsilon
        self._spent = False

    def spend(self, epsilon: Any, delta: Any, *, label: str | None = None) -> None:
        if not self._spent:
            if self._budget is not None:
                charge(self._budget, Cost(self._epsilon, 0.0), label)
            self._spent = True


def pandas_floats(name: str, obj: Any) -> npt.NDArray[np.float64]:
    """A pandas Series (or Index, Categorical...) of private values as float64, exactly.

    numpy dtypes go through dpfast's one converter (``_validation.float_data``: refused
    by type unless exact, integers clamped to +-2**53).  pandas' nullable ``Int*`` /
    ``UInt*`` are clamped to +-2**53 as integers, then converted with pd.NA as NaN (a
    missing record, dropped like NaN); nullable ``Float*`` likewise.  Every other
    extension dtype (boolean, string, categorical, ...) is refused by type.  A DataFrame
    gives a 2-d array, converted column by column."""
    if getattr(obj, "ndim", 1) == 2:
        return _frame_array(obj)
    dt = obj.dtype
    if isinstance(dt, np.dtype):
        arr: npt.NDArray[np.float64] = _v.float_data(name, obj.to_numpy())
        return arr
    kind = getattr(dt, "kind", "O")
    if kind == "i" and hasattr(obj, "clip"):
        obj = obj.clip(-_v.EXACT_INT, _v.EXACT_INT)
    elif kind == "u" and hasattr(obj, "clip"):
        obj = obj.clip(upper=_v.EXACT_INT)
    elif kind != "f":
        raise TypeError(
            f"{name} must hold real numbers of a dtype that converts to float64 "
            f"exactly; got pandas dtype {dt} (convert it explicitly, e.g. with "
            ".astype('float64'))"
        )
    return np.asarray(obj.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def _columns(frame: Any) -> list[npt.NDArray[np.float64]]:
    """Each column of a DataFrame as float64, by position (column labels may repeat)."""
    return [
        pandas_floats(f"column {name!r}", frame.iloc[:, j])
        for j, name in enumerate(frame.columns)
    ]


def _frame_array(frame: Any) -> npt.NDArray[np.float64]:
    """A DataFrame's values as a 2-d float64 array, converted column by column."""
    cols = [c.ravel() for c in _columns(frame)]
    if not cols:
        return np.empty((len(frame.index), 0), dtype=np.float64)
    return np.column_stack(cols)


def records(name: str, values: Any) -> npt.NDArray[np.float64]:
    """Private records as a flat float64 array, one record per element, refusing a 2-d
    input (a public shape): treating every cell of a two-column frame as a record while
    each person is charged once would double their contribution (a 2 epsilon release
    presented as epsilon), and ``count`` counts rows."""
    arr = pandas_floats(name, values) if is_pandas(values) else _v.float_data(name, values)
    if arr.ndim >= 2:
        raise PrivacyParameterError(
            f"{name} is {arr.ndim}-dimensional (shape {arr.shape}): one record per cell "
            "would count a person once per column while charging them once; pass axis=0 "
            "to release every column (the budget split evenly between them), or pass the "
            "one column to release"
        )
    return arr.ravel()


def along(
    release: Callable[..., Any],
    values: Any,
    axis: int | None,
    *,
    epsilon: Any,
    budget: Any,
    rng: Any,
    levels: Sequence[Any] | None = None,
    **kwargs: Any,
) -> Any:
    """``release(x, epsilon=, budget=, rng=, **kwargs)`` on every 1-d slice ``x`` of
    ``values`` along ``axis`` (all of ``values`` when ``axis`` is None), the result shaped
    as numpy's reduction and labelled as pandas' (module docstring).  ``levels``: the
    labels of a vector result (quantile levels)."""
    eps = _v.epsilon(epsilon)
    flat: Sequence[npt.NDArray[np.float64]] | npt.NDArray[np.float64]
    if (
        _is_frame(values)
        and axis is not None
        and _v.integer("axis", axis, minimum=-2, maximum=1) % 2 == 0
    ):
        # one release per column: convert each column by itself, never the whole frame
        flat = _columns(values)
        rest: tuple[int, ...] | None = (len(flat),)
    else:
        if axis is None:
            flat, rest = records("values", values).reshape(1, -1), None
        else:
            arr = (
                pandas_floats("values", values)
                if is_pandas(values)
                else _v.float_data("values", values)
            )
            nd = max(arr.ndim, 1)
            ax = _v.integer("axis", axis, minimum=-nd, maximum=nd - 1)
            moved = np.moveaxis(arr, ax, -1) if arr.ndim else arr.reshape(1)
            rest = moved.shape[:-1]
            flat = moved.reshape(math.prod(rest), moved.shape[-1])
    k = len(flat)
    gen = _core.secure_rng(rng)
    # resolved once (None: the active budget), so the k releases are one charge
    budget = _v.budget(budget)
    if k == 0:
        # nothing to release and nothing charged; the public arguments are still checked
        # (the result of this call on no records is discarded)
        release(np.empty(0), epsilon=epsilon, budget=NO_BUDGET, rng=gen, **kwargs)
    share = epsilon if k <= 1 else _down(Fraction(eps) / k)
    spend = NO_BUDGET if budget is None else ChargeOnce(budget, epsilon)
    results = [
        release(flat[i], epsilon=share, budget=spend, rng=gen, **kwargs) for i in range(k)
    ]
    if rest is None:
        out = results[0]
    else:
        stacked = np.array(results, dtype=np.float64)  # (k,) or (k, m)
        if k == 0 and levels is not None:
            stacked = stacked.reshape(0, len(levels))
        out = np.moveaxis(stacked, 0, -1).reshape(stacked.shape[1:] + rest)
        if out.ndim == 0:  # 1-d data, axis=0: a scalar
            out = float(out)
    return _label(out, values, axis, levels)


def _label(out: Any, values: Any, axis: int | None, levels: Sequence[Any] | None) -> Any:
    """pandas labels for a result computed from pandas data; other data unchanged."""
    if not is_pandas(values):
        return out
    import pandas as pd

    index = None if levels is None else pd.Index(list(levels))
    if axis is None or not _is_frame(values):
        if index is not None:
            return pd.Series(out, index=index, name=getattr(values, "name", None))
        return out
    by_column = _v.integer("axis", axis) % 2 == 0  # axis 0 (or -2) reduces the rows
    labels = values.columns if by_column else values.index
    if index is not None:
        return pd.DataFrame(out, index=index, columns=labels)
    return pd.Series(out, index=labels)
