"""Private keys (partition keys, categories, privacy-unit ids) classified element by element.

A Python list, an object array or a pandas object column of keys is private data: one
stray element must not decide how the others are read.  ``np.asarray`` would let it
(one ``"NA"`` among integer codes turns every code into a string, one ``2**64`` turns
the column into objects), so keys are never converted as a whole.  Each element is
mapped on its own to a *canonical key* ``(class, ...)``:

====  ==========================================  =====================================
rank  element type                                canonical key
====  ==========================================  =====================================
0     ``bool``, ``numpy.bool_``                   ``(0, bool)``
1     ``int``, ``numpy.integer``                  ``(1, int)`` (exact, any size)
2     ``float``, float16/32/64 (not NaN)          ``(2, float)`` (exact)
3     NaN of those                                ``(3,)``: one key for every NaN
4     ``str``, ``numpy.str_``                     ``(4, str)``
5     ``bytes``, ``numpy.bytes_``                 ``(5, bytes)``
6     ``None``                                    ``(6,)``
7     ``numpy.datetime64`` / ``timedelta64``      ``(7, type, unit, int64)`` (NaT too)
8     any other hashable object                   ``(8, "module.qualname", object)``
====  ==========================================  =====================================

Keys compare by value within their own class only (``1``, ``1.0`` and ``True`` are
three keys; a foreign element is a record of its own key, never a reason to recast the
rest).  An unhashable element (a list, a dict) is no key: its record counts in no
partition (it is dropped, as a record outside every public category is).

Released keys are then typed from the released keys alone (:func:`typed`): int64 when
all are integers that fit, float64 when all are floats, ``<U``/``S`` sized by the
longest *released* string, else an object array; and they are ordered by one canonical
total order over the released keys (:func:`order`): class rank, then value.  Neither
can depend on a key that is not released (docs/security-model.md, "Released keys:
order and dtype").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["canon", "canonical_of", "from_sequence", "order", "typed", "value"]

_EXACT_FLOATS = (float, np.float64, np.float32, np.float16)
_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def canon(x: object) -> tuple[Any, ...] | None:
    """The canonical key of one element (None: unhashable, no key)."""
    if isinstance(x, (bool, np.bool_)):
        return (0, bool(x))
    if isinstance(x, (int, np.integer)):
        return (1, int(x))
    if isinstance(x, _EXACT_FLOATS):
        f = float(x)                     # exact for these widths
        return (3,) if math.isnan(f) else (2, f)
    if isinstance(x, (str, np.str_)):
        return (4, str(x))
    if isinstance(x, (bytes, np.bytes_)):
        return (5, bytes(x))
    if x is None:
        return (6,)
    if isinstance(x, (np.datetime64, np.timedelta64)):
        unit = np.datetime_data(x.dtype)
        return (7, type(x).__name__, unit[0], unit[1], int(x.astype(np.int64)))
    try:
        hash(x)
    except TypeError:
        return None
    t = type(x)
    return (8, f"{t.__module__}.{t.__qualname__}", x)


def canonical_of(uniq: npt.NDArray[Any]) -> list[tuple[Any, ...] | None]:
    """The canonical keys of an array of distinct keys: an object array holds canonical
    keys already (``grouped._factorize``); a typed array's elements are mapped."""
    if uniq.dtype.kind == "O":
        return list(uniq.tolist())
    return [canon(x) for x in uniq.tolist()]


def value(key: tuple[Any, ...]) -> object:
    """The element a canonical key stands for (NaN for the NaN key)."""
    rank = key[0]
    if rank in (0, 1, 2, 4, 5):
        return key[1]
    if rank == 3:
        return math.nan
    if rank == 6:
        return None
    if rank == 7:
        dtype = np.dtype(f"{'M8' if key[1] == 'datetime64' else 'm8'}[{key[3]}{key[2]}]")
        return np.array(key[4], dtype=np.int64).view(dtype)[()]
    return key[2]


def from_sequence(seq: Iterable[Any], n: int | None = None) -> npt.NDArray[np.object_]:
    """A 1-d object array holding the elements as they are (no element recasts another;
    a nested list stays one element)."""
    items = list(seq)
    out = np.empty(len(items) if n is None else n, dtype=object)
    for i, x in enumerate(items):    # element-wise: numpy would broadcast nested lists
        out[i] = x
    return out


def order(keys: Sequence[tuple[Any, ...]]) -> list[int]:
    """The positions of ``keys`` in the canonical total order: class rank, then value
    (other objects: by type name, then by their own order where they have one, else by
    ``repr``).  Deterministic, and a function of ``keys`` only."""
    def plain(i: int) -> tuple[Any, ...]:
        k = keys[i]
        return k if k[0] < 8 else (8, k[1])
    idx = sorted(range(len(keys)), key=plain)
    # within each type of class 8, the objects' own order if total, else repr
    start = 0
    while start < len(idx):
        k0 = plain(idx[start])
        end = start
        while end < len(idx) and plain(idx[end]) == k0:
            end += 1
        if k0[0] == 8 and end - start > 1:
            block = idx[start:end]
            try:
                block.sort(key=lambda i: keys[i][2])
            except TypeError:
                block.sort(key=lambda i: repr(keys[i][2]))
            idx[start:end] = block
        start = end
    return idx


def typed(keys: Sequence[tuple[Any, ...]]) -> npt.NDArray[Any]:
    """The released keys as an array typed from these keys alone."""
    ranks = {k[0] for k in keys}
    vals = [value(k) for k in keys]
    if ranks == {0}:
        return np.array(vals, dtype=np.bool_)
    if ranks == {1} and all(_INT64[0] <= v <= _INT64[1] for v in vals):  # type: ignore[operator]
        return np.array(vals, dtype=np.int64)
    if ranks and ranks <= {2, 3}:
        return np.array(vals, dtype=np.float64)
    if ranks == {4}:
        return np.array(vals, dtype=str)
    if ranks == {5}:
        return np.array(vals, dtype=bytes)
    out = np.empty(len(vals), dtype=object)
    for i, v in enumerate(vals):
        out[i] = v
    return out
