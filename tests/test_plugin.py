"""Benchmarks as entry points: the built-ins, a plugin package installed by pip, and broken entry points."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import harness_gym
from baselines.base import PolicyInput, make_policy
from harness_gym.benchmarks import plugins
from harness_gym.benchmarks.api import Benchmark
from harness_gym.envs.registration import ENV_IDS, SELECT_ENV_IDS, register_envs
from harness_gym.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
CALC = ROOT / "examples" / "harness-gym-calc"


def _pip_install(*args: str) -> None:
    """``pip install`` (the venv has setuptools; no index needed), leaving the source folder clean."""
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", *args],
                       check=True, capture_output=True, text=True, timeout=600)
    finally:
        for junk in (CALC / "build", CALC / "harness_gym_calc.egg-info"):
            shutil.rmtree(junk, ignore_errors=True)


@pytest.fixture(scope="module")
def calc() -> str:
    """The example plugin installed in this venv (``make install-test`` does it; else pip installs it here)."""
    try:
        import harness_gym_calc  # noqa: F401
    except ImportError:
        _pip_install(str(CALC))
        plugins.discover(refresh=True)
        register_envs(refresh=True)
    assert "calc" in plugins.names(), plugins.discover().broken
    return "HarnessEdit-Calc-v0"


def test_pyproject_entry_points_are_the_builtin_table():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["entry-points"][plugins.GROUP] == plugins.BUILTIN


def test_builtins_come_first_and_name_their_envs():
    assert plugins.names()[:3] == ["dbbench", "webshop", "alfworld"]
    assert list(ENV_IDS)[:3] == ["HarnessEdit-DBBench-v0", "HarnessEdit-WebShop-v0", "HarnessEdit-ALFWorld-v0"]
    for name in plugins.names():
        bench = plugins.get(name)
        assert isinstance(bench, Benchmark) and ENV_IDS[bench.env_id()] == {"benchmark": name}
    assert harness_gym.Benchmark is Benchmark


def test_the_plugin_registers_both_env_ids_without_touching_harness_gym(calc):
    assert ENV_IDS[calc] == {"benchmark": "calc"} and SELECT_ENV_IDS["HarnessSelect-Calc-v0"] == {"benchmark": "calc"}
    assert "harness-gym-calc" in plugins.discover().packages["calc"]
    import harness_gym_calc

    assert Path(harness_gym_calc.__file__).resolve().parents[1] != ROOT / "harness_gym"


def test_pip_installs_the_example_from_its_folder(tmp_path):
    """A fresh ``pip install`` of examples/harness-gym-calc into its own target is found by a fresh interpreter."""
    _pip_install("--target", str(tmp_path / "site"), str(CALC))
    code = ("import gymnasium as gym, harness_gym, harness_gym_calc;"
            "env = gym.make('HarnessEdit-Calc-v0', batch_size=3); obs, info = env.reset(seed=0); env.close();"
            "print(harness_gym_calc.__file__); print(info['batch_digest'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[0].startswith(str(tmp_path / "site"))


def test_calc_sim_fails_on_its_documented_flaws_and_the_template_fixes_them(calc):
    env = gym.make(calc)
    try:
        gains = []
        for seed in range(3):
            obs, info = env.reset(seed=seed)
            sigs = plugins.template_rules("calc").detect(info["packet"])
            assert sigs == ["no_lookup", "unrounded"] and info["baseline_score"] < 1.0
            patch = make_policy("template").propose([PolicyInput(obs, info["packet"], "calc")])[0][0]
            _, reward, _, _, step = env.step(patch)
            assert step["patch_valid"] and step["patched_score"] == 1.0
            gains.append(reward)
        assert min(gains) > 0
    finally:
        env.close()


def test_calc_leakage_check_refuses_a_batch_answer(calc):
    env = gym.make(calc, batch_size=4)
    try:
        env.reset(seed=0)
        gold = env.unwrapped._batch[0].gold
        hook = f"def hook(ctx, nb):\n    return {{'message': 'The answer is {gold}'}}\n"
        patch = ("<think>x</think><patch>" + json.dumps({"schema_version": "harness-r1-patch-v1", "benchmark": "calc",
                 "description": "hint", "actions": [{"type": "add_code_hook", "hook": "make_pre_hint",
                                                     "code": hook}]}) + "</patch>")
        _, reward, _, _, info = env.step(patch)
        assert not info["patch_valid"] and "task data" in info["patch_error"] and reward < 0
    finally:
        env.close()


def test_bench_runs_noop_and_template_on_the_plugin(calc, tmp_path):
    out = tmp_path / "bench.jsonl"
    proc = subprocess.run([sys.executable, "-m", "harness_gym.cli", "bench", "--env", calc, "--policy", "noop,template",
                           "--episodes", "2", "--out", str(out), "--no-plot", "--no-progress"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted((r["policy"], r["seed"]) for r in rows) == [("noop", 0), ("noop", 1), ("template", 0), ("template", 1)]
    assert all(r["reward"] > 0 for r in rows if r["policy"] == "template") and "## HarnessEdit-Calc-v0" in proc.stdout


def test_the_example_package_is_small():
    files = [CALC / "pyproject.toml", *(p for p in (CALC / "harness_gym_calc").rglob("*")
                                        if p.is_file() and "__pycache__" not in p.parts)]
    assert sum(len(p.read_text(encoding="utf-8").splitlines()) for p in files) < 470  # "well under 500"


# --- broken entry points ------------------------------------------------------------
BROKEN = {
    "noimport": ("no_such_module_for_harness_gym:Thing", "failed to load: ModuleNotFoundError"),
    "wrongtype": ("json:dumps", "is a function, expected a harness_gym.Benchmark"),
    "misnamed": ("harness_gym.benchmarks.webshop.plugin:WebShop", "named 'misnamed' but the benchmark's name is 'webshop'"),
    "dbbench": ("harness_gym.benchmarks.webshop.plugin:WebShop", "duplicates the benchmark 'dbbench'"),
}


@pytest.fixture()
def broken_dist(tmp_path):
    """A fake installed distribution whose entry points are all wrong, first on sys.path."""
    info = tmp_path / "broken_plugins-1.2.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugins\nVersion: 1.2\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[{plugins.GROUP}]\n" + "".join(f"{k} = {v}\n" for k, (v, _) in BROKEN.items()), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        plugins.discover(refresh=True)


def test_broken_entry_points_are_skipped_with_one_line_errors_naming_the_package(broken_dist):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = plugins.discover(refresh=True)
    assert list(found.benchmarks)[:3] == ["dbbench", "webshop", "alfworld"]  # the built-ins still work
    messages = [str(w.message) for w in caught]
    for name, (_, fragment) in BROKEN.items():
        line = next(m for m in messages if f"{name!r}" in m and "broken-plugins 1.2" in m)
        assert fragment in line and "\n" not in line
    for name in ("noimport", "wrongtype", "misnamed"):
        with pytest.raises(ConfigError, match="broken-plugins 1.2"):
            plugins.get(name)
    assert plugins.get("dbbench").display == "DBBench"  # the duplicate did not replace the built-in


def test_a_broken_plugin_does_not_break_importing_harness_gym(broken_dist):
    code = "import gymnasium as gym, harness_gym; gym.make('HarnessEdit-DBBench-v0', batch_size=2).close(); print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_dist), str(ROOT)])})
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
    assert "broken-plugins 1.2" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "harness_gym.cli", "envs"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(broken_dist), str(ROOT)])})
    assert proc.returncode == 0 and "HarnessEdit-DBBench-v0" in proc.stdout
    assert sum("harness-gym: error:" in line and "broken-plugins 1.2" in line for line in proc.stderr.splitlines()) == 4


def test_unknown_benchmark_names_the_entry_point_group():
    with pytest.raises(ConfigError, match="unknown benchmark 'nosuch'.*harness_gym.benchmarks"):
        plugins.get("nosuch")
