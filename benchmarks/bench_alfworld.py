"""ALFWorld speed and calibration: scene generation time, world steps per second, sim baseline per type,
and (``--lockstep``) the agreement of the embedded world with the original engine.

Usage: python benchmarks/bench_alfworld.py [--split valid_unseen] [--patch examples/patches/alfworld_stages.txt]
       python benchmarks/bench_alfworld.py --lockstep [--split valid_unseen]   (needs the alfworld extra)
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="valid_unseen")
    ap.add_argument("--steps", type=int, default=50000)
    ap.add_argument("--patch", default=None, help="also run this patch on the whole split and report the gain")
    ap.add_argument("--lockstep", action="store_true",
                    help="only: play every scene of the split in the embedded world and the original engine, both grammars")
    args = ap.parse_args(argv)
    if args.lockstep:
        return lockstep_report(args.split)

    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch
    from harness_gym.models.factory import make_backend
    from harness_gym.benchmarks.alfworld import generator
    from harness_gym.benchmarks.alfworld.game import Game

    for split in generator.SPLITS:
        generator.layout.cache_clear()
        t = time.perf_counter()
        tasks = generator.generate_split(split)
        dt = time.perf_counter() - t
        print(f"scene generation {split:12s}: {len(tasks):5d} tasks in {dt * 1000:7.1f} ms ({dt / len(tasks) * 1e6:6.0f} us/task)")

    tasks = generator.generate_split(args.split)
    rng = random.Random(0)
    n = 0
    t = time.perf_counter()
    while n < args.steps:
        game = Game(tasks[n % len(tasks)])
        for _ in range(50):
            game.step(rng.choice(game.admissible()))
            n += 1
    dt = time.perf_counter() - t
    print(f"world steps (random admissible actions): {n / dt:,.0f} steps/s")

    spec = get_benchmark("alfworld")
    harness = spec.default_harness()
    ev = Evaluator(spec, make_backend("sim"), world_backend="local")
    try:
        t = time.perf_counter()
        base = ev.evaluate(harness, tasks, list(range(len(tasks))))
        dt = time.perf_counter() - t
        steps = sum(r.rounds for r in base)
        print(f"sim episodes through the runtime: {len(base) / dt:.1f} episodes/s, {steps / dt:,.0f} agent steps/s")
        by = defaultdict(list)
        for r in base:
            by[r.task_type].append(r.reward)
        print(f"sim baseline on {args.split}: success {sum(r.reward for r in base) / len(base):.1%} over {len(base)} tasks")
        for k, v in sorted(by.items()):
            print(f"  {k:34s} {sum(v) / len(v):6.1%} (n={len(v)})")
        if args.patch:
            patched = parse_patch(Path(args.patch).read_text(), harness).apply(harness)
            t = time.perf_counter()
            after = ev.evaluate(patched, tasks, list(range(len(tasks))))
            dt = time.perf_counter() - t
            steps = sum(r.rounds for r in after)
            print(f"patched ({args.patch}): success {sum(r.reward for r in after) / len(after):.1%}; "
                  f"{steps / dt:,.0f} agent steps/s with hooks")
    finally:
        ev.close()
    return 0


def lockstep_report(split: str) -> int:
    """Steps agreeing / total and games won at the same step, per grammar (expert walkthrough + exploration)."""
    from harness_gym.benchmarks.alfworld import generator
    from harness_gym.benchmarks.alfworld.oracle import lockstep

    tasks = generator.generate_split(split)
    for grammar in ("classic", "move"):
        t = time.perf_counter()
        steps = agree = same = loaded = 0
        failures: list[str] = []
        for i, task in enumerate(tasks):
            try:
                r = lockstep(task, grammar, seed=i)
            except Exception as exc:  # a game the engine cannot load counts against the agreement
                failures.append(f"{task.task_id}: {exc}")
                continue
            loaded += 1
            steps, agree, same = steps + r.steps, agree + r.agreeing, same + r.same_win
            failures += [f"{task.task_id}: {d.line()}" for d in r.differences[:1]]
        dt = time.perf_counter() - t
        print(f"lockstep {split} {grammar}: {loaded}/{len(tasks)} games load, {same} won at the same step, "
              f"steps agreeing {agree}/{steps} ({dt:.0f} s)")
        for line in failures[:10]:
            print(f"  {line[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
