"""Ledgers written before decimal amounts ("schema 1" units): read them, upgrade them once.

A dpfast before decimal parameters stored states and costs in units of 2**-1074
(2**-2148 for the squares of an "advanced" state) without the ``u2:`` tag of
:func:`dpfast.ledger._chain.state_text`, and caps at their binary value (the float 0.1 as
0.1000000000000000055...).  This module is the only code that knows it:

* :func:`upgrade` runs once when a store is opened (in its schema transaction): every
  budget row whose state is still in the old units is rewritten in the current ones,
  exactly, so a charge never meets the old units;
* :func:`legacy_state` converts a state or cost read in the old units; history rows are
  never rewritten (their hashes chain them), so a reservation made before the upgrade, and
  :meth:`dpfast.ledger.Ledger.verify`, still read old costs through it;
* :func:`legacy_filter` rebuilds the caps such a dpfast stored, so the budget still opens
  when the same caps are given again (it keeps its stored caps).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from ..accounting.rules import LEGACY_FACTOR, Filter, State

#: The prefix of a state or cost in the current units.
UNIT_TAG = "u2:"


def legacy_state(state: tuple[int | Fraction, ...]) -> State:
    """A state (or cost) read from a ledger of schema 1, in units of 2**-1074 (2**-2148 for
    the squares of an "advanced" state), converted to :data:`~dpfast.accounting.rules.UNIT`
    exactly."""
    powers = (1, 1, 2, 1) if len(state) == 4 else (1,) * len(state)
    return tuple(_norm(s * LEGACY_FACTOR**p) for s, p in zip(state, powers, strict=True))


def _norm(s: int | Fraction) -> int | Fraction:
    return s.numerator if type(s) is Fraction and s.denominator == 1 else s


def parse_legacy(text: str) -> State:
    """A state or cost stored without the ``u2:`` tag, in the current units."""
    parts: list[int | Fraction] = []
    for part in text.split(";"):
        f = Fraction(part)
        parts.append(f.numerator if f.denominator == 1 else f)
    return legacy_state(tuple(parts))


def upgrade(cur: Any, sql: Callable[[str], str], encode: Callable[[State], str]) -> int:
    """Rewrite every budget row whose state is in the old units (inside the store's schema
    transaction, when it is opened); return how many.  Each row is replaced only if it
    still holds the text read (a writer of another process may have charged it since)."""
    cur.execute(
        sql("SELECT key, state FROM dpfast_budget WHERE state NOT LIKE ? AND state <> ''"),
        (UNIT_TAG + "%",),
    )
    rows = cur.fetchall()
    for key, text in rows:
        cur.execute(
            sql("UPDATE dpfast_budget SET state = ? WHERE key = ? AND state = ?"),
            (encode(parse_legacy(text)), key, text),
        )
    return len(rows)


def legacy_filter(
    epsilon: object, delta: object, rule: str, delta_prime: object, rho: object
) -> Filter | None:
    """The filter a dpfast before decimal parameters stored for these caps (a float at its
    binary value), or None if there is none."""

    def binary(v: Any) -> Any:
        return Fraction(float(v)) if isinstance(v, (float, np.floating)) else v

    try:
        return Filter(
            binary(epsilon),
            binary(delta),
            rule,
            delta_prime=binary(delta_prime),
            rho=binary(rho),
        )
    except (TypeError, ValueError):
        return None
