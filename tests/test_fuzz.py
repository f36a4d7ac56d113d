"""Arbitrary text and bytes as actions: every registered env answers with a clear error or a valid patch.

One env per id, reset once and reused across examples (an invalid patch never rolls out,
so examples are cheap). Strategies mix raw noise with near-misses of each patch format,
which reach deeper into the parsers than pure noise does.
"""
from __future__ import annotations

import json
import math
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness_gym  # noqa: F401
from harness_gym.envs.registration import ENV_IDS

_ENVS: dict[str, Any] = {}

PREFIXES = [
    "", "{", '{"actions": [', "<think>x</think><patch>", "<patch>{", "--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1 @@\n",
    "--- /dev/null\n+++ b/hooks/01_on_init.py\n@@ -0,0 +1,2 @@\n+", "def on_init(ctx, nb):\n    return ",
    "def on_post_step(ctx, nb):\n    ", "```python\n", "diff --git a/config.json b/config.json\n",
]
actions = st.one_of(
    st.text(max_size=400),
    st.binary(max_size=400),
    st.builds(lambda p, t: p + t, st.sampled_from(PREFIXES), st.text(max_size=300)),
    st.builds(lambda p, b: p.encode() + b, st.sampled_from(PREFIXES), st.binary(max_size=200)),
)


def _env(env_id: str) -> Any:
    if env_id not in _ENVS:
        env = gym.make(env_id, batch_size=2)
        env.reset(seed=0)
        _ENVS[env_id] = env
    return _ENVS[env_id]


@pytest.fixture(scope="module", autouse=True)
def _close_envs() -> Any:
    yield
    for env in _ENVS.values():
        env.close()
    _ENVS.clear()


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@settings(max_examples=60, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(action=actions)
def test_any_action_gives_a_clear_error_or_a_valid_patch(env_id: str, action: Any) -> None:
    env = _env(env_id)
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str) and isinstance(reward, float) and math.isfinite(reward)
    assert truncated is False and isinstance(terminated, bool)
    if info["patch_valid"]:
        assert info["patch_error"] is None and isinstance(info["delta"], float)
    else:
        err = info["patch_error"]
        assert isinstance(err, str) and err.strip() and "\n" not in err and len(err) <= 300, repr(err)
        assert reward == env.unwrapped.config.invalid_patch_reward


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_env_still_scores_a_real_patch_after_fuzzing(env_id: str) -> None:
    env = _env(env_id)
    text = "def on_init(ctx, nb):\n    return None\n"
    _, reward, _, _, info = env.step(text)
    assert info["patch_valid"], info["patch_error"]
    assert reward == 0.0


# ------------------------------------------------------------------ odd text in any format, any place

ODD = {
    "lone_surrogate": "\ud800", "low_surrogate": "\udfff", "nul": "\x00", "bom": "\ufeff", "vertical_tab": "\x0b",
    "form_feed": "\x0c", "escape": "\x1b", "delete": "\x7f", "c1_next_line": "\x85", "line_separator": "\u2028",
    "paragraph_separator": "\u2029", "bidi_override": "\u202e", "bidi_isolate": "\u2066", "noncharacter": "\ufffe", "astral_noncharacter": "\U0010ffff", "bare_cr": "\r",
}
HOOK = "def hook(ctx, nb):\n    return {'type': 'inject_hint', 'message': 'Check the table X first.'}\n"
MODULE = '"""Doc X."""\n\ndef on_post_step(ctx, nb):\n    return {\'type\': \'inject_hint\', \'message\': \'Check X.\'}\n'


def _r1(description: str = "Hint X.", code: str = HOOK, point: str = "on_post_step", think: str = "Reason X.",
        escape: bool = False) -> str:
    obj = {"benchmark": "dbbench", "description": description, "actions": [{"type": "add_code_hook", "hook": point, "code": code}]}
    return f"<think>{think}</think><patch>{json.dumps(obj, ensure_ascii=escape)}</patch>"


FIRST = "I will ask you a question, then you should help me operate a MySQL database with SQL to answer the question."


def _diff(line: str = "+Always check X first.", path: str = "system_prompt.md") -> str:
    if path == "system_prompt.md":
        return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n {FIRST}\n{line}\n"
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n{line}\n"


# place -> a function putting the odd text ``x`` into a patch that is valid without it
PLACES: dict[str, Any] = {
    "r1_think": lambda x: _r1(think=f"Reason {x}."),
    "r1_description": lambda x: _r1(description=f"Hint {x}."),
    "r1_description_escaped": lambda x: _r1(description=f"Hint {x}.", escape=True),
    "r1_code": lambda x: _r1(code=HOOK.replace("X", x)),
    "r1_code_escaped": lambda x: _r1(code=HOOK.replace("X", x), escape=True),
    "r1_code_comment": lambda x: _r1(code="# note " + x + "\n" + HOOK, escape=True),
    "r1_hook_point": lambda x: _r1(point="on_post_step" + x, escape=True),
    "r1_after_patch": lambda x: _r1() + x,
    "diff_line": lambda x: _diff(f"+Always check {x} first."),
    "diff_context": lambda x: f"--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -1 +1,2 @@\n {FIRST}{x}\n+Added.\n",
    "diff_file_name": lambda x: _diff("+note", path=f"notes{x}.md"),
    "diff_header": lambda x: _diff().replace("+++ b/system_prompt.md", f"+++ b/system_prompt.md{x}"),
    "diff_hook_file": lambda x: "--- /dev/null\n+++ b/hooks/01_on_post_step.py\n@@ -0,0 +1,2 @@\n"
                                + "".join(f"+{line}\n" for line in HOOK.replace("X", x).splitlines()),
    "module_docstring": lambda x: MODULE.replace("Doc X", f"Doc {x}"),
    "module_code": lambda x: MODULE.replace("Check X", f"Check {x}"),
    "module_leading": lambda x: x + MODULE,
}


def _assert_clean_invalid(env: Any, text: Any) -> str:
    obs, reward, _, _, info = env.step(text)
    assert env.observation_space.contains(obs)
    assert info["patch_valid"] is False, (repr(text)[:120], info.get("patch_error"))
    err = info["patch_error"]
    assert isinstance(err, str) and err.strip() and "\n" not in err and len(err) <= 300, repr(err)
    err.encode("utf-8")  # the error itself is clean text
    assert reward == env.unwrapped.config.invalid_patch_reward
    (row,) = env.unwrapped.evaluate_patches([text])
    assert row["patch_valid"] is False and row["patch_error"] == err
    return err


def test_every_place_is_valid_without_the_odd_text() -> None:
    env = _env("HarnessEdit-DBBench-v0")
    for place, build in PLACES.items():
        _, _, _, _, info = env.step(build(""))
        assert info["patch_valid"], (place, info["patch_error"])


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize("kind", sorted(ODD))
def test_odd_character_anywhere_is_a_clean_patch_error(place: str, kind: str) -> None:
    _assert_clean_invalid(_env("HarnessEdit-DBBench-v0"), PLACES[place](ODD[kind]))


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@pytest.mark.parametrize("kind", ["lone_surrogate", "bom", "line_separator", "bare_cr"])
def test_odd_character_in_every_env(env_id: str, kind: str) -> None:
    env = _env(env_id)
    bench = env.unwrapped.config.benchmark
    x = ODD[kind]
    for text in (_r1(code=HOOK.replace("X", x), escape=True).replace('"dbbench"', f'"{bench}"'),
                 f"--- /dev/null\n+++ b/notes.md\n@@ -0,0 +1 @@\n+note {x}\n", MODULE.replace("Check X", f"Check {x}")):
        _assert_clean_invalid(env, text)


def test_line_endings_and_overlong_lines() -> None:
    env = _env("HarnessEdit-DBBench-v0")
    crlf = MODULE.replace("\n", "\r\n")
    _, _, _, _, info = env.step(crlf)
    assert info["patch_valid"], info["patch_error"]  # CRLF throughout: converted to LF
    assert "mixes CRLF and LF" in _assert_clean_invalid(env, crlf.replace("\r\n", "\n", 1))
    assert "mixes CRLF and LF" in _assert_clean_invalid(env, _r1(code=HOOK.replace("\n", "\r\n", 1)))
    long = "x" * 5000
    assert "over the 4000 limit" in _assert_clean_invalid(env, _diff("+" + long))
    assert "over the 4000 limit" in _assert_clean_invalid(env, MODULE.replace("Check X", "Check") + "# " + long + "\n")
    assert "over the 4000 limit" in _assert_clean_invalid(env, _r1(code=HOOK + "# " + long + "\n"))
    assert "not UTF-8" in _assert_clean_invalid(env, MODULE.encode("utf-8").replace(b"Check", b"\xed\xa0\x80"))  # encoded surrogate


def _is_odd(text: str) -> bool:
    """Holds an odd character or a CR outside CRLF, and no surrogate pair (a JSON escape of one is a valid character)."""
    odd = any(c in text for c in ODD.values() if c != "\r") or "\r" in text.replace("\r\n", "")
    return odd and "\ud800\udfff" not in text


odd_text = st.lists(st.sampled_from(sorted(ODD.values()) + ["a", " ", "\n", "\r\n", "{", "<patch>", "é", "\\"]),
                    min_size=1, max_size=6).map("".join).filter(_is_odd)


@settings(max_examples=120, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(place=st.sampled_from(sorted(PLACES)), odd=odd_text, as_bytes=st.booleans())
def test_odd_text_fuzz(place: str, odd: str, as_bytes: bool) -> None:
    text = PLACES[place](odd)
    if as_bytes:
        text = text.encode("utf-8", "surrogatepass")
    _assert_clean_invalid(_env("HarnessEdit-DBBench-v0"), text)
