"""DBBenchWorld and its scoring (the function-calling AgentBench checker; cases in test_dbbench_checker.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from support import require_mysql_url

from harness_gym.benchmarks.dbbench.checker import check_answer, check_mutation, expected_md5
from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.loader import load_jsonl
from harness_gym.benchmarks.dbbench.tasks import DBTask
from harness_gym.benchmarks.dbbench.world import DBBenchWorld, coerce_answers, first_message, is_mutation_sql
from harness_gym.types import ToolCall

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "dbbench"


mysql_url = require_mysql_url


@pytest.fixture(params=["sqlite", pytest.param("mysql", marks=pytest.mark.mysql)])
def world(request):
    db = open_database("sqlite" if request.param == "sqlite" else mysql_url())
    w = DBBenchWorld(db)
    yield w
    w.close()


ROWS = (("Moosehead Grand Prix", "2 Hours", "GT"), ("Sebring", "12 Hours", "Prototype"), ("Daytona", "24 Hours", "GT"))
COLS = ("Race", "Length", "Class")
ADD = "The name of this table is Race Schedule, and the headers of this table are Race,Length,Class."
SELECT_TASK = DBTask("t:0", "counting", "How many GT races are there?", "Race Schedule", COLS, ROWS, ("2",),
                     "SELECT COUNT(*) FROM `Race Schedule` WHERE Class = 'GT'", add_description=ADD)
MULTI_TASK = DBTask("t:1", "other", "Which races are GT?", "Race Schedule", COLS, ROWS,
                    ("Moosehead Grand Prix", "Daytona"), "SELECT Race FROM `Race Schedule` WHERE Class = 'GT'")
UPDATE_SQL = "UPDATE `Race Schedule` SET Length = '4 Hours' WHERE Race = 'Moosehead Grand Prix'"
UPDATE_TASK = DBTask("t:2", "UPDATE", "Change the length of the Moosehead Grand Prix race schedule to 4 hours.",
                     "Race Schedule", COLS, ROWS, (UPDATE_SQL,), UPDATE_SQL, add_description=ADD)


def sql(w: DBBenchWorld, q: str):
    return w.step(ToolCall("c", "execute_sql", {"query": q}))


def commit(w: DBBenchWorld, answers):
    return w.step(ToolCall("c", "commit_final_answer", {"answers": answers}))


def test_first_message_parts_one_per_line():
    t = DBTask("t:9", "other", "What?", "T", ("a",), (), ("x",), "x", add_description="Table info.", evidence="Ev.")
    assert first_message(t) == "Evidence: Ev.\nTable info.\nQuestion: What?"
    assert first_message(SELECT_TASK) == ADD + "\nQuestion: How many GT races are there?"
    bare = DBTask("t:8", "other", "What?", "T", ("a",), (), ("x",), "x")
    assert first_message(bare) == "Question: What?"


def test_execute_sql_observation_and_info(world):
    world.reset(SELECT_TASK)
    r = sql(world, "SELECT COUNT(*) FROM `Race Schedule` WHERE Class = 'GT'")
    assert r.observation == "[(2,)]" and r.done is False
    assert r.info == {"tool": "execute_sql", "query": "SELECT COUNT(*) FROM `Race Schedule` WHERE Class = 'GT'",
                      "is_error": False, "error_kind": "", "row_count": 1, "is_mutation_sql": False}
    r = sql(world, "SELECT Laps FROM `Race Schedule`")
    assert r.info["is_error"] and r.info["error_kind"] == "unknown_col"


@pytest.mark.parametrize("answers, score", [
    (["2"], 1.0), (["2.0"], 1.0), ('["2"]', 1.0), ("2", 1.0), ([2], 1.0), (["3"], 0.0), ([], 0.0), (["2", "2x"], 0.0),
    ([" '2' "], 1.0), (["2.009"], 1.0), (["2,0"], 0.0), ("[(2,)]", 1.0), (2, 0.0), (None, 0.0),
])
def test_select_scoring(world, answers, score):
    world.reset(SELECT_TASK)
    r = commit(world, answers)
    assert r.done and r.observation == "Final answer committed."
    assert r.info["tool"] == "commit_final_answer" and isinstance(r.info["answers"], list)
    assert world.score == score and world.success == (score == 1.0)


def test_multi_answers_use_set_equality(world):
    world.reset(MULTI_TASK)
    commit(world, ["Daytona", "Moosehead Grand Prix"])
    assert world.score == 1.0
    world.reset(MULTI_TASK)
    commit(world, ["Daytona"])
    assert world.score == 0.0


def test_update_scored_by_table_contents(world):
    world.reset(UPDATE_TASK)
    r = sql(world, UPDATE_SQL)
    assert r.observation == "[]" and r.info["is_mutation_sql"] is True
    commit(world, [])
    assert world.score == 1.0


@pytest.mark.parametrize("statement", [
    None,  # committing before the mutation
    "UPDATE `Race Schedule` SET Length = '4 hours' WHERE Race = 'Moosehead Grand Prix'",  # stored format lost
    "UPDATE `Race Schedule` SET Length = '4 Hours'",  # every row
])
def test_wrong_mutations_score_zero(world, statement):
    world.reset(UPDATE_TASK)
    if statement:
        sql(world, statement)
    commit(world, ["done"])
    assert world.score == 0.0


def test_insert_kept_as_multiset(world):
    stmt = "INSERT INTO `Race Schedule` (Race, Length, Class) VALUES ('Sebring', '12 Hours', 'Prototype')"
    task = DBTask("t:3", "INSERT", "Insert Sebring again.", "Race Schedule", COLS, ROWS, (stmt,), stmt)
    world.reset(task)
    commit(world, [])
    assert world.score == 0.0  # the duplicate row is missing: a set comparison would pass
    world.reset(task)
    sql(world, stmt)
    commit(world, [])
    assert world.score == 1.0


@pytest.mark.parametrize("call", [
    ToolCall("c", "drop_table", {"query": "x"}),
    ToolCall("c", "execute_sql", {}),
    ToolCall("c", "execute_sql", {"query": 3}),
    ToolCall("c", "commit_final_answer", {}),
    ToolCall("c", "commit_final_answer", {"__unparsed__": "{bad"}),
    ToolCall("c", "execute_sql", {"__unparsed__": "{bad"}),
])
def test_bad_calls_are_readable_errors(world, call):
    world.reset(SELECT_TASK)
    r = world.step(call)
    assert r.done is False and r.observation.startswith("Error: ")
    if "__unparsed__" in call.arguments:
        assert r.observation == "Error: Failed to parse tool call. Tool call format is incorrect."
    assert r.info["is_error"] is True and r.info["error_kind"] == "other"


def test_step_after_commit_is_an_error(world):
    world.reset(SELECT_TASK)
    commit(world, ["2"])
    r = sql(world, "SELECT 1")
    assert r.info["is_error"] and "over" in r.observation
    assert world.score == 1.0


def test_close_closes_the_session(world):
    world.reset(SELECT_TASK)
    world.close()
    assert world.session is None
    world.close()


def test_observations_never_reveal_gold():
    tasks = load_jsonl(DATA / "dev.jsonl", "valid")
    w = DBBenchWorld(open_database("sqlite"))
    for t in tasks:
        seen = [w.reset(t), sql(w, "SELECT 1").observation, commit(w, ["nothing"]).observation]
        for text in seen:
            assert t.reference_sql not in text
        assert "nothing" not in seen[-1] and not any(lbl in seen[-1] for lbl in t.label)
    w.close()


def test_check_answer_follows_the_function_calling_processor():
    t = SELECT_TASK
    assert check_answer(t, ["2"]) and check_answer(t, ["2.0"]) and not check_answer(t, ["two"])
    s = DBTask("t:4", "other", "d", "T", ("a",), (), ("Women +60kg Bronze",), "x")
    assert check_answer(s, ["Women +60kg Bronze"]) and not check_answer(s, ["women +60kg bronze"])
    m = DBTask("t:5", "other", "d", "T", ("a",), (), ("1", "2"), "x")
    assert check_answer(m, ["2", "1"]) and check_answer(m, ["1.0", "2"])  # numbers match one to one
    assert not check_answer(m, ["2", "1", "1"])  # numeric lists need the same count
    assert not check_answer(t, ["2", "2"])


def test_check_mutation_uses_the_reference_hash_when_no_answer_md5():
    db = open_database("sqlite")
    with db.create(UPDATE_TASK) as s, db.create(UPDATE_TASK) as fresh:
        s.execute(UPDATE_SQL)
        expected = expected_md5(UPDATE_TASK, fresh)
        assert expected.startswith("[('") and check_mutation(UPDATE_TASK, s, expected)
    with db.create(UPDATE_TASK) as s:
        assert not check_mutation(UPDATE_TASK, s, expected)


def test_stored_answer_md5_is_the_ground_truth(world):
    """With ``answer_md5`` the reference statement is not run: a hash it cannot give fails (as test:225 does)."""
    with world.database.create(UPDATE_TASK) as s:
        s.execute(UPDATE_SQL)
        right = s.md5_hash()
    world.reset(replace(UPDATE_TASK, answer_md5=right))
    sql(world, UPDATE_SQL)
    commit(world, [])
    assert world.score == 1.0
    world.reset(replace(UPDATE_TASK, answer_md5="[('0123456789abcdef0123456789abcdef',)]"))
    sql(world, UPDATE_SQL)
    commit(world, [])
    assert world.score == 0.0


def test_arguments_under_another_name_are_read_as_the_original_does(world):
    world.reset(SELECT_TASK)
    assert world.step(ToolCall("c", "execute_sql", {"sql": "SELECT 1"})).observation == "[(1,)]"
    world.step(ToolCall("c", "commit_final_answer", {"answer": ["2"]}))
    assert world.score == 1.0


def test_coerce_answers_and_mutation_detection():
    assert coerce_answers(["a", 1, 2.5]) == ["a", "1", "2.5"]
    assert coerce_answers('["a", "b"]') == ["a", "b"]
    assert coerce_answers("plain") == ["plain"]
    assert coerce_answers('"quoted"') == ['"quoted"']
    assert coerce_answers(None) is None and coerce_answers({"a": 1}) is None
    assert is_mutation_sql("  update t set a=1") and is_mutation_sql("INSERT INTO t VALUES (1)")
    assert not is_mutation_sql("SELECT * FROM t WHERE note = 'update'")
