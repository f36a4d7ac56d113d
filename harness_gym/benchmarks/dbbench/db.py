"""DBBench databases: an embedded SQLite backend and a MySQL-compatible server backend.

``open_database("sqlite")`` gives one in-memory database per episode; ``open_database(
"mysql://user:pass@host:port")`` creates a uniquely named database per episode on a
MySQL/MariaDB server (via the optional ``pymysql``) and drops it on ``Session.close()``.
Both create the task's table with every column TEXT and insert rows with parameters, as
AgentBench does, and render results as ``str(rows)`` (or the error text), cut at 800
characters. Environment failures (server down, connection lost) raise ``WorldError``;
SQL errors are results.

Differences between the backends that rendering cannot remove (documented, by design):
- SQLite compares a TEXT column with a number as text (``'9' > '17'``); MySQL numerically.
- Arithmetic on TEXT: MySQL yields DOUBLE (``'12' + 0`` → ``12.0``), SQLite INTEGER (``12``).
- SQLite columns use ``COLLATE NOCASE`` to match MySQL's case-insensitive default
  collation for ASCII; MySQL's collation also folds accents and ignores trailing spaces.
- SQL dialect (functions, ``||``, double-quoted identifiers) is each engine's own;
  SQLite gains MySQL's ``CONCAT``, ``CONCAT_WS`` and ``MD5``, and ``SUM``/``AVG``
  return floats as MySQL's do.
"""
from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import ConfigError
from harness_gym.benchmarks.dbbench.tasks import DBTask

MAX_TEXT = 800
MAX_IDENT = 64
GROUP_CONCAT_MAX_LEN = 1024  # MySQL 8's default, which the original checker ran under
ERROR_KINDS = ("", "syntax", "unknown_col", "unknown_table", "timeout", "other")
TIMEOUT_TEXT = "Error: SQL execution timed out."  # the original's reply when a statement runs too long


@dataclass(frozen=True)
class SQLResult:
    """One statement's outcome, rendered as the original tool reply."""

    text: str
    is_error: bool = False
    error_kind: str = ""
    rows: list[tuple[Any, ...]] = field(default_factory=list)
    row_count: int = 0


def render(rows: list[tuple[Any, ...]]) -> str:
    return truncate(str(rows))


def truncate(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "[TRUNCATED]"


def ident(name: str) -> str:
    """A table or column name as created: cut to 64 characters (MySQL's identifier limit)."""
    return name[:MAX_IDENT]


def backtick(name: str) -> str:
    return "`" + ident(name).replace("`", "``") + "`"


def mysql_number(value: Any) -> float | None:
    """MySQL's string-to-number rule: the longest numeric prefix, else 0."""
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    m = _NUM_PREFIX.match(str(value))
    return float(m.group(0)) if m else 0.0


_NUM_PREFIX = re.compile(r"\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def md5_of_rows(rows: list[tuple[Any, ...]]) -> str:
    """The original checker's hash query, computed in Python (equal to MySQL's result)."""
    hashes = []
    for row in rows:
        joined = ",".join(mysql_str(v) for v in row if v is not None)  # CONCAT_WS skips NULL
        hashes.append(hashlib.md5(joined.encode("utf-8")).hexdigest()[:5])
    if not hashes:
        return str([(None,)])
    concat = ",".join(sorted(hashes)).encode("utf-8")[:GROUP_CONCAT_MAX_LEN]
    return str([(hashlib.md5(concat).hexdigest(),)])


def mysql_str(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def split_statements(sql: str) -> list[str]:
    """The statements of one call, split at ``;`` outside quotes and comments (MySQL's lexing, in one pass).

    Quotes are ``'``, ``"`` and backticks (a doubled quote or a backslash escapes one);
    comments are ``-- ``, ``#`` to the end of the line and ``/* … */``. Blank statements
    (a trailing ``;``) are dropped.
    """
    parts, start, i, n = [], 0, 0, len(sql)
    while i < n:
        ch = sql[i]
        if ch in "'\"`":
            i += 1
            while i < n:
                if sql[i] == "\\" and ch != "`":
                    i += 2
                    continue
                if sql[i] == ch:
                    if i + 1 < n and sql[i + 1] == ch:
                        i += 2
                        continue
                    break
                i += 1
        elif ch == "#" or (sql.startswith("--", i) and (i + 2 == n or sql[i + 2].isspace())):
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            i = n if end < 0 else end + 1
        elif ch == ";":
            parts.append(sql[start:i])
            start = i + 1
        i += 1
    parts.append(sql[start:])
    return [p for p in parts if p.strip()]


def classify_sqlite(message: str) -> str:
    m = message.lower()
    if "no such column" in m or "has no column named" in m:
        return "unknown_col"
    if "no such table" in m:
        return "unknown_table"
    if m == "interrupted":
        return "timeout"
    if "syntax error" in m or "incomplete input" in m or "unrecognized token" in m or "one statement" in m:
        return "syntax"
    return "other"


MYSQL_KINDS = {1064: "syntax", 1149: "syntax", 1054: "unknown_col", 1146: "unknown_table",
               1109: "unknown_table", 1051: "unknown_table", 1969: "timeout", 3024: "timeout",
               1317: "timeout"}


def classify_mysql(errno: int) -> str:
    return MYSQL_KINDS.get(errno, "other")


class Session(ABC):
    """One episode's isolated database holding the task's table."""

    def __init__(self, task: DBTask) -> None:
        self.table_name = ident(task.table_name)
        # MySQL rejects an empty column name (one original task, valid:5, has one): both
        # backends name it after its position so the task stays playable and comparable.
        self.columns = tuple(ident(c) or f"column_{i + 1}" for i, c in enumerate(task.columns))

    @abstractmethod
    def execute(self, sql: str) -> SQLResult:
        """Run one statement; SQL errors come back as a result, environment failures raise."""

    @abstractmethod
    def table_rows(self) -> list[tuple[Any, ...]]:
        """Current contents of the task's table."""

    @abstractmethod
    def md5_hash(self) -> str:
        """The original checker's table hash, e.g. ``"[('03b2…',)]"``."""

    @abstractmethod
    def close(self) -> None:
        """Drop the episode's database; safe to call twice."""

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Database(ABC):
    """A factory of isolated per-episode sessions."""

    kind: str = ""

    @abstractmethod
    def create(self, task: DBTask) -> Session:
        """Create one isolated database holding ``task``'s table."""

    def close(self) -> None:  # noqa: B027 - nothing to release by default
        """Release shared resources."""

    def describe(self) -> str:
        return self.kind


def cell(value: Any) -> str:
    """A task cell as the original inserts it: ``str()`` of the value (a number or ``None`` becomes text)."""
    return value if isinstance(value, str) else str(value)


ORIGINAL_FILES_BACKEND = "mariadb"  # the default for the original AgentBench files (server.py)


def open_database(backend: str, *, sql_timeout_s: float = 10.0) -> Database:
    """``"sqlite"`` (embedded), ``"mysql://user:pass@host:port"`` (a MySQL/MariaDB server), or
    ``"mariadb"``: a server started for this database (``server.start_server``) and stopped by its ``close()``."""
    if not isinstance(sql_timeout_s, (int, float)) or sql_timeout_s <= 0:
        raise ConfigError(f"sql_timeout_s must be a positive number of seconds, got {sql_timeout_s!r}")
    if backend in ("sqlite", "sqlite://", ":memory:"):
        from harness_gym.benchmarks.dbbench.db_sqlite import SQLiteDatabase

        return SQLiteDatabase(float(sql_timeout_s))
    if isinstance(backend, str) and backend.startswith(("mysql://", "mariadb://")):
        from harness_gym.benchmarks.dbbench.db_mysql import MySQLDatabase

        return MySQLDatabase(backend, float(sql_timeout_s))
    if backend == ORIGINAL_FILES_BACKEND:
        from harness_gym.benchmarks.dbbench.db_mysql import MySQLDatabase
        from harness_gym.benchmarks.dbbench.server import start_server

        server = start_server()
        try:
            return MySQLDatabase(server.url, float(sql_timeout_s), server=server)
        except BaseException:
            server.close()
            raise
    raise ConfigError(
        f"DBBench backend must be 'sqlite', 'mariadb' (a server started here) or a URL "
        f"'mysql://user:pass@host:port', got {backend!r}"
    )
