"""Patch parsing: three formats, Harness-R1 validation, strict diffs, clear one-line errors."""
from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness_gym.errors import PatchError
from harness_gym.harness.files import Harness
from harness_gym.harness.patch import Patch, parse_patch

BASE = {
    "system_prompt.md": "You are a SQL agent.\nAnswer exactly.\n",
    "tools.json": "[]",
    "config.json": '{"max_rounds": 20, "history_window": 0}',
}
GUARD = (
    "def hook(ctx, nb):\n"
    "    if ctx.predicates.commit_before_sql:\n"
    "        return {'type': 'block_and_prompt', 'message': 'Run a SELECT before committing.'}\n"
    "    return None\n"
)
TRACKER = "def hook(ctx, nb):\n    nb['sql'] = nb.get('sql', 0) + 1\n"


@pytest.fixture
def harness() -> Harness:
    return Harness("dbbench", dict(BASE))


def r1(actions: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"schema_version": "harness-r1-patch-v1", "benchmark": "dbbench", "description": "Block early commits.",
                           "actions": actions if actions is not None else [{"type": "add_code_hook", "hook": "on_before_action", "code": GUARD}]}
    obj.update(extra)
    return obj


def reply(obj: Any, think: str = "The target commits before running SQL.\n</think>\n", after: str = "") -> str:
    return f"{think}<patch>\n{json.dumps(obj)}\n</patch>{after}"


def fails(text: str | bytes, harness: Harness, needle: str) -> str:
    with pytest.raises(PatchError) as info:
        parse_patch(text, harness)
    message = str(info.value)
    assert "\n" not in message, message
    assert needle.lower() in message.lower(), message
    return message


# ------------------------------------------------------------------ format 1: Harness-R1

@pytest.mark.parametrize("variant", ["prefill", "full_think", "assistant_tag", "trailing_text", "bare_json", "fenced_inside"])
def test_harness_r1_variants_parse_and_apply(harness: Harness, variant: str) -> None:
    obj = r1()
    text = {
        "prefill": reply(obj),
        "full_think": "<think>\n" + reply(obj),
        "assistant_tag": "<|im_start|>user\nexample <patch>{\"actions\": []}</patch>\n<|im_start|>assistant\n" + reply(obj),
        "trailing_text": reply(obj, after="\nThat is my patch. {\"junk\": 1}"),
        "bare_json": json.dumps(obj, indent=2),
        "fenced_inside": "ok</think><patch>\n```json\n" + json.dumps(obj) + "\n```\n</patch>",
    }[variant]
    patch = parse_patch(text, harness)
    assert patch.kind == "harness_r1"
    assert patch.description == "Block early commits."
    assert patch.changes == (("hooks/01_on_before_action.py", GUARD),)
    patched = patch.apply(harness)
    assert patched.parent == harness.version and patched.version != harness.version
    (module,) = patched.hook_modules()
    assert module.entries == (("on_before_action", "hook"),)


def test_last_patch_block_wins_and_prefers_patch_like_objects(harness: Harness) -> None:
    first = r1(description="first")
    second = r1(actions=[{"type": "add_code_hook", "hook": "on_post_step", "code": TRACKER}], description="second")
    text = "thinking</think>" + f"<patch>{json.dumps(first)}</patch> retry: <patch>{json.dumps(second)}</patch>"
    patch = parse_patch(text, harness)
    assert patch.description == "second" and patch.changes[0][0] == "hooks/01_on_post_step.py"


def test_multiple_actions_number_files_after_existing_hooks(harness: Harness) -> None:
    base = harness.with_files({"hooks/07_on_init.py": "def hook(ctx, nb):\n    return None\n"})
    actions = [{"type": "add_code_hook", "hook": "on_before_action", "code": GUARD},
               {"type": "add_code_hook", "hook": "on_before_action", "code": GUARD, "extra": "dropped"},
               {"type": "add_code_hook", "hook": "on_post_step", "code": TRACKER.rstrip("\n")}]
    patch = parse_patch(reply(r1(actions)), base)
    assert [p for p, _ in patch.changes] == ["hooks/08_on_before_action.py", "hooks/09_on_before_action.py", "hooks/10_on_post_step.py"]
    assert dict(patch.changes)["hooks/10_on_post_step.py"] == TRACKER  # newline-terminated
    entries = [m.entries[0] for m in patch.apply(base).hook_modules()]
    assert entries == [("on_init", "hook"), ("on_before_action", "hook"), ("on_before_action", "hook"), ("on_post_step", "hook")]


def test_bare_json_may_mention_patch_tags(harness: Harness) -> None:
    patch = parse_patch(json.dumps(r1(description="Emit <patch> blocks carefully.")), harness)
    assert patch.kind == "harness_r1" and "<patch>" in patch.description


def test_missing_benchmark_defaults_to_the_harness(harness: Harness) -> None:
    obj = r1()
    del obj["benchmark"]
    assert parse_patch(reply(obj), harness).kind == "harness_r1"


def test_normalized_is_equal_for_equivalent_patches(harness: Harness) -> None:
    a = parse_patch(reply(r1()), harness)
    b = parse_patch("<think>other reasoning</think>\n<patch>" + json.dumps(r1(description="different words"), indent=4) + "</patch>", harness)
    c = parse_patch(json.dumps(r1()), harness)
    diff = "--- /dev/null\n+++ b/hooks/01_on_before_action.py\n@@ -0,0 +1,4 @@\n" + "".join("+" + line for line in GUARD.splitlines(True))
    d = parse_patch(diff, harness)
    assert d.kind == "diff"
    assert a.normalized == b.normalized == c.normalized == d.normalized
    assert a.apply(harness).version == d.apply(harness).version
    other = parse_patch(reply(r1([{"type": "add_code_hook", "hook": "on_post_step", "code": TRACKER}])), harness)
    assert other.normalized != a.normalized


R1_INVALID = {
    "benchmark_mismatch": (r1(benchmark="webshop"), "is for benchmark 'webshop' but this environment is 'dbbench'"),
    "unknown_benchmark": (r1(benchmark="minecraft"), "unsupported benchmark"),
    "no_actions": (r1([]), "non-empty list"),
    "actions_not_list": (r1(actions=None) | {"actions": "add hooks"}, "non-empty list"),
    "too_many_actions": (r1([{"type": "add_code_hook", "hook": "on_post_step", "code": TRACKER}] * 13), "over the 12 limit"),
    "action_not_object": (r1(["add_code_hook"]), "must be an object"),
    "legacy_set_config": (r1([{"type": "set_config", "target": "h4", "value": True}]), "legacy Harness-R1 DSL"),
    "legacy_guard_rule": (r1([{"type": "add_guard_rule", "rule_id": "x"}]), "legacy Harness-R1 DSL"),
    "unknown_type": (r1([{"type": "rewrite_prompt", "text": "x"}]), "unsupported type 'rewrite_prompt'"),
    "bad_hook_name": (r1([{"type": "add_code_hook", "hook": "on_post_stp", "code": TRACKER}]), "did you mean 'on_post_step'"),
    "empty_code": (r1([{"type": "add_code_hook", "hook": "on_init", "code": "  "}]), "non-empty 'code'"),
    "code_not_string": (r1([{"type": "add_code_hook", "hook": "on_init", "code": ["def hook(ctx, nb): pass"]}]), "non-empty 'code'"),
    "code_too_long": (r1([{"type": "add_code_hook", "hook": "on_init", "code": TRACKER + "#" * 8000}]), "over the 8000 limit"),
    "code_policy": (r1([{"type": "add_code_hook", "hook": "on_init", "code": "import os\ndef hook(ctx, nb):\n    return None\n"}]), "fails the sandbox policy: line 1: import statements are not allowed in hooks"),
    "code_leakage": (r1([{"type": "add_code_hook", "hook": "make_pre_hint", "code": "def hook(ctx, nb):\n    return {'message': 'Task 12 wants 4 Hours'}\n"}]), "leakage ('Task 12')"),
    "code_leakage_asin": (r1([{"type": "add_code_hook", "hook": "make_pre_hint", "code": "def hook(ctx, nb):\n    return {'message': f'buy {ctx.x} B0ABCDEFGH'}\n"}]), "leakage"),
    "description_too_long": (r1(description="word " * 200), "over the 900 limit"),
    "description_leakage": (r1(description="Fixes sample #42 and webshop_17."), "description appears to contain task-specific leakage"),
    "description_not_string": (r1(description=["x"]), "description must be a string"),
}


@pytest.mark.parametrize("name", sorted(R1_INVALID))
def test_harness_r1_validation_errors(harness: Harness, name: str) -> None:
    obj, needle = R1_INVALID[name]
    fails(reply(obj), harness, needle)


def test_harness_r1_reply_structure_errors(harness: Harness) -> None:
    obj = json.dumps(r1())
    fails(f"<patch>{obj}</patch>", harness, "complete <think>")
    fails(f"<think>reasoning <patch>{obj}</patch>", harness, "complete <think>")
    fails(f"done</think><patch>{obj}", harness, "complete <patch>")
    fails("done</think><patch>   </patch>", harness, "is empty")
    fails("done</think><patch>no json here</patch>", harness, "no JSON object")
    fails('done</think><patch>{"benchmark": "dbbench"}</patch>', harness, "non-empty list")


def test_alfworld_numbered_instance_in_code_is_rejected() -> None:
    alf = Harness("alfworld", dict(BASE))
    code = "def hook(ctx, nb):\n    return {'type': 'force_action', 'action': 'go to countertop 2'}\n"
    obj = r1([{"type": "add_code_hook", "hook": "on_before_action", "code": code}], benchmark="alfworld")
    fails(reply(obj), alf, "numbered ALFWorld")


# ------------------------------------------------------------------ format 2: unified diff

CONFIG_DIFF = """--- a/config.json
+++ b/config.json
@@ -1 +1 @@
-{"max_rounds": 20, "history_window": 0}
\\ No newline at end of file
+{"max_rounds": 20, "history_window": 4}
\\ No newline at end of file
"""
PROMPT_DIFF = """Tighten the prompt and add a skill.
diff --git a/system_prompt.md b/system_prompt.md
--- a/system_prompt.md
+++ b/system_prompt.md
@@ -1,2 +1,3 @@
 You are a SQL agent.
+Always wrap identifiers in backticks.
 Answer exactly.
--- /dev/null
+++ b/skills/quoting.md
@@ -0,0 +1,2 @@
+# Quoting
+Use backticks.
"""


def test_diff_edits_creates_and_deletes(harness: Harness) -> None:
    patch = parse_patch(CONFIG_DIFF, harness)
    assert patch.kind == "diff" and patch.apply(harness).config() == {"max_rounds": 20, "history_window": 4}
    patch = parse_patch(PROMPT_DIFF, harness)
    assert patch.description == "Tighten the prompt and add a skill."
    patched = patch.apply(harness)
    assert patched.system_prompt() == "You are a SQL agent.\nAlways wrap identifiers in backticks.\nAnswer exactly.\n"
    assert patched.files["skills/quoting.md"] == "# Quoting\nUse backticks.\n"
    delete = "--- a/skills/quoting.md\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-# Quoting\n-Use backticks.\n"
    back = parse_patch(delete, patched).apply(patched)
    assert sorted(back.files) == sorted(harness.files) and back.system_prompt() == patched.system_prompt()


def test_diff_in_a_markdown_fence_and_with_offset(harness: Harness) -> None:
    text = "```diff\n--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -5,1 +5,2 @@\n Answer exactly.\n+Never guess.\n```"
    assert parse_patch(text, harness).apply(harness).system_prompt().endswith("Answer exactly.\nNever guess.\n")


def test_diff_hook_module_and_r1_style_hook_file(harness: Harness) -> None:
    module = "def on_init(ctx, nb):\n    return {'skills': ['Quote identifiers']}\n"
    text = "--- /dev/null\n+++ b/hooks/01_skills.py\n@@ -0,0 +1,2 @@\n" + "".join("+" + line for line in module.splitlines(True))
    patched = parse_patch(text, harness).apply(harness)
    assert patched.hook_modules()[0].entries == (("on_init", "on_init"),)


def new_file(path: str, body: str) -> str:
    lines = body.splitlines(True)
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + line for line in lines)


DIFF_INVALID = {
    "context_mismatch": ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1,1 +1,1 @@\n-You are a Python agent.\n+You are X.\n", "does not apply"),
    "create_existing": (new_file("config.json", "{}\n"), "already exists"),
    "edit_missing": ("--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n-a\n+b\n", "no such file"),
    "rename": ("--- a/system_prompt.md\n+++ b/prompt.md\n@@ -1 +1 @@\n-You are a SQL agent.\n+x\n", "renames are not supported"),
    "bad_hunk_header": ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ one @@\n-x\n", "malformed hunk header"),
    "short_hunk": ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1,3 +1,3 @@\n You are a SQL agent.\n", "is short"),
    "junk_in_hunk": ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1,2 +1,2 @@\n You are a SQL agent.\n*Answer exactly.\n", "does not fit"),
    "twice": (CONFIG_DIFF + CONFIG_DIFF, "twice"),
    "config_unknown_key": (CONFIG_DIFF.replace('"history_window": 4', '"history_windw": 4'), "did you mean 'history_window'"),
    "config_wrong_type": (CONFIG_DIFF.replace('"history_window": 4', '"history_window": "4"'), "expects int, got str"),
    "config_not_json": (CONFIG_DIFF.replace('"history_window": 4}', '"history_window": 4'), "not be valid JSON"),
    "tools_not_list": ("--- a/tools.json\n+++ b/tools.json\n@@ -1 +1 @@\n-[]\n\\ No newline at end of file\n+{}\n", "JSON list"),
    # entries every reader relies on (a sim or chat template crashes on a malformed one, in every episode)
    "tools_function_string": ("--- a/tools.json\n+++ b/tools.json\n@@ -1 +1 @@\n-[]\n\\ No newline at end of file\n"
                              '+[{"type": "function", "function": "poison"}]\n', "tools.json[0].function"),
    "tools_name_list": ("--- a/tools.json\n+++ b/tools.json\n@@ -1 +1 @@\n-[]\n\\ No newline at end of file\n"
                        '+[{"type": "function", "function": {"name": ["x"], "description": "d"}}]\n', "tools.json[0].function.name"),
    "tools_same_name": ("--- a/tools.json\n+++ b/tools.json\n@@ -1 +1 @@\n-[]\n\\ No newline at end of file\n"
                        '+[{"type": "function", "function": {"name": "x"}}, {"type": "function", "function": {"name": "x"}}]\n',
                        "names the tool 'x' twice"),
    "config_null": (CONFIG_DIFF.replace('"history_window": 4', '"history_window": null'), "expects int, got null"),
    "hook_policy": (new_file("hooks/01_on_init.py", "def hook(ctx, nb):\n    return getattr(ctx, 'x')\n"), "hooks/01_on_init.py fails the sandbox policy: line 2: forbidden name 'getattr'"),
    "hook_module_no_entry": (new_file("hooks/01_helpers.py", "def helper(ctx, nb):\n    return 1\n"), "at least one function named"),
    "hook_not_python": (new_file("hooks/notes.md", "hi\n"), "must be Python modules"),
    "hook_leakage": (new_file("hooks/01_on_init.py", "def hook(ctx, nb):\n    return {'skills': ['index 3 is the answer']}\n"), "leakage"),
    "dotdot_path": (new_file("../escape.md", "x\n"), "not allowed"),
    "absolute_path": ("--- /dev/null\n+++ /etc/cron.d/x\n@@ -0,0 +1 @@\n+x\n", "not allowed"),
    "weird_path": (new_file("skills/a b.md", "x\n"), "not allowed"),
    "delete_core": ("--- a/tools.json\n+++ /dev/null\n@@ -1 +0,0 @@\n-[]\n\\ No newline at end of file\n", "cannot be deleted"),
    "partial_delete": ("--- a/system_prompt.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-You are a SQL agent.\n", "remove every line"),
    "noop": ("--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1 @@\n-You are a SQL agent.\n+You are a SQL agent.\n", "no-op patch"),
    "too_many_files": ("".join(new_file(f"skills/s{i}.md", "x\n") for i in range(62)), "over the 64 limit"),
}


@pytest.mark.parametrize("name", sorted(DIFF_INVALID))
def test_diff_validation_errors(harness: Harness, name: str) -> None:
    text, needle = DIFF_INVALID[name]
    fails(text, harness, needle)


# ------------------------------------------------------------------ format 3: bare module

MODULE = '''"""Track SQL and hint after empty results."""

def count(nb):
    return nb.get("sql", 0)

def on_post_step(ctx, nb):
    nb["sql"] = count(nb) + 1

def make_pre_hint(ctx, nb):
    if ctx.predicates.last_result_empty:
        return {"message": "Empty result: check value formats with SELECT DISTINCT."}
'''


def test_bare_module_parses_and_applies(harness: Harness) -> None:
    patch = parse_patch(MODULE, harness)
    assert patch.kind == "module" and patch.description == "Track SQL and hint after empty results."
    patched = patch.apply(harness)
    (module,) = patched.hook_modules()
    assert module.path == "hooks/01_module.py"
    assert module.entries == (("on_post_step", "on_post_step"), ("make_pre_hint", "make_pre_hint"))
    assert parse_patch("```python\n" + MODULE + "```", harness).normalized == patch.normalized


def test_bare_module_policy_errors(harness: Harness) -> None:
    fails("import os\n\ndef on_init(ctx, nb):\n    return None\n", harness, "line 1: import statements are not allowed")
    fails("def on_init(ctx, nb):\n    while True:\n        pass\n", harness, "line 2: while loops")


# ------------------------------------------------------------------ malformed input

def test_malformed_inputs_are_patch_errors(harness: Harness) -> None:
    fails(b"\xff\xfe not utf-8", harness, "not UTF-8")
    fails("def on_init(ctx, nb):\x00\n", harness, "NUL character")
    fails("x" * 1_000_000, harness, "over the 200000 limit")
    fails("", harness, "empty patch")
    fails(" \n\t ", harness, "empty patch")
    fails(b"", harness, "empty patch")
    fails("please make the agent better", harness, "accepted formats")
    fails('{"description": "no actions"}', harness, "'actions' list")
    fails('[{"type": "add_code_hook"}]', harness, "accepted formats")
    fails('{"actions": [1, 2', harness, "does not parse")
    fails("def helper(ctx, nb):\n    return 1\n", harness, "accepted formats")


def test_random_junk_never_escapes_as_another_exception(harness: Harness) -> None:
    rng = random.Random(0)
    alphabet = "{}[]<>/\\\"':,@+- \n\tabcdefpatchthink0123456789"
    pieces = ["<patch>", "</patch>", "</think>", "--- a/x\n", "+++ b/x\n", "@@ -1 +1 @@\n", "def on_init(ctx, nb):\n", '{"actions": [']
    for _ in range(300):
        text = "".join(rng.choice(pieces) if rng.random() < 0.2 else rng.choice(alphabet) for _ in range(rng.randint(1, 120)))
        try:
            result = parse_patch(text, harness)
        except PatchError as exc:
            assert "\n" not in str(exc)
        else:
            assert isinstance(result, Patch)


def test_patch_objects_are_immutable_and_hashable(harness: Harness) -> None:
    patch = parse_patch(reply(r1()), harness)
    assert hash(patch) == hash(parse_patch(reply(r1()), harness))
    with pytest.raises(AttributeError):
        patch.kind = "diff"  # type: ignore[misc]


def test_harness_files_contract(tmp_path: Any, harness: Harness) -> None:
    assert harness.system_prompt().startswith("You are a SQL agent.")
    assert harness.tools() == [] and harness.config() == {"max_rounds": 20, "history_window": 0}
    assert harness.version == Harness("dbbench", dict(reversed(list(BASE.items())))).version
    assert harness.version != Harness("webshop", dict(BASE)).version
    child = harness.with_files({"notes.md": "x"})
    assert child.parent == harness.version and child.with_files({"notes.md": None}) == harness
    assert {harness, child.with_files({"notes.md": None})} == {harness}
    with pytest.raises(TypeError):
        harness.files["x"] = "y"  # type: ignore[index]
    (tmp_path / "hooks").mkdir()
    for path, text in BASE.items():
        (tmp_path / path).write_text(text)
    (tmp_path / "hooks" / "01_on_init.py").write_text("def hook(ctx, nb):\n    return None\n")
    (tmp_path / "hooks" / "__pycache__").mkdir()
    (tmp_path / "hooks" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    loaded = Harness.from_dir("dbbench", tmp_path)
    assert sorted(loaded.files) == ["config.json", "hooks/01_on_init.py", "system_prompt.md", "tools.json"]
    assert loaded.hook_modules()[0].entries == (("on_init", "hook"),)
    assert "=== config.json ===\n{" in loaded.render()


# ------------------------------------------------------------------ linear time on hostile input

_DIFF_HEAD = "--- a/system_prompt.md\n+++ b/system_prompt.md\n"
HOSTILE = {  # each input is built to make a naive parser do super-linear work (see benchmarks/bench_parse.py)
    "think_whitespace": lambda n: "<think>" + " " * n + "<patch>",
    "think_whitespace_closed": lambda n: "<think>" + " " * n + "</think>\n<patch>" + " " * n,
    "unclosed_tags": lambda n: "<think>" * (n // 7) + "<patch>" * (n // 7),
    "nested_tags": lambda n: "<think><patch>" * (n // 30) + "</patch></think>" * (n // 30),
    "many_patch_blocks": lambda n: "x</think>" + "<patch>{}</patch>" * (n // 17),
    "unclosed_string": lambda n: '</think><patch>{"a": "' + "x" * n + "</patch>",
    "brace_nesting": lambda n: "</think><patch>" + '{"a":' * (n // 5) + "</patch>",
    "brace_flood": lambda n: "</think><patch>" + '{"{"' * (n // 4) + "</patch>",
    "key_flood": lambda n: "</think><patch>" + '{"' + "{a" * (n // 2) + "</patch>",
    "array_nesting": lambda n: '</think><patch>{"a":' + "[" * (n // 2) + "</patch>",
    "whitespace_json": lambda n: '{"actions": [' + " " * n + "]}",
    "bare_json_nesting": lambda n: '{"actions": ' + "[" * (n // 2) + "]" * (n // 2) + "}",
    "huge_integer": lambda n: '{"actions": [' + "9" * n + "]}",
    "huge_integer_in_patch": lambda n: "</think><patch>" + '{"a": ' + "9" * n + "}</patch>",
    "hunk_flood": lambda n: _DIFF_HEAD + "@@ -1,0 +1,0 @@\n" * (n // 16),
    "hunk_count_digits": lambda n: _DIFF_HEAD + "@@ -1," + "9" * n + " +1 @@\n",
    "long_diff_line": lambda n: _DIFF_HEAD + "@@ -1 +1 @@\n-You are a SQL agent.\n+" + "x" * n + "\n",
    "leakage_whitespace": lambda n: _DIFF_HEAD + "@@ -0,0 +1,30 @@\n" + ("+task" + " " * (n // 40) + "x\n") * 30,
    "module_flood": lambda n: "def on_init(ctx, nb):\n" + "    x = 1\n" * (n // 10),
    "fence_flood": lambda n: "```" + "`" * n,
}


@pytest.mark.timeout(120)  # generous: each input parses in milliseconds; a quadratic parser would need minutes or days
@pytest.mark.parametrize("size", [10_000, 100_000])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_inputs_parse_or_fail_cleanly(harness: Harness, name: str, size: int) -> None:
    text = HOSTILE[name](size)
    try:
        patch = parse_patch(text, harness)
    except PatchError as exc:
        assert "\n" not in str(exc) and len(str(exc)) <= 300
    else:
        from harness_gym.harness.leakage import GoldStrings, check_leakage

        try:
            check_leakage(patch, GoldStrings(benchmark="dbbench"), base=harness)
        except PatchError as exc:
            assert "\n" not in str(exc)


def test_json_search_work_is_bounded_per_character(monkeypatch: pytest.MonkeyPatch) -> None:
    """The windows decoded for one <patch> block never exceed the per-character budget, on any input."""
    import harness_gym.harness.patch as patch_mod

    spent: list[int] = []
    real = patch_mod._decode_at

    def counting(decoder: Any, segment: str, start: int) -> Any:
        value, cost = real(decoder, segment, start)
        spent.append(cost)
        return value, cost

    monkeypatch.setattr(patch_mod, "_decode_at", counting)
    for name in ("brace_nesting", "brace_flood", "key_flood", "array_nesting", "unclosed_string"):
        segment = HOSTILE[name](100_000).split("<patch>", 1)[1].rsplit("</patch>", 1)[0]
        spent.clear()
        try:
            patch_mod._json_objects(segment)
        except PatchError as exc:
            assert "too many nested or unclosed" in str(exc)
        assert sum(spent) <= patch_mod._JSON_WORK_PER_CHAR * len(segment) + patch_mod._JSON_WORK_SLACK + 2 * len(segment)


# ------------------------------------------------------------------ same results as Harness-R1's parser

def _r1_reference_blocks(text: str) -> tuple[bool, str | None]:
    """Harness-R1's regexes: (complete think block?, body of the last patch block or None)."""
    import re

    think = re.search(r"<think>\s*(.*?)\s*</think>", text, re.DOTALL | re.IGNORECASE) is not None
    blocks = list(re.finditer(r"<patch>\s*(.*?)\s*</patch>", text, re.DOTALL | re.IGNORECASE))
    return think, (blocks[-1].group(1).strip() if blocks else None)


def _r1_reference_objects(segment: str) -> list[Any]:
    """Harness-R1's search: decode at every '{' of the whole segment."""
    import json as json_mod

    decoder, found = json_mod.JSONDecoder(), []
    for i, c in enumerate(segment):
        if c == "{":
            try:
                obj, _ = decoder.raw_decode(segment, i)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                found.append(obj)
    return found


TAG_PIECES = ["<think>", "</think>", "<patch>", "</patch>", "<PATCH>", "</Think>", "<think >", " ", "\n", "x", "{}",
              '{"actions": []}', "<", ">", "/"]
JSON_PIECES = ["{", "}", '"a"', '"', ":", ",", "[", "]", "1", " ", "\\", '\\"', "true", "tru", "-", "e5", '{"b": {}}',
               '"actions"', "{\"x\":", "x"]


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.sampled_from(TAG_PIECES), max_size=24).map("".join))
def test_tag_scan_finds_what_harness_r1_regexes_find(text: str) -> None:
    import harness_gym.harness.patch as patch_mod

    import re

    think, body = _r1_reference_blocks(text if re.match(r"(?is)<think\b", text) else "<think>\n" + text)
    try:
        patch_mod._extract_think_patch(text)
    except PatchError as exc:
        message = str(exc)
        if not think:
            assert "complete <think>" in message
        elif body is None:
            assert "complete <patch>" in message
        elif not body:
            assert "is empty" in message
        else:
            assert "no JSON object" in message or "actions" in message or "benchmark" in message
    else:
        assert think and body


@settings(max_examples=600, deadline=None, database=None)
@given(st.lists(st.sampled_from(JSON_PIECES), max_size=30).map("".join))
def test_json_search_finds_what_harness_r1_finds(segment: str) -> None:
    import harness_gym.harness.patch as patch_mod

    assert patch_mod._json_objects(segment) == _r1_reference_objects(segment)


def test_json_search_windows_give_exact_results_across_window_edges() -> None:
    import harness_gym.harness.patch as patch_mod

    for pad in range(230, 280, 3):  # objects and failures that straddle the first window's end
        for tail in ('"}', '", "b": tru', '", "b": 12345678901234567890}', '", "b": "c"} {"d": 1}', '\\u00e9"}'):
            segment = 'x {"a": "' + "y" * pad + tail + ' {"e": [1, 2]}'
            assert patch_mod._json_objects(segment) == _r1_reference_objects(segment), (pad, tail)


# ------------------------------------------------------------------ diff placement: same as a full scan, linear

def _reference_locate(lines: list[str], old: list[str], old_start: int, pos: int) -> int | None:
    size, want = len(old), max(old_start - 1, 0)
    spots = [s for s in range(pos, len(lines) - size + 1) if lines[s:s + size] == old]
    return min(spots, key=lambda s: (abs(s - want), s)) if spots else None


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(st.sampled_from(["a\n", "b\n", "c\n"]), max_size=30), st.lists(st.sampled_from(["a\n", "b\n", "c\n"]), min_size=1, max_size=4),
       st.integers(0, 35), st.integers(0, 30))
def test_hunk_placement_matches_a_full_scan(lines: list[str], old: list[str], old_start: int, pos: int) -> None:
    from harness_gym.harness import diff as diff_mod

    index: dict[str, list[int]] = {}
    for no, line in enumerate(lines):
        index.setdefault(line, []).append(no)
    hunk = diff_mod._Hunk(old_start=old_start, old=list(old), new=[])
    got = diff_mod._locate(lines, index, hunk, min(pos, len(lines)), diff_mod._Work(10**9), "f")
    assert got == _reference_locate(lines, old, old_start, min(pos, len(lines)))


def test_many_hunks_over_a_large_file_apply_in_linear_work(harness: Harness) -> None:
    big = harness.with_files({"notes.md": "x\n" * 50_000})
    diff = "--- a/notes.md\n+++ b/notes.md\n" + "@@ -1,1 +1,1 @@\n-x\n+y\n" * 4_000
    patched = parse_patch(diff, big).apply(big)
    assert patched.files["notes.md"] == "y\n" * 4_000 + "x\n" * 46_000
    far = "--- a/notes.md\n+++ b/notes.md\n" + "@@ -50000,2 +50000,1 @@\n-x\n-z\n+y\n" * 3
    fails(far, big, "does not apply")


# ------------------------------------------------------------------ odd text

@pytest.mark.parametrize("text, needle", [
    ("def on_init(ctx, nb):\n    return '\ud800'\n", "lone surrogate (U+D800)"),
    ("\ufeffdef on_init(ctx, nb):\n    return None\n", "byte-order mark"),
    ("def on_init(ctx, nb):\n    return None\u2028\n", "line separator (U+2028)"),
    ("def on_init(ctx, nb):\n    return '\x1b[31m'\n", "control character (U+001B)"),
    ("def on_init(ctx, nb):\n    return '\x85'\n", "next-line"),
    ("def on_init(ctx, nb):\n    return None  # \u202e }] ; drop\n", "bidirectional control character (U+202E)"),
    ("def on_init(ctx, nb):\n    return '\U0001fffe'\n", "noncharacter (U+1FFFE)"),
    ("def on_init(ctx, nb):\r    return None\r", "bare carriage return"),
    ("def on_init(ctx, nb):\r\n    return None\n", "mixes CRLF and LF"),
    (reply(r1(description="a\ud83dz")), "lone surrogate"),
    (json.dumps(r1(description="ok", schema_version="v\u0000")), "NUL character"),
    (json.dumps(r1(actions=[{"type": "add_code_hook", "hook": "on_init", "code": GUARD.replace("\n", "\r\n", 1)}])), "mixes CRLF and LF"),
    ("--- /dev/null\n+++ b/hooks/01_on_init.py\n@@ -0,0 +1,2 @@\n+def hook(ctx, nb):\n+    return '" + "x" * 4100 + "'\n", "over the 4000 limit"),
])
def test_odd_text_is_a_one_line_error(harness: Harness, text: str, needle: str) -> None:
    message = fails(text, harness, needle)
    message.encode("utf-8")


def test_crlf_throughout_is_read_as_lf(harness: Harness) -> None:
    lf = parse_patch(MODULE, harness)
    assert parse_patch(MODULE.replace("\n", "\r\n"), harness).changes == lf.changes
    diff = "--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1,2 @@\n You are a SQL agent.\n+Check first.\n"
    assert parse_patch(diff.replace("\n", "\r\n"), harness).changes == parse_patch(diff, harness).changes
    code = GUARD.replace("\n", "\r\n")
    crlf = parse_patch(json.dumps(r1(actions=[{"type": "add_code_hook", "hook": "on_before_action", "code": code}])), harness)
    assert crlf.changes == (("hooks/01_on_before_action.py", GUARD),)
