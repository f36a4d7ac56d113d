"""The MySQL-compatible server backend (MariaDB/MySQL via the optional ``pymysql``)."""
from __future__ import annotations

import re
import uuid
from decimal import Decimal
from typing import Any
from urllib.parse import unquote, urlsplit

from harness_gym.errors import ConfigError, WorldError, one_line
from harness_gym.benchmarks.dbbench.db import (
    GROUP_CONCAT_MAX_LEN, Database, Session, SQLResult, backtick, cell, classify_mysql, render, truncate,
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
