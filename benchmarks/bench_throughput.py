"""Episodes per second on the embedded DBBench default, and where the time goes.

Runs the same batch three ways, side by side in one process:
  1. baseline harness (no hooks), concurrent episodes;
  2. the template policy's patched harness (hooks in the sandbox), concurrent episodes;
  3. the patched harness with one episode at a time, timing every hook call, so the share of
     wall time spent in hooks + sandbox round trips is measured without overlap.
Usage: python benchmarks/bench_throughput.py [--tasks 100] [--backend sqlite]
"""
from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--backend", default="sqlite")
    args = ap.parse_args(argv)

    import harness_gym  # noqa: F401
    from baselines.base import PolicyInput, make_policy
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch
    from harness_gym.models.factory import make_backend
    from harness_gym.runtime import hooks as hooks_mod
    import gymnasium as gym

    env = gym.make("HarnessEdit-DBBench-v0", batch_size=10, backend=args.backend)
    obs, info = env.reset(seed=0)
    patch_text = make_policy("template").propose([PolicyInput(obs, info["packet"], "dbbench")])[0][0]
    env.close()

    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks("test", None)[: args.tasks]
    seeds = list(range(len(tasks)))
    base = spec.default_harness()
    patched = parse_patch(patch_text, base).apply(base)

    # time spent inside HookRunner.run (includes sandbox round trips)
    spent = {"s": 0.0, "calls": 0}
    original = hooks_mod.HookRunner.run

    async def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        try:
            return await original(self, *args, **kwargs)
        finally:
            spent["s"] += time.perf_counter() - t
            spent["calls"] += 1

    hooks_mod.HookRunner.run = timed  # type: ignore[method-assign]
    rows = []
    for label, harness, conc in (("baseline, concurrent", base, 64), ("patched, concurrent", patched, 64),
                                 ("patched, one at a time", patched, 1)):
        ev = Evaluator(spec, make_backend("sim"), world_backend=args.backend, max_concurrency=conc)
        spent.update(s=0.0, calls=0)
        t0 = time.perf_counter()
        results = ev.evaluate(harness, tasks, seeds)
        wall = time.perf_counter() - t0
        failed = next((r for r in results if r.error), None)
        if failed is not None:  # a timing of episodes that did not run is no timing
            raise SystemExit(f"bench_throughput: {label}: an episode failed: {failed.error}")
        steps = sum(r.rounds for r in results)
        rows.append((label, len(results) / wall, steps / wall, spent["calls"], spent["s"] / wall if conc == 1 else None,
                     1000 * spent["s"] / max(1, spent["calls"])))
        ev.close()
    print(f"DBBench embedded default, {len(tasks)} tasks, backend={args.backend}, target=sim")
    print("| run | episodes/s | agent rounds/s | hook calls | share of wall time in hooks+sandbox | ms per hook call |")
    print("|---|---|---|---|---|---|")
    for label, eps, sps, calls, share, ms in rows:
        share_s = f"{share:.0%}" if share is not None else "(overlapped)"
        print(f"| {label} | {eps:.1f} | {sps:.1f} | {calls} | {share_s} | {ms:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
