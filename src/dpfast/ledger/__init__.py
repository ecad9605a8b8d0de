"""A durable, shared privacy ledger: keyed budgets that survive restarts and are shared
by threads, processes and hosts.

>>> from dpfast import ledger
>>> led = ledger.open("memory:")            # or "sqlite:///budgets.db", "postgresql://..."
>>> b = led.budget("census-2026", epsilon=1.0, delta=1e-6, rule="basic", create=True)
>>> b.spend(0.25, label="count").index      # committed before the mechanism draws noise
1
>>> b.remaining
Cost(epsilon=0.75, delta=1e-06, rho=None)

Stores
------
``memory:``
    An SQLite database in this process's memory: the full API (history, verify) for
    scripts and tests; not shared (a forked copy refuses to charge, pickling refuses).
``sqlite:///path.db`` (``sqlite:////abs/path.db``)
    One SQLite file in WAL mode; every charge is one ``BEGIN IMMEDIATE`` transaction.
    Option ``?synchronous=normal`` trades power-loss durability for speed.
``postgresql://user@host:port/db``
    PostgreSQL through psycopg 3 (extra ``ledger-postgres``), for several hosts.

Budgets (:class:`LedgerBudget`) are :class:`~dpfast.accounting.PrivacyBudget` objects
on a durable store, with the same filters (one implementation:
:class:`~dpfast.accounting.rules.Filter`); any mechanism's ``budget=`` accepts them.  Amounts are stored exactly (rationals as
text), the history is append-only and hash-chained (:meth:`Ledger.verify`), and the
schema is versioned (:data:`SCHEMA_VERSION`).  See ``docs/ledger.md``.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
import urllib.parse

import numpy as np

from ..accounting.budget import fork_generation
from ._budget import LedgerBudget
from ._chain import HistoryRow
from ._ledger import Ledger
from ._postgres import PostgresStore
from ._sqlite import SQLiteStore, open_path
from ._store import SCHEMA_VERSION, LedgerError
from ._verify import VerifyReport

__all__ = [
    "open",
    "Ledger",
    "LedgerBudget",
    "HistoryRow",
    "VerifyReport",
    "LedgerError",
    "SCHEMA_VERSION",
]


def open(url: str, *, timeout: float = 30.0) -> Ledger:  # noqa: A001 - the natural name, as sqlite3/shelve use it
    """Open (creating if needed) the ledger at ``url``.

    Parameters
    ----------
    url : str
        ``"memory:"``, ``"sqlite:///relative.db"``, ``"sqlite:////absolute.db"`` (option
        ``?synchronous=normal|full|extra``), or ``"postgresql://..."``.
    timeout : float, default 30
        Seconds to wait for a lock (SQLite) or a connection (PostgreSQL): a finite real
        number >= 0.  A fork of this process also waits up to this long for a charge in
        progress on a SQLite ledger (see ``docs/ledger.md``, "Processes").

    Returns
    -------
    Ledger

    Raises
    ------
    LedgerError
        The store cannot be opened, is not a dpfast ledger, or has a newer schema.
    """
    if not isinstance(url, str):
        raise TypeError(f"url must be a str; got {type(url).__name__}")
    timeout = _seconds(timeout)
    if url == "memory:":
        return Ledger(
            SQLiteStore(":memory:", memory=True, timeout=timeout), reopen=_reopen_budget
        )
    if url.startswith("sqlite:///"):
        path, _, query = url[len("sqlite:///") :].partition("?")
        options = dict(urllib.parse.parse_qsl(query, strict_parsing=bool(query)))
        unknown = set(options) - {"synchronous"}
        if unknown or not path:
            raise ValueError(
                f"a SQLite ledger URL is sqlite:///path[?synchronous=full|normal|extra]; got {url!r}"
            )
        return Ledger(open_path(path, timeout=timeout, **options), reopen=_reopen_budget)
    if url.startswith(("postgresql://", "postgres://")):
        return Ledger(PostgresStore(url, timeout=timeout), reopen=_reopen_budget)
    raise ValueError(
        f"unknown ledger URL {url!r}: use memory:, sqlite:///path or postgresql://..."
    )


def _seconds(timeout: object) -> float:
    if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
        raise TypeError(
            f"timeout must be a real number of seconds; got {type(timeout).__name__}"
        )
    try:
        seconds = float(timeout)
    except OverflowError:
        seconds = math.inf
    if not (math.isfinite(seconds) and seconds >= 0):
        raise ValueError(
            f"timeout must be a finite number of seconds >= 0; got {timeout!r}"
        )
    return seconds


_OPENED: dict[tuple[str, int], Ledger] = {}
_OPENED_LOCK = threading.Lock()  # two threads unpickling at once still share one Ledger


def _after_fork_in_child() -> None:
    global _OPENED_LOCK
    _OPENED_LOCK = threading.Lock()  # possibly held by a thread that did not survive


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _reopen_budget(url: str, key: str) -> LedgerBudget:
    """Unpickling a LedgerBudget: reconnect to its store (one Ledger per URL and process).
    Looks up :func:`open` in this module when called."""
    gen = fork_generation()
    with _OPENED_LOCK:
        led = _OPENED.get((url, gen))
        if led is None:
            led = _OPENED[(url, gen)] = open(url)
    return led.budget(key)
