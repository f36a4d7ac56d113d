"""WebShop start time, memory, search and step throughput.

For each catalogue size, in a fresh subprocess: build the catalogue (generate + goals),
build the search index (Lucene's BM25, emulated), then time searches (the goals' instructions as queries) and world
steps (search / click / option / buy loops), and report peak RSS.
Usage: python benchmarks/bench_webshop.py [--sizes 1000,100000] [--queries 500]
       python benchmarks/bench_webshop.py --data-dir DIR   (original files instead)
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys


def measure(key: str, queries: int) -> dict:
    import resource
    import time

    from harness_gym.benchmarks.webshop.catalog import get_catalog, load_split
    from harness_gym.benchmarks.webshop.world import WebShopWorld

    t0 = time.perf_counter()
    cat = get_catalog(key)
    t1 = time.perf_counter()
    cat.engine  # noqa: B018
    t2 = time.perf_counter()
    goals = cat.goals[:queries] or cat.goals
    t = time.perf_counter()
    for g in goals:
        cat.search(g["instruction_text"])
    search_s = (time.perf_counter() - t) / max(1, len(goals))
    tasks = load_split("test", None if key.startswith("generated:") else __import__("pathlib").Path(key[4:]))[:100]
    from harness_gym.benchmarks.webshop.reward import noun_extractor, nouns

    nouns("Warm Up Pipeline")  # load spaCy (when installed) before timing steps
    world, steps = WebShopWorld(cat), 0
    t = time.perf_counter()
    for task in tasks:
        world.reset(task)
        for action in ("search[" + task.goal["query"] + "]", "click[next >]", "click[< prev]"):
            world.act(action)
            steps += 1
        first = next(c for c in world.clickables() if c.upper() in cat.products)
        world.act(f"click[{first}]")
        for v in world.clickables()[6:7]:
            world.act(f"click[{v}]")
            steps += 1
        world.act("click[buy now]")
        steps += 2
    step_s = (time.perf_counter() - t) / max(1, steps)
    return {"catalogue": key, "products": len(cat.products), "goals": len(cat.goals), "build_s": round(t1 - t0, 3),
            "index_s": round(t2 - t1, 3), "start_s": round(t2 - t0, 3), "search_ms": round(search_s * 1e3, 3),
            "searches_per_s": round(1 / search_s, 1), "step_ms": round(step_s * 1e3, 3), "steps_per_s": round(1 / step_s, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), "nouns": noun_extractor()[0]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,100000")
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(args.one, args.queries)))
        return 0
    from pathlib import Path

    keys = [f"dir:{Path(args.data_dir).resolve()}"] if args.data_dir else [f"generated:0:{n}" for n in args.sizes.split(",")]
    for key in keys:
        out = subprocess.run([sys.executable, __file__, "--one", key, "--queries", str(args.queries)],
                             capture_output=True, text=True, check=True)
        print(out.stdout.strip().splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
