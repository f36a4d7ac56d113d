"""What the hook sandbox costs, for one or more source trees side by side in one run.

Each tree (a checkout of this project: ``.`` and, say, a ``git worktree`` of an earlier
commit) is measured in its own child process, the trees taking turns for ``--rounds`` rounds
so that load on the machine falls on all of them alike:
  - ms per hook call: a trivial hook, one call at a time, on a warm worker;
  - ms per worker start: a new hook module each call, nothing kept idle;
  - DBBench on the sim (embedded default, ``--tasks`` test tasks): episodes per second with the
    template policy's patched harness and with the baseline harness (no hooks).
The table gives the median over rounds, and each tree's ratio to the first tree.

Usage: python benchmarks/bench_sandbox.py [--tree . --tree /tmp/wt-old] [--rounds 3] [--tasks 40]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import asyncio, json, sys, time
import harness_gym  # noqa: F401
from harness_gym.sandbox.pool import SandboxPool

TRIVIAL = "def on_before_action(ctx, nb):\n    nb['n'] = nb.get('n', 0) + 1\n    return None\n"
tasks_n = int(sys.argv[1])

async def sandbox():
    pool = SandboxPool(workers=1)
    ctx = {"action": "SELECT 1", "observation": "row " * 200}
    await pool.call(TRIVIAL, "on_before_action", "dbbench", ctx, {})
    t = time.perf_counter()
    for _ in range(200):
        await pool.call(TRIVIAL, "on_before_action", "dbbench", ctx, {})
    call_ms = (time.perf_counter() - t) / 200 * 1000
    await pool.close()
    pool = SandboxPool(workers=1, max_idle=0)
    await pool.call(TRIVIAL, "on_before_action", "dbbench", ctx, {})
    t = time.perf_counter()
    for i in range(15):
        await pool.call(TRIVIAL + f"# {i}\n", "on_before_action", "dbbench", ctx, {})
    start_ms = (time.perf_counter() - t) / 15 * 1000
    layers = pool.layers()
    await pool.close()
    return call_ms, start_ms, layers

call_ms, start_ms, layers = asyncio.run(sandbox())

import gymnasium as gym
from baselines.base import PolicyInput, make_policy
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.evaluator import Evaluator
from harness_gym.harness.patch import parse_patch
from harness_gym.models.factory import make_backend

env = gym.make("HarnessEdit-DBBench-v0", batch_size=10)
obs, info = env.reset(seed=0)
patch_text = make_policy("template").propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
env.close()
spec = get_benchmark("dbbench")
tasks = spec.load_tasks("test", None)[:tasks_n]
seeds = list(range(len(tasks)))
base = spec.default_harness()
rates = {}
for label, harness in (("baseline", base), ("patched", parse_patch(patch_text, base).apply(base))):
    ev = Evaluator(spec, make_backend("sim"), max_concurrency=64)
    t = time.perf_counter()
    results = ev.evaluate(harness, tasks, seeds)
    rates[label] = len(results) / (time.perf_counter() - t)
    ev.close()
print(json.dumps({"call_ms": call_ms, "start_ms": start_ms, "baseline_eps": rates["baseline"],
                  "patched_eps": rates["patched"], "layers": layers}))
"""

COLUMNS = (("call_ms", "ms per hook call"), ("start_ms", "ms per worker start"),
           ("patched_eps", "patched episodes/s"), ("baseline_eps", "baseline episodes/s"))


def measure(tree: Path, tasks: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(tasks)], capture_output=True, text=True, cwd=tree, env=env,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"bench_sandbox: {tree} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tree", action="append", default=None, help="a source tree to measure (repeatable; default .)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=40)
    args = ap.parse_args(argv)
    trees = [Path(t).resolve() for t in (args.tree or ["."])]
    for tree in trees:
        if not (tree / "harness_gym" / "sandbox" / "pool.py").is_file():
            raise SystemExit(f"bench_sandbox: {tree} is not a harness-gym source tree")
    runs: dict[Path, list[dict]] = {t: [] for t in trees}
    try:
        from tqdm import tqdm
    except ImportError:  # progress is a nicety
        def tqdm(x, **_):  # type: ignore[no-redef]
            return x
    for r, tree in tqdm([(r, t) for r in range(args.rounds) for t in trees], desc="bench_sandbox", unit="run"):
        runs[tree].append(measure(tree, args.tasks))
    med = {t: {k: statistics.median(run[k] for run in runs[t]) for k, _ in COLUMNS} for t in trees}
    first = trees[0]
    print(f"Hook sandbox cost, median of {args.rounds} rounds taken in turns; DBBench on the sim, {args.tasks} test tasks")
    print("| tree | " + " | ".join(title for _, title in COLUMNS) + " | layers |")
    print("|---|" + "---|" * (len(COLUMNS) + 1))
    for tree in trees:
        cells = []
        for key, _ in COLUMNS:
            value = med[tree][key]
            ratio = "" if tree == first else f" ({value / med[first][key]:.2f}×)"
            cells.append(f"{value:.2f}{ratio}")
        layers = runs[tree][-1]["layers"]
        extra = ", ".join(x for x in ("fork-per-call", "fixed-addresses") if x in layers) or "—"
        print(f"| {tree} | " + " | ".join(cells) + f" | {extra} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
