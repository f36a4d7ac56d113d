"""The hook contract as the editing policy reads it, per benchmark.

One text per benchmark says when each of the four hooks runs, what it may return, which
ctx fields and predicates it can read, the sandbox rules and the leakage rules — enough
to write a correct patch from this text alone. Field names follow Harness-R1
(specs/harness_r1_protocol.md §3) so its published patches run unchanged.
"""
from __future__ import annotations

from collections.abc import Callable

from harness_gym.errors import ConfigError

HOOKS = ("on_init", "make_pre_hint", "on_before_action", "on_post_step")

SAFE_BUILTINS = (
    "abs all any bool dict enumerate Exception filter float int isinstance len list map max "
    "min range reversed round set sorted str sum tuple zip"
)
FORBIDDEN_NAMES = (
    "eval exec compile open getattr setattr delattr type dir vars globals locals object super "
    "property classmethod staticmethod input help exit quit breakpoint memoryview __import__"
)
FORBIDDEN_SYNTAX = "async, await, class, del, global, nonlocal, import, lambda, raise, with, while, yield, nested def"

_SANDBOX = f"""### Sandbox rules (a hook that breaks one is rejected with the whole patch)
- Each hook's code is a small Python module: exactly one top-level `def hook(ctx, nb):`
  (exactly these two plain positional arguments) plus at most 5 top-level helper `def`s.
  Nothing else at top level: no imports, no constants, no global state.
- Helpers cannot see the hook's local variables; pass ctx, nb or values explicitly.
  Helper names must be unique, must not start with "_", must not shadow a builtin below,
  `math`, `re`, `SequenceMatcher` or `hook`; helper defaults must be scalar constants.
- Available names: {SAFE_BUILTINS}, plus the modules `math` and `re` and the class
  `SequenceMatcher` (from difflib), all without importing.
- Forbidden syntax: {FORBIDDEN_SYNTAX}; no decorators, no annotations.
- `try` is allowed only as `try: ... except Exception: ...` (no other exception type, no
  `else`, no `finally`).
- Forbidden: any name or attribute starting with "_", and {FORBIDDEN_NAMES}.
- Limits: code <= 8,000 characters per hook (keep all hooks together under 9,000),
  <= 1,200 AST nodes, every string literal <= 700 characters.
- At run time: 0.05 s and 2,000 executed lines per call. A timeout, an exception or a
  return value that is not a dict (or None) means "no effect" for that call; the episode
  goes on.
- ctx is a deep-copied, read-only snapshot: read it as `ctx["state"]["sql_count"]` or
  `ctx.state.sql_count`; reading a field that does not exist raises (= no effect).
- nb is one plain dict per episode, starting as {{}}, shared by all hooks and kept across
  rounds (never rolled back): use it for stages, flags and hint de-duplication."""

_NORMALIZATION = """### Return normalization
- Every message/skill/tool_hint text is whitespace-collapsed and cut to 900 characters.
- A block or hint with an empty message is dropped; a dict with an unknown "type" is
  dropped; returning None (or nothing) means no effect. The key "kind" is accepted as an
  alias of "type", so Harness-R1 patches written with "kind" run unchanged."""


def _dbbench() -> str:
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


_BUILDERS: dict[str, Callable[[], str]] = {"dbbench": _dbbench}


def hook_api_text(benchmark: str) -> str:
    """The hook contract for ``benchmark`` (currently "dbbench")."""
    builder = _BUILDERS.get(str(benchmark).lower())
    if builder is None:
        raise ConfigError(
            f"hook_api_text: no hook API text for benchmark={benchmark!r}; "
            f"expected one of {sorted(_BUILDERS)} (webshop/alfworld texts are not written yet)"
        )
    return builder()
