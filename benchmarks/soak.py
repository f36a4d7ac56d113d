"""Soak run: many env episodes on ever new batches; memory, open files and workers must not grow.

One episode = ``env.reset(seed=s)`` on a fresh batch + ``env.step`` of the ``template``
baseline's patch (real hook code through the sandbox) — a new baseline and a new patched
run each time, so every cache and pool is exercised. RSS, open fds and live sandbox
workers are printed at the start (after a warm-up that fills the bounded caches), the
middle and the end, with episodes/s.

    python benchmarks/soak.py --episodes 10000            # the full soak (minutes)
    python benchmarks/soak.py --episodes 300 --warmup 60  # a quick look
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from typing import Any


def rss_mb() -> float:
    """Resident set size of this process in MiB (Linux ``/proc``; else the peak from rusage)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def open_fds() -> int:
    for path in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(path))
        except OSError:
            continue
    return -1


def snapshot(env: Any, label: str, done: int, started: float) -> dict[str, Any]:
    gc.collect()
    ev = env.unwrapped.evaluator
    elapsed = time.perf_counter() - started
    return {"at": label, "episodes": done, "rss_mb": round(rss_mb(), 1), "open_fds": open_fds(),
            "sandbox_workers": len(ev.sandbox.pids()), "cache_entries": ev.cache.entries,
            "episodes_per_s": round(done / elapsed, 2) if elapsed > 0 and done else None}


def soak(episodes: int, *, warmup: int = 200, batch_size: int = 3, seed: int = 0, cache_entries: int | None = None,
         env_id: str = "HarnessEdit-DBBench-v0", progress: bool = True) -> list[dict[str, Any]]:
    """Run the soak; return the start/middle/end snapshots (start = after ``warmup`` episodes)."""
    import gymnasium as gym

    import harness_gym  # noqa: F401  (registers the envs)
    from baselines.base import PolicyInput, make_policy

    env = gym.make(env_id, batch_size=batch_size)
    if cache_entries is not None:
        env.unwrapped.evaluator.cache.max_entries = int(cache_entries)
    policy = make_policy("template")
    benchmark = env.unwrapped.config.benchmark
    marks = {warmup: "start", warmup + episodes // 2: "middle", warmup + episodes: "end"}
    snaps: list[dict[str, Any]] = []
    started = time.perf_counter()
    t_measure = started
    try:
        for i in range(warmup + episodes):
            obs, info = env.reset(seed=seed + i)
            patch = policy.propose([PolicyInput(obs, info["packet"], benchmark)], k=1)[0][0]
            env.step(patch)
            done = i + 1
            if done in marks:
                if marks[done] == "start":
                    t_measure = time.perf_counter()
                snap = snapshot(env, marks[done], done - warmup, t_measure)
                snaps.append(snap)
                if progress:
                    print(json.dumps(snap), flush=True)
    finally:
        env.close()
    return snaps


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--episodes", type=int, default=10_000, help="measured env episodes (after the warm-up)")
    p.add_argument("--warmup", type=int, default=300, help="episodes before the start snapshot (fills the caches)")
    p.add_argument("--batch-size", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cache-entries", type=int, default=None, help="override the rollout cache's LRU bound")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    snaps = soak(args.episodes, warmup=args.warmup, batch_size=args.batch_size, seed=args.seed,
                 cache_entries=args.cache_entries)
    start, end = snaps[0], snaps[-1]
    print(f"RSS {start['rss_mb']} -> {end['rss_mb']} MiB ({end['rss_mb'] - start['rss_mb']:+.1f}); "
          f"open fds {start['open_fds']} -> {end['open_fds']}; sandbox workers {start['sandbox_workers']} -> "
          f"{end['sandbox_workers']}; {end['episodes_per_s']} episodes/s over {end['episodes']} episodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
