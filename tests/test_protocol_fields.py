"""Protocol fields are not harness: limits live in the spec, and patches cannot change them."""
from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from harness_gym.errors import PatchError
from harness_gym.benchmarks import plugins
from harness_gym.evaluation.benchmarks import get_benchmark, known_benchmarks, protocol_of
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.harness.files import Harness
from harness_gym.harness.patch import parse_patch
from harness_gym.models.sim import SimBackend

KNOWN = known_benchmarks()  # every registered benchmark, plugins included: the protocol rules are registry-wide
ENV_IDS = {name: plugins.get(name).env_id() for name in KNOWN}


def _config_diff(harness: Harness, new: dict) -> str:
    old_lines = harness.files["config.json"].splitlines()
    new_lines = json.dumps(new, indent=2).splitlines()
    return (f"--- a/config.json\n+++ b/config.json\n@@ -1,{len(old_lines)} +1,{len(new_lines)} @@\n"
            + "".join(f"-{line}\n" for line in old_lines) + "".join(f"+{line}\n" for line in new_lines))


def _one_line_error(patch: str, harness: Harness) -> str:
    with pytest.raises(PatchError) as info:
        parse_patch(patch, harness)
    text = str(info.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("name", KNOWN)
def test_every_benchmark_declares_its_protocol_and_the_default_config_agrees(name: str) -> None:
    spec = get_benchmark(name)
    assert spec.protocol == protocol_of(name) and "max_rounds" in spec.protocol and "metric" in spec.protocol
    with pytest.raises(TypeError):
        spec.protocol["max_rounds"] = 1  # type: ignore[index]  # read-only
    config = spec.default_harness().config()
    for key in set(config) & set(spec.protocol):
        assert config[key] == spec.protocol[key], key  # the file's copy is the protocol's value, byte-identical file
    if name == "alfworld":
        assert spec.protocol["repeat_limit"] == config["repeat_limit"] == 3


@pytest.mark.parametrize("name,key,value", [("dbbench", "max_rounds", 4000), ("webshop", "max_rounds", 4000),
                                            ("alfworld", "max_rounds", 4000), ("alfworld", "repeat_limit", 50),
                                            ("dbbench", "max_rounds", 20.0), ("alfworld", "max_rounds", 1)])
def test_a_diff_changing_a_protocol_key_is_rejected(name: str, key: str, value: object) -> None:
    base = get_benchmark(name).default_harness()
    error = _one_line_error(_config_diff(base, {**base.config(), key: value}), base)
    assert f"config key {key!r} is protocol" in error, error


@pytest.mark.parametrize("name", KNOWN)
def test_removing_a_protocol_key_or_adding_an_unknown_key_is_rejected(name: str) -> None:
    base = get_benchmark(name).default_harness()
    without = {k: v for k, v in base.config().items() if k != "max_rounds"}
    assert "'max_rounds' is protocol" in _one_line_error(_config_diff(base, without), base)
    for key in ("repeat_limit", "max_steps", "time_limit_s"):
        if key in base.config():
            continue
        error = _one_line_error(_config_diff(base, {**base.config(), key: 99}), base)
        assert repr(key) in error and ("protocol" in error or "not a setting" in error), error


@pytest.mark.parametrize("name", KNOWN)
def test_changing_only_harness_settings_passes(name: str) -> None:
    base = get_benchmark(name).default_harness()
    key = next(k for k in base.config() if k not in get_benchmark(name).protocol)  # a harness setting
    value = base.config()[key] + 1 if isinstance(base.config()[key], int) else str(base.config()[key]) + " Now."
    patched = parse_patch(_config_diff(base, {**base.config(), key: value}), base).apply(base)
    assert patched.config()[key] == value
    assert {k: patched.config()[k] for k in base.config() if k in get_benchmark(name).protocol} == \
        {k: base.config()[k] for k in base.config() if k in get_benchmark(name).protocol}


def test_json_and_module_formats_cannot_reach_config() -> None:
    base = get_benchmark("alfworld").default_harness()
    legacy = {"schema_version": "harness-r1-patch-v1", "benchmark": "alfworld",
              "actions": [{"type": "set_config", "key": "repeat_limit", "value": 50}]}
    assert "legacy" in _one_line_error(f"<think>x</think><patch>{json.dumps(legacy)}</patch>", base)
    module = "def on_init(ctx, nb):\n    return {'max_rounds': 4000, 'repeat_limit': 50}\n"
    patched = parse_patch(module, base).apply(base)
    assert patched.files["config.json"] == base.files["config.json"]


@pytest.mark.parametrize("name", KNOWN)
def test_raising_the_limit_through_the_env_is_a_patch_error(name: str) -> None:
    env = gym.make(ENV_IDS[name], batch_size=2)
    try:
        env.reset(seed=0)
        base = env.unwrapped.default_harness
        key = "repeat_limit" if name == "alfworld" else "max_rounds"
        _, reward, _, _, info = env.step(_config_diff(base, {**base.config(), key: 4000}))
        assert info["patch_valid"] is False and f"config key {key!r} is protocol" in info["patch_error"]
        assert reward == env.unwrapped.config.invalid_patch_reward
        (res,) = env.unwrapped.evaluate_patches([_config_diff(base, {**base.config(), "max_rounds": 4000})])
        assert res["patch_valid"] is False and "protocol" in res["patch_error"]
    finally:
        env.close()


BLOCK_ALL = ("def on_init(ctx, nb):\n    return {'skills': ['x'], 'max_rounds': 4000, 'max_step': 4000}\n\n"
             "def on_before_action(ctx, nb):\n    return {'type': 'block_and_prompt', 'message': 'Not yet; think again.'}\n")


def test_the_episode_reads_limits_from_the_protocol_not_config_or_hooks() -> None:
    """A config saying 4000 rounds (built directly, no patch) plus a hook that blocks every
    action and returns limit-looking keys: every episode still stops at the protocol's limit."""
    spec = get_benchmark("dbbench")
    base = spec.default_harness()
    hostile = base.with_files({"config.json": json.dumps({**base.config(), "max_rounds": 4000}), "hooks/01_module.py": BLOCK_ALL})
    short = dataclasses.replace(spec, protocol={**spec.protocol, "max_rounds": 3})
    tasks = spec.load_tasks("test", None)[:2]
    for the_spec, limit in ((spec, spec.protocol["max_rounds"]), (short, 3)):
        ev = Evaluator(the_spec, SimBackend(), world_backend="sqlite")
        try:
            results = ev.evaluate(hostile, tasks, [0, 1])
        finally:
            ev.close()
        assert [r.rounds for r in results] == [limit, limit], [r.rounds for r in results]
        assert not any(r.success for r in results)


def _raw_config_diff(harness: Harness, new_text: str, path: str = "config.json") -> str:
    old_lines = harness.files[path].splitlines()
    new_lines = new_text.splitlines()
    return (f"--- a/{path}\n+++ b/{path}\n@@ -1,{len(old_lines)} +1,{len(new_lines)} @@\n"
            + "".join(f"-{line}\n" for line in old_lines) + "".join(f"+{line}\n" for line in new_lines))


@pytest.mark.parametrize("name", KNOWN)
@pytest.mark.parametrize("text,needle", [
    # Python's json keeps the last copy of a key, other readers the first: the checked value and the read one differ
    ('{{"max_rounds": 4000, "max_rounds": {mr}, "history_window": 0}}', "appears twice"),
    ('{{"max_rounds": {mr}, "history_window": 0, "history_window": 3}}', "appears twice"),
    ('{{"max_rounds": {mr}, "history_window": 0, "text_only_message": "a", "text_only_message": "b"}}', "appears twice"),
    ('{{"max_rounds": {mr}, "history_window": NaN}}', "NaN is not a number JSON allows"),
    ('{{"max_rounds": {mr}, "history_window": -Infinity}}', "-Infinity is not a number JSON allows"),
    ('{{"max_rounds": {mr}, "history_window": Infinity}}', "Infinity is not a number JSON allows"),
])
def test_ambiguous_json_in_config_is_rejected(name: str, text: str, needle: str) -> None:
    base = get_benchmark(name).default_harness()
    error = _one_line_error(_raw_config_diff(base, text.format(mr=protocol_of(name)["max_rounds"])), base)
    assert error.startswith("config.json: ") and needle in error, error


def test_ambiguous_json_in_tools_is_rejected() -> None:
    base = get_benchmark("dbbench").default_harness()
    tools = base.files["tools.json"]
    dup = tools.replace('"name":', '"name": "x", "name":', 1)
    assert "appears twice" in _one_line_error(_raw_config_diff(base, dup, "tools.json"), base)
    nan = tools.replace("[", '[{"n": NaN}, ', 1)
    assert "NaN is not a number JSON allows" in _one_line_error(_raw_config_diff(base, nan, "tools.json"), base)


def _new_file(path: str, text: str = "x") -> str:
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{text}\n"


@pytest.mark.parametrize("path,needle", [
    # names a case-insensitive file system takes for an existing file (macOS, Windows checkouts of a saved harness)
    ("Config.json", "differ only in case"), ("CONFIG.JSON", "differ only in case"), ("System_Prompt.md", "differ only in case"),
    ("TOOLS.json", "differ only in case"),
    # a file that another path needs as a folder, and the reverse
    ("config.json/x.md", "both a file and a folder"), ("system_prompt.md/hooks.py", "both a file and a folder"),
    # what Harness.from_dir skips: it would run now and vanish once the harness is saved and reloaded
    ("hooks/.hidden_on_init.py", "hidden files"), (".config.json", "hidden files"), ("hooks/__pycache__/x.py", "__pycache__"),
    ("notes/x.pyc", ".pyc"),
])
def test_paths_one_file_system_would_merge_or_drop_are_rejected(path: str, needle: str) -> None:
    base = get_benchmark("dbbench").default_harness()
    error = _one_line_error(_new_file(path, "def on_init(ctx, nb): return None" if path.endswith(".py") else '{"max_rounds": 4000}'), base)
    assert needle in error, error


def test_a_folder_that_is_also_a_file_is_rejected_both_ways() -> None:
    base = get_benchmark("dbbench").default_harness()
    with_notes = base.with_files({"notes/a.md": "x\n"})
    assert "both a file and a folder" in _one_line_error(_new_file("notes"), with_notes)
    assert "both a file and a folder" in _one_line_error(_new_file("Notes"), with_notes)
    assert parse_patch(_new_file("notes/b.md"), with_notes).changes == (("notes/b.md", "x\n"),)  # siblings are fine


def test_a_shared_rollout_cache_never_serves_a_run_made_under_other_rules(tmp_path: object) -> None:
    """Two evaluators on one cache (a shared ``cache_dir``): another protocol (the short-run callers'
    ``max_rounds``) or other hook limits (a 1.5 s hook is a timeout at 0.5 s, an effect at 3 s) are
    other runs, never a cache hit."""
    from harness_gym.evaluation.cache import RolloutCache

    spec = get_benchmark("dbbench")
    hostile = spec.default_harness().with_files({"hooks/01_module.py": BLOCK_ALL})
    tasks = spec.load_tasks("test", None)[:2]
    cache = RolloutCache(tmp_path)  # type: ignore[arg-type]
    runs = []
    for the_spec, timeout in ((spec, 2.0), (dataclasses.replace(spec, protocol={**spec.protocol, "max_rounds": 3}), 2.0),
                              (spec, 0.5)):
        ev = Evaluator(the_spec, SimBackend(), world_backend="sqlite", cache=cache, sandbox_timeout_s=timeout)
        try:
            runs.append(ev.evaluate(hostile, tasks, [0, 1]))
        finally:
            ev.close()
    assert cache.hits == 0 and cache.misses == 3, (cache.hits, cache.misses)
    assert [r.rounds for r in runs[0]] == [20, 20] and [r.rounds for r in runs[1]] == [3, 3]
    ev = Evaluator(spec, SimBackend(), world_backend="sqlite", cache=RolloutCache(tmp_path), sandbox_timeout_s=2.0)  # type: ignore[arg-type]
    try:
        again = ev.evaluate(hostile, tasks, [0, 1])
        assert ev.cache.hits == 1 and [r.to_dict() for r in again] == [r.to_dict() for r in runs[0]]  # same rules: served
    finally:
        ev.close()
