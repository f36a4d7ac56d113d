"""The text observation an editing policy reads: instructions, hook API, harness, evidence.

Laid out like Harness-R1's DBBench engineer user message (scope, response protocol,
schema, runtime context, the marker, the evidence), plus the current harness files so a
unified diff can target them. Everything before the marker is static per harness; the
evidence after it is ``packet.text``. Same inputs give byte-identical text.
"""
from __future__ import annotations

import json

from harness_gym.errors import ConfigError
from harness_gym.packets.hook_api import hook_api_text
from harness_gym.packets.model import HarnessView, Packet, clean_text

MARKER = "Observed no-harness rollout evidence:"
SCHEMA_VERSION = "harness-r1-patch-v1"

_EXAMPLE_PATCH = {
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


def _scope(benchmark: str) -> str:
    return (
        "You are a harness engineer. You will edit only the reusable DBBench harness, not "
        "task answers. Below are failed rollouts of a frozen SQL agent on one batch of "
        "DBBench tasks; analyze the recurring failures and write one reusable patch. The "
        "same tasks are then rerun with your patch; the reward is the change in the batch "
        "score, so a patch that breaks tasks that already pass costs as much as it gains."
        if benchmark == "dbbench"
        else ""
    )


def _protocol() -> str:
    example = json.dumps(_EXAMPLE_PATCH, ensure_ascii=False, indent=2)
    return f"""## Response protocol
Reply with exactly two blocks, in this order:
1. `<think>...</think>`: concise reasoning in 4 short bullets — the recurring failure
   pattern; the state you will keep in nb; which hook owns which part of the logic; the
   regression risk you avoid. No JSON inside <think>. (If your chat template has already
   opened <think>, just continue it and close it with </think>.)
2. `<patch>{{one JSON object}}</patch>`: the patch. Nothing after </patch>, no markdown.

Patch JSON ({SCHEMA_VERSION}):
- `schema_version`: "{SCHEMA_VERSION}"; `benchmark`: exactly "dbbench";
  `description`: one short, general sentence (<= 900 characters);
  `actions`: a non-empty array of ACTION objects.
- ACTION ::= {{"type": "add_code_hook", "hook": "on_init" | "make_pre_hint" |
  "on_before_action" | "on_post_step", "code": "<python source defining hook(ctx, nb)>"}}
- add_code_hook is the only action type. Use 2 to 4 actions (a single narrow hook is
  fine when only one failure mode recurs), each hook at most once. Preferred roles:
  on_init for a very short SQL skill or tool_hint; on_post_step to update nb["stage"]
  from SQL result evidence; make_pre_hint for de-duplicated soft hints (remember the
  last one in nb["last_hint"]); on_before_action only for narrow blocks.
- Include only interventions justified by recurring evidence; prefer a no-op or a soft
  hint over broad blocking when the baseline already passes many tasks.
- Also accepted instead of the whole <think>/<patch> reply (not inside <patch>): a
  unified diff over the harness files shown below (paths as in their `=== path ===`
  headers, `--- a/path` / `+++ b/path`), or a bare Python module defining any of the four
  hooks as top-level functions named after the hook, e.g. `def on_post_step(ctx, nb):`.

A valid example (the shape, not a recommendation):
<patch>
{example}
</patch>"""


def _runtime_context() -> str:
    return """## DBBench Runtime Context
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
  verification hint over a block."""


def _harness_section(harness: HarnessView) -> str:
    return (
        f"## Current DBBench Harness (version {harness.version})\n"
        "Your patch is applied on top of these files.\n\n"
        f"{harness.render().rstrip()}"
    )


def render_observation(packet: Packet, harness: HarnessView) -> str:
    """The full text an editor reads for ``packet`` under ``harness``."""
    if packet.benchmark != "dbbench":
        raise ConfigError(
            f"render_observation supports benchmark 'dbbench' only for now, got {packet.benchmark!r}"
        )
    if harness.benchmark != packet.benchmark:
        raise ConfigError(
            f"harness benchmark {harness.benchmark!r} does not match packet benchmark "
            f"{packet.benchmark!r}; render the packet with the harness it was built under"
        )
    if str(harness.version) != packet.harness_version:
        raise ConfigError(
            f"harness version {harness.version!r} differs from the packet's "
            f"{packet.harness_version!r}; render the packet with the harness it was built under"
        )
    parts = [
        _scope(packet.benchmark),
        _protocol(),
        hook_api_text(packet.benchmark),
        _runtime_context(),
        _harness_section(harness),
        MARKER,
        packet.text,
    ]
    return clean_text("\n\n".join(parts))
