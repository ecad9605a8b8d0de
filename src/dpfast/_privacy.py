"""The privacy vocabulary of dpfast: one home for the words every module shares.

* :class:`Cost` -- what a release costs: epsilon, delta, rho where known, and named parts.
  Every ``privacy_cost`` and every budget report (``spent``, ``remaining``) is one; the
  old public names (``dpfast.accounting.PrivacyAmount``, ``dpfast.objects.PrivacyCost``,
  ``dpfast.query_release.PrivacyCost``, ``dpfast.learn.PrivacyCost``) are this class.
* :func:`charge` -- the only way dpfast code charges a budget.
* :class:`Budget` -- what ``budget=`` needs; :data:`Rng` -- what ``rng=`` accepts.
* :func:`float_up`, :func:`float_down`, :func:`float_up_finite`, :func:`decimal_up`,
  :func:`decimal_down`, :func:`bound_up`, :func:`inflate`, :func:`deflate` -- the
  directed roundings of privacy quantities.

This module imports nothing else of dpfast, so any module may import it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from fractions import Fraction
from operator import itemgetter
from typing import Any, Protocol, TypeAlias, cast, runtime_checkable

from numpy.random import BitGenerator, Generator

from ._errors import PrivacyParameterError

__all__ = [
    "Cost",
    "charge",
    "Budget",
    "Rng",
    "is_zcdp",
    "float_up",
    "float_down",
    "float_up_finite",
    "decimal_of",
    "decimal_up",
    "decimal_down",
    "bound_up",
    "inflate",
    "deflate",
    "MARGIN",
]

_INF = math.inf
_MAX = Fraction(sys.float_info.max)

#: ``rng=``: ``None`` (the calling thread's OS-keyed ChaCha20), a numpy BitGenerator
#: (dpfast's ChaCha20 is one) or a numpy Generator.
Rng: TypeAlias = None | BitGenerator | Generator

#: An amount of privacy as dpfast computes or charges it: a float (a caller's parameter
#: or a bound rounded up), an exact Fraction, or a caller's own number charged as given.
Quantity: TypeAlias = Any


@runtime_checkable
class Budget(Protocol):
    """What ``budget=`` needs: :class:`dpfast.accounting.PrivacyBudget`, a ledger budget,
    or any object with this method (it raises to refuse a charge).  A budget whose
    ``composition`` is ``"zcdp"`` and that has ``spend_rho(rho, *, label=None)`` is
    charged rho by :func:`charge` when the cost knows it."""

    # epsilon and delta as the caller gave them (float, Fraction, Decimal: budgets add
    # exact values), so Any here: any implementation's own parameter types match.
    def spend(
        self, epsilon: Any, delta: Any = ..., *, label: str | None = ...
    ) -> object: ...


def is_zcdp(budget: object) -> bool:
    """Whether ``budget`` composes in rho-zCDP and can be charged rho (``spend_rho``)."""
    return getattr(budget, "composition", None) == "zcdp" and callable(
        getattr(budget, "spend_rho", None)
    )


class Cost(tuple[Any, ...]):
    """The privacy cost of a release, computed from public parameters only.

    ``epsilon``, ``delta``: its (epsilon, delta)-DP guarantee (delta = 0 for pure
    epsilon-DP; both ``None`` when only rho is known, or for a zCDP budget's report).
    ``rho``: its rho-zCDP guarantee where one follows, else ``None``.  ``parts``: the
    labelled components, ``(name, amount)`` pairs (``breakdown`` is them as a dict).

    It is the tuple ``(epsilon, delta, rho)`` (as the NamedTuples it replaces were:
    unpacking, indexing and comparing with a plain tuple work, and ``_fields``,
    ``_asdict`` and ``_replace`` exist); ``parts`` and the notes below are attributes.
    Two costs are equal when their tuples, parts and notes are.

    Notes a learner records (None elsewhere): ``variant``, ``certified`` (False when no
    complete proof covers the cost), ``n_samples``, ``adjacency`` and
    ``formula_version``.
    """

    _fields = ("epsilon", "delta", "rho")
    _notes = ("variant", "certified", "n_samples", "adjacency", "formula_version")

    # the attributes beyond the tuple; an instance stores only those it sets
    parts: tuple[tuple[str, Any], ...] = ()
    variant: str | None = None
    certified: bool = True
    n_samples: int | None = None
    adjacency: str | None = None
    formula_version: str | None = None

    def __new__(
        cls,
        epsilon: Quantity | None,
        delta: Quantity | None,
        rho: Quantity | None = None,
        parts: Iterable[tuple[str, Any]] = (),
        *,
        variant: str | None = None,
        certified: bool = True,
        n_samples: int | None = None,
        adjacency: str | None = None,
        formula_version: str | None = None,
    ) -> Cost:
        self = tuple.__new__(cls, (epsilon, delta, rho))
        if parts or not (
            variant is None
            and certified is True
            and n_samples is None
            and adjacency is None
            and formula_version is None
        ):
            self.__dict__.update(
                parts=tuple(parts),
                variant=variant,
                certified=certified,
                n_samples=n_samples,
                adjacency=adjacency,
                formula_version=formula_version,
            )
        return self

    # the tuple's fields, read as NamedTuple fields are (a C-level getter)
    epsilon = property(itemgetter(0), doc="epsilon of (epsilon, delta)-DP, or None")
    delta = property(itemgetter(1), doc="delta of (epsilon, delta)-DP, or None")
    rho = property(itemgetter(2), doc="rho of rho-zCDP, or None")

    @property
    def breakdown(self) -> dict[str, Any]:
        """``parts`` as a dict (name -> amount)."""
        return dict(self.parts)

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def _extras(self) -> dict[str, Any]:
        return {"parts": self.parts, **{k: getattr(self, k) for k in self._notes}}

    def _replace(self, **changes: Any) -> Cost:
        """A copy with the named fields, parts or notes changed."""
        return Cost(**{**self._asdict(), **self._extras(), **changes})

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Cost is immutable: cannot assign to {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Cost is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, tuple):
            return NotImplemented
        if not tuple.__eq__(self, other):
            return False
        return not isinstance(other, Cost) or self._extras() == other._extras()

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((tuple(self), self.parts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (tuple(self), self._extras()))

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self._asdict().items()]
        if self.parts:
            shown.append(f"parts={self.parts!r}")
        shown += [
            f"{k}={getattr(self, k)!r}"
            for k in self._notes
            if getattr(self, k) != getattr(Cost, k)
        ]
        return f"Cost({', '.join(shown)})"


def _rebuild(fields: tuple[Any, ...], extras: Mapping[str, Any]) -> Cost:
    return Cost(*fields, **extras)


def charge(budget: Budget | None, cost: Cost, label: str | None) -> None:
    """Charge ``cost`` to ``budget``: the only way dpfast code charges a budget.

    ``budget`` is already resolved (``dpfast._validation.budget``, once per public call):
    ``None`` charges nothing.  A zCDP budget (``composition == "zcdp"`` with
    ``spend_rho``) is charged ``cost.rho`` when the cost knows it; every other charge is
    ``spend(cost.epsilon, cost.delta, label=label)`` (a zCDP budget converts a pure
    epsilon to epsilon^2/2 itself and refuses delta > 0).  The amounts are passed exactly
    as the cost holds them (a float charges what the budget makes of a float, a Fraction
    its exact value).  A cost known only in rho cannot charge an (epsilon, delta) budget:
    ``PrivacyParameterError``, before anything is charged."""
    if budget is None:
        return
    epsilon, delta, rho = cost
    if rho is not None and is_zcdp(budget):
        cast(Any, budget).spend_rho(rho, label=label)  # is_zcdp checked it
        return
    if epsilon is None:
        raise PrivacyParameterError(
            f"{label or 'this release'}: a Gaussian given rho= or sigma= without delta= can "
            "charge only a zCDP budget (PrivacyBudget(composition='zcdp', ...)); give "
            "delta= to charge (epsilon, delta)"
        )
    budget.spend(epsilon, delta, label=label)


# ---- directed rounding ----------------------------------------------------------------

#: The relative slack of a float bound computed in a few float operations: far more than
#: their rounding error (a few ulps, 2**-52 each).
MARGIN = 2.0**-40


def _float_vs(x: float, q: Fraction) -> int:
    """The sign of x - q, exactly (integer cross-multiplication: no Fraction built)."""
    n, d = x.as_integer_ratio()
    a, b = n * q.denominator, q.numerator * d
    return (a > b) - (a < b)


def float_down(q: Fraction | float) -> float:
    """The largest float <= q (a float q is itself); float() alone rounds to nearest.
    A share of a budget rounds down, so the shares never add up to more than the total."""
    if not isinstance(q, Fraction):
        q = Fraction(q)
    x = float(q)
    if _float_vs(x, q) > 0:
        x = math.nextafter(x, -_INF)
    return x


def float_up(q: Fraction | float) -> float:
    """The smallest float >= q; +inf beyond the largest float."""
    if not isinstance(q, Fraction):
        q = Fraction(q)
    if q > _MAX:
        return _INF
    x = float(q)
    if _float_vs(x, q) < 0:
        x = math.nextafter(x, _INF)
    return x


def float_up_finite(q: Fraction | float) -> float:
    """:func:`float_up` where no infinite bound may be handed on: ``OverflowError`` (from
    ``float(q)``) when q is beyond what rounds to the largest float, instead of +inf.
    (The two differ only there; kept apart so that no caller changes behaviour.)"""
    if not isinstance(q, Fraction):
        q = Fraction(q)
    x = float(q)
    if _float_vs(x, q) < 0:
        x = math.nextafter(x, _INF)
    return x


def decimal_of(x: float) -> Fraction:
    """What a float privacy parameter means: the decimal it prints as, ``Fraction(repr(x))``
    (x finite).  Shortest round-trip reprs are increasing in x, so this is monotone."""
    cached = _DECIMALS.get(x)
    if cached is not None:
        return cached
    q = Fraction(repr(float(x)))
    if len(_DECIMALS) >= 4096:
        _DECIMALS.clear()
    _DECIMALS[x] = q
    return q


_DECIMALS: dict[float, Fraction] = {}


def decimal_up(q: Fraction) -> float:
    """The smallest float whose decimal (:func:`decimal_of`) is >= q: a bound handed back
    to the caller, which means exactly q whenever q has a float that prints as it
    (``basic_composition([0.1] * 10)`` is ``1.0``)."""
    x = float_up(q) if q > _MAX else float(q)
    while x < _INF and decimal_of(x) < q:
        x = math.nextafter(x, _INF)
    return x


def decimal_down(q: Fraction) -> float:
    """The largest float whose decimal is <= q (q >= 0): a remainder handed back."""
    x = float(min(q, _MAX))
    while x > 0.0 and decimal_of(x) > q:
        x = math.nextafter(x, -_INF)
    return x


def inflate(x: float) -> float:
    """``x * (1 + MARGIN)``, one float multiply: a bound computed in floats, made safe
    against its own rounding error (MARGIN is far more than it)."""
    return x * (1.0 + MARGIN)


def deflate(x: float) -> float:
    """``x * (1 - MARGIN)``: the counterpart of :func:`inflate` for a quantity that must
    not exceed its exact value."""
    return x * (1.0 - MARGIN)


def bound_up(x: float) -> float:
    """A float bound rounded up by far more than its evaluation error: the next double
    above ``inflate(x)`` (0 stays 0)."""
    if x == 0.0:
        return 0.0
    return math.nextafter(inflate(x), _INF)
