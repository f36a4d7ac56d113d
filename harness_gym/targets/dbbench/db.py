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
import sqlite3
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlsplit

from harness_gym.errors import ConfigError, WorldError, one_line
from harness_gym.targets.dbbench.tasks import DBTask

MAX_TEXT = 800
MAX_IDENT = 64
GROUP_CONCAT_MAX_LEN = 1024  # MySQL 8's default, which the original checker ran under
ERROR_KINDS = ("", "syntax", "unknown_col", "unknown_table", "timeout", "other")


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
        joined = ",".join(_mysql_str(v) for v in row if v is not None)  # CONCAT_WS skips NULL
        hashes.append(hashlib.md5(joined.encode("utf-8")).hexdigest()[:5])
    if not hashes:
        return str([(None,)])
    concat = ",".join(sorted(hashes)).encode("utf-8")[:GROUP_CONCAT_MAX_LEN]
    return str([(hashlib.md5(concat).hexdigest(),)])


def _mysql_str(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


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


def cell(value: Any) -> Any:
    """A task cell as inserted: numbers become text the way mysql.connector sends them."""
    if value is None or isinstance(value, str):
        return value
    return repr(value) if isinstance(value, float) else str(value)


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
    return None if any(a is None for a in args) else "".join(_mysql_str(a) for a in args)


def _concat_ws(sep: Any, *args: Any) -> str | None:
    if sep is None:
        return None
    return str(sep).join(_mysql_str(a) for a in args if a is not None)


def _md5(value: Any) -> str | None:
    return None if value is None else hashlib.md5(_mysql_str(value).encode("utf-8")).hexdigest()


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
        conn = self._conn()
        self._deadline = time.monotonic() + self.timeout
        try:
            rows = [tuple(r) for r in conn.execute(sql).fetchall()]
        except (sqlite3.Error, ValueError, OverflowError) as e:
            msg = str(e)
            return SQLResult(truncate(msg), True, classify_sqlite(msg), [], 0)
        finally:
            self._deadline = float("inf")
            if conn.in_transaction:  # a statement like BEGIN must not leave the episode hanging
                conn.execute("COMMIT")
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


def open_database(backend: str, *, sql_timeout_s: float = 10.0) -> Database:
    """``"sqlite"`` (embedded) or ``"mysql://user:pass@host:port"`` (MySQL/MariaDB server)."""
    if not isinstance(sql_timeout_s, (int, float)) or sql_timeout_s <= 0:
        raise ConfigError(f"sql_timeout_s must be a positive number of seconds, got {sql_timeout_s!r}")
    if backend in ("sqlite", "sqlite://", ":memory:"):
        return SQLiteDatabase(float(sql_timeout_s))
    if isinstance(backend, str) and backend.startswith(("mysql://", "mariadb://")):
        return MySQLDatabase(backend, float(sql_timeout_s))
    raise ConfigError(
        f"DBBench backend must be 'sqlite' or a URL 'mysql://user:pass@host:port', got {backend!r}"
    )


def parse_mysql_url(url: str) -> dict[str, Any]:
    """Connection arguments from ``mysql://user:pass@host:port[/ignored]``."""
    parts = urlsplit(url)
    if not parts.hostname:
        raise ConfigError(f"MySQL URL needs a host, like mysql://user:pass@127.0.0.1:3306, got {redact(url)!r}")
    try:
        port = parts.port or 3306
    except ValueError as e:
        raise ConfigError(f"MySQL URL has a bad port: {redact(url)!r} ({e})") from None
    return {
        "host": parts.hostname,
        "port": port,
        "user": unquote(parts.username or "root"),
        "password": unquote(parts.password or ""),
    }


def redact(url: str) -> str:
    """The URL with its password replaced by ``***``."""
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


SHOWN_DB_NAME = "dbbench"


def new_db_name() -> str:
    return "hg_" + uuid.uuid4().hex[:20]


def world_error(url: str, what: str, exc: BaseException) -> WorldError:
    return WorldError(one_line(f"DBBench MySQL server {redact(url)}: {what}: {exc}; is the server running?"))


def to_comparable(value: Any) -> Any:
    """MySQL values rendered like SQLite's: Decimal → float, bytes → str."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(value)
    return value


# ---------------------------------------------------------------- MySQL / MariaDB

# MySQL 8's default sql_mode without STRICT_TRANS_TABLES: the original ``answer_md5``
# values reproduce only when ``UPDATE … WHERE text_col = 16`` over a row holding '?'
# updates (a warning) instead of failing (strict mode's error 1292), e.g. test:278, test:295.
SQL_MODE = "ONLY_FULL_GROUP_BY,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
_LOST = {1053, 1152, 1927}  # server shutdown, aborted connection, connection killed


def _pymysql() -> Any:
    try:
        import pymysql
    except ImportError:
        raise ConfigError(
            "the MySQL backend needs pymysql, which is not installed; run: pip install 'harness-gym[mysql]'"
        ) from None
    return pymysql


def _errno(exc: BaseException) -> int:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else 0


def _is_connection_error(pymysql: Any, exc: BaseException) -> bool:
    if isinstance(exc, (pymysql.err.InterfaceError, OSError)):
        return True
    n = _errno(exc)
    return isinstance(exc, pymysql.err.Error) and (2000 <= n < 3000 or n in _LOST)


def mysql_error_text(exc: BaseException) -> str:
    """The error as mysql.connector prints it: ``1054 (42S22): Unknown column ...``."""
    n = _errno(exc)
    if not n:
        return str(exc)
    msg = exc.args[1] if len(exc.args) > 1 else str(exc)
    state = getattr(exc, "sqlstate", None)
    return f"{n} ({state}): {msg}" if state else f"{n}: {msg}"


class MySQLSession(Session):
    def __init__(self, task: DBTask, url: str, sql_timeout_s: float) -> None:
        super().__init__(task)
        self.url = url
        self.pymysql = _pymysql()
        self.db_name = new_db_name()
        self.conn: Any = connect(url, sql_timeout_s)
        try:
            with self.conn.cursor() as cur:
                cur.execute(f"SET SESSION sql_mode = '{SQL_MODE}'")
                cur.execute(f"SET SESSION group_concat_max_len = {GROUP_CONCAT_MAX_LEN}")
                cur.execute(f"CREATE DATABASE {backtick(self.db_name)} CHARACTER SET utf8mb4")
                cur.execute(f"USE {backtick(self.db_name)}")
                cols = ", ".join(f"{backtick(c)} TEXT" for c in self.columns)
                cur.execute(f"CREATE TABLE {backtick(self.table_name)} ({cols})")
                if task.rows:  # '%' in a name must survive pymysql's parameter formatting
                    names = ", ".join(backtick(c).replace("%", "%%") for c in self.columns)
                    marks = ", ".join("%s" for _ in self.columns)
                    cur.executemany(
                        f"INSERT INTO {backtick(self.table_name).replace('%', '%%')} ({names}) VALUES ({marks})",
                        [tuple(cell(v) for v in row) for row in task.rows],
                    )
                if "mariadb" in str(self.conn.get_server_info()).lower():
                    cur.execute(f"SET SESSION max_statement_time = {sql_timeout_s:g}")
                else:
                    cur.execute(f"SET SESSION max_execution_time = {int(sql_timeout_s * 1000)}")
        except Exception as e:
            self.close()
            if _is_connection_error(self.pymysql, e):
                raise world_error(url, "lost while creating the task table", e) from None
            raise WorldError(one_line(
                f"DBBench MySQL server {redact(url)}: could not create table {self.table_name!r} "
                f"for task {task.task_id}: {mysql_error_text(e)}"
            )) from None

    def _run(self, sql: str) -> list[tuple[Any, ...]]:
        if self.conn is None:
            raise WorldError("DBBench MySQL session is closed; create a new session for a new episode")
        with self.conn.cursor() as cur:
            cur.execute(sql)
            return [tuple(to_comparable(v) for v in r) for r in cur.fetchall()]

    def execute(self, sql: str) -> SQLResult:
        try:
            rows = self._run(sql)
        except WorldError:
            raise
        except Exception as e:
            if _is_connection_error(self.pymysql, e):
                self.close()
                raise world_error(self.url, "connection lost during a statement", e) from None
            # the per-episode database name is an implementation detail: show a stable one so
            # observations (and packets) are identical across runs, as with the original's fixed names
            text = mysql_error_text(e).replace(self.db_name, SHOWN_DB_NAME)
            return SQLResult(truncate(text), True, classify_mysql(_errno(e)), [], 0)
        return SQLResult(render(rows).replace(self.db_name, SHOWN_DB_NAME), False, "", rows, len(rows))

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self._run(sql)
        except WorldError:
            raise
        except Exception as e:
            raise world_error(self.url, "checker query failed", e) from None

    def table_rows(self) -> list[tuple[Any, ...]]:
        return self._query(f"SELECT * FROM {backtick(self.table_name)}")

    def md5_hash(self) -> str:
        cols = ", ".join(backtick(c) for c in self.columns)
        return str(self._query(
            "select md5(group_concat(rowhash order by rowhash)) as hash "
            f"from( SELECT substring(MD5(CONCAT_WS(',', {cols})), 1, 5) AS rowhash "
            f"FROM {backtick(self.table_name)}) as sub;"
        ))

    def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is None:
            return
        try:
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS {backtick(self.db_name)}")
        except Exception:  # noqa: BLE001 - a dead server cannot keep the database either way
            pass
        finally:
            try:
                conn.close()
            except Exception:  # noqa: BLE001
                pass


def connect(url: str, sql_timeout_s: float) -> Any:
    """A pymysql connection (autocommit, utf8mb4, 5 s connect timeout); failures are one line."""
    pymysql = _pymysql()
    args = parse_mysql_url(url)
    # pymysql tries TLS by default, and building its context costs ~20 ms a connection;
    # a loopback server needs no TLS
    local = args["host"] in ("127.0.0.1", "localhost", "::1")
    try:
        return pymysql.connect(
            **args, connect_timeout=5, read_timeout=int(sql_timeout_s) + 30, write_timeout=30,
            autocommit=True, charset="utf8mb4", ssl_disabled=local or None,
        )
    except pymysql.err.OperationalError as e:
        if _errno(e) in (1044, 1045, 1698):
            raise ConfigError(one_line(
                f"DBBench MySQL server {redact(url)} refused the credentials: {mysql_error_text(e)}; "
                "check user and password in the URL"
            )) from None
        raise world_error(url, "cannot connect", e) from None
    except Exception as e:
        raise world_error(url, "cannot connect", e) from None


class MySQLDatabase(Database):
    """Per-episode databases on a MySQL-compatible server; checks the server when opened."""

    kind = "mysql"

    def __init__(self, url: str, sql_timeout_s: float = 10.0) -> None:
        self.url = url
        self.sql_timeout_s = sql_timeout_s
        connect(url, sql_timeout_s).close()

    def create(self, task: DBTask) -> Session:
        return MySQLSession(task, self.url, self.sql_timeout_s)

    def describe(self) -> str:
        return redact(self.url)
