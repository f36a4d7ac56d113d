"""Dockerized targets against in-process worlds, side by side in one run.

For each target: the image's size and (re)build time, the container start time (run →
server answering), and the wall time of the same batch (baseline rollouts under the
default harness, sim target) in process, over HTTP/MySQL to the container, and again warm
(a second batch on the same container). DBBench in process is SQLite, a different engine
(one generated task in ~60 scores differently); with ``HARNESS_GYM_MYSQL_URL`` set, the
same batches also run on that host MariaDB, the like-for-like reference. Needs a Docker engine and the base image
(``harness-gym docker base``).
Usage: python benchmarks/bench_docker.py [--batch-size 20] [--repeats 3] [--network host]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import gymnasium as gym

import harness_gym  # noqa: F401 - registers the env ids
from harness_gym.docker import docker_client, ensure_image, start_target

ENVS = {"webshop": ("HarnessEdit-WebShop-v0", "local"), "alfworld": ("HarnessEdit-ALFWorld-v0", "local"),
        "dbbench": ("HarnessEdit-DBBench-v0", "sqlite")}


def batch_seconds(env_id: str, backend: str, batch_size: int, seeds: list[int]) -> tuple[list[float], list[float]]:
    """(reset wall times, baseline scores) for fresh batches on one env."""
    env = gym.make(env_id, backend=backend, batch_size=batch_size)
    times, scores = [], []
    try:
        for seed in seeds:
            t0 = time.perf_counter()
            _, info = env.reset(seed=seed)
            times.append(time.perf_counter() - t0)
            scores.append(info["baseline_score"])
    finally:
        env.close()
    return times, scores


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3, help="batches (different seeds) per backend")
    ap.add_argument("--network", default="host")
    ap.add_argument("--targets", default="webshop,alfworld,dbbench")
    args = ap.parse_args()
    client = docker_client()
    seeds = list(range(100, 100 + args.repeats))
    rows = []
    for target in args.targets.split(","):
        env_id, local = ENVS[target]
        image = ensure_image(client, target)
        starts = []
        for _ in range(3):
            with start_target(target, f"docker?network={args.network}") as h:
                starts.append(h.start_s)
        local_t, local_s = batch_seconds(env_id, local, args.batch_size, seeds)
        dock_t, dock_s = batch_seconds(env_id, f"docker?network={args.network}", args.batch_size, seeds)
        host_url = os.environ.get("HARNESS_GYM_MYSQL_URL") if target == "dbbench" else None
        if host_url:  # like for like: the same engine on the host
            local, (local_t, local_s) = "host MariaDB", batch_seconds(env_id, host_url, args.batch_size, seeds)
        row = {
            "target": target, "reference": local, "image": image["tag"], "image_mb": image["size_mb"], "build_s": image["seconds"],
            "start_s_median": statistics.median(starts), "batch_size": args.batch_size,
            "in_process_s": round(statistics.median(local_t), 3), "container_s": round(statistics.median(dock_t), 3),
            "ratio": round(statistics.median(dock_t) / max(1e-9, statistics.median(local_t)), 2),
            "same_scores": local_s == dock_s,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"\n| target | image MB | start s | batch of {args.batch_size}: reference | reference s | in container s | ratio | same scores |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['target']} | {r['image_mb']} | {r['start_s_median']} | {r['reference']} | {r['in_process_s']} | {r['container_s']} "
              f"| {r['ratio']}x | {r['same_scores']} |")


if __name__ == "__main__":
    main()
