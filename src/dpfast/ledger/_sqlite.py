"""The SQLite store: one file, WAL mode, ``BEGIN IMMEDIATE`` per charge (stdlib sqlite3).

``synchronous=FULL`` (the default) makes every committed charge survive a power loss;
``synchronous=NORMAL`` (``sqlite:///path?synchronous=normal``) still survives any crash
of the process or of other processes (WAL), but the last charges may be lost if the
machine loses power: use it only where the operating system cannot die under the service.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._store import LedgerError, SQLStore

_SYNC = ("full", "normal", "extra")
# SQLite's busy handler waits at most this long per attempt; SQLiteStore._retry loops
# with short sleeps up to the store's timeout.
_BUSY_WAIT = 0.002


_T = TypeVar("_T")


class SQLiteStore(SQLStore):
    dialect = "sqlite"
    begin = "BEGIN IMMEDIATE"  # take the write lock first: check and write in one transaction
    # the first read takes the snapshot (where a WAL reader can meet a busy database),
    # inside _begin's retry; later reads of the transaction use that snapshot
    begin_read = ("BEGIN", "SELECT count(*) FROM sqlite_master")
    begin_schema = "BEGIN IMMEDIATE"

    def __init__(self, path: str, *, synchronous: str = "full", timeout: float = 30.0,
                 memory: bool = False) -> None:
        if synchronous not in _SYNC:
            raise ValueError(f"synchronous must be one of {_SYNC}; got {synchronous!r}")
        self.path = path
        self.synchronous = synchronous
        self.timeout = float(timeout)
        self.forkable = not memory
        if memory:
            url = "memory:"
        else:
            url = "sqlite:///" + path + ("" if synchronous == "full" else f"?synchronous={synchronous}")
        super().__init__(url)

    def _retry(self, fn: Callable[[], _T]) -> _T:
        """Call ``fn`` until the database is not locked, for up to ``timeout`` seconds.

        SQLite's own busy handler sleeps 1, 2, 5, ... 100 ms between attempts, which
        puts a waiting writer up to 100 ms behind a lock freed long before; short
        randomized sleeps here keep the tail latency of contended charges low."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as e:
                text = str(e)
                if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.0001, 0.001))

    def _begin(self, cur: Any, statements: Sequence[str]) -> None:
        for stmt in statements:
            self._retry(lambda: cur.execute(stmt))

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(":memory:" if not self.forkable else self.path,
                                   timeout=_BUSY_WAIT, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as e:
            raise LedgerError(f"cannot open the SQLite ledger {self.path!r}: {e}") from e
        try:
            if self.forkable:
                mode = self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
                if mode.lower() != "wal":
                    raise LedgerError(f"the SQLite ledger {self.path!r} cannot use WAL mode ({mode})")
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
        except sqlite3.Error as e:
            conn.close()
            err = self._translate(e)
            assert err is not None      # (every sqlite3.Error is translated)
            raise err from e
        return conn

    def _translate(self, exc: BaseException) -> BaseException | None:
        if isinstance(exc, LedgerError):
            return exc
        if not isinstance(exc, sqlite3.Error):
            return None
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            return LedgerError(f"{self.path!r} is not a SQLite database, or is corrupt ({text})")
        if "disk is full" in text or "database or disk is full" in text:
            return LedgerError(f"the SQLite ledger {self.path!r} is full ({text}); the charge "
                               "was not recorded")
        if "locked" in text or "busy" in text:
            return LedgerError(f"the SQLite ledger {self.path!r} stayed locked for "
                               f"{self.timeout} s ({text}); the charge was not recorded")
        return LedgerError(f"the SQLite ledger {self.path!r} failed: {type(exc).__name__}: {text}")

    def _rollback(self, conn: Any) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _tables(self, cur: Any) -> set[str]:
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {r[0] for r in cur.fetchall()}


def open_path(path: str, **options: Any) -> SQLiteStore:
    return SQLiteStore(os.path.abspath(path), **options)
