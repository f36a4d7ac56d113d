"""The ``template`` engineer's DBBench rules.

It detects failure signatures in the packet's traces (the DBBench case studies of
Harness-R1 §7) and writes Harness-R1 hooks for the signatures it found: guards in
``on_before_action``, focused hints in ``on_post_step``, a format skill in ``on_init``.
Every rule is generic (predicates and task types, never cell values or task ids).
"""
from __future__ import annotations

import json
import re
from typing import Any

_MUTATION = re.compile(r"^\s*(insert|update)\b", re.I)
_ERROR = re.compile(r"syntax|unknown column|no such column|near \"|error", re.I)

# --- rule snippets: each is a block of statements inside ``def hook(ctx, nb)`` ------------------
GUARDS = {
    "commit_before_sql": '''    if p["commit_before_sql"]:
        return {"type": "block_and_prompt", "message": "Do not commit yet: no SQL has been run. Query the table first with execute_sql, then commit what it returns."}''',
    "commit_before_mutation": '''    if p["commit_final_answer"] and p["mutation_not_attempted"]:
        return {"type": "block_and_prompt", "message": "The INSERT/UPDATE has not been executed yet. Execute the statement with execute_sql, then commit an empty list."}''',
    "empty_commit": '''    if p["commit_empty_answer"] and p["last_result_empty"] and nb.get("empty_blocks", 0) < 2:
        nb["empty_blocks"] = nb.get("empty_blocks", 0) + 1
        return {"type": "block_and_prompt", "message": "Your last query returned an empty result, so this answer is probably wrong. Check how the value is written in the table (use LIKE) and query again."}''',
    "verbose_answer": '''    if p["commit_final_answer"] and p["candidate_answer_available"] and not p["mutation_task"] and not nb.get("exact_blocked"):
        cand = [str(v).strip().lower() for v in ctx["state"]["candidate_answer"]]
        extra = [a for a in ctx["action"]["answers"] if a.strip().lower() not in cand]
        if extra:
            nb["exact_blocked"] = True
            return {"type": "block_and_prompt", "message": "Commit exactly the values returned by your last query, with no extra words or units."}''',
}
HINTS = {
    "identifier_error": '''    if p["last_result_error"] and (p["syntax_error"] or p["unknown_column_error"]):
        hint("Wrap table and column names that contain spaces or symbols in backticks, for example `Year of intro`.")''',
    "empty_result": '''    if p["last_result_empty"] and not p["mutation_task"]:
        hint("The query matched no rows. The stored value may be written differently; filter with LIKE and a shorter pattern.")''',
    "numeric_text": '''    kind = ctx["task"]["task_type"]
    sql = ctx["state"]["last_sql"].lower()
    if (kind == "ranking" or kind.startswith("aggregation") or kind == "comparison") and "cast" not in sql and "+ 0" not in sql and not p["last_result_error"]:
        hint("Numbers in this table are stored as TEXT; compare and sort them numerically with CAST(col AS DECIMAL) or col + 0.")''',
    "repeated_sql": '''    if p["repeated_sql"]:
        hint("You ran the same SQL again. Try a different query instead.")''',
}
SKILL_FORMAT = '''def hook(ctx, nb):
    if ctx["task"]["answer_shape"] == "mutation":
        return {"skills": ["Before an INSERT or UPDATE, look at the existing rows and copy the stored format of every value exactly (case, units, spelling)."]}
    return None
'''


def detect(packet: dict[str, Any]) -> list[str]:
    """Failure signatures present in the packet's traces, in a fixed order."""
    found: set[str] = set()
    for trace in packet.get("failures", []):
        lines: list[str] = trace.get("messages", [])
        calls = [_call(line) for line in lines if line.startswith("ASSISTANT_TOOL ")]
        results = [line[len("TOOL_RESULT: "):] for line in lines if line.startswith("TOOL_RESULT: ")]
        mutation_task = trace.get("task_type") in ("INSERT", "UPDATE")
        sqls = [a.get("query", "") for n, a in calls if n == "execute_sql"]
        commits = [a.get("answers", []) for n, a in calls if n == "commit_final_answer"]
        if calls and calls[0][0] == "commit_final_answer":
            found.add("commit_before_sql")
        if mutation_task and commits and not any(_MUTATION.match(q) for q in sqls):
            found.add("commit_before_mutation")
        if mutation_task and any(_MUTATION.match(q) for q in sqls):
            found.add("mutation_format")
        if any(_ERROR.search(r[:200]) for r in results):
            found.add("identifier_error")
        if not mutation_task and "[]" in results:
            found.update(("empty_result", "empty_commit"))
        if len(sqls) != len(set(s.strip().lower() for s in sqls)):
            found.add("repeated_sql")
        kind = trace.get("task_type", "")
        if (kind == "ranking" or kind.startswith("aggregation") or kind == "comparison") and sqls and not any(
            "cast" in q.lower() or "+ 0" in q for q in sqls
        ):
            found.add("numeric_text")
        if commits and not mutation_task and any(
            any(len(str(a).split()) > 3 for a in c) for c in commits if isinstance(c, list)
        ):
            found.add("verbose_answer")
    return sorted(found)


def _call(line: str) -> tuple[str, dict[str, Any]]:
    head, _, args = line[len("ASSISTANT_TOOL "):].partition(": ")
    try:
        parsed = json.loads(args)
    except ValueError:
        parsed = {}
    return head.strip(), parsed if isinstance(parsed, dict) else {}


def build_hooks(signatures: list[str]) -> dict[str, str]:
    hooks: dict[str, str] = {}
    guards = [GUARDS[s] for s in ("commit_before_sql", "commit_before_mutation", "empty_commit", "verbose_answer") if s in signatures]
    if guards:
        hooks["on_before_action"] = "def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n" + "\n".join(guards) + "\n    return None\n"
    hints = [HINTS[s] for s in ("identifier_error", "empty_result", "numeric_text", "repeated_sql") if s in signatures]
    if hints:
        hooks["on_post_step"] = (
            "def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n    out = []\n"
            "    def_placeholder = None\n" + "\n".join(h.replace("hint(", "out.append(") for h in hints)
            + "\n    for msg in out:\n        if msg not in nb.get(\"hints\", []):\n"
            "            nb[\"hints\"] = nb.get(\"hints\", []) + [msg]\n"
            "            return {\"type\": \"inject_hint\", \"message\": msg}\n    return None\n"
        ).replace("    def_placeholder = None\n", "")
    if "mutation_format" in signatures:
        hooks["on_init"] = SKILL_FORMAT
    return hooks
