"""Durable storage of keyed budgets: one SQL implementation, two dialects.

Every charge is one short transaction that reads the budget's row (locking it for
writing: ``BEGIN IMMEDIATE`` in SQLite, ``SELECT ... FOR UPDATE`` in PostgreSQL), asks
the budget's :class:`~dpfast.accounting.rules.Filter` whether the charge is admissible,
appends the history row and updates the state, then commits (SQLite's "Atomic Commit"
and WAL documents; psycopg 3 transactions).  Nothing is cached outside the transaction,
so processes and hosts sharing the store never overspend.  The transaction has
committed before :meth:`SQLStore.charge` returns, i.e. before any noise is drawn.

A connection belongs to one process and is never used or closed in another.  SQLite
keeps its POSIX-lock bookkeeping per process, and a forked child inherits it without the
locks themselves: a child that still holds (a copy of) a connection to a file takes no
real lock on that file with a connection of its own, so another process can checkpoint
and delete the ``-wal`` the child is committing into.  Hence, at ``os.fork`` (see
:func:`_before_fork`), every SQLite file connection of this process is closed first,
under its store's lock (waiting for a charge in progress to commit), and both processes
reconnect lazily; a connection that could not be closed is left to the child, which then
refuses that file (:func:`_refuse_inherited`).  Every write transaction also checks that
the database file and its ``-wal`` are still the ones the connection opened.  Threads of
one process share its connection under a lock.
"""

from __future__ import annotations

import datetime
import os
import socket
import threading
import weakref
from collections.abc import Callable, Sequence
from fractions import Fraction
from types import TracebackType
from typing import Any, Literal

from .._errors import BudgetExceededError, DPFastError
from ..accounting.budget import fork_generation
from ..accounting.rules import Filter
from . import _chain, _schema1
from ._chain import GENESIS, params_text, rational, row_hash, state_text

SCHEMA_VERSION = 1
APPLICATION = "dpfast-ledger"


class LedgerError(DPFastError, RuntimeError):
    """The ledger's store failed (unreadable, foreign or newer schema, lost connection,
    disk full, ...).  The charge in progress was not admitted: nothing may be released."""


# Schema version -> statements that bring the previous version to it.  Version 1 is the
# first; a later version appends an entry and never edits an earlier one.
_TABLES_V1 = [
    "CREATE TABLE dpfast_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE dpfast_budget (key TEXT PRIMARY KEY, params TEXT NOT NULL, "
    "state TEXT NOT NULL, seq BIGINT NOT NULL, head TEXT NOT NULL)",
    "CREATE TABLE dpfast_history (key TEXT NOT NULL, seq BIGINT NOT NULL, kind TEXT NOT NULL, "
    "ref BIGINT, label TEXT, epsilon TEXT, delta TEXT, rho TEXT, cost TEXT NOT NULL, "
    "at TEXT NOT NULL, host TEXT NOT NULL, pid BIGINT NOT NULL, note TEXT, prev TEXT NOT NULL, "
    "hash TEXT NOT NULL, PRIMARY KEY (key, seq))",
    # a reservation is settled (commit / rollback / release) at most once
    "CREATE UNIQUE INDEX dpfast_history_settles ON dpfast_history (key, ref) WHERE ref IS NOT NULL",
]
MIGRATIONS = {
    "sqlite": {
        1: _TABLES_V1
        + [
            "CREATE TRIGGER dpfast_history_no_update BEFORE UPDATE ON dpfast_history "
            "BEGIN SELECT RAISE(ABORT, 'dpfast_history is append-only'); END",
            "CREATE TRIGGER dpfast_history_no_delete BEFORE DELETE ON dpfast_history "
            "BEGIN SELECT RAISE(ABORT, 'dpfast_history is append-only'); END",
        ]
    },
    "postgresql": {
        1: _TABLES_V1
        + [
            "CREATE FUNCTION dpfast_append_only() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'dpfast_history is append-only'; END $$",
            "CREATE TRIGGER dpfast_history_append_only BEFORE UPDATE OR DELETE ON dpfast_history "
            "FOR EACH ROW EXECUTE FUNCTION dpfast_append_only()",
            "CREATE TRIGGER dpfast_history_no_truncate BEFORE TRUNCATE ON dpfast_history "
            "FOR EACH STATEMENT EXECUTE FUNCTION dpfast_append_only()",
        ]
    },
}

_State = tuple[int | Fraction, ...]
FileId = tuple[int, int]  # (st_dev, st_ino) of a file
_HOST = socket.gethostname()
# Every live store of this process (a leaf lock: nothing else is acquired under it).
_STORES: weakref.WeakSet[SQLStore] = weakref.WeakSet()
_REGISTRY_LOCK = threading.RLock()
# Connections inherited through fork: kept referenced and never closed here (closing one
# could checkpoint and delete files the parent still uses), with the SQLite file of each.
_ABANDONED: list[tuple[Any, FileId | None]] = []
# The stores whose lock a forking thread holds, by thread (two threads may fork at once).
_HELD_AT_FORK: dict[int, list[SQLStore]] = {}


def _live_stores() -> list[SQLStore]:
    """The live stores, in one fixed order (threads forking at once lock them in turn)."""
    with _REGISTRY_LOCK:
        return sorted(_STORES, key=id)


def _before_fork() -> None:
    """Close every SQLite file connection of this process before it forks, each under
    its store's lock, held until the fork is done (so no thread is inside a charge then).

    A connection is left open (and the child will refuse its file) only if this thread
    is itself inside one of the store's transactions, or if another thread did not leave
    one within the store's timeout."""
    held = _HELD_AT_FORK.setdefault(threading.get_ident(), [])
    for store in _live_stores():
        if not store.closes_at_fork:
            continue
        if not store._lock.acquire(timeout=min(store.timeout, threading.TIMEOUT_MAX)):
            continue
        if store._in_transaction:  # this thread is inside one (the lock is reentrant)
            store._lock.release()
            continue
        held.append(store)
        try:
            store._close_own()
        except Exception:  # noqa: BLE001 - a fork hook must not raise; the store keeps
            pass  # the connection, and the child refuses its file


def _after_fork_in_parent() -> None:
    for store in _HELD_AT_FORK.pop(threading.get_ident(), []):
        store._lock.release()


def _after_fork_in_child() -> None:
    global _REGISTRY_LOCK
    _REGISTRY_LOCK = threading.RLock()  # possibly held by a thread that did not survive
    _HELD_AT_FORK.clear()
    for store in list(_STORES):
        store._lock = threading.RLock()
        store._in_transaction = 0
        if store._conn is not None:
            _ABANDONED.append((store._conn, store._file_id))
            store._conn = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork,
        after_in_parent=_after_fork_in_parent,
        after_in_child=_after_fork_in_child,
    )


def _refuse_inherited(file_id: FileId, path: str) -> None:
    """Raise LedgerError if this process holds a connection to the SQLite file
    ``file_id`` inherited from the process that forked it."""
    inherited = any(fid == file_id for _, fid in _ABANDONED) or any(
        s._conn is not None and s._pid != os.getpid() and s._file_id == file_id
        for s in _live_stores()
    )
    if inherited:
        raise LedgerError(
            f"this process was forked while a connection to the SQLite ledger {path!r} "
            "was open and could not be closed first (a thread of the parent was inside a "
            "charge, or the fork bypassed os.fork); SQLite's locks do not survive a fork, so "
            "this process refuses that file: fork workers while no thread is charging, "
            "start them with multiprocessing's 'spawn' or 'forkserver' method, or use a "
            "postgresql:// ledger"
        )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="microseconds")


_SELECT_ROW = "SELECT " + ", ".join(_chain.COLUMNS) + " FROM dpfast_history"
_INSERT_ROW = (
    "INSERT INTO dpfast_history ("
    + ", ".join(_chain.COLUMNS)
    + ") VALUES ("
    + ", ".join("?" * len(_chain.COLUMNS))
    + ")"
)


class SQLStore:
    """The shared SQL of the SQLite and PostgreSQL stores (subclasses connect)."""

    dialect: str = ""  # "sqlite" or "postgresql" (subclasses)
    # a transaction that will write (and must lock the budget)
    begin: str | tuple[str, ...] = "BEGIN"
    begin_read: str | tuple[str, ...] = "BEGIN"
    begin_schema: str | tuple[str, ...] = "BEGIN"
    for_update = ""
    # a statement serializing creators of one key (SQLite: BEGIN IMMEDIATE does)
    create_lock: str | None = None
    forkable = True  # False for a store that lives in this process's memory
    closes_at_fork = False  # True for a SQLite file: see _before_fork
    timeout = 30.0

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.RLock()
        self._in_transaction = 0  # how many _Transactions hold the lock
        self._conn: Any = None
        self._gen: int | None = None  # the fork generation and process that opened _conn
        self._pid: int | None = None
        self._file_id: FileId | None = None  # the SQLite database file, once opened
        with _REGISTRY_LOCK:
            _STORES.add(self)
        with self.transaction(schema=True) as cur:
            self._ensure_schema(cur)

    # ---- connections and transactions ------------------------------------------------

    def _connect(self) -> Any:
        raise NotImplementedError

    def _translate(self, exc: BaseException) -> BaseException | None:
        """A LedgerError for a driver exception (or None to re-raise it unchanged)."""
        raise NotImplementedError

    def _check_files(self) -> None:
        """Inside a write transaction: raise LedgerError unless the store's files are
        still the ones its connection opened (SQLite)."""

    def sql(self, text: str) -> str:
        return text

    def _connection(self) -> Any:
        forked = self._gen is not None and self._gen != fork_generation()
        if self._pid is not None and self._pid != os.getpid():
            forked = True  # also a fork that bypassed os.fork's hooks
            if self._conn is not None:  # (the hooks move it to _ABANDONED)
                _ABANDONED.append((self._conn, self._file_id))
                self._conn = None
        if forked and not self.forkable:
            raise BudgetExceededError(
                f"the ledger {self.url!r} lives in another process's memory: a forked "
                "copy never charges; use a sqlite:/// or postgresql:// ledger to share "
                "budgets between processes"
            )
        if self._conn is None:
            self._conn = self._connect()
            self._gen, self._pid = fork_generation(), os.getpid()
        return self._conn

    def transaction(self, schema: bool = False, read: bool = False) -> _Transaction:
        return _Transaction(self, schema, read)

    def _rollback(self, conn: Any) -> None:
        conn.cursor().execute("ROLLBACK")

    def _begin(self, cur: Any, statements: Sequence[str]) -> None:
        for stmt in statements:
            cur.execute(stmt)

    def _broken(self, exc: BaseException) -> bool:
        """Whether the connection is unusable after ``exc`` (then reconnect next time)."""
        return False

    def _close_own(self) -> None:
        """Close the connection if this process opened it (never an inherited one)."""
        conn = self._conn
        if conn is not None:
            if self._pid == os.getpid() and self._gen == fork_generation():
                conn.close()  # (if this raises, the store keeps it)
            else:
                _ABANDONED.append((conn, self._file_id))
            self._conn = None

    def close(self) -> None:
        with self._lock:
            self._close_own()

    # ---- schema ------------------------------------------------------------------------

    def _tables(self, cur: Any) -> set[str]:
        raise NotImplementedError

    def _ensure_schema(self, cur: Any) -> None:
        tables = self._tables(cur)
        if "dpfast_meta" not in tables:
            if tables and self.dialect == "sqlite":
                raise LedgerError(
                    f"{self.url!r} is a SQLite database of another application (tables "
                    f"{sorted(tables)[:5]}); refusing to add a dpfast ledger to it"
                )
            version = 0
        else:
            cur.execute(self.sql("SELECT name, value FROM dpfast_meta"))
            meta = dict(cur.fetchall())
            if meta.get("application") != APPLICATION or "schema_version" not in meta:
                raise LedgerError(
                    f"{self.url!r} has a dpfast_meta table that is not a dpfast "
                    "ledger's; refusing to use it"
                )
            version = int(meta["schema_version"])
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"the ledger {self.url!r} has schema version {version}, newer than this dpfast "
                f"supports ({SCHEMA_VERSION}); upgrade dpfast to use it (nothing was changed)"
            )
        for v in range(version + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS[self.dialect][v]:
                cur.execute(stmt)
        if version == 0:
            cur.execute(
                self.sql("INSERT INTO dpfast_meta (name, value) VALUES (?, ?)"),
                ("application", APPLICATION),
            )
            cur.execute(
                self.sql("INSERT INTO dpfast_meta (name, value) VALUES (?, ?)"),
                ("schema_version", str(SCHEMA_VERSION)),
            )
        elif version < SCHEMA_VERSION:
            cur.execute(
                self.sql("UPDATE dpfast_meta SET value = ? WHERE name = ?"),
                (str(SCHEMA_VERSION), "schema_version"),
            )
        if version > 0:  # budget rows still in the units of schema 1: rewritten once, here
            _schema1.upgrade(cur, self.sql, state_text)

    # ---- budgets -----------------------------------------------------------------------

    def _append(
        self,
        cur: Any,
        key: str,
        prev_seq: int,
        prev_hash: str,
        kind: str,
        ref: int | None = None,
        label: str | None = None,
        amounts: tuple[Any, Any, Any] = (None, None, None),
        cost: str = "",
        note: str | None = None,
    ) -> tuple[int, str]:
        seq = prev_seq + 1
        eps, dlt, rho = (rational(a) for a in amounts)
        at, pid = _now(), os.getpid()
        h = row_hash(
            prev_hash, key, seq, kind, ref, label, eps, dlt, rho, cost, at, _HOST, pid, note
        )
        cur.execute(
            self.sql(_INSERT_ROW),
            (
                key,
                seq,
                kind,
                ref,
                label,
                eps,
                dlt,
                rho,
                cost,
                at,
                _HOST,
                pid,
                note,
                prev_hash,
                h,
            ),
        )
        return seq, h

    def create(self, key: str, filt: Filter) -> str:
        """Create budget ``key``; return its stored params (existing ones if it exists)."""
        params = params_text(filt)
        with self.transaction() as cur:
            if self.create_lock:  # FOR UPDATE cannot lock a row that does not exist yet
                cur.execute(self.sql(self.create_lock), (key,))
            cur.execute(
                self.sql(
                    "SELECT params FROM dpfast_budget WHERE key = ?" + self.for_update
                ),
                (key,),
            )
            row = cur.fetchone()
            if row is not None:
                result: str = row[0]
                return result
            seq, h = self._append(cur, key, -1, GENESIS, "create", note=params)
            cur.execute(
                self.sql(
                    "INSERT INTO dpfast_budget (key, params, state, seq, head) "
                    "VALUES (?, ?, ?, ?, ?)"
                ),
                (key, params, state_text(filt.zero()), seq, h),
            )
            return params

    def params(self, key: str) -> str | None:
        with self.transaction(read=True) as cur:
            cur.execute(self.sql("SELECT params FROM dpfast_budget WHERE key = ?"), (key,))
            row = cur.fetchone()
        return None if row is None else row[0]

    def keys(self) -> list[tuple[Any, ...]]:
        with self.transaction(read=True) as cur:
            cur.execute(
                "SELECT key, params, state, seq, head FROM dpfast_budget ORDER BY key"
            )
            result: list[tuple[Any, ...]] = cur.fetchall()
            return result

    def state(self, key: str) -> _State:
        with self.transaction(read=True) as cur:
            cur.execute(self.sql("SELECT state FROM dpfast_budget WHERE key = ?"), (key,))
            row = cur.fetchone()
        if row is None:
            raise LedgerError(f"no budget {key!r} in {self.url!r}")
        return _chain.parse_state(row[0])

    def _locked_budget(self, cur: Any, key: str) -> tuple[_State, int, str]:
        cur.execute(
            self.sql(
                "SELECT state, seq, head FROM dpfast_budget WHERE key = ?" + self.for_update
            ),
            (key,),
        )
        row = cur.fetchone()
        if row is None:
            raise LedgerError(f"no budget {key!r} in {self.url!r}")
        return _chain.parse_state(row[0]), int(row[1]), row[2]

    def _save(self, cur: Any, key: str, state: _State, seq: int, head: str) -> None:
        cur.execute(
            self.sql("UPDATE dpfast_budget SET state = ?, seq = ?, head = ? WHERE key = ?"),
            (state_text(state), seq, head, key),
        )

    def charge(
        self,
        key: str,
        filt: Filter,
        charges: Sequence[tuple[Any, Any, str | None, str]],
        refusal: Callable[[_State, int], BaseException],
    ) -> list[int]:
        """Admit ``charges`` (a list of (cost, amounts, label, kind)) in one transaction,
        all or none; return their seqs.  ``refusal(state, i)`` builds the exception for
        the first inadmissible one (the transaction is then rolled back)."""
        with self.transaction() as cur:
            state, seq, head = self._locked_budget(cur, key)
            seqs = []
            for i, (cost, amounts, label, kind) in enumerate(charges):
                new = filt.admit(state, cost)
                if new is None:
                    raise refusal(state, i)
                state = new
                seq, head = self._append(
                    cur,
                    key,
                    seq,
                    head,
                    kind,
                    label=label,
                    amounts=amounts,
                    cost=state_text(cost),
                )
                seqs.append(seq)
            self._save(cur, key, state, seq, head)
            return seqs

    def settle(
        self, key: str, ref: int, kind: str, note: str | None = None
    ) -> _chain.HistoryRow:
        """Append a commit / rollback / release of reservation ``ref``; return that
        reservation's history row."""
        with self.transaction() as cur:
            state, seq, head = self._locked_budget(cur, key)
            cur.execute(self.sql(_SELECT_ROW + " WHERE key = ? AND seq = ?"), (key, ref))
            row = cur.fetchone()
            if row is None or row[2] != "reserve":
                raise ValueError(f"budget {key!r} has no reservation {ref}")
            reserved = _chain.from_stored(row)
            cur.execute(
                self.sql("SELECT kind FROM dpfast_history WHERE key = ? AND ref = ?"),
                (key, ref),
            )
            done = cur.fetchone()
            if done is not None:
                raise RuntimeError(
                    f"reservation {ref} of budget {key!r} was already settled ({done[0]})"
                )
            if kind != "commit":  # rollback / release give the reserved cost back
                state = Filter.add(state, _chain.parse_state(reserved.cost), -1)
            seq, head = self._append(
                cur, key, seq, head, kind, ref=ref, label=reserved.label, note=note
            )
            self._save(cur, key, state, seq, head)
            return reserved

    def history(self, key: str) -> tuple[list[_chain.HistoryRow], tuple[Any, ...] | None]:
        with self.transaction(read=True) as cur:
            cur.execute(self.sql(_SELECT_ROW + " WHERE key = ? ORDER BY seq"), (key,))
            rows = [_chain.from_stored(r) for r in cur.fetchall()]
            cur.execute(
                self.sql(
                    "SELECT params, state, seq, head FROM dpfast_budget WHERE key = ?"
                ),
                (key,),
            )
            budget = cur.fetchone()
        return rows, budget


class _Transaction:
    """``with store.transaction() as cur``: one transaction on this process's connection,
    under the store's lock; driver errors become :class:`LedgerError`."""

    def __init__(self, store: SQLStore, schema: bool = False, read: bool = False) -> None:
        self.store, self.schema, self.read = store, schema, read

    def __enter__(self) -> Any:
        store = self.store
        store._lock.acquire()
        store._in_transaction += 1
        try:
            conn = store._connection()
            self.cur = conn.cursor()
            begin = (
                store.begin_schema
                if self.schema
                else store.begin_read
                if self.read
                else store.begin
            )
            store._begin(self.cur, (begin,) if isinstance(begin, str) else begin)
            if not self.read:
                store._check_files()
        except BaseException as e:
            self._abort()
            store._in_transaction -= 1
            store._lock.release()
            err = self._map(e)
            if err is e:
                raise
            raise err from e
        return self.cur

    def _abort(self) -> None:
        try:
            if self.store._conn is not None:
                self.store._rollback(self.store._conn)
        except Exception:
            self.store._conn = None  # unusable: reconnect on the next call

    def _map(self, exc: BaseException) -> BaseException:
        err = self.store._translate(exc)
        if err is not None:
            if self.store._broken(exc):
                self.store._conn = None
            return err
        return exc

    def __exit__(
        self,
        etype: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> Literal[False]:
        store = self.store
        try:
            if exc is not None:
                self._abort()
                err = self._map(exc)
                if err is not exc:
                    raise err from exc
                return False
            try:
                self.cur.execute("COMMIT")
            except BaseException as e:
                self._abort()
                failure = store._translate(e)
                if failure is None:
                    raise
                if store._broken(e):
                    store._conn = None
                raise LedgerError(
                    f"the ledger {store.url!r} failed while committing ({failure}); the charge may "
                    "or may not be recorded (counted as spent if it was); release nothing "
                    "that depends on it"
                ) from e
            return False
        finally:
            store._in_transaction -= 1
            store._lock.release()
