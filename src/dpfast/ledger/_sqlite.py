"""The SQLite store: one file, WAL mode, ``BEGIN IMMEDIATE`` per charge (stdlib sqlite3).

``synchronous=FULL`` (the default) makes every committed charge survive a power loss;
``synchronous=NORMAL`` (``sqlite:///path?synchronous=normal``) still survives any crash
of the process or of other processes (WAL), but the last charges may be lost if the
machine loses power: use it only where the operating system cannot die under the service.

The store is bound to one file, found once by its absolute path: the database file's
device and inode are recorded when the store first opens it, every later connection
(after a fork, or a close) must find the same file, and every write transaction checks
that the path still names that file and the ``-wal`` its connection opened.  A ledger
file deleted or replaced while open therefore fails closed (:class:`LedgerError`)
instead of splitting one budget in two.
"""

from __future__ import annotations

import os
import random
import sqlite3
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ._store import _ABANDONED, FileId, LedgerError, SQLStore, _refuse_inherited

_SYNC = ("full", "normal", "extra")
# SQLite's busy handler waits at most this long per attempt; SQLiteStore._retry loops
# with short sleeps up to the store's timeout.
_BUSY_WAIT = 0.002


_T = TypeVar("_T")


def _file_id(path: str) -> FileId | None:
    """(device, inode) of the file at ``path``, or None if there is none."""
    try:
        st = os.stat(path)
    except OSError:  # missing, or unreachable: never the file a store opened
        return None
    return st.st_dev, st.st_ino


class SQLiteStore(SQLStore):
    dialect = "sqlite"
    begin = (
        "BEGIN IMMEDIATE"  # take the write lock first: check and write in one transaction
    )
    # the first read takes the snapshot (where a WAL reader can meet a busy database),
    # inside _begin's retry; later reads of the transaction use that snapshot
    begin_read = ("BEGIN", "SELECT count(*) FROM sqlite_master")
    begin_schema = "BEGIN IMMEDIATE"

    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "full",
        timeout: float = 30.0,
        memory: bool = False,
    ) -> None:
        if synchronous not in _SYNC:
            raise ValueError(f"synchronous must be one of {_SYNC}; got {synchronous!r}")
        self.path = path
        self.synchronous = synchronous
        self.timeout = float(timeout)
        self.forkable = self.closes_at_fork = not memory
        self._wal_id: FileId | None = None  # the -wal file of the current connection
        if memory:
            url = "memory:"
        else:
            url = (
                "sqlite:///"
                + path
                + ("" if synchronous == "full" else f"?synchronous={synchronous}")
            )
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
                if (
                    "locked" not in text and "busy" not in text
                ) or time.monotonic() >= deadline:
                    raise
            time.sleep(random.uniform(0.0001, 0.001))

    def _begin(self, cur: Any, statements: Sequence[str]) -> None:
        for stmt in statements:
            self._retry(lambda: cur.execute(stmt))  # noqa: B023 - run now, in this iteration

    def _moved(self) -> LedgerError:
        return LedgerError(
            f"the SQLite ledger {self.path!r} was deleted or replaced, or its -wal removed, "
            "while this process had it open; refusing to charge (charges could be lost or "
            "the budget split in two): check the file, then open the ledger again"
        )

    def _connect(self) -> sqlite3.Connection:
        if not self.forkable:
            target, mode = ":memory:", ""
        else:
            before = _file_id(self.path)
            if self._file_id is not None and before != self._file_id:
                raise self._moved()
            if before is not None:
                _refuse_inherited(before, self.path)
            # only the first connection may create the file
            target = "file:" + urllib.parse.quote(self.path)
            mode = "?mode=rw" if self._file_id is not None else "?mode=rwc"
        try:
            conn = sqlite3.connect(
                target + mode,
                timeout=_BUSY_WAIT,
                isolation_level=None,
                check_same_thread=False,
                uri=bool(mode),
            )
        except sqlite3.Error as e:
            raise LedgerError(f"cannot open the SQLite ledger {self.path!r}: {e}") from e
        try:
            if self.forkable:
                wal = self._retry(
                    lambda: conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                )
                if wal.lower() != "wal":
                    raise LedgerError(
                        f"the SQLite ledger {self.path!r} cannot use WAL mode ({wal})"
                    )
                # a first read opens (creates) the -wal, kept open as long as the connection
                self._retry(
                    lambda: conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                )
            conn.execute(f"PRAGMA synchronous={self.synchronous.upper()}")
        except BaseException as e:
            conn.close()
            err = self._translate(e)
            if err is None:
                raise
            raise err from e
        if self.forkable:
            db, self._wal_id = _file_id(self.path), _file_id(self.path + "-wal")
            if db is not None and before is None:
                try:  # a new file on the inode of a deleted one an inherited connection holds
                    _refuse_inherited(db, self.path)
                except LedgerError:
                    _ABANDONED.append(
                        (conn, db)
                    )  # shares that connection's locks: never close
                    raise
            expected = self._file_id or before
            if (
                db is None
                or self._wal_id is None
                or (expected is not None and db != expected)
            ):
                conn.close()
                raise self._moved()
            self._file_id = db
        return conn

    def _check_files(self) -> None:
        if self.forkable and (
            _file_id(self.path) != self._file_id
            or _file_id(self.path + "-wal") != self._wal_id
        ):
            raise self._moved()

    def _translate(self, exc: BaseException) -> BaseException | None:
        if isinstance(exc, LedgerError):
            return exc
        if not isinstance(exc, sqlite3.Error):
            return None
        text = str(exc)
        if isinstance(exc, sqlite3.DatabaseError) and "not a database" in text:
            return LedgerError(
                f"{self.path!r} is not a SQLite database, or is corrupt ({text})"
            )
        if "disk is full" in text or "database or disk is full" in text:
            return LedgerError(
                f"the SQLite ledger {self.path!r} is full ({text}); the charge "
                "was not recorded"
            )
        if "locked" in text or "busy" in text:
            return LedgerError(
                f"the SQLite ledger {self.path!r} stayed locked for "
                f"{self.timeout} s ({text}); the charge was not recorded"
            )
        return LedgerError(
            f"the SQLite ledger {self.path!r} failed: {type(exc).__name__}: {text}"
        )

    def _rollback(self, conn: Any) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")

    def _tables(self, cur: Any) -> set[str]:
        cur.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
        return {r[0] for r in cur.fetchall()}


def open_path(path: str, **options: Any) -> SQLiteStore:
    """The store of the file at ``path``, resolved once (current directory, symlinks) so
    that a later chdir or retargeted symlink never leads this store to another file."""
    return SQLiteStore(os.path.realpath(path), **options)
