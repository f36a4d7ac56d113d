"""DBBench databases: SQLite and MySQL-compatible backends behind one interface."""
from __future__ import annotations

import re
import socket
import sys
import time

import pytest

from support import require_mysql_url

from harness_gym.errors import ConfigError, WorldError
from harness_gym.benchmarks.dbbench.db import (
    MAX_TEXT,
    classify_mysql,
    classify_sqlite,
    md5_of_rows,
    open_database,
)
from harness_gym.benchmarks.dbbench.db_mysql import redact
from harness_gym.benchmarks.dbbench.tasks import DBTask


mysql_url = require_mysql_url


BACKENDS = ["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)]


@pytest.fixture(params=BACKENDS)
def db(request):
    backend = "sqlite" if request.param == "sqlite" else mysql_url()
    database = open_database(backend, sql_timeout_s=1.0)
    yield database
    database.close()


TASK = DBTask(
    task_id="t:0", task_type="other", description="d", table_name="Race Schedule",
    columns=("Race", "Length", "Time/Retired", "Laps"),
    rows=(("Moosehead Grand Prix", "2 Hours", "+1 Lap", "12"), ("Sebring", "12 Hours", "Engine", "9"),
          ("Daytona", "24 Hours", "+2 Laps", "105")),
    label=("x",), reference_sql="SELECT 1",
)


def test_select_renders_str_of_rows(db):
    with db.create(TASK) as s:
        r = s.execute("SELECT `Length` FROM `Race Schedule` WHERE `Race` = 'Sebring'")
        assert (r.text, r.is_error, r.error_kind, r.row_count) == ("[('12 Hours',)]", False, "", 1)
        assert r.rows == [("12 Hours",)]


def test_mutation_renders_empty_list_and_changes_table(db):
    with db.create(TASK) as s:
        r = s.execute("UPDATE `Race Schedule` SET `Length` = '4 Hours' WHERE `Race` = 'Moosehead Grand Prix'")
        assert (r.text, r.is_error) == ("[]", False)
        assert ("Moosehead Grand Prix", "4 Hours", "+1 Lap", "12") in s.table_rows()


def test_all_columns_are_text_and_numbers_inserted_as_text(db):
    task = DBTask("t:1", "INSERT", "d", "T", ("a", "b"), (("1", "x"),), ("x",), "x")
    with db.create(task) as s:
        s.execute("INSERT INTO `T` VALUES (30.0, -18)")
        assert sorted(s.table_rows()) == [("1", "x"), ("30.0", "-18")]


def test_same_rendering_on_both_backends_for_aggregates(db):
    with db.create(TASK) as s:
        r = s.execute("SELECT SUM(`Laps`), AVG(`Laps`), COUNT(*), MIN(`Laps`), MAX(`Laps`) FROM `Race Schedule`")
        # SUM/AVG over TEXT are floats (MySQL DOUBLE); MIN/MAX over TEXT compare as text
        assert r.text == "[(126.0, 42.0, 3, '105', '9')]"
        r = s.execute("SELECT `Race` FROM `Race Schedule` ORDER BY `Laps` + 0 DESC LIMIT 1")
        assert r.text == "[('Daytona',)]"
        assert s.execute("SELECT CONCAT(`Race`, '-', `Laps`) FROM `Race Schedule` WHERE `Laps` = '9'").text == "[('Sebring-9',)]"


def test_case_insensitive_comparison_like_mysql(db):
    with db.create(TASK) as s:
        assert s.execute("SELECT `Laps` FROM `Race Schedule` WHERE `Race` = 'sebring'").text == "[('9',)]"


@pytest.mark.parametrize("sql, kind", [
    ("SELEC 1", "syntax"),
    ("SELECT nope FROM `Race Schedule`", "unknown_col"),
    ("SELECT * FROM `No Such Table`", "unknown_table"),
])
def test_sql_errors_are_results(db, sql, kind):
    with db.create(TASK) as s:
        r = s.execute(sql)
        assert r.is_error and r.error_kind == kind and r.rows == [] and r.row_count == 0
        assert r.text


def test_multi_statement_calls_run_every_statement(db):
    """As mysql.connector 9 runs them for the original: the first result, or the first error; effects stay."""
    with db.create(TASK) as s:
        assert s.execute("SELECT 1; SELECT 2").text == "[(1,)]"
        assert s.execute("SELECT COUNT(*) FROM `Race Schedule`;").text == "[(3,)]"
        r = s.execute("UPDATE `Race Schedule` SET `Laps` = '10' WHERE `Race` = 'Sebring'; SELECT * FROM `Nope`")
        assert r.is_error and r.error_kind == "unknown_table"
        assert s.execute("SELECT `Laps` FROM `Race Schedule` WHERE `Race` = 'Sebring'").text == "[('10',)]"
        assert s.execute("SELECT 'a;b' ; SELECT 2").text == "[('a;b',)]"


@pytest.mark.mysql
def test_mysql_error_text_as_mysql_connector_prints_it():
    with open_database(mysql_url()).create(TASK) as s:
        r = s.execute("SELECT x FROM `Race Schedule`")
        # MariaDB names the clause 'SELECT' where MySQL 8 says 'field list'
        assert r.text.startswith("1054 (42S22): Unknown column 'x' in '")
        assert s.execute("SELEC 1").text.startswith("1064 (42000): You have an error in your SQL syntax")
        # the original's database name, dbbench_<uuid>, fixed per task so replies repeat across runs
        shown = s.execute("SELECT * FROM `Nope`").text
        assert re.fullmatch(r"1146 \(42S02\): Table 'dbbench_[0-9a-f_]{36}\.Nope' doesn't exist", shown)
    with open_database(mysql_url()).create(TASK) as again:
        assert again.execute("SELECT * FROM `Nope`").text == shown


@pytest.mark.mysql
def test_mysql_runs_as_mysql_8_defaults():
    with open_database(mysql_url()).create(TASK) as s:
        # strict mode: a number compared with text that is not a number fails an UPDATE (error 1292)
        r = s.execute("UPDATE `Race Schedule` SET `Race` = 'x' WHERE `Time/Retired` = 1")
        assert r.is_error and r.text.startswith("1292 (22007): Truncated incorrect")
        assert s.execute("SELECT COUNT(*) FROM `Race Schedule` WHERE `Race` = 'x'").text == "[(0,)]"
        # DECIMAL results as the driver returns them, not floats
        assert s.execute("SELECT 1.50, CAST(`Laps` AS DECIMAL(10,2)) FROM `Race Schedule` LIMIT 1").text == (
            "[(Decimal('1.50'), Decimal('12.00'))]")
        # the table's collation follows utf8mb4_0900_ai_ci: no padding, accents and case ignored
        assert s.execute("SELECT COUNT(*) FROM `Race Schedule` WHERE `Race` = 'Sebring '").text == "[(0,)]"
        assert s.execute("SELECT COUNT(*) FROM `Race Schedule` WHERE `Race` = 'SÉBRING'").text == "[(1,)]"


def test_long_results_are_truncated(db):
    with db.create(TASK) as s:
        r = s.execute("SELECT REPEAT('a', 2000)" if db.kind == "mysql" else "SELECT printf('%.2000c', 'a')")
        assert len(r.text) == MAX_TEXT + len("[TRUNCATED]") and r.text.endswith("[TRUNCATED]")


def test_statement_timeout(db):
    sql = "SELECT SLEEP(3)" if db.kind == "mysql" else (
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT COUNT(*) FROM c")
    with db.create(TASK) as s:
        t0 = time.monotonic()
        r = s.execute(sql)
        assert r.is_error and r.error_kind == "timeout" and r.text == "Error: SQL execution timed out."
        assert time.monotonic() - t0 < 2.5
        assert s.execute("SELECT COUNT(*) FROM `Race Schedule`").text == "[(3,)]"  # still usable


def test_md5_hash_is_the_checker_query(db):
    with db.create(TASK) as s:
        assert s.md5_hash() == md5_of_rows(list(TASK.rows))
        s.execute("DELETE FROM `Race Schedule`")
        assert s.md5_hash() == "[(None,)]"


def test_sessions_are_isolated(db):
    a, b = db.create(TASK), db.create(TASK)
    try:
        a.execute("DELETE FROM `Race Schedule`")
        assert a.table_rows() == [] and len(b.table_rows()) == 3
    finally:
        a.close()
        b.close()


def test_closed_session_raises_world_error(db):
    s = db.create(TASK)
    s.close()
    s.close()  # idempotent
    with pytest.raises(WorldError):
        s.execute("SELECT 1")


def test_sqlite_cannot_touch_files(tmp_path):
    with open_database("sqlite").create(TASK) as s:
        for sql in (f"ATTACH DATABASE '{tmp_path / 'x.db'}' AS x", f"VACUUM INTO '{tmp_path / 'y.db'}'"):
            assert s.execute(sql).is_error
    assert list(tmp_path.iterdir()) == []


def test_long_identifiers_cut_to_64():
    name = "N" * 80
    task = DBTask("t:2", "other", "d", name, ("c" * 70,), (("v",),), ("v",), "x")
    with open_database("sqlite").create(task) as s:
        assert s.execute(f"SELECT `{'c' * 64}` FROM `{'N' * 64}`").text == "[('v',)]"


def test_classifiers():
    assert classify_sqlite("no such column: x") == "unknown_col"
    assert classify_sqlite("table T has no column named x") == "unknown_col"
    assert classify_sqlite("no such table: t") == "unknown_table"
    assert classify_sqlite('near "x": syntax error') == "syntax"
    assert classify_sqlite("interrupted") == "timeout"
    assert classify_sqlite("datatype mismatch") == "other"
    assert [classify_mysql(n) for n in (1064, 1054, 1146, 1969, 3024, 1062)] == [
        "syntax", "unknown_col", "unknown_table", "timeout", "timeout", "other"]


def test_bad_backend_and_timeout_are_config_errors():
    with pytest.raises(ConfigError, match="sqlite"):
        open_database("postgres://x")
    with pytest.raises(ConfigError, match="sql_timeout_s"):
        open_database("sqlite", sql_timeout_s=0)
    with pytest.raises(ConfigError, match="host"):
        open_database("mysql://")


def test_missing_pymysql_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pymysql", None)
    with pytest.raises(ConfigError, match=r"pip install 'harness-gym\[mysql\]'"):
        open_database("mysql://u:p@127.0.0.1:1")


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_dead_server_is_a_one_line_world_error_with_redacted_password():
    url = f"mysql://user:s3cret@127.0.0.1:{_dead_port()}"
    t0 = time.monotonic()
    with pytest.raises(WorldError) as e:
        open_database(url)
    assert time.monotonic() - t0 < 5.5
    msg = str(e.value)
    assert "\n" not in msg and "s3cret" not in msg and "user:***@127.0.0.1" in msg


def test_redact():
    assert redact("mysql://hg:pw@h:1") == "mysql://hg:***@h:1"
    assert redact("mysql://h:1") == "mysql://h:1"


@pytest.mark.mysql
def test_mysql_connection_loss_raises_world_error_not_sql_error():
    db = open_database(mysql_url())
    s = db.create(TASK)
    conn_id = s.execute("SELECT CONNECTION_ID()").rows[0][0]
    killer = db.create(TASK)
    try:
        killer.execute(f"KILL {conn_id}")
        with pytest.raises(WorldError, match=r"\*\*\*@"):
            s.execute("SELECT 1")
    finally:
        killer.close()
        s.close()


@pytest.mark.mysql
def test_mysql_database_dropped_on_close():
    db = open_database(mysql_url())
    s = db.create(TASK)
    name = s.db_name
    probe = db.create(TASK)
    try:
        assert name in str(probe.execute("SHOW DATABASES").rows)
        s.close()
        assert name not in str(probe.execute("SHOW DATABASES").rows)
    finally:
        probe.close()


@pytest.mark.mysql
def test_mysql_bad_credentials_are_config_error():
    host = mysql_url().rsplit("@", 1)[-1]
    bad = f"mysql://nobody_hg:wrong@{host}"
    with pytest.raises((ConfigError, WorldError)) as e:
        open_database(bad)
    assert "wrong" not in str(e.value)
