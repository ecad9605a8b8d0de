"""The active budget: what a mechanism charges when it is given no ``budget=``.

``with budget.active(): ...`` (:meth:`dpfast.accounting.PrivacyBudget.active`, inherited
by the durable :class:`dpfast.ledger.LedgerBudget`) sets a :class:`contextvars.ContextVar`
for the block.  Every mechanism, release, selection, sparse-vector stream, release system
and learner called with ``budget=None`` inside the block charges that budget, with the
same charge (and at the same moment: after validation, before any noise is drawn) as if it
had been passed explicitly.

Why a context variable and not a module global: a context variable is local to the thread
and to the asyncio task that set it, so a budget activated in one request handler is never
charged by another thread's or task's releases.  A new ``threading.Thread`` starts with an
empty context (it does *not* inherit the active budget of the thread that started it; run
it with ``contextvars.copy_context().run`` to pass it on on purpose); an asyncio task
starts with a copy of its creator's context, so tasks created inside the block charge the
budget and tasks created outside do not.  Blocks nest: leaving an inner block restores the
outer budget.

Rules:

* an explicit ``budget=`` always wins over the active one;
* ``budget=NO_BUDGET`` charges nothing even inside an active block (for a release the
  caller accounts for elsewhere);
* with no active budget and ``budget=None`` nothing is charged: allowed, and then the
  caller accounts for the release ("you account for it", docs/accounting.md).

Inside dpfast, a function that charges its whole cost and then calls other public
mechanisms passes them ``budget=NO_BUDGET``, so the active budget is charged once per
public call (tests/test_active_budget.py checks every entry point).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, TypeVar

from ._privacy import Budget

__all__ = ["NO_BUDGET", "Budget", "activate", "current", "resolve", "label"]


class _NoBudget:
    """The type of :data:`NO_BUDGET` (a singleton)."""

    __slots__ = ()
    _instance: _NoBudget | None = None

    def __new__(cls) -> _NoBudget:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def spend(self, epsilon: Any, delta: Any = 0.0, *, label: str | None = None) -> None:
        """Charges nothing (a code path that forgets to resolve it still charges nothing)."""
        return None

    def __reduce__(self) -> str:
        return "NO_BUDGET"

    def __repr__(self) -> str:
        return "dpfast.NO_BUDGET"


#: Pass ``budget=NO_BUDGET`` to charge nothing, even inside ``with budget.active():``.
NO_BUDGET = _NoBudget()

_ACTIVE: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "dpfast_active_budget", default=None
)
#: The active budget or None; bound once, so a hot path pays one C call.
current_or_none = _ACTIVE.get


def current() -> Budget | None:
    """The budget that ``budget=None`` charges here (this thread, this task), or None."""
    return _ACTIVE.get()


def _check(value: object) -> Budget:
    if not callable(getattr(value, "spend", None)):
        raise TypeError(
            "budget must be None, dpfast.NO_BUDGET or have a "
            "spend(epsilon, delta, *, label=None) method; got "
            f"{type(value).__name__}"
        )
    return value  # type: ignore[return-value]


_B = TypeVar("_B", bound=Budget)


@contextlib.contextmanager
def activate(budget: _B) -> Iterator[_B]:
    """Make ``budget`` the active budget for the ``with`` block (and restore the previous
    one when the block ends, however it ends).  ``activate(NO_BUDGET)`` suspends an outer
    active budget for the block."""
    if budget is not NO_BUDGET:
        _check(budget)
    token = _ACTIVE.set(None if budget is NO_BUDGET else budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def resolve(budget: object) -> Budget | None:
    """The budget a call charges: ``None`` -> the active budget (or None when there is
    none), ``NO_BUDGET`` -> None, anything else checked to have ``spend``.

    Call it once per public call, on the argument as the caller gave it: its result None
    means "charge nothing" and must not be resolved again (a second resolution would find
    the active budget)."""
    if budget is None:
        return _ACTIVE.get()
    if budget is NO_BUDGET:
        return None
    return _check(budget)


def label(value: object, default: str) -> str:
    """``label=`` of a mechanism: ``default`` (the mechanism's name) when None, else a str
    (``TypeError`` otherwise, before anything is charged or drawn)."""
    if value is None:
        return default
    if type(value) is not str and not isinstance(value, str):
        raise TypeError(f"label must be a str or None; got {type(value).__name__}")
    return str(value)
