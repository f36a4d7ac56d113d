"""The calc parts of the engineer's observation: scope, roles, example patch, hook API, runtime context."""
from __future__ import annotations

from harness_gym.benchmarks.api import NORMALIZATION_RULES, SANDBOX_RULES, PromptParts

EXAMPLE = {"schema_version": "harness-r1-patch-v1", "benchmark": "calc", "description": "Say which tools exist.",
           "actions": [{"type": "add_code_hook", "hook": "on_init", "code": (
               "def hook(ctx, nb):\n    return {'skills': ['Use the calculator for every computation.']}\n")}]}


def hook_api() -> str:
    return f"""## Hook API (Calc)

The agent converts a quantity between units with three tools: `lookup_factor(from_unit,
to_unit)` (the exact formula), `calculate(expression)` (+ - * / and parentheses) and
`submit_answer(answer)`, which ends the episode; at most 8 rounds, one tool call each.

### The four hooks
- `on_init` — once, before the first round: `{{"skills": [TEXT, ...], "tool_hint": TEXT}}` or None
  (skills and the hint go into the system prompt).
- `make_pre_hint` — every round before the model call: `{{"message": TEXT}}` (a user message) or None.
- `on_before_action` — on the agent's tool call: `{{"type": "block_and_prompt", "message": TEXT}}`
  answers the call with the message instead of running it (the round is used); rewrite and
  force are not supported (ignored).
- `on_post_step` — after each tool result: `{{"type": "inject_hint", "message": TEXT}}` or None.

{NORMALIZATION_RULES}

### ctx fields (Calc)
- `ctx.action` — `tool` ("lookup_factor" | "calculate" | "submit_answer" | ""), `value` (first argument).
- `ctx.task` — `task_type` (length | mass | volume | temperature), `from_unit`, `to_unit`, `decimals`
  (the decimal places the question asks for).
- `ctx.state` — `lookups`, `calculations` (counts so far).
- `ctx.predicates` — `no_lookup_yet`, `answer_decimals_wrong` (on submit_answer: the answer's
  decimal places differ from `task.decimals`), `last_call_failed`.
- Top level: `observation` (the last tool result), `step`, `max_step`, `remaining_steps`, `phase`.

{SANDBOX_RULES}

### Leakage rules
- No answers, values or task ids in the code or the description; rules must hold for every task."""


PROMPT = PromptParts(
    benchmark="calc", display="Calc",
    scope=("You are a harness engineer. Below are failed rollouts of a frozen unit-conversion agent on one batch "
           "of tasks; find the recurring failures and write one reusable patch. The same tasks are rerun with it; "
           "the reward is the change in the batch's success rate."),
    roles="Use 1 to 4 actions, each hook at most once; prefer narrow guards in on_before_action.",
    example_patch=EXAMPLE, hook_api=hook_api,
    runtime_context=("- A task reads \"Convert V A to B. Answer with exactly N decimal places.\"; the answer "
                     "must match the exact conversion written with exactly N decimals.\n"
                     "- Hooks read ctx[\"action\"], ctx[\"task\"], ctx[\"state\"], ctx[\"predicates\"]."),
)
