"""The MySQL-compatible server backend (MariaDB/MySQL via the optional ``pymysql``).

Each session is set up as the function-calling AgentBench's mysql:8 containers run an
episode: MySQL 8's default (strict) sql_mode and collation, ``group_concat_max_len`` 1024,
a database named ``dbbench_<uuid>``, replies as ``str()`` of the rows the driver returns
(``Decimal('1.50')``, ``b'..'`` and ``datetime.date(..)`` shown as such), errors as
mysql.connector prints them (``1146 (42S02): Table 'dbbench_….t' doesn't exist``). A call
holding several statements runs them all, as mysql.connector 9 does with the original's
``cursor.execute``: the reply is the first statement's rows, or the first error's text
(statements before the error keep their effect).
"""
from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any
from urllib.parse import unquote, urlsplit

from harness_gym.errors import ConfigError, WorldError, one_line
from harness_gym.benchmarks.dbbench.db import (
    GROUP_CONCAT_MAX_LEN, TIMEOUT_TEXT, Database, Session, SQLResult, backtick, cell, classify_mysql, truncate,
)
from harness_gym.benchmarks.dbbench.tasks import DBTask


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


def new_db_name() -> str:
    """A fresh database name of the original's form: ``dbbench_`` + a uuid4 with ``_`` for ``-``."""
    return "dbbench_" + str(uuid.uuid4()).replace("-", "_")


def shown_db_name(task: DBTask) -> str:
    """The name error text and replies show: the original's form, fixed per task.

    The real name is unique per episode (concurrent runs of one task must not share a
    database); a name derived from the task keeps observations, and so packets, identical
    across runs, and has the real name's length so truncation at 800 characters agrees.
    """
    digest = hashlib.sha256(f"dbbench-db:{task.identity()}".encode()).digest()[:16]
    return "dbbench_" + str(uuid.UUID(bytes=digest, version=4)).replace("-", "_")


def world_error(url: str, what: str, exc: BaseException) -> WorldError:
    return WorldError(one_line(f"DBBench MySQL server {redact(url)}: {what}: {exc}; is the server running?"))


# ---------------------------------------------------------------- MySQL / MariaDB

# MySQL 8's default sql_mode, which the original's mysql:8 containers run under: strict, so
# ``UPDATE … WHERE text_col = 16`` over a row holding '?' fails (error 1292) instead of
# updating with a warning (the stored answer_md5 of test:278 and test:295 were taken without
# strict mode and do not reproduce, as on the original).
SQL_MODE = ("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
            "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION")
# MySQL 8's default collation is utf8mb4_0900_ai_ci (UCA 9.0, accent- and case-insensitive,
# no padding: 'a' <> 'a '); MariaDB >= 10.10 has the nearest one under another name.
MYSQL_COLLATION = "utf8mb4_0900_ai_ci"
MARIADB_COLLATION = "utf8mb4_uca1400_nopad_ai_ci"
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
    """One episode's database, set up as the original's mysql:8 containers run it (module doc)."""

    def __init__(self, task: DBTask, url: str, sql_timeout_s: float) -> None:
        super().__init__(task)
        self.url = url
        self.pymysql = _pymysql()
        self.db_name = new_db_name()
        self.shown_name = shown_db_name(task)
        self.conn: Any = connect(url, sql_timeout_s)
        try:
            with self.conn.cursor() as cur:
                mariadb = "mariadb" in str(self.conn.get_server_info()).lower()
                cur.execute(f"SET SESSION sql_mode = '{SQL_MODE}'")
                cur.execute(f"SET SESSION group_concat_max_len = {GROUP_CONCAT_MAX_LEN}")
                _create_database(cur, self.db_name, MARIADB_COLLATION if mariadb else MYSQL_COLLATION)
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
                if mariadb:
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

    def _cursor(self) -> Any:
        if self.conn is None:
            raise WorldError("DBBench MySQL session is closed; create a new session for a new episode")
        return self.conn.cursor()

    def _run(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of the first result; every statement of a multi-statement call runs (module doc)."""
        with self._cursor() as cur:
            cur.execute(sql)
            rows = [tuple(r) for r in cur.fetchall()] if cur.description else []
            while cur.nextset():  # a later statement's error raises here, after earlier ones took effect
                pass
            return rows

    def execute(self, sql: str) -> SQLResult:
        try:
            rows = self._run(sql)
        except WorldError:
            raise
        except Exception as e:
            if _is_connection_error(self.pymysql, e):
                self.close()
                raise world_error(self.url, "connection lost during a statement", e) from None
            kind = classify_mysql(_errno(e))
            text = TIMEOUT_TEXT if kind == "timeout" else mysql_error_text(e).replace(self.db_name, self.shown_name)
            return SQLResult(truncate(text), True, kind, [], 0)
        return SQLResult(truncate(str(rows).replace(self.db_name, self.shown_name)), False, "", rows, len(rows))

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


def _create_database(cur: Any, name: str, collation: str) -> None:
    """``CREATE DATABASE`` in utf8mb4 with ``collation``, or the server's utf8mb4 default where it lacks it."""
    try:
        cur.execute(f"CREATE DATABASE {backtick(name)} CHARACTER SET utf8mb4 COLLATE {collation}")
    except Exception as e:
        if _errno(e) not in (1273, 1253):  # unknown collation / not valid for the character set
            raise
        cur.execute(f"CREATE DATABASE {backtick(name)} CHARACTER SET utf8mb4")


def connect(url: str, sql_timeout_s: float) -> Any:
    """A pymysql connection (autocommit, utf8mb4, multi-statement calls, 5 s connect timeout); failures are one line."""
    pymysql = _pymysql()
    args = parse_mysql_url(url)
    # pymysql tries TLS by default, and building its context costs ~20 ms a connection;
    # a loopback server needs no TLS
    local = args["host"] in ("127.0.0.1", "localhost", "::1")
    try:
        return pymysql.connect(
            **args, connect_timeout=5, read_timeout=int(sql_timeout_s) + 30, write_timeout=30,
            autocommit=True, charset="utf8mb4", ssl_disabled=local or None,
            client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS,
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

    def __init__(self, url: str, sql_timeout_s: float = 10.0, *, server: Any = None) -> None:
        self.url = url
        self.sql_timeout_s = sql_timeout_s
        self.server = server  # a server this database started (``server.LocalServer``), stopped on close
        connect(url, sql_timeout_s).close()

    def create(self, task: DBTask) -> Session:
        return MySQLSession(task, self.url, self.sql_timeout_s)

    def close(self) -> None:
        if self.server is not None:
            self.server.close()

    def describe(self) -> str:
        return f"{self.server.kind} (started here)" if self.server is not None else redact(self.url)
