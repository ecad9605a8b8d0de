"""Checking a budget's history: its hash chain, and a replay through its filter."""

from __future__ import annotations

import dataclasses
import json

from ..accounting.rules import Filter
from . import _chain
from ._store import SQLStore


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    """What :meth:`Ledger.verify` found for one budget: ``ok`` iff ``problems`` is empty."""

    key: str
    rows: int
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_budget(store: SQLStore, key: str) -> VerifyReport:
    """Check the history of budget ``key`` in ``store`` (see :meth:`Ledger.verify`)."""
    rows, budget = store.history(key)
    problems = []
    if budget is None:
        return VerifyReport(key, len(rows), (f"no budget row for {key!r}",))
    params, state_text, seq, head = budget
    prev = _chain.GENESIS
    for i, r in enumerate(rows):
        if r.seq != i:
            problems.append(f"row {i}: numbered {r.seq} (a row was removed or reordered)")
        if r.prev != prev:
            problems.append(f"row {r.seq}: does not chain to the row before it")
        f = r.fields()
        if _chain.row_hash(r.prev, *f[:13]) != r.hash:
            problems.append(f"row {r.seq}: contents do not match its hash (edited)")
        prev = r.hash
    if head != prev or int(seq) != len(rows) - 1:
        problems.append(
            "the budget's head does not name the last history row "
            "(rows were removed or appended outside dpfast)"
        )
    if not rows or rows[0].kind != "create" or rows[0].note != params:
        problems.append("the budget's parameters differ from its creation row")
        return VerifyReport(key, len(rows), tuple(problems))
    filt = Filter.from_params(json.loads(params))  # params: the creation row's note
    state = filt.zero()
    reserved, settled = {}, set()
    for r in rows[1:]:
        if r.kind in ("spend", "reserve"):
            cost = _chain.parse_state(r.cost)
            if (
                r.epsilon is None
                or r.delta is None
                or cost != filt.cost((r.epsilon, r.delta, r.rho))
            ):
                problems.append(f"row {r.seq}: its cost does not match its amounts")
            new = filt.admit(state, cost)
            if new is None:
                problems.append(f"row {r.seq}: the history exceeds the budget here")
                new = Filter.add(state, cost)
            state = new
            if r.kind == "reserve":
                reserved[r.seq] = cost
        elif r.kind in ("commit", "rollback", "release"):
            if r.ref not in reserved or r.ref in settled:
                problems.append(
                    f"row {r.seq}: settles {r.ref}, which is not an open reservation"
                )
                continue
            settled.add(r.ref)
            if r.kind != "commit":
                state = Filter.add(state, reserved[r.ref], -1)
        else:
            problems.append(f"row {r.seq}: unknown kind {r.kind!r}")
    if state != _chain.parse_state(state_text):
        problems.append("the stored state differs from the replayed history")
    return VerifyReport(key, len(rows), tuple(problems))
