"""Faults: killed worlds, servers and sandbox workers, a killed runner, and a soak for leaks.

An environment failure is retried a bounded number of times with a fresh world; if it
still fails the episode is ``env_error``: listed in ``info["incomplete"]``, excluded from
Δ, never scored as a failed task and never retried until it turns positive.
"""
from __future__ import annotations

import collections
import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import harness_gym  # noqa: F401
from baselines.base import PolicyInput, make_policy
from harness_gym.envs.harness_edit import ENV_ERROR_CHECKS
from harness_gym.errors import WorldError
from harness_gym.evaluation.cache import RolloutCache
from harness_gym.sandbox.pool import DEFAULT_MAX_IDLE

ENV_ID = "HarnessEdit-DBBench-v0"
ROOT = Path(__file__).resolve().parents[1]
SEED = 4


class FlakyWorld:
    """Delegates to a real world; raises ``WorldError`` mid-episode when the plan says so."""

    def __init__(self, inner: Any, attempts: collections.Counter, fail: dict[str, int]) -> None:
        self.inner, self.attempts, self.fail = inner, attempts, fail
        self.task_id: str | None = None
        self.steps = 0

    def reset(self, task: Any) -> Any:
        self.task_id = task.task_id
        self.attempts[task.task_id] += 1
        self.steps = 0
        return self.inner.reset(task)

    def step(self, call: Any) -> Any:
        self.steps += 1
        if self.steps == 2 and self.attempts[self.task_id] <= self.fail.get(self.task_id, 0):
            raise WorldError("lost connection to the task server (injected)")
        return self.inner.step(call)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _make_env(**kw: Any) -> Any:
    return gym.make(ENV_ID, batch_size=kw.pop("batch_size", 5), **kw)


def _template_patch(obs: str, info: dict) -> str:
    return make_policy("template").propose([PolicyInput(obs, info["packet"], "dbbench")], k=1)[0][0]


@pytest.fixture(scope="module")
def clean() -> dict[str, Any]:
    """The reference: a fault-free step with the same seed and patch."""
    env = _make_env()
    try:
        obs, info = env.reset(seed=SEED)
        patch = _template_patch(obs, info)
        _, reward, _, _, sinfo = env.step(patch)
        return {"patch": patch, "reward": reward, "per_task": sinfo["per_task"], "batch": info["batch"]}
    finally:
        env.close()


def _flaky_step(clean: dict[str, Any], fail: dict[str, int], retries: int = 2) -> tuple[float, dict, collections.Counter]:
    env = _make_env(retries=retries)
    try:
        env.reset(seed=SEED)
        ev = env.unwrapped.evaluator
        attempts: collections.Counter = collections.Counter()
        real = ev._make_world
        ev._make_world = lambda: FlakyWorld(real(), attempts, fail)
        _, reward, _, _, info = env.step(clean["patch"])
        return reward, info, attempts
    finally:
        env.close()


def test_a_transient_world_failure_is_retried_and_the_batch_completes(clean: dict[str, Any]) -> None:
    victim = clean["batch"][1]
    reward, info, attempts = _flaky_step(clean, {victim: 1})
    assert attempts[victim] == 2 and all(attempts[t] == 1 for t in clean["batch"] if t != victim)
    assert info["incomplete"] == [] and reward == clean["reward"] and info["per_task"] == clean["per_task"]


def test_a_persistent_failure_is_bounded_reported_and_excluded_from_delta(clean: dict[str, Any]) -> None:
    victim = clean["batch"][0]
    reward, info, attempts = _flaky_step(clean, {victim: 99}, retries=2)
    # bounded: 1 try + 2 retries, then as many for each of the base's and the patch's check runs
    assert attempts[victim] == 3 * (1 + 2 * ENV_ERROR_CHECKS), attempts[victim]
    assert info["incomplete"] == [victim]
    row = next(r for r in info["per_task"] if r["task_id"] == victim)
    assert row["patched_status"] == "env_error"
    rest = [r for r in clean["per_task"] if r["task_id"] != victim]
    expected = sum(r["patched_reward"] - r["baseline_reward"] for r in rest) / len(rest)
    assert reward == pytest.approx(expected) and info["delta"] == pytest.approx(expected)
    lo, hi = info["delta_ci"]
    assert lo <= expected <= hi or lo == hi == expected


def test_failed_tasks_are_never_retried_until_positive(clean: dict[str, Any]) -> None:
    reward, info, attempts = _flaky_step(clean, {})
    zero = [r["task_id"] for r in info["per_task"] if r["patched_reward"] == 0.0]
    assert zero, "the batch should hold a task the agent fails"
    assert all(attempts[t] == 1 for t in clean["batch"]), "a task failure is an outcome, not a fault"
    assert reward == clean["reward"]


def test_an_incomplete_run_is_not_cached(clean: dict[str, Any]) -> None:
    env = _make_env(retries=0)
    try:
        env.reset(seed=SEED)
        ev = env.unwrapped.evaluator
        attempts: collections.Counter = collections.Counter()
        real = ev._make_world
        # the patched episode fails, then every check run (base and patch) fails too: incomplete
        ev._make_world = lambda: FlakyWorld(real(), attempts, {clean["batch"][2]: 1 + 2 * ENV_ERROR_CHECKS})
        _, _, _, _, first = env.step(clean["patch"])
        assert first["incomplete"] == [clean["batch"][2]]
        _, reward, _, _, second = env.step(clean["patch"])  # the fault is over: recomputed, complete
        assert second["incomplete"] == [] and reward == clean["reward"]
    finally:
        env.close()


class TripwireWorld:
    """Delegates to a real WebShop world; an action containing ``TRIPWIRE`` kills the session
    (as a SQL ``KILL CONNECTION_ID()`` or a request the server drops would)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def step(self, call: Any) -> Any:
        if "tripwire" in json.dumps(call.arguments).lower():
            raise WorldError("the task server closed the session (injected)")
        return self.inner.step(call)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _tripwire_patch(when: str) -> str:
    """Rewrites the agent's action into one that kills the session whenever ``when`` holds."""
    return ("def on_before_action(ctx, nb):\n"
            f"    if {when}:\n"
            "        return {'type': 'rewrite_action', 'action': 'search[tripwire]'}\n"
            "    return None\n")


@pytest.mark.parametrize("when", ["True", "ctx.get('step', 0) >= 3"])
def test_environment_errors_a_patch_causes_are_scored_as_failures(when: str) -> None:
    """A patch must not hide its losses by turning its episodes into environment errors: the
    base harness reruns those tasks cleanly, so the errors are the patch's, scored as failures."""
    env = gym.make("HarnessEdit-WebShop-v0", batch_size=6)
    try:
        _, info = env.reset(seed=SEED)
        ev = env.unwrapped.evaluator
        real = ev._make_world
        ev._make_world = lambda: TripwireWorld(real())
        _, reward, _, _, sinfo = env.step(_tripwire_patch(when))
        assert sinfo["patch_valid"], sinfo["patch_error"]
        assert sinfo["incomplete"] == []
        caused = [r for r in sinfo["per_task"] if r["patched_status"] == "caused_env_error"]
        assert caused and all(r["patched_reward"] == 0.0 for r in caused)
        if when == "True":  # every episode killed: the patch lost every solved task
            assert len(caused) == len(sinfo["per_task"])
            assert reward == pytest.approx(-info["baseline_success"]) and reward < 0
    finally:
        env.close()


def test_sequential_edits_credit_the_repair_of_a_caused_error() -> None:
    """Under ``max_edits > 1`` the patch that crashed its episodes becomes the base: its errors stay
    scored as failures, so the next patch that removes the crash is credited for every task it
    gets back (the env neither locks up nor drops those tasks as incomplete)."""
    env = gym.make("HarnessEdit-WebShop-v0", batch_size=6, max_edits=2)
    try:
        u = env.unwrapped
        _, info = env.reset(seed=SEED)
        real = u.evaluator._make_world
        u.evaluator._make_world = lambda: TripwireWorld(real())
        _, r1, _, _, i1 = env.step(_tripwire_patch("True"))
        assert r1 == pytest.approx(-info["baseline_success"]) and i1["incomplete"] == []
        path = next(k for k in u._base.files if k.startswith("hooks/"))
        lines = u._base.files[path].splitlines()
        undo = f"--- a/{path}\n+++ /dev/null\n@@ -1,{len(lines)} +0,0 @@\n" + "".join(f"-{x}\n" for x in lines)
        _, r2, done, _, i2 = env.step(undo)
        assert i2["patch_valid"], i2["patch_error"]
        assert done and i2["incomplete"] == [] and r2 == pytest.approx(info["baseline_success"])
        assert {r["baseline_status"] for r in i2["per_task"]} == {"caused_env_error"}
    finally:
        env.close()


def test_one_crashing_candidate_leaves_the_others_scored() -> None:
    env = gym.make("HarnessEdit-WebShop-v0", batch_size=6)
    try:
        u = env.unwrapped
        env.reset(seed=SEED)
        real = u.evaluator._make_world
        u.evaluator._make_world = lambda: TripwireWorld(real())
        quiet, crash = u.evaluate_patches(["def make_pre_hint(ctx, nb):\n    return None\n", _tripwire_patch("True")])
        assert quiet["reward"] == 0.0 and quiet["incomplete"] == []
        assert crash["reward"] < 0 and crash["incomplete"] == []
        assert {r["patched_status"] for r in crash["per_task"]} == {"caused_env_error"}
    finally:
        env.close()


class RandomlyFailingWorld:
    """Fails a step with probability ``p``, drawn from (task, attempt, step): no harness is to blame."""

    attempts: collections.Counter = collections.Counter()

    def __init__(self, inner: Any, p: float) -> None:
        self.inner, self.p, self.key, self.steps = inner, p, "", 0

    def reset(self, task: Any) -> Any:
        RandomlyFailingWorld.attempts[task.task_id] += 1
        self.key, self.steps = f"{task.task_id}:{RandomlyFailingWorld.attempts[task.task_id]}", 0
        return self.inner.reset(task)

    def step(self, call: Any) -> Any:
        import hashlib

        self.steps += 1
        u = int(hashlib.sha256(f"{self.key}:{self.steps}".encode()).hexdigest()[:8], 16) / 2**32
        if u < self.p:
            raise WorldError("connection reset (injected, at random)")
        return self.inner.step(call)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_random_world_failures_do_not_bias_a_patch_that_changes_nothing() -> None:
    """A flaky world must not be put down to the patch: a no-op hook scores 0 on every batch."""
    env = _make_env(retries=0)
    try:
        u = env.unwrapped
        rewards = []
        for seed in range(6):
            RandomlyFailingWorld.attempts.clear()
            u.evaluator._make_world = u.spec_.world_factory("sqlite")
            env.reset(seed=seed)
            real = u.evaluator._make_world
            u.evaluator._make_world = lambda: RandomlyFailingWorld(real(), 0.15)
            try:
                _, reward, _, _, info = env.step("def make_pre_hint(ctx, nb):\n    return None\n")
            except WorldError:
                continue
            rewards.append(reward)
            assert all(r["patched_status"] != "caused_env_error" for r in info["per_task"]), info["per_task"]
        assert rewards and all(r == 0.0 for r in rewards), rewards
    finally:
        env.close()


class DeadWorld:
    def __init__(self, *_: Any) -> None:
        raise WorldError("connection refused (injected: the server is down)")


async def _dead_backend(requests: list[Any]) -> list[Any]:
    from harness_gym.errors import BackendError

    raise BackendError("the engine died (injected)")


@pytest.mark.parametrize("what", ["world", "model"])
def test_a_dead_server_after_reset_raises_one_line_and_loses_nothing(clean: dict[str, Any], what: str) -> None:
    env = _make_env(retries=1)
    try:
        env.reset(seed=SEED)
        u = env.unwrapped
        ev = u.evaluator
        ev.cache = RolloutCache()  # the baseline is not cached either: both runs meet the dead server
        saved = (ev._make_world, ev.backend.generate)
        if what == "world":
            ev._make_world = DeadWorld
        else:
            ev.backend.generate = _dead_backend
        for attempt in (lambda: env.step(clean["patch"]), lambda: u.evaluate_patches([clean["patch"]])):
            with pytest.raises(WorldError) as err:
                attempt()
            msg = str(err.value)
            assert "\n" not in msg and "every one of the 5 tasks" in msg and "injected" in msg, msg
        assert u._edits == 0, "a step that scored nothing is not spent"
        ev._make_world, ev.backend.generate = saved  # the server is back: the same step scores as if nothing happened
        _, reward, _, _, info = env.step(clean["patch"])
        assert reward == clean["reward"] and info["incomplete"] == []
    finally:
        env.close()


def test_a_dead_server_at_reset_raises_one_line() -> None:
    env = _make_env(retries=0)
    try:
        env.unwrapped.evaluator._make_world = DeadWorld
        with pytest.raises(WorldError, match="every one of the 5 baseline episodes"):
            env.reset(seed=SEED)
        with pytest.raises(RuntimeError, match="reset"):
            env.step("noop")
    finally:
        env.close()


# ---------------------------------------------------------------- real kills


@pytest.mark.mysql
def test_killed_mysql_connections_are_retried_or_reported(mysql_url: str) -> None:
    pymysql = pytest.importorskip("pymysql")
    from harness_gym.benchmarks.dbbench.db_mysql import parse_mysql_url

    env = _make_env(backend=mysql_url, batch_size=6, retries=3)
    try:
        obs, info = env.reset(seed=SEED)
        patch = _template_patch(obs, info)
        params = parse_mysql_url(mysql_url)
        admin = pymysql.connect(**{k: v for k, v in params.items() if k in ("host", "port", "user", "password")},
                                autocommit=True)
        killed: list[int] = []
        stop = threading.Event()

        def killer() -> None:
            with admin.cursor() as cur:
                cur.execute("SELECT CONNECTION_ID()")
                me = cur.fetchone()[0]
                while not stop.is_set() and len(killed) < 4:
                    cur.execute("SELECT ID, DB FROM information_schema.PROCESSLIST")
                    for cid, db in cur.fetchall():
                        if cid != me and cid not in killed and db and str(db).startswith("dbbench_"):
                            try:
                                cur.execute(f"KILL {int(cid)}")
                                killed.append(cid)
                            except pymysql.err.Error:
                                pass
                            break
                    time.sleep(0.01)

        env.unwrapped.evaluator.cache = RolloutCache()  # both runs are recomputed under fire
        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        _, reward, _, _, sinfo = env.step(patch)
        stop.set()
        thread.join(timeout=10)
        admin.close()
        assert killed, "the killer should have hit a running episode"
        # reference: the same step without faults
        env.unwrapped.evaluator.cache = RolloutCache()
        env.reset(seed=SEED)
        _, clean_reward, _, _, cinfo = env.step(patch)
        assert cinfo["incomplete"] == []
        for row, ref in zip(sinfo["per_task"], cinfo["per_task"]):
            if row["task_id"] in sinfo["incomplete"]:
                assert "env_error" in (row["baseline_status"], row["patched_status"])
            else:
                assert (row["baseline_reward"], row["patched_reward"]) == (ref["baseline_reward"], ref["patched_reward"])
        if not sinfo["incomplete"]:
            assert reward == clean_reward
    finally:
        env.close()


def test_killed_sandbox_workers_mid_batch_leave_a_noop_and_a_working_env() -> None:
    from harness_gym.harness.patch import parse_patch

    env = _make_env(batch_size=6)
    busy = ("def on_post_step(ctx, nb):\n    nb['s'] = sum(range(300000))\n    return None\n\n"
            "def make_pre_hint(ctx, nb):\n    nb['t'] = sum(range(300000))\n    return None\n")
    try:
        env.reset(seed=SEED)
        u = env.unwrapped
        pool = u.evaluator.sandbox
        patched = parse_patch(busy, u._base).apply(u._base)
        kills: list[int] = []
        stop = threading.Event()

        def killer() -> None:
            while not stop.is_set() and len(kills) < 12:
                for pid in pool.pids()[:1]:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        kills.append(pid)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)

        thread = threading.Thread(target=killer, daemon=True)
        thread.start()
        runs = u.evaluator.evaluate(patched, u._batch, u._seeds)  # the patched half of a step, under fire
        stop.set()
        thread.join(timeout=5)
        assert kills
        by_id = {r.task_id: r for r in u._base_results}
        crashed = []
        for r in runs:
            if r.is_env_error:  # a worker killed while starting, every retry: reported, not scored
                assert r.error and "\n" not in r.error
                continue
            # hooks that return None are a no-op, crashed or not: same outcome as the baseline
            assert (r.reward, r.status) == (by_id[r.task_id].reward, by_id[r.task_id].status)
            errors = [e["error"] for e in r.events if e.get("kind") == "hook" and e.get("error")]
            assert all("\n" not in e for e in errors)
            crashed += [e for e in errors if "worker crashed" in e]
        assert crashed, "a kill should have hit a call in flight and been recorded on the trajectory"
        assert sum(not r.is_env_error for r in runs) >= 4
        # the pool recovered: the env scores the next patch with live workers (a new harness version,
        # so the step cannot be answered from the rollout cache without calling a hook)
        _, reward, _, _, info = env.step(busy + "\n# a new harness version\n")
        assert info["patch_valid"] and info["incomplete"] == [] and reward == 0.0
        # one module's workers: at most the pool's concurrency; all of them: bounded by the idle cap
        new_sha = pool.code_sha(busy + "\n# a new harness version\n", "on_post_step", "dbbench")
        assert 1 <= len(pool.pids(new_sha)) <= pool.workers
        assert len(pool.pids()) <= pool.workers + pool.max_idle
    finally:
        env.close()


def test_bench_resume_after_sigkill_redoes_nothing_and_loses_nothing(tmp_path: Path) -> None:
    out = tmp_path / "bench.jsonl"
    args = ["bench", "--policy", "noop,template", "--episodes", "25", "--batch-size", "3", "--out", str(out),
            "--no-progress", "--no-plot"]
    proc = subprocess.Popen([sys.executable, "-m", "harness_gym.cli", *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.exists() and out.read_text().count("\n") >= 4:
                break
            time.sleep(0.02)
        assert proc.poll() is None, "the run finished before it could be killed; raise --episodes"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = out.read_text().splitlines()
    complete_before = [line for line in before if line.endswith("}")]
    assert 4 <= len(complete_before) < 50
    from harness_gym.cli import main

    assert main([*args, "--resume"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [(r["policy"], r["seed"]) for r in rows]
    assert len(rows) == 50 and len(set(keys)) == 50, "every episode exactly once"
    assert out.read_text().splitlines()[: len(complete_before)] == complete_before, "written rows survive the crash"
    noop = [r["reward"] for r in rows if r["policy"] == "noop"]
    assert noop == [0.0] * 25


# ---------------------------------------------------------------- soak


def _soak_module() -> Any:
    spec = importlib.util.spec_from_file_location("hg_soak", ROOT / "benchmarks" / "soak.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_short_soak_shows_no_growth_in_memory_files_or_workers() -> None:
    soak = _soak_module()
    # warm-up fills the (here small) LRU cache; then every episode is a new batch and a new patch
    snaps = soak.soak(160, warmup=40, batch_size=3, cache_entries=16, progress=False)
    start, _middle, end = snaps
    assert end["open_fds"] == start["open_fds"], snaps
    # every patch is a new hook module, so a new worker; idle ones are capped (LRU), not kept
    assert end["sandbox_workers"] <= DEFAULT_MAX_IDLE + 2 and end["cache_entries"] <= 16
    assert end["rss_mb"] - start["rss_mb"] < 8.0, snaps


def test_rollout_cache_is_a_bounded_lru(tmp_path: Path) -> None:
    from harness_gym.runtime.trajectory import EpisodeResult

    def results(i: int) -> list[EpisodeResult]:
        return [EpisodeResult(f"t{i}", f"id{i}", "other", "v", i, reward=1.0)]

    mem = RolloutCache(max_entries=3)
    assert mem  # an empty cache is still truthy (callers write ``cache or RolloutCache()``)
    for i in range(3):
        mem.put(f"k{i}", results(i))
    assert mem.get("k0") is not None  # k0 becomes the most recent; k1 is now the oldest
    mem.put("k3", results(3))
    assert mem.entries == 3 and mem.evictions == 1
    assert mem.get("k1") is None and mem.get("k0") is not None and mem.get("k3") is not None
    disk = RolloutCache(tmp_path, max_entries=1)
    disk.put("a", results(1))
    disk.put("b", results(2))
    assert disk.entries == 1 and disk.get("a") == results(1), "an evicted entry is re-read from disk"
    with pytest.raises(ValueError, match="max_entries"):
        RolloutCache(max_entries=0)
