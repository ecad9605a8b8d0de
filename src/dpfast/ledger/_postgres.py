"""The PostgreSQL store (psycopg 3, extra ``ledger-postgres``): for services on several
hosts.  Each charge is one transaction that locks the budget's row with
``SELECT ... FOR UPDATE``; READ COMMITTED then re-reads the row as the previous holder
committed it, so concurrent charges serialize on the row and never overspend."""

from __future__ import annotations

from typing import Any

from ._store import LedgerError, SQLStore


def _psycopg() -> Any:  # the psycopg module (an optional dependency)
    try:
        import psycopg
    except ImportError as e:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            "a postgresql:// ledger needs psycopg 3: pip install 'dpfast[ledger-postgres]'"
        ) from e
    return psycopg


class PostgresStore(SQLStore):
    dialect = "postgresql"
    for_update = " FOR UPDATE"
    create_lock = "SELECT pg_advisory_xact_lock(hashtextextended(?, 7347861210))"

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.timeout = float(timeout)
        self._pg = _psycopg()
        super().__init__(url)

    def sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _connect(self) -> Any:
        try:
            conn = self._pg.connect(
                self.url, autocommit=True, connect_timeout=int(self.timeout) or 1
            )
        except self._pg.Error as e:
            raise LedgerError(f"cannot connect to the PostgreSQL ledger: {e}") from e
        return conn

    # Two processes creating the schema at once: the advisory lock serializes them.
    begin_schema = ("BEGIN", "SELECT pg_advisory_xact_lock(7347861209)")

    def _translate(self, exc: BaseException) -> BaseException | None:
        if isinstance(exc, LedgerError):
            return exc
        if not isinstance(exc, self._pg.Error):
            return None
        return LedgerError(f"the PostgreSQL ledger failed: {type(exc).__name__}: {exc}")

    def _broken(self, exc: BaseException) -> bool:
        conn = self._conn
        return (
            conn is None
            or conn.closed
            or conn.broken
            or isinstance(exc, self._pg.OperationalError)
        )

    def _rollback(self, conn: Any) -> None:
        if not conn.closed:
            conn.execute("ROLLBACK")

    def _tables(self, cur: Any) -> set[str]:
        cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {r[0] for r in cur.fetchall()}
