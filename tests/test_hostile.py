"""A corpus of hostile patches, each run through the env: contained, scored right, nothing escapes.

Two corpora: the original one below (single payloads, Harness-R1 format, DBBench), and the
attack-class corpus of ``hostile_corpus.py``, each case in all three patch formats on
DBBench and a representative subset in every env.

Every case ends in one of two ways: a clear one-line ``patch_error`` (the patch never runs;
reward = ``invalid_patch_reward``) or a runtime no-op (the sandbox stops the hook; the
reward equals a harmless no-op patch's, and the hook's failure is recorded as an event).
After every case the env scores a fresh benign patch correctly, no file appeared in the
sentinel dir, the cwd or /tmp, and the TCP listener on 127.0.0.1 never saw a connection.
"""
from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from baselines.hr1 import harness_r1_patch
from hostile_corpus import CASES, EVERY_ENV, FORMATS, Case, render
from harness_gym.evaluation.cache import RolloutCache
from harness_gym.harness.patch import parse_patch

ENV_ID = "HarnessEdit-DBBench-v0"
SEED = 11
CALL_TIMEOUT_S = 0.5  # short, so C-level hangs cost little; the outer kill enforces it
SENTINEL = Path("/tmp") / f"hg-hostile-sentinel-{os.getpid()}"


class Listener:
    """A TCP listener on 127.0.0.1 that counts every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


LISTENER = Listener()  # module level: its port is baked into the corpus below
PORT = LISTENER.port
S = str(SENTINEL)


def r1(code: str, point: str = "on_post_step") -> str:
    return harness_r1_patch("dbbench", "Hostile.", {point: code})


def hook(body: str, helpers: str = "", point: str = "on_post_step") -> str:
    return r1(helpers + "def hook(ctx, nb):\n" + "".join(f"    {line}\n" for line in body.splitlines()), point)


# name -> (patch text or bytes, needle expected in the patch error / in a hook event's error; '|' = any of)
REJECT: dict[str, tuple[Any, str]] = {
    # imports and builtins that reach the OS
    "import_os": (hook("import os\nreturn os.environ"), "import"),
    "from_import": (hook("from os import system\nreturn None"), "import"),
    "dunder_import": (hook("return __import__('os').listdir('/')"), "__import__"),
    "import_socket": (hook(f"import socket\nsocket.create_connection(('127.0.0.1', {PORT}))"), "import"),
    "kill_parent": (hook("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)"), "import"),
    "eval_string": (hook("return eval('1+1')"), "eval"),
    "exec_string": (hook("exec('import os')"), "exec"),
    "compile_code": (hook("return compile('1', 'x', 'eval')"), "compile"),
    "open_file_write": (hook(f"open('{S}/pwned', 'w').write('x')"), "open"),
    "open_passwd": (hook("return open('/etc/passwd').read()"), "open"),
    "open_proc_environ": (hook("return open('/proc/self/environ').read()"), "open"),
    "open_proc_parent": (hook("return open('/proc/' + str(1) + '/cmdline').read()"), "open"),
    "breakpoint": (hook("breakpoint()"), "breakpoint"),
    "globals_walk": (hook("return globals()['__builtins__']"), "globals"),
    "vars_ctx": (hook("return vars(ctx)"), "vars"),
    "type_ctx": (hook("return type(ctx).__init__"), "forbidden"),
    # attribute walks to interpreter internals
    "subclasses_walk": (hook("return ().__class__.__bases__[0].__subclasses__()"), "forbidden attribute"),
    "globals_of_hook": (hook("return hook.__globals__"), "__globals__"),
    "getattr_chain": (hook("return getattr(getattr(ctx, 'get'), '__self__')"), "getattr"),
    "frame_walk": (hook("g = (x for x in [1])\nreturn g.gi_frame.f_back.f_globals"), "forbidden attribute"),
    "traceback_frame": (hook("try:\n    1 / 0\nexcept Exception as e:\n    return e.__traceback__.tb_frame"), "forbidden attribute"),
    "mro_walk": (hook("return str.mro()"), "mro"),
    "math_dict": (hook("return math.__dict__"), "__dict__"),
    # format strings that read attributes (the AST cannot see inside templates)
    "format_attr": (hook("return '{0.__class__.__mro__}'.format(ctx)"), "format"),
    "format_index": (hook("return '{0[state]}'.format(ctx)"), "format"),
    "format_nonliteral": (hook("t = '{0.__class__}'\nreturn t.format(ctx)"), "format"),
    "str_format_unbound": (hook("return str.format('{0.__class__}', ctx)"), "format"),
    "format_map": (hook("return '{x.__class__}'.format_map({'x': ctx})"), "format_map"),
    "fstring_dunder": (hook("return f'{ctx.__class__}'"), "__class__"),
    "format_nested_spec": (hook("return '{0:{1.__class__}}'.format(1, ctx)"), "format"),
    # forbidden statements and shapes
    "while_true": (hook("while True:\n    pass"), "while"),
    "lambda": (hook("return (lambda: 1)()"), "lambda"),
    "class_def": (r1("class X:\n    pass\n\ndef hook(ctx, nb):\n    return None\n"), "class"),
    "global_state": (hook("global counter\ncounter = 1"), "global"),
    "raise_exit": (hook("raise SystemExit(1)"), "raise"),
    "catch_baseexception": (hook("try:\n    return 1\nexcept BaseException:\n    return 2"), "except Exception"),
    "with_statement": (hook(f"with open('{S}/x', 'w') as fh:\n    pass"), "with"),
    "decorator": (r1("@staticmethod\ndef hook(ctx, nb):\n    return None\n"), "decorator"),
    "mutable_default": (r1("def keep(x=[]):\n    return x\n\ndef hook(ctx, nb):\n    keep().append(1)\n"), "scalar"),
    "nested_def": (hook("def inner():\n    return 1\nreturn inner()"), "nested"),
    # state that would survive into another patch's or episode's evaluation
    "shared_class_attr": (hook("SequenceMatcher.leak = 1"), "attribute assignment"),
    "ctx_attr_assign": (hook("ctx.state.candidate_answer = ['forged']"), "attribute assignment"),
    "function_attr": (hook("hook.calls = 1"), "attribute assignment"),
    # the patch text itself
    "non_utf8_bytes": (b"def on_init(ctx, nb):\n    return {'skills': ['\xff\xfe']}\n", "not UTF-8"),
    "multi_megabyte": ("# " + "A" * (3 * 1024 * 1024) + "\ndef on_init(ctx, nb):\n    return None\n", "limit"),
    "nul_byte": ("def on_init(ctx, nb):\n    return None\n\x00", "NUL"),
    "deep_json": ("{\"actions\": " + "[" * 50_000 + "]" * 50_000 + "}", "JSON"),
    "path_traversal": ("--- /dev/null\n+++ b/../../etc/cron.d/x\n@@ -0,0 +1 @@\n+* * * * * root true\n", "not allowed"),
    "hook_shell_file": ("--- /dev/null\n+++ b/hooks/run.sh\n@@ -0,0 +1 @@\n+rm -rf /\n", ".py"),
    "huge_literal": (hook("return '" + "x" * 2000 + "'"), "700"),
}

NOOP: dict[str, tuple[str, str]] = {
    # accepted by the static policy; stopped by the sandbox at run time
    "infinite_for": (hook("for i in range(10**12):\n    nb['i'] = i"), "line budget"),
    "deep_recursion": (hook("return f(0)", "def f(n):\n    return f(n + 1)\n"), "recursion"),
    "mutual_recursion": (hook("return a(0)", "def a(n):\n    return b(n)\n\ndef b(n):\n    return a(n + 1)\n"), "recursion"),
    "huge_int_power": (hook("return {'skills': [str(10**10**8)]}", point="on_init"), "timeout"),
    "catastrophic_regex": (hook("return re.match('(a+)+$', 'a' * 40 + 'b')", point="on_init"), "timeout"),
    "c_level_sum": (hook("return sum(range(10**11))", point="on_init"), "timeout"),
    "memory_bomb_str": (hook("x = 'a' * (4 * 1024 ** 3)\nreturn len(x)", point="on_init"), "memory"),
    "memory_bomb_list": (hook("x = [0] * (10 ** 9)\nreturn len(x)", point="on_init"), "memory"),
    "doubling_string": (hook("x = 'ab'\nfor i in range(40):\n    x = x + x\nreturn len(x)", point="on_init"), "memory|timeout"),
    "huge_return": (hook("return {'type': 'inject_hint', 'message': 'x' * (10 ** 7)}"), "return value rejected"),
    "huge_nb": (hook("nb['x'] = ['y' * 1000] * 1000\nreturn None"), "nb rejected"),
    "unencodable_return": (hook("return re.match('a', 'a')"), "unsupported type"),
    "unencodable_nb": (hook("nb['m'] = re.match('a', 'a')\nreturn None"), "nb rejected"),
    "int_to_str_limit": (hook("return {'type': 'inject_hint', 'message': str(10 ** 5000)}"), "exception"),
    "zero_division": (hook("return 1 / 0"), "ZeroDivisionError"),
    "ctx_setitem": (hook("ctx['predicates'] = {}\nreturn None"), "read-only"),
    "ctx_update": (hook("ctx.update({'state': {}})\nreturn None"), "read-only"),
    "ctx_nested_setitem": (hook("ctx['predicates']['commit_before_sql'] = True\nreturn None"), "read-only"),
}
# Accepted and *not* an error, but still a no-op: mutations of the worker's private copy of ctx.
SILENT_NOOP: dict[str, str] = {
    "ctx_list_mutation": hook("ctx['dbbench']['sql_history'].append('DROP TABLE x')\nctx['state']['candidate_answer'].clear()\nreturn None", point="on_before_action"),
    "ctx_copy_mutation": hook("c = ctx.copy()\nc['state'] = {'remaining_rounds': 0}\nnb['c'] = 1\nreturn None"),
    "nb_poison": hook("nb['score'] = 1.0\nnb['reward'] = 1.0\nnb['success'] = True\nreturn None"),
}


@pytest.fixture(scope="module")
def env() -> Iterator[Any]:
    SENTINEL.mkdir(exist_ok=True)
    e = gym.make(ENV_ID, batch_size=3)
    e.unwrapped.evaluator.sandbox.call_timeout_s = CALL_TIMEOUT_S
    e.reset(seed=SEED)
    yield e
    e.close()
    for child in SENTINEL.iterdir():
        child.unlink()
    SENTINEL.rmdir()


@pytest.fixture(scope="module")
def noop_reward(env: Any) -> float:
    _, reward, _, _, info = env.step(hook("return None"))
    assert info["patch_valid"], info["patch_error"]
    env.unwrapped.baseline_for_tests = info["baseline_score"]
    return reward


_benign_counter = [0]


def _benign(env: Any, noop_reward: float) -> None:
    """A fresh (uncached) harmless patch still scores exactly like the no-op."""
    _benign_counter[0] += 1
    _, reward, _, _, info = env.step(hook(f"nb['k'] = {_benign_counter[0]}\nreturn None"))
    assert info["patch_valid"] and reward == noop_reward, info.get("patch_error")


def _listing() -> dict[str, set[str]]:
    # cwd: test tooling (.pytest_cache, .hypothesis, runs/ of other tests) may appear concurrently
    cwd = {n for n in os.listdir(os.getcwd()) if not n.startswith(".") and n != "runs"}
    return {"sentinel": set(os.listdir(SENTINEL)), "cwd": cwd,
            "tmp_hostile": {n for n in os.listdir("/tmp") if "pwn" in n or n.startswith("hg-escape")}}


def _hook_errors(env: Any, text: Any) -> list[str]:
    u = env.unwrapped
    patched = parse_patch(text, u._base).apply(u._base)
    runs = u.evaluator.evaluate(patched, u._batch, u._seeds)  # cached: the very rollout just scored
    return [ev["error"] for r in runs for ev in r.events if ev.get("kind") == "hook" and ev.get("error")]


def test_corpus_is_large_enough() -> None:
    assert len(REJECT) + len(NOOP) + len(SILENT_NOOP) >= 40
    assert len({c.klass for c in CASES}) >= 10 and len(CASES) * len(FORMATS) >= 300
    assert set(EVERY_ENV) <= {c.name for c in CASES}


@pytest.mark.parametrize("name", sorted(REJECT))
def test_rejected_with_a_clear_error(env: Any, noop_reward: float, name: str) -> None:
    text, needle = REJECT[name]
    before = _listing()
    _, reward, _, _, info = env.step(text)
    assert info["patch_valid"] is False, name
    err = info["patch_error"]
    assert isinstance(err, str) and "\n" not in err and len(err) <= 300
    assert needle.lower() in err.lower(), err
    assert reward == env.unwrapped.config.invalid_patch_reward < noop_reward
    _benign(env, noop_reward)
    assert _listing() == before
    assert LISTENER.accepted == 0


@pytest.mark.parametrize("name", sorted(NOOP))
def test_runtime_hostility_is_a_recorded_noop(env: Any, noop_reward: float, name: str) -> None:
    text, needle = NOOP[name]
    before = _listing()
    _, reward, _, _, info = env.step(text)
    assert info["patch_valid"], info["patch_error"]
    assert reward == noop_reward and info["incomplete"] == []
    errors = _hook_errors(env, text)
    assert errors and all("\n" not in e for e in errors)
    assert any(n.lower() in e.lower() for e in errors for n in needle.split("|")), errors[:3]
    _benign(env, noop_reward)
    assert _listing() == before
    assert LISTENER.accepted == 0


@pytest.mark.parametrize("name", sorted(SILENT_NOOP))
def test_mutating_private_copies_changes_nothing(env: Any, noop_reward: float, name: str) -> None:
    _, reward, _, _, info = env.step(SILENT_NOOP[name])
    assert info["patch_valid"], info["patch_error"]
    assert reward == noop_reward
    assert info["baseline_score"] == env.unwrapped.baseline_for_tests  # scored against the untouched baseline
    _benign(env, noop_reward)


def test_no_patch_can_touch_the_baseline_cache_or_scoring(env: Any, noop_reward: float) -> None:
    u = env.unwrapped
    first = json.dumps([r.to_dict() for r in u._base_results], sort_keys=True)
    for name in ("nb_poison", "ctx_list_mutation"):
        env.step(SILENT_NOOP[name])
    for name in ("huge_nb", "infinite_for", "ctx_update"):
        env.step(NOOP[name][0])
    u.evaluator.cache = RolloutCache()  # recompute everything from scratch
    env.reset(seed=SEED)
    assert json.dumps([r.to_dict() for r in u._base_results], sort_keys=True) == first
    _, reward, _, _, _ = env.step(hook("return None"))
    assert reward == noop_reward
    assert LISTENER.accepted == 0


def test_workers_run_under_the_reported_layers(env: Any) -> None:
    layers = env.unwrapped.report()["sandbox_layers"]
    assert {"process", "ast-policy", "restricted-builtins", "wall-timeout", "scrubbed-env", "closed-fds"} <= set(layers)
    for pid in env.unwrapped.evaluator.sandbox.pids():
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert b"HARNESS_GYM" not in environ and b"MYSQL" not in environ


# ------------------------------------------------------------------ the attack-class corpus

_BY_NAME = {c.name: c for c in CASES}
_OTHER_ENVS: dict[str, tuple[Any, float]] = {}


def _env_for(env_id: str) -> tuple[Any, float]:
    """A reset env of ``env_id`` and its no-op reward (WebShop, ALFWorld: built once, on first use)."""
    if env_id not in _OTHER_ENVS:
        SENTINEL.mkdir(exist_ok=True)  # also when these tests run without the DBBench fixture
        e = gym.make(env_id, batch_size=3)
        e.unwrapped.evaluator.sandbox.call_timeout_s = CALL_TIMEOUT_S
        e.reset(seed=SEED)
        bench = e.unwrapped.config.benchmark
        _, reward, _, _, info = e.step(render(Case("noop", "noop", "return None", "noop", ""), "harness_r1", bench))
        assert info["patch_valid"], info["patch_error"]
        _OTHER_ENVS[env_id] = (e, reward)
    return _OTHER_ENVS[env_id]


@pytest.fixture(scope="module", autouse=True)
def _close_other_envs() -> Iterator[None]:
    yield
    for e, _ in _OTHER_ENVS.values():
        e.close()
    _OTHER_ENVS.clear()
    if SENTINEL.is_dir() and not any(SENTINEL.iterdir()):
        SENTINEL.rmdir()


def _check_case(env: Any, noop_reward: float, case: Case, fmt: str) -> None:
    """``case`` in format ``fmt`` ends as its class says, and nothing escapes."""
    text = render(case, fmt, env.unwrapped.config.benchmark)
    before = _listing()
    _, reward, _, _, info = env.step(text)
    needles = [n.lower() for n in case.needle.split("|")]
    if case.expect == "reject":
        assert info["patch_valid"] is False, (case.name, fmt)
        err = info["patch_error"]
        assert isinstance(err, str) and "\n" not in err and len(err) <= 300
        assert any(n in err.lower() for n in needles), err
        assert reward == env.unwrapped.config.invalid_patch_reward
    else:
        assert info["patch_valid"], info["patch_error"]
        assert reward == noop_reward and info["incomplete"] == []
        errors = _hook_errors(env, text)
        assert errors and all("\n" not in e for e in errors)
        assert any(n in e.lower() for e in errors for n in needles), errors[:3]
    assert _listing() == before
    assert LISTENER.accepted == 0


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_attack_class_in_every_format(env: Any, noop_reward: float, name: str, fmt: str) -> None:
    _check_case(env, noop_reward, _BY_NAME[name], fmt)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", EVERY_ENV)
@pytest.mark.parametrize("env_id", ["HarnessEdit-WebShop-v0", "HarnessEdit-ALFWorld-v0"])
def test_attack_class_in_every_env(env_id: str, name: str, fmt: str) -> None:
    e, noop_reward = _env_for(env_id)
    _check_case(e, noop_reward, _BY_NAME[name], fmt)


def test_env_scores_a_benign_patch_after_the_class_corpus(env: Any, noop_reward: float) -> None:
    _benign(env, noop_reward)
    for e, reward in _OTHER_ENVS.values():
        _, got, _, _, info = e.step(render(Case("b", "b", "nb['after'] = 1\nreturn None", "", ""), "module", e.unwrapped.config.benchmark))
        assert info["patch_valid"] and got == reward, info["patch_error"]


# ------------------------------------------------------------------ long loops inside the per-call budgets

_SLOW = "    return {'message': str(sum(range(10 ** 11)))}\n"  # C-level work: only the wall timeout stops it
# blocks every action, so the episode runs to its round limit and the slow hooks run every round
_BLOCK = "    return {'type': 'block_and_prompt', 'message': 'Not yet; look at the table again.'}\n"
_SLOW_MODULE = f"def make_pre_hint(ctx, nb):\n{_SLOW}\ndef on_before_action(ctx, nb):\n{_BLOCK}"
_IDLE_MODULE = "".join(f"def {point}(ctx, nb):\n    return None\n" for point in ("make_pre_hint", "on_before_action", "on_post_step"))


def _idle_module(i: int) -> str:
    """Distinct code, so each module needs a worker of its own (one code identity per worker)."""
    return f'"""idle module {i}"""\n{_IDLE_MODULE}'


def _new_file(path: str, text: str) -> str:
    lines = text.splitlines()
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join(f"+{line}\n" for line in lines)


SLOW_PATCHES = {
    # one module: a hook that runs to the timeout every round
    "module_every_round": _SLOW_MODULE,
    # Harness-R1's 12 actions: 11 hooks that run to the timeout, one that blocks
    "r1_twelve_actions": "<think>\nSlow.\n</think>\n<patch>" + json.dumps({"benchmark": "dbbench", "actions": [
        *({"type": "add_code_hook", "hook": "make_pre_hint", "code": "def hook(ctx, nb):\n" + _SLOW} for _ in range(11)),
        {"type": "add_code_hook", "hook": "on_before_action", "code": "def hook(ctx, nb):\n" + _BLOCK}]}) + "</patch>",
    # a diff creating many hook files, each slow every round
    "diff_many_files": "".join(_new_file(f"hooks/{i:02d}_module.py", _SLOW_MODULE) for i in range(1, 17)),
    # more fast hook files than the pool keeps warm: every call starts a worker (~0.2 s), which the
    # call's own time (microseconds) would never show; the starts are charged to the episode's budget
    "diff_many_fast_files": _new_file("hooks/00_block.py", f"def on_before_action(ctx, nb):\n{_BLOCK}") + "".join(
        _new_file(f"hooks/{i:02d}_idle.py", _idle_module(i)) for i in range(1, 41)),
}


@pytest.mark.parametrize("name", sorted(SLOW_PATCHES))
def test_hooks_that_run_to_the_timeout_every_round_are_cut_per_episode(env: Any, noop_reward: float, name: str) -> None:
    """Each call stops at the timeout, but entries x rounds of them would hold an episode for hours
    (16 files x 20 rounds x 0.5 s = 160 s an episode here, 2 s calls and 50 ALFWorld rounds: 27 min);
    the episode's hook budget (EPISODE_BUDGET_CALLS timeouts of sandbox time) ends its hook calls."""
    import time

    from harness_gym.runtime.hooks import EPISODE_BUDGET_CALLS

    text = SLOW_PATCHES[name]
    budget = EPISODE_BUDGET_CALLS * CALL_TIMEOUT_S
    started = time.monotonic()
    _, reward, _, _, info = env.step(text)
    took = time.monotonic() - started
    assert info["patch_valid"], info["patch_error"] and info["incomplete"] == []
    episodes = len(env.unwrapped._batch)
    # every episode spends at most its budget plus one call; two sandbox slots run them side by side
    assert took < episodes * (budget + CALL_TIMEOUT_S) + 30, took
    errors = _hook_errors(env, text)
    assert sum("time budget" in e for e in errors) == episodes, errors[-3:]
    _benign(env, noop_reward)


def test_a_slow_patch_in_a_group_does_not_spend_the_others_budget(env: Any, noop_reward: float) -> None:
    """The budget counts each call's own time in a worker, not the wait for a free sandbox slot, so a
    group member that keeps every slot busy cannot make another's hooks run out of budget."""
    benign = hook("nb['n'] = nb.get('n', 0) + 1\nif nb['n'] == 1:\n    return {'type': 'inject_hint', 'message': 'Check the schema first.'}\nreturn None")
    u = env.unwrapped
    alone = u.evaluate_patches([benign])[0]
    u.evaluator.cache = RolloutCache()
    group = u.evaluate_patches([SLOW_PATCHES["module_every_round"], benign, SLOW_PATCHES["diff_many_files"]])
    assert group[1]["reward"] == alone["reward"] and group[1]["per_task"] == alone["per_task"]
    assert group[0]["patch_valid"] and group[2]["patch_valid"]
    runs = u.evaluator.evaluate(parse_patch(benign, u._base).apply(u._base), u._batch, u._seeds)
    assert not any("budget" in str(ev.get("error")) for r in runs for ev in r.events)


def test_patches_whose_16_hex_versions_collide_keep_their_own_results(env: Any, noop_reward: float,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``Harness.version`` is 64 bits of the content hash (a birthday collision is ~2**32 hashes away):
    rewards in a group and cached rollouts are matched on position and the full sha256, never on it."""
    from harness_gym.harness.files import Harness

    effect = hook("return {'type': 'inject_hint', 'message': 'Check the schema first.'}", point="on_post_step")
    u = env.unwrapped
    honest = [r["reward"] for r in u.evaluate_patches([effect, hook("return None")])]
    u.evaluator.cache = RolloutCache()
    monkeypatch.setattr(Harness, "version", property(lambda self: "c011" * 4))  # every harness collides
    colliding = [r["reward"] for r in u.evaluate_patches([hook("return None"), effect])]
    assert colliding == honest[::-1]


def test_the_registry_refuses_two_contents_under_one_version(monkeypatch: pytest.MonkeyPatch) -> None:
    from harness_gym.errors import ConfigError
    from harness_gym.harness.files import Harness
    from harness_gym.harness.registry import ACCEPTED, HarnessRegistry

    root = Harness("dbbench", {"system_prompt.md": "a\n"})
    reg = HarnessRegistry()
    monkeypatch.setattr(Harness, "version", property(lambda self: "c011" * 4))
    reg.add_root(root)
    assert reg.add_root(root).version == "c011" * 4  # the same content again is fine
    with pytest.raises(ConfigError, match="already recorded with other content"):
        reg.record(Harness("dbbench", {"system_prompt.md": "b\n"}), "c011" * 4, "", ACCEPTED, {})
    with pytest.raises(ConfigError, match="already recorded with other content"):
        reg.add_root(Harness("dbbench", {"system_prompt.md": "c\n"}))


class _EvilStrip(str):
    def strip(self, *args: Any) -> str:
        raise RuntimeError("a str subclass's own method ran")


class _EvilLen(str):
    def __len__(self) -> int:
        return 1  # would slip past the size limit if the parser asked the object


class _EvilSplit(str):
    def splitlines(self, *args: Any) -> list[str]:
        return ["def on_init(ctx, nb):", "    return open('/etc/hostname').read()"]


@pytest.mark.parametrize("cls", [_EvilStrip, _EvilLen, _EvilSplit])
def test_a_str_subclass_is_parsed_as_its_plain_text(env: Any, noop_reward: float, cls: type) -> None:
    """step() and evaluate_patches() parse an exact str copy: no method of the caller's object runs."""
    text = cls(hook("return None"))
    _, reward, _, _, info = env.step(text)
    assert info["patch_valid"] and reward == noop_reward, info["patch_error"]
    big = cls("# " + "x" * 250_000 + "\n" + hook("return None"))
    out = env.unwrapped.evaluate_patches([text, big])
    assert out[0]["patch_valid"] and not out[1]["patch_valid"] and "over the 200000 limit" in out[1]["patch_error"]


# ------------------------------------------------------------------ effects that could make a task "incomplete"

# A task whose run raises is reported as incomplete and left out of Δ (env errors are never scored), so an
# effect that made the world, the target or the episode loop raise could drop the tasks a patch would lose.
EFFECT_TEXTS = ("", "x" * 700, "click[", "search[" + "a" * 600 + "]", "click[buy now]", "go to", "take from", "think:",
                "Action: Answer\nFinal Answer: [\"1\"]", "```sql\nSELECT 1;\n```", "{0} %s %n \\", "ﾟ" * 50 + "[[[[",
                "go to drawer 99999999999999999999", "examine " + "9" * 300, "\u00a0\u3000 look")


def _effects_patch(text: str) -> str:
    js = json.dumps(text)
    return (f"def on_init(ctx, nb):\n    return {{'skills': [{js}], 'tool_hint': {js}}}\n\n"
            f"def make_pre_hint(ctx, nb):\n    return {{'message': {js}}}\n\n"
            f"def on_before_action(ctx, nb):\n    return {{'type': nb.get('t', 'rewrite_action'), 'action': {js}, 'message': {js}}}\n\n"
            "def on_post_step(ctx, nb):\n    nb['t'] = 'force_action' if ctx.get('step', 0) % 2 else 'block_and_prompt'\n"
            f"    return {{'type': 'force_action', 'action': {js}, 'message': {js}}}\n")


@pytest.mark.parametrize("env_id", [ENV_ID, "HarnessEdit-WebShop-v0", "HarnessEdit-ALFWorld-v0"])
def test_no_effect_makes_a_task_incomplete(env: Any, env_id: str) -> None:
    e = env if env_id == ENV_ID else _env_for(env_id)[0]
    for text in EFFECT_TEXTS:
        _, _, _, _, info = e.step(_effects_patch(text))
        if not info["patch_valid"] and "numbered ALFWorld instance actions" in info["patch_error"]:
            continue  # ALFWorld's policy already refuses these literals
        assert info["patch_valid"], (text[:30], info["patch_error"])
        assert info["incomplete"] == [], (text[:30], info["incomplete"])
