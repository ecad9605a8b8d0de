"""Private keys (partition keys, categories, privacy-unit ids) classified element by element.

A Python list, an object array or a pandas object column of keys is private data: one
stray element must not decide how the others are read.  ``np.asarray`` would let it
(one ``"NA"`` among integer codes turns every code into a string, one ``2**64`` turns
the column into objects), so keys are never converted as a whole.  Each element is
mapped on its own to a *canonical key* ``(rank, ...)``:

====  ==========================================  =====================================
rank  element type                                canonical key
====  ==========================================  =====================================
0     ``bool``, ``numpy.bool_``                   ``(0, bool)``
1     ``int``, ``numpy.integer``                  ``(1, int)`` (exact, any size)
2     ``float``, float16/32/64 (not NaN)          ``(2, float)`` (exact; -0.0 is 0.0)
3     NaN of those                                ``(3,)``: one key for every NaN
4     ``str``, ``numpy.str_``                     ``(4, str)``
5     ``bytes``, ``numpy.bytes_``                 ``(5, bytes)``
6     ``None``                                    ``(6,)``
7     ``numpy.datetime64`` / ``timedelta64``      ``(7, type, unit, count, int64)`` (NaT too)
8     ``tuple`` of elements of ranks 0-8          ``(8, (canonical key, ...))``
9     any other hashable object                   ``(9, "module.qualname", object)``
====  ==========================================  =====================================

Keys compare by value within their own rank only (``1``, ``1.0`` and ``True`` are
three keys; a foreign element is a record of its own key, never a reason to recast the
rest); objects of rank 9 compare by their own ``==`` within their own type.  An element
that is no key (unhashable, or whose hash raises) counts in no partition (it is dropped,
as a record outside every public category is).  Nothing here raises because of a key.

Released keys are typed from the released keys alone (:func:`typed`): int64 when all are
integers that fit, float64 when all are floats, ``<U``/``S`` sized by the longest
*released* string, else an object array; they are ordered by :func:`order`, a function
of the released keys only.  The element released for a key is a function of the key
(:func:`value`), never of which of several equal elements came first: -0.0 is released
as 0.0, and an object of rank 9 as the equal element with the smallest ``repr``
(:func:`encode`).  docs/security-model.md, "Released keys: order and dtype".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "canon",
    "canonical_of",
    "encode",
    "factorize",
    "from_sequence",
    "lookup",
    "order",
    "presort",
    "typed",
    "value",
]

_EXACT_FLOATS = (float, np.float64, np.float32, np.float16)
_INT64 = (-(2**63), 2**63 - 1)
_OTHER = 9  # rank of other hashable objects
_MAX_DEPTH = 32  # tuples nested deeper are objects of rank 9 (no deep recursion)

Key = tuple[Any, ...]


def canon(x: object, depth: int = 0) -> Key | None:
    """The canonical key of one element (None: no key)."""
    if isinstance(x, (bool, np.bool_)):
        return (0, bool(x))
    if isinstance(x, (int, np.integer)):
        return (1, int(x))
    if isinstance(x, _EXACT_FLOATS):
        f = float(x)  # exact for these widths
        return (3,) if math.isnan(f) else (2, f + 0.0)  # + 0.0: -0.0 becomes 0.0
    if isinstance(x, (str, np.str_)):
        return (4, str(x))
    if isinstance(x, (bytes, np.bytes_)):
        return (5, bytes(x))
    if x is None:
        return (6,)
    if isinstance(x, (np.datetime64, np.timedelta64)):
        unit = np.datetime_data(x.dtype)
        return (7, type(x).__name__, unit[0], unit[1], int(x.astype(np.int64)))
    if type(x) is tuple and depth < _MAX_DEPTH:
        parts = tuple(canon(e, depth + 1) for e in x)
        if all(p is not None and p[0] != _OTHER for p in parts):
            return (8, parts)
    try:
        hash(x)
    except Exception:  # (a private object's hash decides nothing)
        return None
    t = type(x)
    return (_OTHER, f"{t.__module__}.{t.__qualname__}", x)


def _repr(x: object) -> str:
    try:
        return repr(x)
    except Exception:
        return ""


def encode(
    items: Iterable[Any], n: int, need_keys: bool = True
) -> tuple[list[Key], npt.NDArray[np.int64]]:
    """(distinct canonical keys in first-seen order, the code of each of the ``n``
    items: its key's position, -1 for no key).

    Equal objects of rank 9 written differently (``Decimal("1")``, ``Decimal("1.00")``)
    are one key; with ``need_keys`` the key holds the one with the smallest ``repr``, so
    the element released does not depend on which came first."""
    table: dict[Key, int] = {}
    reps: dict[int, tuple[str, object]] = {}
    codes = np.empty(n, dtype=np.int64)
    for i, x in enumerate(items):
        c = canon(x)
        k = -1
        if c is not None:
            try:
                k = table.setdefault(c, len(table))
            except Exception:  # an object whose == raises: no key
                k = -1
            if need_keys and k >= 0 and c[0] == _OTHER:
                r = _repr(x)
                old = reps.get(k)
                if old is None or r < old[0]:
                    reps[k] = (r, x)
        codes[i] = k
    keys = list(table)
    for k, (_, x) in reps.items():
        keys[k] = (_OTHER, keys[k][1], x)
    return keys, codes


def canonical_of(uniq: npt.NDArray[Any]) -> list[Key | None]:
    """The canonical keys of an array of distinct keys: an object array holds canonical
    keys already (:func:`factorize`); a typed array's elements are mapped."""
    if uniq.dtype.kind == "O":
        return list(uniq.tolist())
    return [canon(x) for x in uniq.tolist()]


def lookup(where: dict[Key, int], keys: Sequence[Key | None]) -> npt.NDArray[np.int64]:
    """The position ``where[k]`` of each key (-1: no key, not listed, or an object whose
    ``==`` raises)."""

    def at(k: Key | None) -> int:
        if k is None:
            return -1
        try:
            return where.get(k, -1)
        except Exception:
            return -1

    return np.fromiter((at(k) for k in keys), dtype=np.int64, count=len(keys))


def value(key: Key) -> object:
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
    if rank == 8:
        return tuple(value(p) for p in key[1])
    return key[2]


def from_sequence(seq: Iterable[Any], n: int | None = None) -> npt.NDArray[np.object_]:
    """A 1-d object array holding the elements as they are (no element recasts another;
    a nested list stays one element)."""
    items = list(seq)
    out = np.empty(len(items) if n is None else n, dtype=object)
    for i, x in enumerate(items):  # element-wise: numpy would broadcast nested lists
        out[i] = x
    return out


def _sort_key(key: Key) -> Key:
    """Total over ranks 0-8 (rank, then value; tuples element by element); objects of
    rank 9 only by type name (their order within a type: :func:`order`)."""
    return key if key[0] != _OTHER else (_OTHER, key[1])


def presort(keys: Sequence[Key]) -> list[int]:
    """The positions of ``keys`` sorted by rank and value, objects of rank 9 grouped by
    type in the given order (stable).  :func:`order` finishes it."""
    return sorted(range(len(keys)), key=lambda i: _sort_key(keys[i]))


def _chain(objs: list[object]) -> bool:
    """Whether each object is ``<`` the next (a strict chain under the objects' own order)."""
    try:
        return all(bool(a < b) for a, b in zip(objs, objs[1:]))  # type: ignore[operator]
    except Exception:
        return False


def order(keys: Sequence[Key], rng: Any) -> list[int]:
    """The positions of the (released) ``keys`` in their canonical order.

    Ranks 0-8 (numbers, strings, bytes, None, datetimes, tuples of these) come in one
    total order: rank, then value, whatever else is in the data.  Objects of rank 9
    follow, grouped by type name; within a type, by the objects' own ``<`` when it
    orders these keys into a strict chain, else in a uniformly random order drawn from
    ``rng`` (no stable total order exists for arbitrary objects, and the order in which
    they appear in the data is private).  Either way the order is a function of the
    keys given (and fresh randomness) only: call it on the released keys, so that no
    unreleased key can switch a type from sorted to random."""
    from . import _core

    idx = presort(keys)
    start = 0
    while start < len(idx):
        k0 = _sort_key(keys[idx[start]])
        end = start + 1
        while end < len(idx) and _sort_key(keys[idx[end]]) == k0:
            end += 1
        if k0[0] == _OTHER and end - start > 1:
            block = idx[start:end]
            try:
                ranked = sorted(block, key=lambda i: keys[i][2])
                chain = _chain([keys[i][2] for i in ranked])
            except Exception:
                chain = False
            if not chain:
                ranked = block
                for j in range(len(ranked) - 1, 0, -1):  # Fisher-Yates
                    r = _core.uniform_below(j + 1, None, rng)
                    ranked[j], ranked[r] = ranked[r], ranked[j]
            idx[start:end] = ranked
        start = end
    return idx


def _has_nul_end(vals: list[Any]) -> bool:
    """numpy's fixed-width strings drop trailing NULs ("a" and "a\\0" would print alike)."""
    return any(v[-1:] in ("\0", b"\0") for v in vals)


def typed(keys: Sequence[Key]) -> npt.NDArray[Any]:
    """The released keys as an array typed from these keys alone."""
    ranks = {k[0] for k in keys}
    vals = [value(k) for k in keys]
    if ranks == {0}:
        return np.array(vals, dtype=np.bool_)
    if ranks == {1} and all(_INT64[0] <= v <= _INT64[1] for v in vals):  # type: ignore[operator]
        return np.array(vals, dtype=np.int64)
    if ranks and ranks <= {2, 3}:
        return np.array(vals, dtype=np.float64)
    if ranks == {4} and not _has_nul_end(vals):
        return np.array(vals, dtype=str)
    if ranks == {5} and not _has_nul_end(vals):
        return np.array(vals, dtype=bytes)
    out = np.empty(len(vals), dtype=object)
    for i, v in enumerate(vals):
        out[i] = v
    return out


_DENSE_FACTOR = 4  # int codes by offset when the range is <= 4 n + 1024


def factorize(
    arr: npt.NDArray[Any],
    what: str,
    need_uniques: bool = True,
) -> tuple[npt.NDArray[Any] | None, npt.NDArray[np.int64], int]:
    """(uniques or None, int64 codes, number of codes): dense codes of the entries.

    The codes only group records; uniques, in the canonical order, are the partition
    keys.  Integers with a small range are coded by offset (no sort).  An object array
    (a list's elements) is coded by canonical key (``_keys.canon``): its uniques are
    canonical keys, and an element that is no key (unhashable) gets code -1."""
    n = arr.size
    if arr.dtype.kind in "iub" and n:
        a = arr.astype(np.int64) if arr.dtype.kind != "u" or arr.dtype.itemsize < 8 else arr
        lo, hi = int(a.min()), int(a.max())
        if hi - lo <= _DENSE_FACTOR * n + 1024:
            codes = (
                (a - lo).astype(np.int64, copy=False)
                if lo
                else a.astype(np.int64, copy=False)
            )
            uniq = (
                np.arange(lo, hi + 1, dtype=np.int64).astype(arr.dtype)
                if need_uniques
                else None
            )
            return uniq, codes, hi - lo + 1
    if arr.dtype.kind == "O":
        keys, codes = encode(arr.tolist(), n, need_keys=need_uniques)
        if not need_uniques:
            return None, codes, len(keys)
        order = presort(keys)
        rank = np.empty(len(keys) + 1, dtype=np.int64)
        rank[order] = np.arange(len(keys))
        rank[-1] = -1  # code -1 stays -1
        return from_sequence([keys[i] for i in order]), rank[codes], len(keys)
    uniq, codes = np.unique(arr, return_inverse=True)
    return (
        (uniq if need_uniques else None),
        codes.astype(np.int64, copy=False).ravel(),
        uniq.size,
    )
