"""GRPO of the harness engineer with ``trl.GRPOTrainer``; rewards from ``EnvReward``.

``python -m baselines.grpo.train --model <dir> --output-dir runs/x [--max-steps N] [--cpu-smoke]``
builds rows from the env's training split, trains, saves the checkpoint (a ``grpo:<dir>``
policy) and writes the reward log. On a CPU the trainer generates with transformers
(``use_vllm=False``); GPU recipe: ``docs/grpo.md``.
"""
from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from baselines.grpo.config import TRAIN_EXTRA, TRAINING_SPLIT, GRPOEngineerConfig
from baselines.grpo.dataset import build_rows
from baselines.grpo.reward import EnvReward
from harness_gym.errors import ConfigError


def load_model(path: str) -> tuple[Any, Any]:
    """(model, tokenizer) from a local transformers folder; the tokenizer gets a pad token."""
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ConfigError(f"engineer training needs torch and transformers ({exc.name} missing): {TRAIN_EXTRA}") from None
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tok


def train_grpo(model: Any, tokenizer: Any, rows: list[dict[str, Any]], env: Any, cfg: GRPOEngineerConfig, *,
               echo: bool = False) -> tuple[Any, EnvReward]:
    """Run GRPO on ``rows``; returns (trainer, reward function with its per-call history).

    ``echo`` prints one summary line per reward call (= per step when a step is one generation batch).
    """
    try:
        from datasets import Dataset  # type: ignore[import-untyped]
        from trl import GRPOTrainer
    except ImportError as exc:
        raise ConfigError(f"GRPO training needs trl and datasets ({exc.name} missing): {TRAIN_EXTRA}") from None
    if not rows:
        raise ConfigError("no training rows: every reset batch passed or was too long; draw more seeds or a larger env_batch_size")
    log = Path(cfg.reward_log)
    log.parent.mkdir(parents=True, exist_ok=True)
    reward = EnvReward(env, log, echo=echo)
    trainer = GRPOTrainer(model=model, reward_funcs=[reward],  # type: ignore[list-item]  # returns list[float]
                          args=cfg.to_trl(), train_dataset=Dataset.from_list(rows),
                          processing_class=tokenizer)
    trainer.train()
    return trainer, reward


def token_counter(tokenizer: Any) -> Callable[[list[dict[str, str]]], int]:
    """Prompt length in tokens as the trainer renders it (chat template + generation prompt)."""
    def count(messages: list[dict[str, str]]) -> int:
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return count


def completion_counter(tokenizer: Any) -> Callable[[str], int]:
    """Tokens a reply takes when the model generates it: its text plus the end-of-turn token."""
    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"]) + 1

    return count


def save(trainer: Any, tokenizer: Any, out_dir: str | Path) -> Path:
    out = Path(out_dir)
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    return out


def make_env(cfg: GRPOEngineerConfig, **env_kwargs: Any) -> Any:
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers the envs

    ids = {"dbbench": "HarnessEdit-DBBench-v0"}
    if cfg.benchmark not in ids:
        raise ConfigError(f"benchmark={cfg.benchmark!r}: expected one of {sorted(ids)}")
    return gym.make(ids[cfg.benchmark], split=TRAINING_SPLIT, batch_size=cfg.env_batch_size, **env_kwargs)


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="GRPO of a harness engineer on HarnessEdit (training split)")
    p.add_argument("--model", required=True, help="local transformers model folder (e.g. an SFT checkpoint)")
    p.add_argument("--output-dir", default="runs/grpo_engineer")
    p.add_argument("--rows", type=int, default=64, help="training rows (packets) to build")
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--cpu-smoke", action="store_true", help="use GRPOEngineerConfig.cpu_smoke settings")
    p.add_argument("--use-vllm", action="store_true", help="generate with a `trl vllm-serve` server (GPU)")
    p.add_argument("--vllm-server-base-url", default=None)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    cfg = GRPOEngineerConfig.cpu_smoke(args.output_dir) if args.cpu_smoke else GRPOEngineerConfig(output_dir=args.output_dir)
    changes: dict[str, Any] = {}
    if args.max_steps:
        changes["max_steps"] = args.max_steps
    if args.use_vllm:
        changes.update(use_vllm=True, vllm_server_base_url=args.vllm_server_base_url, bf16=True)
    cfg = cfg.replace(**changes)
    env = make_env(cfg)
    model, tok = load_model(args.model)
    rows = build_rows(env, range(10 * args.rows), limit=args.rows, prompt_prefix=cfg.prompt_prefix,
                      count_tokens=token_counter(tok), max_prompt_tokens=cfg.max_prompt_tokens)
    trainer, reward = train_grpo(model, tok, rows, env, cfg)
    out = save(trainer, tok, Path(cfg.output_dir) / "final")
    print(json.dumps({"checkpoint": str(out), "policy": f"grpo:{out}", "reward_log": cfg.reward_log,
                      "calls": len(reward.history)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
