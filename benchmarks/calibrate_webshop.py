"""Calibration of the simulated WebShop target: mean score and success on a split, the
default harness and the buy-guard example patch, plus the env's Δ_B of that patch.

Usage: python benchmarks/calibrate_webshop.py [--split test] [--episodes 20] [--data-dir DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--split", default="test")
    ap.add_argument("--episodes", type=int, default=20, help="env episodes (batch_size=10, seeds 0..N-1) for Δ_B")
    args = ap.parse_args(argv)

    from harness_gym.benchmarks.webshop.reward import noun_extractor
    from harness_gym.envs.harness_edit import HarnessEditEnv
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.evaluation.stats import mean_ci
    from harness_gym.harness.patch import parse_patch
    from harness_gym.models.factory import make_backend

    guard_text = (ROOT / "examples" / "patches" / "webshop_buy_guard.txt").read_text(encoding="utf-8")
    spec = get_benchmark("webshop")
    tasks = spec.load_tasks(args.split, Path(args.data_dir) if args.data_dir else None)
    base = spec.default_harness()
    guard = parse_patch(guard_text, base).apply(base)
    ev = Evaluator(spec, make_backend("sim"), world_backend="local")
    print(f"sim, split={args.split}, {len(tasks)} goals, nouns={noun_extractor()[0]}")
    try:
        for name, harness in (("default", base), ("buy guard", guard)):
            res = ev.evaluate(harness, tasks, list(range(len(tasks))))
            mean = sum(r.reward for r in res) / len(res)
            success = sum(r.info["success"] for r in res) / len(res)
            print(f"  {name:10s} mean score {mean:.3f}, success {success:.1%}")
    finally:
        ev.close()
    env = HarnessEditEnv(benchmark="webshop", batch_size=10)
    try:
        deltas = []
        for seed in range(args.episodes):
            env.reset(seed=seed)
            deltas.append(env.step(guard_text)[1])
        ci = mean_ci(deltas)
        print(f"  env buy guard Δ_B over {args.episodes} episodes: {ci.mean:+.3f} [{ci.lo:+.3f}, {ci.hi:+.3f}]")
    finally:
        env.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
