"""The DBBench parts of the editor's observation: scope, example patch, hook API, runtime context."""
from __future__ import annotations

from harness_gym.packets.hook_api import _NORMALIZATION, _SANDBOX, HOOKS  # noqa: F401
from harness_gym.packets.registry import PromptParts

SCHEMA_VERSION = "harness-r1-patch-v1"

EXAMPLE_PATCH = {
    "schema_version": SCHEMA_VERSION,
    "benchmark": "dbbench",
    "description": "Probe the schema after identifier errors and block commits made before any SQL.",
    "actions": [
        {
            "type": "add_code_hook",
            "hook": "on_post_step",
            "code": (
                "def hook(ctx, nb):\n"
                "    if ctx.predicates.unknown_column_error or ctx.predicates.syntax_error:\n"
                "        nb[\"stage\"] = \"schema_probe\"\n"
                "    elif not ctx.state.last_result_was_error:\n"
                "        nb[\"stage\"] = \"query\"\n"
                "    return None\n"
            ),
        },
        {
            "type": "add_code_hook",
            "hook": "make_pre_hint",
            "code": (
                "def hook(ctx, nb):\n"
                "    if nb.get(\"stage\") != \"schema_probe\" or nb.get(\"last_hint\") == \"schema_probe\":\n"
                "        return None\n"
                "    nb[\"last_hint\"] = \"schema_probe\"\n"
                "    return {\"message\": \"Run DESCRIBE on the table and wrap identifiers in backticks.\"}\n"
            ),
        },
        {
            "type": "add_code_hook",
            "hook": "on_before_action",
            "code": (
                "def hook(ctx, nb):\n"
                "    if ctx.predicates.commit_before_sql:\n"
                "        return {\"type\": \"block_and_prompt\", \"message\": \"Run SQL before committing.\"}\n"
                "    return None\n"
            ),
        },
    ],
}



def hook_api() -> str:
    return f"""## Hook API (DBBench)

A patch installs Python code hooks into the DBBench agent loop. The agent has two tools:
`execute_sql(query)` (one SQL statement per call) and `commit_final_answer(answers)`
(a list of strings; it ends the episode). An episode has at most 20 rounds.

### The four hooks: when they run and what they may return
- `on_init` — once per episode, after the task is loaded, before the first model call.
  Returns `{{"skills": [TEXT or {{"text": TEXT}}, ...], "tool_hint": TEXT}}` (either key may
  be omitted; only the first 5 skills are kept) or None. Skills are added to the
  agent's system prompt; the tool_hint is added to the system prompt under
  "Additional reusable tool-use hint from the harness:".
- `make_pre_hint` — every round, before the model call. Returns `{{"message": TEXT}}` or
  None; the message is sent to the agent as a user message for that round.
- `on_before_action` — for every tool call in the model's reply (`execute_sql` and
  `commit_final_answer`), before it runs. Returns
  `{{"type": "block_and_prompt", "message": TEXT}}` or None. A block means the SQL or the
  commit does NOT run and the message becomes the tool result for that call.
  `rewrite_action` and `force_action` are ignored on DBBench (logged only): never rewrite
  SQL, only block narrowly.
- `on_post_step` — after each `execute_sql` result (never after a commit). Returns
  `{{"type": "inject_hint", "message": TEXT}}` or None; the message is sent as a user
  message. `force_action` is ignored. Prefer updating nb and returning None.

{_NORMALIZATION}

### ctx fields (DBBench)
- `ctx.action` — the tool call being judged (on_before_action) or just executed
  (on_post_step):
  - `tool`: "execute_sql" or "commit_final_answer"; `query`: the raw SQL string;
    `answers`: the submitted answer list;
  - `h2_action`, `h2_blocked_reason`, `commit_gate_action`, `commit_gate_reason`: verdicts
    of the built-in guard modules (off in this setting, so normally empty).
- `ctx.state` — running observations of the episode:
  - `sql_count`: SQL statements run so far; `last_sql`; `last_result`: the last result
    text (rows as a Python-list string, or the error text);
  - `last_error_kind`: blank before any SQL, else a label such as syntax, unknown_col,
    unknown_table, timeout, null_agg, empty or ok; `last_error_text`;
    `last_result_was_error`;
  - `error_streak`, `empty_streak`: consecutive error / empty results;
    `text_only_streak`: consecutive replies without a tool call; `loop_streak`:
    consecutive repeats of the same SQL;
  - `mutation_attempted`: a data-changing statement (INSERT/UPDATE/DELETE) has run;
  - `candidate_answer` (list of strings from the last non-empty SELECT),
    `candidate_answer_shape`, `candidate_implausible`: a noisy, SQL-derived guess of the
    answer (a hint, never an oracle);
  - `remaining_rounds`.
- `ctx.task` — `task_type` (e.g. counting, comparison, ranking, aggregation-SUM/MIN/MAX/AVG,
  other, INSERT, UPDATE), `answer_shape` ("value" for counting/aggregation tasks, "rows"
  for other SELECT tasks, "mutation" for INSERT/UPDATE), `target_table`, `description`
  (the question text the agent sees).
- `ctx.dbbench` — `sql_history` (normalized SQL so far), `sql_history_raw`,
  `discovered_columns` (column names seen so far), `db_response` (the last raw
  database response), `round` (0-based).
- `ctx.predicates` — booleans:
  - `execute_sql`, `commit_final_answer`: which tool the current call is;
  - `no_sql_yet`: no SQL has run; `commit_before_sql`: a commit with no SQL run yet;
  - `commit_empty_answer`: a commit with an empty or blank answer list (never set for
    mutation tasks, whose committed text is not judged);
  - `mutation_task`: the task asks for INSERT/UPDATE/DELETE;
    `mutation_not_attempted`: a mutation task where no data-changing SQL has run;
  - `last_result_error`, `last_result_empty` (an empty SELECT result; [] after a
    mutation does not count), `unknown_column_error`, `syntax_error`: about the last SQL
    result;
  - `repeated_sql`: the current/last SQL repeats an earlier one;
  - `candidate_answer_available`;
  - `remaining_rounds_low` (<= 3 rounds left); `text_only_loop` (>= 2 replies in a row
    without a tool call).
- Top level: `step`, `max_step`, `remaining_steps` and `observation` (the latest tool
  result or task text). There is no `ctx.world` and no `ctx.admissible` on DBBench.

{_SANDBOX}

### Leakage rules
- Hooks and the patch description must be reusable across all DBBench tasks: no table
  cell values, no exact final answers, no ground-truth or copied task SQL, no task ids or
  task indices (the description must not contain "task 3", "index 12" and the like).
- Generic SQL patterns are fine (SHOW TABLES, DESCRIBE `t`, backticked identifiers,
  CAST(x AS DECIMAL), CONCAT(a, b)); hints should teach reusable debugging strategy."""


PROMPT = PromptParts(
    benchmark="dbbench",
    display="DBBench",
    scope=(
        'You are a harness engineer. You will edit only the reusable DBBench harness, not task answers. Below are failed rollouts of a frozen SQL agent on one batch of DBBench tasks; analyze the recurring failures and write one reusable patch. The same tasks are then rerun with your patch; the reward is the change in the batch score, so a patch that breaks tasks that already pass costs as much as it gains.'
    ),
    roles='''Use 2 to 4 actions (a single narrow hook is
  fine when only one failure mode recurs), each hook at most once. Preferred roles:
  on_init for a very short SQL skill or tool_hint; on_post_step to update nb["stage"]
  from SQL result evidence; make_pre_hint for de-duplicated soft hints (remember the
  last one in nb["last_hint"]); on_before_action only for narrow blocks.''',
    example_patch=EXAMPLE_PATCH,
    hook_api=hook_api,
    runtime_context='''## DBBench Runtime Context
- DBBench is a MySQL-style table task with two tools: execute_sql(query) and
  commit_final_answer(answers). All columns are TEXT (numbers stored as text sort as
  strings unless cast); identifiers may need backticks. SQL results are shown as a
  Python-list string of rows or as the error text, cut to 800 characters.
- Hooks read ctx["action"], ctx["state"], ctx["task"], ctx["dbbench"] and
  ctx["predicates"]. There is no ctx["world"] in this runtime.
- SELECT-style tasks are judged on the submitted answer values, which must match
  exactly (format, case and units as stored).
- INSERT/UPDATE/DELETE tasks are judged on the table contents after the episode, not on
  the committed text. A successful mutation often returns [] — do not treat [] after a
  data-changing statement as a failure; prefer ctx["state"]["mutation_attempted"] or
  ctx["predicates"]["mutation_not_attempted"].
- state.candidate_answer is SQL-derived and noisy: never treat it as the answer.
- MySQL string concatenation is CONCAT(a, b), not a || b.
- Blocking commits broadly is risky: once a mutation has run, prefer a soft
  verification hint over a block.''',
)
