"""The SQLite store: one file, WAL mode, ``BEGIN IMMEDIATE`` per charge (stdlib sqlite3).

``synchronous=FULL`` (the default) makes every committed charge survive a power loss;
``synchronous=NORMAL`` (``sqlite:///path?synchronous=normal``) still survives any crash
of the process or of other processes (WAL), but the last charges may be lost if the
machine loses power: use it only where the operating system cannot die under the service.
"""

from __future__ import annotations

import os
import sqlite3

from ._store import LedgerError, SQLStore

_SYNC = ("full", "normal", "extra")


class SQLiteStore(SQLStore):
    dialect = "sqlite"
    begin = "BEGIN IMMEDIATE"  # take the write lock first: check and write in one transaction
    begin_read = "BEGIN"
    begin_schema = "BEGIN IMMEDIATE"

    def __init__(self, path, *, synchronous="full", timeout=30.0, memory=False):
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

    def _connect(self):
        try:
            conn = sqlite3.connect(":memory:" if not self.forkable else self.path,
                                   timeout=self.timeout, isolation_level=None,
                                   check_same_thread=False)
        except sqlite3.Error as e:
            raise LedgerError(f"cannot open the SQLite ledger {self.path!r}: {e}") from e
        try:
            if self.forkable:
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if mode.lower() != "wal":
                    raise LedgerError(f"the SQLite ledger {self.path!r} cannot use WAL mode ({mode})")
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
        except sqlite3.Error as e:
            conn.close()
            raise self._translate(e) from e
        return conn

    def _translate(self, exc):
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

    def _rollback(self, conn):
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _tables(self, cur):
        cur.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        return {r[0] for r in cur.fetchall()}


def open_path(path, **options):
    return SQLiteStore(os.path.abspath(path), **options)
