"""HarnessSelectEnv (Discrete over a patch library, Box packet features) and the PPO selector, on every benchmark."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from support import require_modules

import harness_gym  # noqa: F401 - registers every id
from harness_gym.envs.registration import ENV_IDS, SELECT_ENV_IDS
from harness_gym.benchmarks import plugins
from harness_gym.envs.select import (
    EXAMPLES_DIR,
    HarnessSelectEnv,
    default_library,
    feature_names,
    packet_features,
    select_spec,
    trace_signatures,
)
from harness_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
BUILTINS = ["alfworld", "dbbench", "webshop"]
# every benchmark with a HarnessSelect id: the built-ins and installed plugins (harness-gym-calc in CI)
BENCHMARKS = sorted(v["benchmark"] for v in SELECT_ENV_IDS.values())
# A small library per benchmark keeps training cheap: noop, the adaptive template, two more arms (ALFWorld:
# co-harness and the rewrite-only example, since on the sim fitted to the real agent at stop 39 the arms that
# speak to the agent each turn (self-refine, the stage hints) lose, and co-harness is the arm above noop on
# these training batches;
# WebShop: the stall hint, the one arm above noop on these small training batches; DBBench: the batch-022 example,
# since on the sim calibrated at stop 35 only the two example patches gain on these training batches).
_ARMS = {
    "dbbench": ("noop", "template", "co-harness", "example:dbbench_batch022"),
    "webshop": ("noop", "template", "template:stall", "template:over_budget"),
    "alfworld": ("noop", "template", "co-harness", "example:alfworld_mediate"),
}


class _Arms(dict):
    def __missing__(self, benchmark: str) -> tuple[str, ...]:  # a plugin: the same recipe
        return ("noop", "template", "self-refine", f"template:{select_spec(benchmark).signatures[0]}")


ARMS = _Arms(_ARMS)


def _small_library(benchmark: str):
    lib = {e.name: e for e in default_library(benchmark)}
    return [lib[n] for n in ARMS[benchmark]]


def _needs_sb3() -> None:
    require_modules("stable_baselines3", install="pip install 'torch==2.13.0' stable-baselines3")


def test_every_benchmark_has_a_select_id():
    assert set(BUILTINS) <= set(BENCHMARKS)
    assert set(BENCHMARKS) <= {v["benchmark"] for v in ENV_IDS.values()}


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_default_library_has_every_kind_of_arm(benchmark):
    names = [e.name for e in default_library(benchmark)]
    expected = ["noop", "self-refine", "template", "co-harness", "template:top", "template:all"]
    expected += [f"template:{s}" for s in select_spec(benchmark).signatures]
    expected += [f"example:{p.stem}" for p in EXAMPLES_DIR.glob(f"{benchmark}_*.txt")]
    assert sorted(names) == sorted(expected)
    assert any(n.startswith("example:") for n in names) or benchmark not in BUILTINS


@pytest.mark.parametrize("env_id", sorted(SELECT_ENV_IDS))
def test_registered_id_passes_check_env_and_features_are_deterministic(env_id):
    benchmark = SELECT_ENV_IDS[env_id]["benchmark"]
    env = gym.make(env_id, library=_small_library(benchmark), batch_size=5, seed_pool=4)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        a, _ = env.reset(seed=3)
        b, _ = env.reset(seed=3)
        assert a.shape == (len(feature_names(benchmark)),) and a.dtype == np.float32
        assert np.array_equal(a, b) and env.observation_space.contains(a)
        _, _, terminated, truncated, info = env.step(1)
        assert terminated and not truncated and info["candidate"] == "template" and info["patch_valid"]
        with pytest.raises(ValueError, match="expected an int"):
            env.step(len(ARMS[benchmark]))
    finally:
        env.close()


def test_dbbench_features_read_signatures_from_the_packet():
    packet = {"benchmark": "dbbench", "batch_size": 10, "baseline_pass": 6, "failures": [
        {"task_id": "t", "index": 0, "status": "completed", "reward": 0.0, "turns": 1, "task_type": "other",
         "messages": ['ASSISTANT_TOOL commit_final_answer: {"answers": ["x"]}'], "signals": {"commits": 1}}]}
    f = dict(zip(feature_names("dbbench"), packet_features(packet)))
    assert f["pass_rate"] == pytest.approx(0.6) and f["sig:commit_before_sql"] == 1.0
    assert f["cat:middleware_mismatch"] == 1.0 and f["sig:identifier_error"] == 0.0
    assert f["signal:commits"] == pytest.approx(0.2) and f["kind:select"] == 1.0 and f["kind:mutation"] == 0.0


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_features_follow_the_packet(benchmark):
    """Real packets: the signature shares match the template's own ``detect``, and other packets read differently."""
    rules = plugins.template_rules(benchmark)
    env = gym.make(next(k for k, v in ENV_IDS.items() if v["benchmark"] == benchmark), batch_size=10, split="train")
    names = feature_names(benchmark)
    vectors = []
    try:
        for seed in range(4):
            _, info = env.reset(seed=seed)
            packet = info["packet"]
            f = dict(zip(names, packet_features(packet)))
            fails = packet["failures"]
            assert f["pass_rate"] == pytest.approx(packet["baseline_pass"] / packet["batch_size"])
            assert f["failure_share"] == pytest.approx(len(fails) / packet["batch_size"])
            # the reference: the template engineer's detect over the whole packet (every signature it knows is a feature)
            found = set(rules.detect(packet))
            assert found <= set(select_spec(benchmark).signatures)
            assert {s for s in select_spec(benchmark).signatures if f[f"sig:{s}"] > 0} == found
            for s in select_spec(benchmark).signatures:
                share = sum(s in trace_signatures(benchmark, t) for t in fails) / max(1, len(fails))
                assert f[f"sig:{s}"] == pytest.approx(share)
            if fails:
                assert sum(v for k, v in f.items() if k.startswith("kind:")) == pytest.approx(1.0)
            assert not np.array_equal(packet_features(packet), packet_features({**packet, "failures": []}))
            vectors.append(tuple(f.values()))
    finally:
        env.close()
    assert len(set(vectors)) == len(vectors)  # four batches, four different readings


def test_select_env_rejects_sequential_editing_and_unknown_benchmarks():
    with pytest.raises(ConfigError, match="single-step"):
        HarnessSelectEnv(max_edits=2)
    with pytest.raises(ConfigError, match="unknown benchmark .nosuch.: expected one of"):
        HarnessSelectEnv(benchmark="nosuch")


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_ppo_selector_trains_and_is_usable_as_a_policy(benchmark, tmp_path):
    _needs_sb3()
    from baselines.base import PolicyInput, make_policy
    from baselines.sb3_select.train import SelectTrainConfig, meta_path, train_selector

    cfg = SelectTrainConfig(benchmark=benchmark, timesteps=128, seed_pool=4, batch_size=5, n_steps=64)
    out = tmp_path / f"sel_{benchmark}.zip"
    model, log = train_selector(cfg, out, env_kwargs={"library": _small_library(benchmark)})
    assert [row["timesteps"] for row in log] == [64, 128]
    assert meta_path(out).exists()
    env = HarnessSelectEnv(benchmark, library=_small_library(benchmark), batch_size=5, seed_pool=4, split="train")
    try:
        # on the training batches the learned choice beats an arm drawn at random (and noop's 0)
        greedy, uniform, seen = [], [], set()
        for seed in range(40):
            obs, info = env.reset(seed=seed)
            if info["batch_seed"] in seen:
                continue
            seen.add(info["batch_seed"])
            rewards = []
            for arm in range(len(ARMS[benchmark])):
                env.reset(seed=seed)
                rewards.append(env.step(arm)[1])
            greedy.append(rewards[int(model.predict(obs, deterministic=True)[0])])
            uniform.append(float(np.mean(rewards)))
        assert np.mean(greedy) > np.mean(uniform) > 0
        # the same model through the policy factory, by its path and by a {benchmark} pattern
        for spec in (f"sb3-select:{out}", f"sb3-select:{tmp_path}/sel_{{benchmark}}.zip"):
            pol = make_policy(spec)
            env.reset(seed=0)
            patch = pol.propose([PolicyInput(env._text, env._packet, benchmark)])[0][0]
            assert pol.last_choice in ARMS[benchmark]
            assert env.edit.step(patch)[4]["patch_valid"]
    finally:
        env.close()
    other = next(b for b in BENCHMARKS if b != benchmark)
    with pytest.raises(ConfigError, match=f"trained on {benchmark}.*--benchmark {other}"):
        make_policy(f"sb3-select:{out}").propose([PolicyInput("", {"failures": []}, other)])


def test_missing_selector_names_the_training_command(tmp_path):
    _needs_sb3()
    from baselines.base import PolicyInput, make_policy

    with pytest.raises(ConfigError, match="not found.*baselines.sb3_select.train"):
        make_policy(f"sb3-select:{tmp_path}/missing.zip")
    pol = make_policy(f"sb3-select:{tmp_path}/sel_{{benchmark}}.zip")  # a pattern loads on first use
    with pytest.raises(ConfigError, match="for webshop.*train --benchmark webshop --out"):
        pol.propose([PolicyInput("", {"failures": []}, "webshop")])


@pytest.mark.parametrize("benchmark", BUILTINS)
def test_shipped_selector_is_small_checked_and_loads(benchmark):
    _needs_sb3()
    from baselines.sb3_select.policy import load_selector
    from baselines.sb3_select.train import SHIPPED_DIR, meta_path

    path = SHIPPED_DIR / f"{benchmark}.pt"
    meta = json.loads(meta_path(path).read_text(encoding="utf-8"))
    assert path.stat().st_size < 100_000 and meta["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert meta["trained"]["target"] == "sim" and "--export" in meta["trained"]["command"]
    sel = load_selector(path, benchmark)
    assert [e.name for e in sel.library] == meta["library"]
    assert sel.model.observation_space.shape == (len(feature_names(benchmark)),)


def test_shipped_selector_refuses_a_file_that_does_not_match_its_sha256(tmp_path):
    _needs_sb3()
    from baselines.sb3_select.policy import load_selector
    from baselines.sb3_select.train import SHIPPED_DIR, meta_path

    src = SHIPPED_DIR / "dbbench.pt"
    bad = tmp_path / "dbbench.pt"
    bad.write_bytes(src.read_bytes()[:-8] + b"\0" * 8)
    meta_path(bad).write_text(meta_path(src).read_text(encoding="utf-8"), encoding="utf-8")
    with pytest.raises(ConfigError, match="sha256"):
        load_selector(bad, "dbbench")


def test_plain_sb3_select_runs_from_a_fresh_clone_without_runs(tmp_path):
    """``harness-gym bench --policy sb3-select`` with no runs/ folder: the shipped selectors are used."""
    _needs_sb3()
    assert not (tmp_path / "runs").exists()
    out = tmp_path / "out" / "bench.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "harness_gym.cli", "bench", "--env", "HarnessEdit-DBBench-v0,HarnessEdit-WebShop-v0",
         "--policy", "sb3-select", "--episodes", "1", "--batch-size", "4", "--out", str(out), "--no-plot",
         "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 2 and all(r["patch_valid"] for r in rows)
    assert not (tmp_path / "runs").exists()
