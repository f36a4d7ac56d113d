"""The embedded SQLite backend: one in-memory database per episode, MySQL-like where cheap."""
from __future__ import annotations

import hashlib
import sqlite3
import time
from typing import Any

from harness_gym.errors import WorldError
from harness_gym.benchmarks.dbbench.db import (
    TIMEOUT_TEXT, Database, Session, SQLResult, cell, classify_sqlite, md5_of_rows, mysql_number, mysql_str,
    render, split_statements, truncate,
)
from harness_gym.benchmarks.dbbench.tasks import DBTask


# ---------------------------------------------------------------- SQLite


class _Sum:
    """MySQL-like SUM: text is converted by numeric prefix; the result is a float."""

    def __init__(self) -> None:
        self.total: float | None = None
        self.n = 0

    def step(self, value: Any) -> None:
        x = mysql_number(value)
        if x is not None:
            self.total = (self.total or 0.0) + x
            self.n += 1

    def finalize(self) -> float | None:
        return self.total


class _Avg(_Sum):
    def finalize(self) -> float | None:
        return None if self.total is None else self.total / self.n


def _concat(*args: Any) -> str | None:
    return None if any(a is None for a in args) else "".join(mysql_str(a) for a in args)


def _concat_ws(sep: Any, *args: Any) -> str | None:
    if sep is None:
        return None
    return str(sep).join(mysql_str(a) for a in args if a is not None)


def _md5(value: Any) -> str | None:
    return None if value is None else hashlib.md5(mysql_str(value).encode("utf-8")).hexdigest()


def _no_files(action: int, *args: object) -> int:
    """Agent SQL must not touch files: ATTACH (and VACUUM INTO, which attaches) are denied."""
    return sqlite3.SQLITE_DENY if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH) else sqlite3.SQLITE_OK


class SQLiteSession(Session):
    def __init__(self, task: DBTask, sql_timeout_s: float) -> None:
        super().__init__(task)
        self.timeout = sql_timeout_s
        self._deadline = float("inf")
        self.conn: sqlite3.Connection | None = sqlite3.connect(
            ":memory:", check_same_thread=False, isolation_level=None
        )
        conn = self.conn
        conn.create_aggregate("sum", 1, _Sum)  # type: ignore[arg-type]  # duck-typed aggregate
        conn.create_aggregate("avg", 1, _Avg)  # type: ignore[arg-type]
        conn.create_function("concat", -1, _concat, deterministic=True)
        conn.create_function("concat_ws", -1, _concat_ws, deterministic=True)
        conn.create_function("md5", 1, _md5, deterministic=True)
        conn.set_progress_handler(self._progress, 1000)
        conn.set_authorizer(_no_files)
        q = lambda n: '"' + n.replace('"', '""') + '"'  # noqa: E731
        cols = ", ".join(f"{q(c)} TEXT COLLATE NOCASE" for c in self.columns)
        conn.execute(f"CREATE TABLE {q(self.table_name)} ({cols})")
        marks = ", ".join("?" for _ in self.columns)
        conn.executemany(
            f"INSERT INTO {q(self.table_name)} VALUES ({marks})",
            [tuple(cell(v) for v in row) for row in task.rows],
        )
        self._select_all = f"SELECT * FROM {q(self.table_name)}"

    def _progress(self) -> int:
        return 1 if time.monotonic() > self._deadline else 0

    def _conn(self) -> sqlite3.Connection:
        if self.conn is None:
            raise WorldError("DBBench sqlite session is closed; create a new session for a new episode")
        return self.conn

    def execute(self, sql: str) -> SQLResult:
        """Run a call as the MySQL backend does: every statement, the first one's rows or the first error."""
        conn = self._conn()
        self._deadline = time.monotonic() + self.timeout
        rows: list[tuple[Any, ...]] | None = None
        try:
            for statement in split_statements(sql) or [sql]:
                result = [tuple(r) for r in conn.execute(statement).fetchall()]
                rows = result if rows is None else rows
        except (sqlite3.Error, ValueError, OverflowError) as e:
            msg = str(e)
            kind = classify_sqlite(msg)
            return SQLResult(TIMEOUT_TEXT if kind == "timeout" else truncate(msg), True, kind, [], 0)
        finally:
            self._deadline = float("inf")
            if conn.in_transaction:  # a statement like BEGIN must not leave the episode hanging
                conn.execute("COMMIT")
        rows = rows or []
        return SQLResult(render(rows), False, "", rows, len(rows))

    def table_rows(self) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._conn().execute(self._select_all).fetchall()]

    def md5_hash(self) -> str:
        return md5_of_rows(self.table_rows())

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class SQLiteDatabase(Database):
    kind = "sqlite"

    def __init__(self, sql_timeout_s: float = 10.0) -> None:
        self.sql_timeout_s = sql_timeout_s

    def create(self, task: DBTask) -> Session:
        return SQLiteSession(task, self.sql_timeout_s)
