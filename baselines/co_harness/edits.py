"""Local edits per attributed category, written as unified diffs over the harness files.

Each ``Fix`` changes one small thing: a prompt line, a tool-description sentence in
``tools.json``, a skill line, a config value, or one new hook file under ``hooks/``. The
diff is made with ``difflib.unified_diff`` against the current harness's files and is
checked to parse and apply with the project's diff parser before it is proposed.
Every edit is generic: predicates and task kinds, never ids, cell values or answers.
"""
from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from harness_gym.errors import PatchError
from harness_gym.harness.files import Harness, next_hook_path
from harness_gym.harness.patch import parse_patch

SKILLS_HEADER = "Some tips that may help for this task:"  # the runtime's tips header
NO_EOL = "\\ No newline at end of file"


@dataclass(frozen=True)
class Fix:
    """A candidate local edit for one (category, signature)."""

    category: str
    key: str  # the signature it answers
    description: str
    changes: Callable[[Harness], dict[str, str]]  # harness -> changed files (empty: nothing to do)


@dataclass(frozen=True)
class Candidate:
    category: str
    key: str
    description: str
    diff: str
    harness: Harness  # the harness the diff produces


def make_diff(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """A unified diff from ``old`` to ``new`` files (``--- a/p``/``+++ b/p``, /dev/null for new files)."""
    out: list[str] = []
    for path in sorted(set(old) | set(new)):
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        lines = difflib.unified_diff((a or "").splitlines(keepends=True), (b or "").splitlines(keepends=True),
                                     f"a/{path}" if a is not None else "/dev/null",
                                     f"b/{path}" if b is not None else "/dev/null", n=3)
        for line in lines:
            out.append(line if line.endswith("\n") else line + "\n" + NO_EOL + "\n")
    return "".join(out)


def candidate(harness: Harness, fix: Fix) -> Candidate | None:
    """The fix as a checked diff against ``harness``; None when it changes nothing there."""
    changes = {p: t for p, t in fix.changes(harness).items() if harness.files.get(p) != t}
    if not changes:
        return None
    new_files = {**dict(harness.files), **changes}
    diff = make_diff(harness.files, new_files)
    try:
        patched = parse_patch(diff, harness).apply(harness)
    except PatchError as exc:  # a bug in an edit, not a policy choice: fail loudly
        raise AssertionError(f"co-harness made a diff its own parser rejects ({fix.category}/{fix.key}): {exc}") from exc
    if dict(patched.files) != new_files:
        raise AssertionError(f"co-harness diff for {fix.category}/{fix.key} does not reproduce its edit")
    return Candidate(fix.category, fix.key, fix.description, diff, patched)


def combine(harness: Harness, fixes: Sequence[Fix]) -> Candidate | None:
    """All ``fixes`` applied in order, as one diff (the policy's one-patch-per-packet form)."""
    current = harness
    used = []
    for fix in fixes:
        c = candidate(current, fix)
        if c is not None:
            current = c.harness
            used.append(fix)
    if not used:
        return None
    diff = make_diff(harness.files, current.files)
    patched = parse_patch(diff, harness).apply(harness)
    return Candidate("+".join(dict.fromkeys(f.category for f in used)), "+".join(f.key for f in used),
                     " ".join(f.description for f in used), diff, patched)


# ----------------------------------------------------------------------------- edit primitives

def add_skill(line: str) -> Callable[[Harness], dict[str, str]]:
    """Append ``- line`` under a ``Skills:`` block at the end of the system prompt."""
    def changes(h: Harness) -> dict[str, str]:
        text = h.system_prompt()
        bullet = f"- {line}"
        if bullet in text.splitlines():
            return {}
        body = text if text.endswith("\n") or not text else text + "\n"
        if SKILLS_HEADER not in body.splitlines():
            body += f"\n{SKILLS_HEADER}\n"
        return {"system_prompt.md": body + bullet + "\n"}
    return changes


def reword_prompt(pattern: str, new_line: str) -> Callable[[Harness], dict[str, str]]:
    """Replace the first prompt line matching ``pattern`` with ``new_line`` (append when none does)."""
    rx = re.compile(pattern, re.IGNORECASE)

    def changes(h: Harness) -> dict[str, str]:
        lines = h.system_prompt().splitlines(keepends=True)
        if any(line.rstrip("\n") == new_line for line in lines):
            return {}
        for i, line in enumerate(lines):
            if rx.search(line):
                lines[i] = new_line + ("\n" if line.endswith("\n") else "")
                return {"system_prompt.md": "".join(lines)}
        text = "".join(lines)
        return {"system_prompt.md": (text if text.endswith("\n") or not text else text + "\n") + new_line + "\n"}
    return changes


def add_prompt_line(line: str, after: str | None = None) -> Callable[[Harness], dict[str, str]]:
    """Insert ``line`` into the system prompt after the first line matching ``after`` (append
    when none does); nothing when the line is already there."""
    rx = re.compile(after, re.IGNORECASE) if after else None

    def changes(h: Harness) -> dict[str, str]:
        lines = h.system_prompt().splitlines(keepends=True)
        if any(x.rstrip("\n") == line for x in lines):
            return {}
        at = next((i + 1 for i, x in enumerate(lines) if rx is not None and rx.search(x)), len(lines))
        if at > 0 and not lines[at - 1].endswith("\n"):
            lines[at - 1] += "\n"
        lines.insert(at, line + "\n")
        return {"system_prompt.md": "".join(lines)}
    return changes


def tool_hint(tool: str | None, sentence: str) -> Callable[[Harness], dict[str, str]]:
    """Append ``sentence`` to the description of ``tool`` (None: the first tool) in ``tools.json``,
    editing only that string so the diff stays one line."""
    def changes(h: Harness) -> dict[str, str]:
        text = h.files.get("tools.json")
        if text is None or sentence in text:
            return {}
        at = text.find(f'"name": "{tool}"') if tool else text.find('"name":')
        if at < 0:
            return {}
        key = text.find('"description": "', at)
        if key < 0:
            return {}
        start = key + len('"description": "')
        _, end = json.decoder.scanstring(text, start)  # end is just past the closing quote
        new = text[: end - 1] + " " + json.dumps(sentence)[1:-1] + text[end - 1:]
        json.loads(new)  # still valid JSON
        return {"tools.json": new}
    return changes


def set_config(key: str, value: int | str, only_if: Callable[[object], bool] = lambda v: True) -> Callable[[Harness], dict[str, str]]:
    """Change one ``"key": value`` line of ``config.json`` (text edit, so the diff is one line)."""
    def changes(h: Harness) -> dict[str, str]:
        text = h.files.get("config.json")
        if text is None:
            return {}
        cur = json.loads(text).get(key)
        if cur == value or not only_if(cur):
            return {}
        rx = re.compile(rf'("{re.escape(key)}"\s*:\s*)(-?\d+|"(?:[^"\\]|\\.)*")')
        if not rx.search(text):
            return {}
        new = rx.sub(lambda m: m.group(1) + json.dumps(value), text, count=1)
        json.loads(new)
        return {"config.json": new}
    return changes


def add_hook(point: str, code: str) -> Callable[[Harness], dict[str, str]]:
    """A new ``hooks/NN_<point>.py`` holding ``code`` (skipped if an identical hook exists)."""
    def changes(h: Harness) -> dict[str, str]:
        if any(p.startswith("hooks/") and t == code for p, t in h.files.items()):
            return {}
        return {next_hook_path(h.files, point): code}
    return changes


# Hook code builders: one small single-purpose hook per fix. ``condition``, ``message`` and
# ``text`` are Python expressions over ``ctx``/``nb`` and the names ``setup`` binds;
# ``setup`` is indented hook-body code run first, ``helpers`` top-level helper defs.

def guard_hook(condition: str, message: str, counter: str, limit: int = 2, *, setup: str = "",
               helpers: str = "") -> str:
    """``on_before_action``: block with ``message`` when ``condition`` holds, ``limit`` times per episode."""
    return (f"{helpers}def hook(ctx, nb):\n{setup}    if not ({condition}):\n        return None\n"
            f"    if nb.get({counter!r}, 0) >= {limit}:\n        return None\n"
            f"    nb[{counter!r}] = nb.get({counter!r}, 0) + 1\n"
            f"    return {{\"type\": \"block_and_prompt\", \"message\": {message}}}\n")


def hint_hook(point: str, condition: str, message: str, *, setup: str = "", helpers: str = "") -> str:
    """``on_post_step`` (inject_hint) or ``make_pre_hint`` (message): ``message`` when
    ``condition`` holds, each distinct message once per episode."""
    effect = ('{"type": "inject_hint", "message": msg}' if point == "on_post_step" else '{"message": msg}')
    return (f"{helpers}def hook(ctx, nb):\n{setup}    if not ({condition}):\n        return None\n"
            f"    msg = {message}\n    if msg in nb.get(\"hinted\", []):\n        return None\n"
            f"    nb[\"hinted\"] = nb.get(\"hinted\", []) + [msg]\n    return {effect}\n")


def skill_hook(condition: str, text: str, *, setup: str = "") -> str:
    """``on_init``: one skill line (``text``) for the tasks where ``condition`` holds."""
    return (f"def hook(ctx, nb):\n{setup}    if not ({condition}):\n        return None\n"
            f"    return {{\"skills\": [{text}]}}\n")


def _guard(sig: str) -> str:
    from baselines.template_dbbench import GUARDS

    return "def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n" + GUARDS[sig] + "\n    return None\n"


def _post_hint(sig: str) -> str:
    from baselines.template_dbbench import HINTS

    body = HINTS[sig].replace("hint(", "msgs.append(")
    return ("def hook(ctx, nb):\n    p = ctx[\"predicates\"]\n    msgs = []\n" + body + "\n"
            "    for msg in msgs:\n        if msg not in nb.get(\"hints\", []):\n"
            "            nb[\"hints\"] = nb.get(\"hints\", []) + [msg]\n"
            "            return {\"type\": \"inject_hint\", \"message\": msg}\n    return None\n")


# ----------------------------------------------------------------------------- per benchmark

def dbbench_fixes() -> list[Fix]:
    """Ordered catalogue: (category, signature) -> a local edit."""
    return [
        Fix("middleware_mismatch", "commit_before_sql", "Block a commit before any SQL has run.",
            add_hook("on_before_action", _guard("commit_before_sql"))),
        Fix("middleware_mismatch", "commit_before_mutation", "Block a commit before the INSERT/UPDATE has run.",
            add_hook("on_before_action", _guard("commit_before_mutation"))),
        Fix("tool_schema_error", "identifier_error", "Say in the execute_sql description how to quote identifiers.",
            tool_hint("execute_sql", "Wrap table and column names that contain spaces or symbols in backticks.")),
        Fix("skill_missing", "identifier_error", "Skill: quote identifiers with backticks.",
            add_skill("Wrap table and column names that contain spaces or symbols in backticks, for example `Year of intro`.")),
        Fix("prompt_ambiguity", "verbose_answer", "Say what a final answer looks like.",
            reword_prompt(r"must be exactly the same as the correct answer",
                          "Your answer should be accurate: commit the values your query returned, with no extra words or units.")),
        Fix("skill_missing", "empty_result", "Skill: an empty result means the stored value is written differently.",
            add_skill("If a query returns no rows, the value may be written differently in the table; filter with LIKE and a shorter pattern.")),
        Fix("skill_missing", "numeric_text", "Skill: numbers are stored as TEXT; cast them.",
            add_skill("Numbers in these tables are stored as TEXT; compare and sort them with CAST(col AS DECIMAL).")),
        Fix("skill_missing", "mutation_format", "Skill: copy the stored format before an INSERT/UPDATE.",
            add_skill("Before an INSERT or UPDATE, look at the existing rows and copy the stored format of every value.")),
        Fix("middleware_mismatch", "empty_commit", "Block an empty commit right after an empty result.",
            add_hook("on_before_action", _guard("empty_commit"))),
        Fix("memory_overflow", "repeated_sql", "Keep a shorter history window in long loops.",
            set_config("history_window", 8, lambda v: not isinstance(v, int) or v == 0 or v > 8)),
        Fix("memory_overflow", "repeated_sql", "Hint when the same SQL is run again.",
            add_hook("on_post_step", _post_hint("repeated_sql"))),
    ]


def generic_fixes() -> list[Fix]:
    """Edits for benchmarks without their own catalogue (generic wording only)."""
    return [
        Fix("prompt_ambiguity", "text_only", "Say that every reply must call a tool.",
            add_skill("Every reply must call exactly one tool; never answer with text only.")),
        Fix("tool_schema_error", "tool_error", "Ask for the exact argument format in the first tool's description.",
            tool_hint(None, "Use exactly the argument format this description shows; copy names as they appear in the observation.")),
        Fix("memory_overflow", "repeated_sql", "Keep a shorter history window in long loops.",
            set_config("history_window", 8, lambda v: not isinstance(v, int) or v == 0 or v > 8)),
        Fix("memory_overflow", "repeated_sql", "Say not to repeat an action that did not work.",
            add_skill("If an action did not change anything, do not repeat it; try a different action.")),
    ]


def fixes_for(benchmark: str) -> list[Fix]:
    from baselines.co_harness.rules import rules_for

    return rules_for(benchmark).fixes()
