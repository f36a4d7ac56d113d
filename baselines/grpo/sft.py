"""Cold-start SFT of the engineer (``trl.SFTTrainer``) on teacher patches that held up on rerun.

For each training row the teacher policy (any ``Policy``; ``template`` on a CPU) proposes
patches for the row's packet; a patch is kept only if it is valid and its Δ_B ≥ 0 when the
env reruns the batch (Harness-R1: executable, rerun completed, Δ ≥ 0), and, when a token
budget is given, only if it fits in the completion length GRPO will sample (a target the
engineer cannot finish teaches it to write patches that are cut off, i.e. invalid). Rows
are conversational prompt–completion pairs, so the loss covers the completion only.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.base import Policy, PolicyInput
from baselines.grpo.config import TRAIN_EXTRA
from baselines.grpo.dataset import reset_to_row
from harness_gym.errors import ConfigError


@dataclass(frozen=True)
class SFTEngineerConfig:
    """Harness-R1 cold start: 2 epochs at LR 1e-5 (``max_steps`` > 0 overrides epochs)."""

    output_dir: str = "runs/grpo_engineer_sft"
    epochs: float = 2.0
    max_steps: int = -1
    learning_rate: float = 1e-5
    batch_size: int = 1
    max_length: int | None = 40960
    gradient_checkpointing: bool = True  # TRL's SFT default; off saves ~30% compute on short CPU sequences
    bf16: bool | None = None  # None: bf16 on a GPU, fp32 on a CPU (TRL's SFT default is bf16 everywhere)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.learning_rate <= 0:
            raise ConfigError(f"SFTEngineerConfig: batch_size={self.batch_size}, learning_rate={self.learning_rate}: "
                              "expected batch_size >= 1 and learning_rate > 0")


def teacher_rows(env: Any, rows: list[dict[str, Any]], teacher: Policy, k: int = 1, *,
                 count_tokens: Callable[[str], int] | None = None, max_completion_tokens: int | None = None,
                 ) -> list[dict[str, Any]]:
    """SFT rows ``{"prompt", "completion", "batch_seed", "task_ids", "delta"}`` from teacher patches kept on rerun.

    With ``count_tokens`` and ``max_completion_tokens``, patches longer than the budget are dropped too.
    """
    out = []
    for row in rows:
        obs, info = reset_to_row(env, row["batch_seed"], row["task_ids"])
        cands = teacher.propose([PolicyInput(obs, info["packet"], row["benchmark"])], k)[0]
        if count_tokens is not None and max_completion_tokens is not None:
            cands = [c for c in cands if count_tokens(c) <= max_completion_tokens]
        results = env.unwrapped.evaluate_patches(cands) if cands else []
        for text, res in zip(cands, results):
            if res["patch_valid"] and not res.get("incomplete") and res["reward"] >= 0:
                out.append({"prompt": row["prompt"], "completion": [{"role": "assistant", "content": text}],
                            "batch_seed": row["batch_seed"], "task_ids": list(row["task_ids"]),
                            "delta": float(res["reward"])})
    return out


def sft_train(model: Any, tokenizer: Any, rows: list[dict[str, Any]], cfg: SFTEngineerConfig) -> Any:
    """Fine-tune ``model`` in place on prompt–completion ``rows``; returns the trainer."""
    try:
        from datasets import Dataset  # type: ignore[import-untyped]
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise ConfigError(f"cold-start SFT needs trl and datasets ({exc.name} missing): {TRAIN_EXTRA}") from None
    if not rows:
        raise ConfigError("no SFT rows: no teacher patch was valid with Δ_B >= 0; use another teacher or more rows")
    from baselines.grpo.config import _has_gpu

    data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    args = SFTConfig(output_dir=cfg.output_dir, num_train_epochs=cfg.epochs, max_steps=cfg.max_steps,
                     learning_rate=cfg.learning_rate, per_device_train_batch_size=cfg.batch_size, logging_steps=1,
                     save_strategy="no", report_to=[], max_length=cfg.max_length, use_cpu=not _has_gpu(),
                     seed=cfg.seed, dataset_num_proc=None, gradient_checkpointing=cfg.gradient_checkpointing,
                     bf16=_has_gpu() if cfg.bf16 is None else cfg.bf16)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    trainer.train()
    # Mixed precision wraps model.forward in an autocast wrapper that outlives the trainer (on a CPU,
    # bf16 autocast made every later generate() 2.5x slower); the caller gets the plain model back.
    trainer.accelerator.unwrap_model(trainer.model, keep_fp32_wrapper=False)
    Path(cfg.output_dir).mkdir(parents=True, exist_ok=True)
    return trainer
