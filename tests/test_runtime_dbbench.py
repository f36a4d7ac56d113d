"""The DBBench episode loop: hook placement and effects exactly as Harness-R1's DBBench column."""
from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.harness.patch import parse_patch
from harness_gym.models.base import ChatRequest
from harness_gym.benchmarks.dbbench import episode as runtime
from harness_gym.runtime.hooks import HookRunner
from harness_gym.runtime.trajectory import COMPLETED, TASK_LIMIT_REACHED
from harness_gym.sandbox.pool import SandboxPool
from harness_gym.benchmarks.dbbench.db import open_database
from harness_gym.benchmarks.dbbench.generator import generate_split
from harness_gym.benchmarks.dbbench.world import DBBenchWorld
from harness_gym.types import ToolCall, assistant_message

SPEC = get_benchmark("dbbench")
TASKS = generate_split("valid", 40)
SELECT_TASK = next(t for t in TASKS if t.task_type == "counting")
MUTATION_TASK = next(t for t in TASKS if t.task_type == "INSERT")

# Harness-R1 ctx field and predicate names for DBBench (spec §3).
CTX_FIELDS = {
    "action": {"tool", "query", "answers", "h2_action", "h2_blocked_reason", "commit_gate_action", "commit_gate_reason"},
    "state": {"sql_count", "last_sql", "last_result", "last_error_kind", "last_error_text", "last_result_was_error",
              "error_streak", "empty_streak", "text_only_streak", "loop_streak", "mutation_attempted", "candidate_answer",
              "candidate_answer_shape", "candidate_implausible", "remaining_rounds"},
    "task": {"task_type", "answer_shape", "target_table", "description"},
    "dbbench": {"sql_history", "sql_history_raw", "discovered_columns", "db_response", "round"},
    "predicates": {"execute_sql", "commit_final_answer", "no_sql_yet", "commit_before_sql", "commit_empty_answer",
                   "mutation_task", "mutation_not_attempted", "last_result_error", "last_result_empty",
                   "unknown_column_error", "syntax_error", "repeated_sql", "candidate_answer_available",
                   "remaining_rounds_low", "text_only_loop"},
}


class Scripted:
    """A fake model that replays tool calls and records every request it saw."""

    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.seen: list[ChatRequest] = []

    async def submit(self, request: ChatRequest) -> dict:
        self.seen.append(request)
        step = self.script.pop(0) if self.script else ("text", "thinking...")
        kind, arg = step
        if kind == "sql":
            return assistant_message("", [ToolCall(f"c{len(self.seen)}", "execute_sql", {"query": arg})])
        if kind == "commit":
            return assistant_message("", [ToolCall(f"c{len(self.seen)}", "commit_final_answer", {"answers": arg})])
        return assistant_message(arg)


def run(task, script, hooks_module: str | None = None, backend: str = "sqlite"):
    harness = SPEC.default_harness()
    if hooks_module:
        harness = parse_patch(hooks_module, harness).apply(harness)
    model = Scripted(script)

    async def go():
        pool = SandboxPool(workers=1)
        try:
            world = DBBenchWorld(open_database(backend))
            try:
                return await runtime.run_episode(task, world, harness, HookRunner(harness, pool), model.submit, seed=0)
            finally:
                world.close()
        finally:
            await pool.close()

    return asyncio.run(go()), model


def test_reference_solution_scores_one():
    from harness_gym.benchmarks.dbbench.sim import reference_of

    res, _ = run(SELECT_TASK, [("sql", reference_of(SELECT_TASK)), ("commit", list(SELECT_TASK.label))])
    assert res.status == COMPLETED and res.reward == 1.0 and res.rounds == 2


def test_round_limit_and_text_only_turns():
    res, model = run(SELECT_TASK, [("text", "hmm")] * 25)
    assert res.status == TASK_LIMIT_REACHED and res.reward == 0.0 and res.rounds == 20
    assert len(model.seen) == 20
    assert sum(1 for e in res.events if e["kind"] == "text_only") == 20
    assert "You must call a tool" in res.messages[3]["content"]


CAPTURE = '''
def on_init(ctx, nb):
    return {"skills": ["Quote identifiers with backticks."], "tool_hint": "Run SQL before committing."}

def make_pre_hint(ctx, nb):
    return {"message": "PRE round=" + str(ctx["step"]) + " sql=" + str(ctx["state"]["sql_count"])}

def on_before_action(ctx, nb):
    p = ctx["predicates"]
    nb["seen"] = nb.get("seen", []) + [sorted(ctx.keys())]
    if p["commit_before_sql"]:
        return {"type": "block_and_prompt", "message": "BLOCKED: no SQL yet"}
    if p["execute_sql"]:
        return {"type": "rewrite_action", "action": "select 1", "message": "ignored"}
    return None

def on_post_step(ctx, nb):
    return {"type": "inject_hint", "message": "POST kind=" + ctx["state"]["last_error_kind"]}
'''


def test_hook_points_and_effects_follow_the_dbbench_contract():
    from harness_gym.benchmarks.dbbench.sim import reference_of

    script = [("commit", ["1"]), ("sql", reference_of(SELECT_TASK)), ("commit", list(SELECT_TASK.label))]
    res, model = run(SELECT_TASK, script, CAPTURE)
    assert res.reward == 1.0
    system = res.messages[0]["content"]
    assert "Some tips that may help for this task:\n- Quote identifiers with backticks." in system
    assert "Additional reusable tool-use hint from the harness:\nRun SQL before committing." in system
    roles = [(m["role"], str(m.get("content", ""))[:12]) for m in res.messages[1:]]
    # round 0: pre-hint user message, then the blocked commit whose tool result is the block message
    assert roles[1] == ("user", "PRE round=0 ") and roles[2][0] == "assistant"
    assert res.messages[4] == {"role": "tool", "tool_call_id": "c1", "name": "commit_final_answer", "content": "BLOCKED: no SQL yet"}
    # round 1: SQL runs (rewrite ignored and recorded), the post-step hint follows the tool result
    assert res.messages[7]["role"] == "tool" and res.messages[7]["content"].startswith("[")
    assert res.messages[8] == {"role": "user", "content": "POST kind=ok"}
    ignored = [e for e in res.events if e["kind"] == "effect" and not e["applied"]]
    assert ignored and ignored[0]["type"] == "rewrite_action" and "ignores" in ignored[0]["note"]
    # the model saw the pre-hint before its call, and no post-step hook ran after the commit
    assert model.seen[0].messages[-1]["content"].startswith("PRE round=0")
    points = [e["point"] for e in res.events if e["kind"] == "hook"]
    assert points[0] == "on_init" and points[-1] == "on_before_action"


def test_ctx_has_harness_r1_fields_and_no_gold():
    dump = '''
def on_before_action(ctx, nb):
    return {"type": "block_and_prompt", "message": "CTX " + str(ctx)}
'''
    from harness_gym.benchmarks.dbbench.sim import reference_of

    res, _ = run(MUTATION_TASK, [("sql", "SELECT 1")], dump)
    text = next(m["content"] for m in res.messages if m["role"] == "tool")
    assert text.startswith("CTX ") and "sql_count" in text  # cut at 900 chars
    # the normalized message is cut to 900 chars; read the full ctx from a structured call instead
    harness = parse_patch(dump, SPEC.default_harness()).apply(SPEC.default_harness())
    from harness_gym.benchmarks.dbbench.ctx import DBState

    state = DBState.start(MUTATION_TASK.task_type, MUTATION_TASK.table_name, MUTATION_TASK.description, "x", 20)
    ctx = state.ctx(ToolCall("c", "commit_final_answer", {"answers": []}), phase="before_action")
    for section, names in CTX_FIELDS.items():
        assert names <= set(ctx[section]), section
    assert ctx["predicates"]["mutation_not_attempted"] and ctx["predicates"]["commit_final_answer"]
    flat = json.dumps(ctx)
    assert reference_of(MUTATION_TASK) not in flat and MUTATION_TASK.reference_sql not in flat
    assert harness.version


def test_failing_hook_is_a_recorded_noop():
    broken = '''
def on_before_action(ctx, nb):
    return ctx["no_such_field"]
'''
    from harness_gym.benchmarks.dbbench.sim import reference_of

    res, _ = run(SELECT_TASK, [("sql", reference_of(SELECT_TASK)), ("commit", list(SELECT_TASK.label))], broken)
    assert res.reward == 1.0
    errors = [e for e in res.events if e["kind"] == "hook" and e["error"]]
    assert len(errors) == 2 and all("\n" not in e["error"] for e in errors)


def test_ctx_tracks_errors_empty_results_and_mutations():
    from harness_gym.benchmarks.dbbench.ctx import DBState
    from harness_gym.types import StepResult

    st = DBState.start("INSERT", "t", "q", "The name of this table is t, and the headers of this table are A,B C.", 20)
    assert st.discovered_columns == ["A", "B C"]
    st.after_step(ToolCall("1", "execute_sql", {"query": "SELEC x"}), StepResult("near SELEC: syntax error", info={"is_error": True, "error_kind": "syntax"}))
    c = st.ctx(phase="post_step")
    assert c["predicates"]["syntax_error"] and c["state"]["error_streak"] == 1 and c["remaining_steps"] == 19
    st.after_step(ToolCall("2", "execute_sql", {"query": "SELECT a FROM t WHERE b='z'"}), StepResult("[]", info={}))
    assert st.ctx(phase="post_step")["predicates"]["last_result_empty"]
    st.after_step(ToolCall("3", "execute_sql", {"query": "INSERT INTO t VALUES ('1')"}), StepResult("[]", info={}))
    c = st.ctx(ToolCall("4", "execute_sql", {"query": "insert into t values ('1')"}), phase="before_action")
    assert c["state"]["mutation_attempted"] and not c["predicates"]["mutation_not_attempted"]
    assert not c["predicates"]["last_result_empty"]
    assert c["predicates"]["repeated_sql"]


@pytest.mark.mysql
def test_same_episode_on_mysql(mysql_url: str):
    from harness_gym.benchmarks.dbbench.sim import reference_of

    res, _ = run(SELECT_TASK, [("sql", reference_of(SELECT_TASK)), ("commit", list(SELECT_TASK.label))], backend=mysql_url)
    assert res.reward == 1.0
