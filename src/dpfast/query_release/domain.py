"""The public data model of query release: a :class:`Domain` of attributes with public,
finite category counts, and a :class:`Histogram` of counts over it.

The layout follows private-pgm's ``Domain`` (McKenna, Sheldon, Miklau 2019): the universe
X is the product of the attributes' categories, stored as a dense C-order array of
``prod(shape)`` cells (mixed radix, first attribute slowest).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._types import FloatArray, IntArray

__all__ = ["Domain", "Histogram"]

#: Largest universe a Domain accepts (8 bytes per cell per histogram: 128 MiB).
MAX_CELLS = 2**24
_MAX_ATTRS = 32  # csrc/include/dpfast/release.h, DPF_REL_MAXDIM


class Domain:
    """Attributes with public category counts: ``Domain(["age", "sex"], [5, 2])``.

    Parameters
    ----------
    names : sequence of str
        Distinct attribute names, at most 32.
    sizes : sequence of int
        Number of categories of each attribute (>= 1); the product, ``|X|``, is at most
        ``2**24``.
    """

    __slots__ = ("names", "shape", "size", "_index", "_shape64")

    def __init__(self, names: Sequence[str], sizes: Sequence[int]) -> None:
        names = tuple(names)
        sizes = tuple(sizes)
        for nm in names:
            if not isinstance(nm, str):
                raise TypeError(f"attribute names must be str; got {type(nm).__name__}")
        if not 1 <= len(names) <= _MAX_ATTRS or len(set(names)) != len(names):
            raise PrivacyParameterError(
                f"names must be 1 to {_MAX_ATTRS} distinct strings; got {names!r}"
            )
        if len(sizes) != len(names):
            raise PrivacyParameterError("sizes must have one entry per attribute name")
        sizes = tuple(
            _v.integer(f"size of {nm!r}", s, minimum=1, maximum=MAX_CELLS)
            for nm, s in zip(names, sizes)
        )
        total = 1
        for s in sizes:
            total *= s
        if total > MAX_CELLS:
            raise PrivacyParameterError(
                f"the universe has {total} cells; at most {MAX_CELLS} are supported"
            )
        self.names = names
        self.shape = sizes
        self.size = total
        self._index = {nm: i for i, nm in enumerate(names)}
        self._shape64 = np.asarray(sizes, dtype=np.int64)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def attr(self, key: str | int) -> int:
        """The position of an attribute given by name or position."""
        if isinstance(key, str):
            if key in self._index:
                return self._index[key]
            raise PrivacyParameterError(f"unknown attribute {key!r}")
        i: int = _v.integer("attribute", key, minimum=0, maximum=len(self.names) - 1)
        return i

    def attrs(self, keys: str | int | Sequence[str | int]) -> tuple[int, ...]:
        """Sorted distinct positions of several attributes."""
        seq: Sequence[Any] = (
            (keys,)
            if isinstance(keys, (str, numbers.Integral))
            else cast("Sequence[Any]", keys)
        )
        pos = sorted(self.attr(k) for k in seq)
        if len(set(pos)) != len(pos):
            raise PrivacyParameterError(f"attributes repeat in {tuple(seq)!r}")
        return tuple(pos)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Domain)
            and other.names == self.names
            and other.shape == self.shape
        )

    def __hash__(self) -> int:
        return hash((self.names, self.shape))

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={s}" for n, s in zip(self.names, self.shape))
        return f"Domain({inner})"


def _integer_codes(name: str, col: Any) -> IntArray:
    """An integer column as int64, refused by type only (never by value).

    A list is read element by element (``_validation.real_data``): an int is an int
    whatever its size, clamped to int64 (then to the attribute's range); np.asarray would
    type the list by its magnitudes ([2**63] uint64, [2**64] object).  An integer array
    of any dtype is clamped the same way (uint64 too); object arrays are refused."""
    if isinstance(col, (list, tuple)):
        kind, arr = _v.real_data(f"codes of {name!r}", col)
        if kind != "i":
            raise TypeError(f"codes of {name!r} must be integers; got a float among them")
        return arr
    arr = np.asarray(col)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"codes of {name!r} must be an integer dtype; got {arr.dtype}")
    return _v.real_data(f"codes of {name!r}", arr)[1]  # uint64 clamped to int64


class Histogram:
    """Counts over a :class:`Domain`: the private database as a vector x in ``N^|X|``.

    Build it from records with :meth:`from_codes`, or from counts directly.  The number
    of records is *not* public: mechanisms take ``n_public`` separately and never read
    the count from the data (erratum E5 of docs/release.md: Dwork & Roth assume ``‖x‖₁``
    known).

    Parameters
    ----------
    domain : Domain
    counts : array_like of real, shape ``(domain.size,)`` or ``domain.shape``
        Refused by type (bool, complex, object, longdouble; a list by the types of its
        elements, never by their size) and by shape only; values are private, so a
        negative, huge or non-finite count is clamped to ``[0, 2**53]``, never refused.
    """

    __slots__ = ("domain", "_counts")

    def __init__(self, domain: Domain, counts: Any) -> None:
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        # exact, classified by type (docs/security-model.md "How data is converted"):
        # integers of any size clamped to +-2**53, floats as they are
        arr = _v.float_data("counts", counts)
        if arr.shape not in ((domain.size,), domain.shape):
            raise PrivacyParameterError(
                f"counts must have shape ({domain.size},) or {domain.shape}; got {arr.shape}"
            )
        c = np.array(arr, dtype=np.float64).reshape(-1)
        np.nan_to_num(c, copy=False, nan=0.0, posinf=2.0**53, neginf=0.0)
        np.clip(c, 0.0, 2.0**53, out=c)
        c.flags.writeable = False
        self.domain = domain
        self._counts = c

    @classmethod
    def from_codes(cls, domain: Domain, table: Any) -> Histogram:
        """Count records given as category codes, one column per attribute.

        Parameters
        ----------
        domain : Domain
        table : 2-D integer ndarray of shape (n, domain.ndim), or a pandas DataFrame
            with a column per attribute name (integer or categorical columns).

        Notes
        -----
        Codes outside an attribute's range ``[0, size)`` are clamped to the nearest end
        (the hardening rule for private values: a clamped record still lies in exactly one
        cell of X, so no query's sensitivity changes, and nothing about the value is
        revealed by an error).  Non-integer dtypes are refused by type.
        """
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a Domain; got {type(domain).__name__}")
        cols = _columns(domain, table)
        flat = np.zeros(cols[0].shape[0], dtype=np.int64)
        for col, size in zip(cols, domain.shape):
            flat *= size
            flat += np.clip(col, 0, size - 1)
        counts = np.bincount(flat, minlength=domain.size).astype(np.float64)
        return cls(domain, counts)

    @property
    def counts(self) -> FloatArray:
        """Read-only float64 counts, length ``domain.size``."""
        return self._counts

    def __repr__(self) -> str:
        return f"Histogram({self.domain!r})"  # never the counts: they are private


def _columns(domain: Domain, table: Any) -> list[IntArray]:
    if hasattr(table, "columns") and hasattr(table, "iloc"):  # a pandas DataFrame
        cols = []
        for nm in domain.names:
            if nm not in table.columns:
                raise PrivacyParameterError(f"the table has no column {nm!r}")
            col = table[nm]
            if str(col.dtype) == "category":
                col = col.cat.codes  # missing values are code -1: clamped to 0
            elif str(col.dtype).startswith(("Int", "UInt")):
                raise TypeError(
                    f"column {nm!r} is a nullable integer; fill or drop the "
                    "missing values first"
                )
            arr = col.to_numpy()
            # pandas types a column of ints by their values ([2**64, 0] and
            # [-2**63 - 1, 0] object, [2**63, 0] uint64): an object column is read
            # element by element, like the list it was built from
            cols.append(_integer_codes(nm, arr.tolist() if arr.dtype == object else arr))
        return cols
    arr = _integer_codes("table", table)
    if arr.ndim != 2 or arr.shape[1] != domain.ndim:
        raise PrivacyParameterError(
            f"table must have shape (n, {domain.ndim}); got {arr.shape}"
        )
    return [arr[:, a] for a in range(domain.ndim)]


def shape64(domain: Domain) -> IntArray:
    """The domain's shape as the int64 array the C kernels take."""
    return domain._shape64
