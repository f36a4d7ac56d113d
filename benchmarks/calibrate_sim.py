"""Calibration of the simulated DBBench target: baseline success per task type.

Runs the default harness on every task of a split (embedded generator or original data)
and prints success overall and per type, the quantity the sim's flaw rates are tuned for.
With ``--target`` it measures another target the same way (e.g. the trained real one of
issue 12), the baseline half of calibrating the sim against it (``docs/sim_dbbench.md``).
Usage: python benchmarks/calibrate_sim.py [--data-dir ../shared/data/dbbench] [--backend sqlite|mariadb|mysql://…] [--target sim]
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--split", default="test")
    ap.add_argument("--backend", default=None, help="world backend (default: sqlite; 'mariadb' with --data-dir)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", default="sim", help="target to measure (default: sim)")
    args = ap.parse_args(argv)

    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks(args.split, Path(args.data_dir) if args.data_dir else None)
    args.backend = args.backend or spec.backend_for(args.data_dir)
    ev = Evaluator(spec, make_backend(args.target), world_backend=args.backend)
    results = ev.evaluate(spec.default_harness(), tasks, [args.seed + i for i in range(len(tasks))])
    ev.close()
    by_type: dict[str, list[float]] = defaultdict(list)
    for r in results:
        by_type["SELECT" if r.task_type not in ("INSERT", "UPDATE") else r.task_type].append(r.reward)
    source = args.data_dir or "embedded generator"
    print(f"{args.target} baseline on {source} split={args.split} backend={args.backend.split('@')[-1]}: "
          f"success {sum(r.reward for r in results) / len(results):.1%} over {len(results)} tasks "
          f"({sum(r.is_env_error for r in results)} env errors)")
    for kind, rewards in sorted(by_type.items()):
        print(f"  {kind:8s} {sum(rewards) / len(rewards):.1%} (n={len(rewards)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
