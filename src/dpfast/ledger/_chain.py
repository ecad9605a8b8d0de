"""Exact amounts as text, and the hash chain of a budget's history.

Every history row carries ``hash = sha256(canonical JSON of [prev, fields...])`` where
``prev`` is the hash of the row before it (a fixed genesis value for row 0).  Editing,
deleting or reordering any row changes a hash that a later row (or the budget's ``head``)
still names, so :func:`verify_rows` finds it.  The chain is tamper *evident*, not tamper
proof: whoever can rewrite the whole table can recompute every hash; keep the
``head`` printed by ``python -m dpfast ledger show`` somewhere else to detect that too.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, overload

from ..accounting.rules import Filter
from ._schema1 import UNIT_TAG, parse_legacy

GENESIS = "0" * 64
# Kinds of history rows.  "spend" and "reserve" add their cost to the state; "commit"
# settles a reservation without changing the state; "rollback" (by the process that
# reserved) and "release" (by an operator, for a reservation whose process died) take
# the reserved cost back out.
KINDS = ("create", "spend", "reserve", "commit", "rollback", "release")


@overload
def rational(x: None) -> None: ...
@overload
def rational(x: int | float | Fraction | str) -> str: ...
@overload
def rational(x: object) -> str | None: ...
def rational(x: Any) -> str | None:
    """An exact amount as text: "n" or "n/d" (None stays None)."""
    if x is None:
        return None
    if type(x) is int:
        return str(x)
    if type(x) is not float and type(x) is not Fraction:
        x = Fraction(x)
    n, d = x.as_integer_ratio()
    return str(n) if d == 1 else f"{n}/{d}"


def parse_rational(text: str | None) -> Fraction | None:
    return None if text is None else Fraction(text)


# States and costs are stored in the budget's scaled units (accounting.rules.UNIT),
# marked with UNIT_TAG.  Text without it was written with the unit 2**1074 of schema 1
# (before decimal amounts): a store upgrades its budget rows once when it is opened
# (_schema1.upgrade); history rows are never rewritten (their hashes chain them), so an
# old cost is converted exactly on reading (_schema1.parse_legacy) and still verifies.


def state_text(state: tuple[int | Fraction, ...]) -> str:
    """A filter state (scaled ints, or Fractions) as text, exactly."""
    if not state:
        return ""
    return UNIT_TAG + ";".join(rational(s) for s in state)


def parse_state(text: str) -> tuple[int | Fraction, ...]:
    """The state (or cost) stored as ``text``, in the current units."""
    if text == "":
        return ()
    if not text.startswith(UNIT_TAG):
        return parse_legacy(text)
    out: list[int | Fraction] = []
    for part in text[len(UNIT_TAG) :].split(";"):
        if "/" not in part:
            out.append(int(part))
            continue
        f = Fraction(part)
        out.append(f.numerator if f.denominator == 1 else f)
    return tuple(out)


def params_text(filt: Filter) -> str:
    """A filter's exact parameters as stored (the budget row and its "create" row)."""
    return json.dumps(
        {k: rational(v) if k != "composition" else v for k, v in filt.params.items()},
        sort_keys=True,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class HistoryRow:
    """One append-only row of a durable budget's history.

    ``epsilon``, ``delta``, ``rho`` are exact (:class:`~fractions.Fraction`, or None
    where they do not apply); ``ref`` is the ``seq`` of the reservation a "commit",
    "rollback" or "release" row settles; ``note`` holds the budget's parameters on the
    "create" row and an operator's reason on a "release" row.
    """

    key: str
    seq: int
    kind: str
    ref: int | None
    label: str | None
    epsilon: Fraction | None
    delta: Fraction | None
    rho: Fraction | None
    cost: str
    at: str
    host: str
    pid: int
    note: str | None
    prev: str
    hash: str

    def fields(self) -> tuple[Any, ...]:
        """The stored text of every column, in schema order (for the database and CSV)."""
        return (
            self.key,
            self.seq,
            self.kind,
            self.ref,
            self.label,
            rational(self.epsilon),
            rational(self.delta),
            rational(self.rho),
            self.cost,
            self.at,
            self.host,
            self.pid,
            self.note,
            self.prev,
            self.hash,
        )

    def as_dict(self) -> dict[str, Any]:
        names = [f.name for f in dataclasses.fields(self)]
        return dict(zip(names, self.fields()))


COLUMNS = tuple(f.name for f in dataclasses.fields(HistoryRow))


def row_hash(
    prev: str,
    key: str,
    seq: int,
    kind: str,
    ref: int | None,
    label: str | None,
    eps: str | None,
    dlt: str | None,
    rho: str | None,
    cost: str,
    at: str,
    host: str,
    pid: int,
    note: str | None,
) -> str:
    """The chained hash of one row (its stored text, with the previous row's hash)."""
    body = json.dumps(
        [prev, key, seq, kind, ref, label, eps, dlt, rho, cost, at, host, pid, note],
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(body.encode()).hexdigest()


def open_reservations(rows: Iterable[HistoryRow]) -> list[HistoryRow]:
    """The reservations among ``rows`` (a budget's history) that nothing settled."""
    rows = list(rows)
    settled = {r.ref for r in rows if r.ref is not None}
    return [r for r in rows if r.kind == "reserve" and r.seq not in settled]


def from_stored(values: Sequence[Any]) -> HistoryRow:
    """A HistoryRow from the stored columns (in :data:`COLUMNS` order)."""
    (key, seq, kind, ref, label, eps, dlt, rho, cost, at, host, pid, note, prev, h) = values
    return HistoryRow(
        key,
        int(seq),
        kind,
        None if ref is None else int(ref),
        label,
        parse_rational(eps),
        parse_rational(dlt),
        parse_rational(rho),
        cost,
        at,
        host,
        int(pid),
        note,
        prev,
        h,
    )
