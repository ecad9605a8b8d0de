"""A :class:`~dpfast.accounting.PrivacyBudget` whose state lives in a durable store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from .._errors import BudgetExceededError
from ..accounting.budget import LedgerEntry, PrivacyBudget, Reservation, _label
from ._chain import HistoryRow

if TYPE_CHECKING:
    from ._ledger import Ledger, VerifyReport

_STATUS = {"commit": "committed", "rollback": "rolled_back", "release": "released"}


class LedgerBudget(PrivacyBudget):
    """A keyed budget of a :class:`~dpfast.ledger.Ledger`: the same filters and methods
    as :class:`~dpfast.accounting.PrivacyBudget`, with every charge a committed
    transaction of the store before the method returns (so before any noise is drawn).

    Obtain one with :meth:`Ledger.budget`; pass it as ``budget=`` to any mechanism.
    It may be used from several threads, forked into worker processes (each reopens its
    own connection) and pickled (it reconnects to the same store by URL and key; a
    ``memory:`` ledger refuses both, as an in-memory budget does).
    """

    def __init__(self, ledger: Ledger, key: str, filt: Any) -> None:
        self._init_filter(filt)
        self.ledger_url = ledger.url
        self.key = key
        self._owner_ledger = ledger
        self._store = ledger._store

    # ---- charging --------------------------------------------------------------------

    def _admit(
        self, epsilon: object, delta: object, rho: object, label: str | None, status: str,
    ) -> LedgerEntry | Reservation:
        entry: LedgerEntry | Reservation = self._admit_many([(epsilon, delta, rho, label)],
                                                            status)[0]
        return entry

    def _admit_many(
        self, charges: Sequence[tuple[object, object, object, str | None]], status: str,
    ) -> list[Any]:
        filt = self._filter
        prepared, shown = [], []
        kind = "reserve" if status == "reserved" else "spend"
        for epsilon, delta, rho, label in charges:
            eps_f, dlt_f, rho_f, amounts = filt.convert(epsilon, delta, rho)
            _label(label)
            cost = filt.cost(amounts)
            prepared.append((cost, amounts, label, kind))
            shown.append((eps_f, dlt_f, rho_f, rho is not None, label, cost))

        def refusal(state: tuple[int | Fraction, ...], i: int) -> BudgetExceededError:
            eps_f, dlt_f, rho_f, is_rho, label, _ = shown[i]
            what = f"rho={rho_f!r}" if is_rho else f"epsilon={eps_f!r}, delta={dlt_f!r}"
            extra = f" (charge {i + 1} of {len(shown)}; none of them was recorded)" if len(shown) > 1 else ""
            return BudgetExceededError(
                f"charge ({what}, label={label!r}) on budget {self.key!r} refused: it would "
                f"exceed the budget{extra}; remaining {filt.remaining(state)}")

        seqs = self._store.charge(self.key, filt, prepared, refusal)
        out: list[Any] = []   # Reservation or LedgerEntry, by status
        for seq, (eps_f, dlt_f, rho_f, _, label, cost) in zip(seqs, shown, strict=True):
            if status == "reserved":
                out.append(Reservation(seq, label, eps_f, dlt_f, rho_f, (self, cost)))
            else:
                out.append(LedgerEntry(seq, label, eps_f, dlt_f, rho_f, "spent"))
        return out

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
                raise TypeError(f"each charge must be (epsilon, delta) or (epsilon, delta, label); got {c!r}")
            rows.append((c[0], c[1], None, c[2] if len(c) == 3 else None))
        if not rows:
            return []
        return self._admit_many(rows, "spent")

    def _settle(self, reservation: Reservation, status: str) -> LedgerEntry:
        if not isinstance(reservation, Reservation):
            raise TypeError(f"reservation must be a Reservation; got {type(reservation).__name__}")
        owner = reservation._owner
        if (not isinstance(owner, tuple) or not isinstance(owner[0], LedgerBudget)
                or (owner[0].ledger_url, owner[0].key) != (self.ledger_url, self.key)):
            raise ValueError("reservation belongs to another budget")
        kind = "commit" if status == "committed" else "rollback"
        r = self._store.settle(self.key, reservation.index, kind)
        return LedgerEntry(r.seq, r.label, reservation.epsilon, reservation.delta,
                           reservation.rho, status)

    def _snapshot(self) -> tuple[int | Fraction, ...]:
        return self._store.state(self.key)

    # ---- the durable record ------------------------------------------------------------

    def history(self) -> list[HistoryRow]:
        """The append-only history of this budget, oldest first (a list of
        :class:`~dpfast.ledger.HistoryRow`)."""
        return self._store.history(self.key)[0]

    @property
    def ledger(self) -> list[LedgerEntry]:
        """The charges in :class:`LedgerEntry` form (as for an in-memory budget): one
        line per "spend" or "reserve" row, its status resolved by later rows."""
        rows = self.history()
        settled = {r.ref: _STATUS[r.kind] for r in rows if r.ref is not None}
        out = []
        for r in rows:
            if r.kind in ("spend", "reserve"):
                status = "spent" if r.kind == "spend" else settled.get(r.seq, "reserved")
                assert r.epsilon is not None and r.delta is not None  # (a charge row)
                out.append(LedgerEntry(r.seq, r.label, float(r.epsilon), float(r.delta),
                                       None if r.rho is None else float(r.rho), status))
        return out

    def open_reservations(self) -> list[HistoryRow]:
        """Reservations not yet committed or rolled back (with the host and process that
        made them): a reservation of a process that died stays counted as spent until an
        operator releases it (:meth:`Ledger.release`)."""
        return open_reservations(self.history())

    def verify(self) -> list[VerifyReport]:
        """Check this budget's hash chain and replay it; see :meth:`Ledger.verify`."""
        return self._owner_ledger.verify(self.key)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        if not self._store.forkable:
            raise TypeError(f"a budget of the {self.ledger_url!r} ledger cannot be pickled: "
                            "it lives in this process's memory; use a sqlite:/// or "
                            "postgresql:// ledger to share budgets")
        from . import _reopen_budget
        return (_reopen_budget, (self.ledger_url, self.key))

    def __repr__(self) -> str:
        return (f"LedgerBudget({self.key!r} in {self.ledger_url!r}, {self._filter.describe()}, "
                f"rule={self.composition!r}, spent={self.spent})")


def open_reservations(rows: Iterable[HistoryRow]) -> list[HistoryRow]:
    settled = {r.ref for r in rows if r.ref is not None}
    return [r for r in rows if r.kind == "reserve" and r.seq not in settled]

