"""A budget of a ledger: :class:`~dpfast.accounting.PrivacyBudget` on a durable store.

:class:`KeyedStore` is the :class:`~dpfast.accounting.budget.BudgetStore` of one keyed
budget of a SQL store: each charge is one transaction of that store
(:meth:`~dpfast.ledger._store.SQLStore.charge`), in which the budget's rule admits it.
:class:`LedgerBudget` is the one budget class with the ledger's public extras (history,
verification, batched charges); it changes nothing in how a charge is decided or kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from ..accounting.budget import Charge, LedgerEntry, PrivacyBudget, Reservation, refusal
from ..accounting.rules import Filter, State
from ._chain import HistoryRow, open_reservations
from ._store import SQLStore
from ._verify import VerifyReport, verify_budget

_STATUS = {"commit": "committed", "rollback": "rolled_back", "release": "released"}

#: Unpickling a budget: ``reopen(url, key)`` (given by :func:`dpfast.ledger.open`).
Reopen = Callable[[str, str], Any]


class KeyedStore:
    """Budget ``key`` of the SQL store ``sql``, as a budget's store."""

    foreign = "reservation belongs to another budget"

    def __init__(self, sql: SQLStore, key: str, reopen: Reopen | None = None) -> None:
        self.sql = sql
        self.key = key
        self.url = sql.url
        self.where = f" on budget {key!r}"
        self._reopen = reopen

    def check_process(self) -> None:
        """Nothing here: every transaction checks its process (:class:`SQLStore`)."""

    def admit(
        self, rule: Filter, charges: Sequence[Charge], status: str
    ) -> list[LedgerEntry]:
        kind = "reserve" if status == "reserved" else "spend"
        seqs = self.sql.charge(
            self.key,
            rule,
            [(c.cost, c.amounts, c.label, kind) for c in charges],
            lambda state, i: refusal(rule, self.where, charges, state, i),
        )
        return [
            LedgerEntry(seq, c.label, c.epsilon, c.delta, c.rho, status)
            for seq, c in zip(seqs, charges, strict=True)
        ]

    def settle(self, reservation: Reservation, cost: State, status: str) -> LedgerEntry:
        kind = "commit" if status == "committed" else "rollback"
        r = self.sql.settle(self.key, reservation.index, kind)
        return LedgerEntry(
            r.seq, r.label, reservation.epsilon, reservation.delta, reservation.rho, status
        )

    def state(self) -> State:
        return self.sql.state(self.key)

    def history(self) -> list[HistoryRow]:
        return self.sql.history(self.key)[0]

    def entries(self) -> list[LedgerEntry]:
        rows = self.history()
        settled = {r.ref: _STATUS[r.kind] for r in rows if r.ref is not None}
        out = []
        for r in rows:
            if r.kind in ("spend", "reserve"):
                status = "spent" if r.kind == "spend" else settled.get(r.seq, "reserved")
                assert r.epsilon is not None and r.delta is not None  # (a charge row)
                out.append(
                    LedgerEntry(
                        r.seq,
                        r.label,
                        float(r.epsilon),
                        float(r.delta),
                        None if r.rho is None else float(r.rho),
                        status,
                    )
                )
        return out

    def same(self, other: object) -> bool:
        return isinstance(other, KeyedStore) and (other.url, other.key) == (
            self.url,
            self.key,
        )

    def reduce(self) -> tuple[Any, tuple[str, str]]:
        if not self.sql.forkable:
            raise TypeError(
                f"a budget of the {self.url!r} ledger cannot be pickled: "
                "it lives in this process's memory; use a sqlite:/// or "
                "postgresql:// ledger to share budgets"
            )
        if self._reopen is None:
            raise TypeError(
                f"a budget of the {self.url!r} ledger cannot be pickled: open "
                "the ledger with dpfast.ledger.open to share its budgets"
            )
        return (self._reopen, (self.url, self.key))


class LedgerBudget(PrivacyBudget):
    """A keyed budget of a :class:`~dpfast.ledger.Ledger`: the same filters and methods
    as :class:`~dpfast.accounting.PrivacyBudget`, with every charge a committed
    transaction of the store before the method returns (so before any noise is drawn).

    Obtain one with :meth:`Ledger.budget`; pass it as ``budget=`` to any mechanism.
    It may be used from several threads, forked into worker processes (each reopens its
    own connection) and pickled (it reconnects to the same store by URL and key; a
    ``memory:`` ledger refuses both, as an in-memory budget does).
    """

    def _keyed(self) -> KeyedStore:
        return cast(KeyedStore, self._store)

    @property
    def key(self) -> str:
        """The budget's name in its ledger."""
        return self._keyed().key

    @property
    def ledger_url(self) -> str:
        """The URL of its ledger."""
        return self._keyed().url

    def spend_many(self, charges: Iterable[Sequence[Any]]) -> list[LedgerEntry]:
        """Charge several (epsilon, delta) mechanisms in one transaction, all or none.

        Parameters
        ----------
        charges : iterable of tuples
            Each ``(epsilon, delta)`` or ``(epsilon, delta, label)``, validated like
            :meth:`spend`.

        Returns
        -------
        list of LedgerEntry

        Raises
        ------
        BudgetExceededError
            One of them would overspend; none was recorded.

        Notes
        -----
        The batched form of :meth:`spend`: one durable commit for a request that runs
        several mechanisms (a histogram per column, a count and a sum), which is what
        makes thousands of charges per second cheap on a disk that syncs each commit.
        """
        rows = []
        for c in charges:
            c = tuple(c)
            if len(c) not in (2, 3):
                raise TypeError(
                    f"each charge must be (epsilon, delta) or (epsilon, delta, label); got {c!r}"
                )
            rows.append((c[0], c[1], None, c[2] if len(c) == 3 else None))
        if not rows:
            return []
        return self._charge_all(rows, "spent")

    # ---- the durable record ------------------------------------------------------------

    def history(self) -> list[HistoryRow]:
        """The append-only history of this budget, oldest first (a list of
        :class:`~dpfast.ledger.HistoryRow`)."""
        return self._keyed().history()

    def open_reservations(self) -> list[HistoryRow]:
        """Reservations not yet committed or rolled back (with the host and process that
        made them): a reservation of a process that died stays counted as spent until an
        operator releases it (:meth:`Ledger.release`)."""
        return open_reservations(self.history())

    def verify(self) -> list[VerifyReport]:
        """Check this budget's hash chain and replay it; see :meth:`Ledger.verify`."""
        return [verify_budget(self._keyed().sql, self.key)]

    def __repr__(self) -> str:
        return (
            f"LedgerBudget({self.key!r} in {self.ledger_url!r}, {self._rule.describe()}, "
            f"rule={self.composition!r}, spent={self.spent})"
        )
