"""Learning curve of a ``smol train`` run: success vs training tokens (``python -m harness_gym.smol eval``).

For the base model (0 tokens), every checkpoint recorded in ``train_manifest.json`` and the
final adapter, the merged model plays the first ``--tasks`` tasks of ``--split`` under the
benchmark's default harness at temperature 0 (greedy) through the ``hf`` backend (the
default path of ``target="smol:<benchmark>"``) or, with ``--engine vllm``, vLLM (paged KV
cache and prefix caching: much faster on long multi-turn episodes; ~30 s engine start per
point); ``--max-tokens`` caps each reply and ``--max-rounds``
lowers the round budget for a cheaper lower bound (both recorded with each point). Writes ``curve_<split>.json`` (per point: step,
tokens seen, success rate, per-task outcomes, seconds) and ``curve_<split>.png`` when matplotlib is installed.
Checkpoints are merged into a temporary folder, removed afterwards.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, HarnessGymError

ENGINES = ("hf", "vllm")
# each benchmark's validation split, the default of ``--split`` (ALFWorld has two; the seen floor plans are the
# in-distribution one, as ``valid`` is for the generated DBBench and WebShop splits)
VALID_SPLITS = {"dbbench": "valid", "webshop": "valid", "alfworld": "valid_seen"}


def evaluate_model(benchmark: str, model_dir: Path, n_tasks: int, split: str, *, max_tokens: int = 256,
                   threads: int | None = None, max_rounds: int | None = None, engine: str = "hf") -> dict[str, Any]:
    """Success of one merged model folder on the first ``n_tasks`` tasks of ``split`` (default harness)."""
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.evaluation.evaluator import Evaluator
    from harness_gym.models.factory import make_backend

    spec = get_benchmark(benchmark)
    tasks = spec.load_tasks(split, None)[:n_tasks]
    if engine not in ENGINES:
        raise ConfigError(f"--engine {engine!r}: expected one of {list(ENGINES)}")
    opts = f"?max_tokens={max_tokens}" + (f"&threads={threads}" if threads and engine == "hf" else "")
    backend = make_backend(f"{engine}:{model_dir}{opts}")
    ev = Evaluator(spec, backend, world_backend=spec.default_backend, target_name=f"smol-eval:{model_dir.name}")
    t0 = time.time()
    try:
        results = ev.evaluate(eval_harness(spec.default_harness(), max_rounds), tasks, list(range(len(tasks))))
    finally:
        ev.close()
    return {"success": sum(r.success for r in results) / len(results),
            "outcomes": {r.task_id: bool(r.success) for r in results},
            "rounds": sum(r.rounds for r in results) / len(results),
            "tool_call_turns": sum(1 for r in results for m in r.messages if m.get("role") == "assistant" and m.get("tool_calls")),
            "assistant_turns": sum(1 for r in results for m in r.messages if m.get("role") == "assistant"),
            "errors": [r.error for r in results if r.error],
            # what the model wrote: the first replies of the first two episodes
            "samples": [[str(m.get("content") or "")[:300] + "".join(f" <call {c['function']['name']} {c['function']['arguments'][:200]}>"
                                                                 for c in m.get("tool_calls") or [])
                         for m in r.messages if m.get("role") == "assistant"][:3] for r in results[:2]],
            "seconds": round(time.time() - t0, 1)}


def eval_harness(harness: Any, max_rounds: int | None) -> Any:
    """The default harness, or with its round budget lowered to ``max_rounds`` (a cheaper, lower-bound
    evaluation: an episode solved within the cap is solved under the default budget too)."""
    if max_rounds is None:
        return harness
    if max_rounds < 1:
        raise ConfigError(f"--max-rounds must be >= 1, got {max_rounds}")
    cfg = harness.config()
    return harness.with_files({"config.json": json.dumps({**cfg, "max_rounds": min(max_rounds, int(cfg.get("max_rounds", max_rounds)))})})


def curve(benchmark: str, run: Path, n_tasks: int, split: str, *, base: bool = True, max_tokens: int = 256,
          threads: int | None = None, only: list[str] | None = None, max_rounds: int | None = None,
          engine: str = "hf") -> dict[str, Any]:
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.models.gguf import smollm2_dir
    from harness_gym.smol.target import merged_dir

    get_benchmark(benchmark).load_tasks(split, None)  # an unknown split fails here, before any model is merged
    manifest_file = run / "train_manifest.json"
    if not manifest_file.is_file():
        raise ConfigError(f"{manifest_file} not found: run python -m harness_gym.smol train --out {run} first")
    manifest = json.loads(manifest_file.read_text())
    points: list[tuple[str, int, int, Path | None]] = [("base", 0, 0, None)] if base else []
    for ck in manifest["checkpoints"]:
        points.append((ck["dir"], int(ck["step"]), int(ck["tokens_seen"]), run / ck["dir"]))
    if not any(p[1] == manifest["steps"] for p in points):
        points.append(("adapter", int(manifest["steps"]), int(manifest["tokens_seen"]), run / "adapter"))
    if only:
        unknown = sorted(set(only) - {p[0] for p in points})
        if unknown:
            raise ConfigError(f"--only {unknown}: {run} has no such point; it has {[p[0] for p in points]}")
        points = [p for p in points if p[0] in only]
    out_file = run / f"curve_{split}.json"
    done = json.loads(out_file.read_text())["points"] if out_file.is_file() else []
    have = {(p["name"], p["tasks"], p.get("engine", "hf"), p.get("max_rounds")) for p in done}
    tmp = Path(tempfile.mkdtemp(prefix="smol-eval-"))
    try:
        for name, step, tokens, adapter in points:
            if (name, n_tasks, engine, max_rounds) in have:
                continue
            folder = smollm2_dir() if adapter is None else merged_dir(adapter, f"{benchmark}-{name}", cache=tmp)
            res = evaluate_model(benchmark, folder, n_tasks, split, max_tokens=max_tokens, threads=threads,
                                 max_rounds=max_rounds, engine=engine)
            done.append({"name": name, "step": step, "tokens_seen": tokens, "tasks": n_tasks, "max_tokens": max_tokens,
                         "max_rounds": max_rounds, "engine": engine, **res})
            print(json.dumps({k: done[-1][k] for k in ("name", "step", "tokens_seen", "success", "seconds")}), flush=True)
            out_file.write_text(json.dumps({"benchmark": benchmark, "split": split, "run": str(run), "points": done}, indent=1) + "\n")
            if adapter is not None:
                shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result = {"benchmark": benchmark, "split": split, "run": str(run), "points": done}
    out_file.write_text(json.dumps(result, indent=1) + "\n")
    _plot(result, out_file.with_suffix(".png"))
    return result


def _plot(result: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    pts = sorted(result["points"], key=lambda p: p["tokens_seen"])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.plot([p["tokens_seen"] for p in pts], [100 * p["success"] for p in pts], marker="o")
    ax.set_xlabel("training tokens seen")
    ax.set_ylabel(f"success on {result['split']} (%)")
    ax.set_title(f"SmolLM2-135M + LoRA, {result['benchmark']} (real target)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness_gym.smol eval", description=__doc__.split("\n")[0])
    p.add_argument("--benchmark", required=True, choices=list(VALID_SPLITS))
    p.add_argument("--run", type=Path, required=True, help="a `smol train --out` folder")
    p.add_argument("--split", default=None, help="default: the benchmark's validation split (valid; ALFWorld valid_seen)")
    p.add_argument("--tasks", type=int, default=10)
    p.add_argument("--no-base", action="store_true", help="skip the untrained base model point")
    p.add_argument("--only", default=None, help="comma-separated point names (base, ckpt-N, adapter)")
    p.add_argument("--max-tokens", type=int, default=256, help="cap on tokens generated per model call")
    p.add_argument("--max-rounds", type=int, default=None, help="lower the harness's round budget (lower-bound, cheaper)")
    p.add_argument("--engine", default="hf", choices=list(ENGINES), help="hf (default) or vllm (faster on long episodes)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (hf only)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.tasks < 1:
        print("smol eval: error: --tasks must be >= 1", file=sys.stderr)
        return 2
    try:
        split = args.split or VALID_SPLITS[args.benchmark]
        res = curve(args.benchmark, args.run, args.tasks, split, base=not args.no_base, max_tokens=args.max_tokens,
                    threads=args.threads, only=[s.strip() for s in args.only.split(",")] if args.only else None,
                    max_rounds=args.max_rounds, engine=args.engine)
    except HarnessGymError as exc:
        print(f"smol eval: error: {exc}", file=sys.stderr)
        return 2
    for p in sorted(res["points"], key=lambda p: p["tokens_seen"]):
        print(f"{p['name']:>10}  step {p['step']:>5}  tokens {p['tokens_seen']:>9}  success {100 * p['success']:5.1f}%")
    return 0
