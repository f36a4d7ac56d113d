"""``GRPOEngineerConfig``: Harness-R1's engineer RL settings (spec §5), validated in one place.

Defaults are the paper's GPU recipe: group size 8, 4 prompts per rollout (32 completions per
generation batch = the global batch), temperature 0.7 / top-p 0.95, completions up to 12,288
tokens, constant LR 1e-6, clip 0.2 / 0.28, truncated importance sampling, no KL,
benchmark-homogeneous unshuffled batches (seed 20260621), 174 rollouts. ``cpu_smoke()``
gives the overrides a laptop test uses.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from harness_gym.errors import ConfigError

TRAIN_EXTRA = "pip install 'torch==2.13.0' transformers trl datasets"
TRAINING_SPLIT = "train"


@dataclass(frozen=True)
class GRPOEngineerConfig:
    output_dir: str = "runs/grpo_engineer"
    benchmark: str = "dbbench"
    env_batch_size: int = 10  # tasks per packet (Harness-R1: 10)
    num_generations: int = 8  # group size K
    prompts_per_step: int = 4  # rollout batch (prompts); generation batch = prompts_per_step * num_generations
    gradient_accumulation_steps: int = 4  # per-device micro-batch = generation batch / this
    num_iterations: int = 4  # optimizer passes over each generation batch ("4 iterations per update")
    max_steps: int = 174  # NUM_ROLLOUT
    temperature: float = 0.7
    top_p: float = 0.95
    max_prompt_tokens: int = 28672  # rows above it are dropped by the dataset builder
    max_completion_length: int = 12288
    learning_rate: float = 1e-6
    lr_scheduler_type: str = "constant"
    epsilon: float = 0.2
    epsilon_high: float = 0.28
    beta: float = 0.0  # no KL, no reference model
    importance_sampling_correction: bool = True  # TIS (only with vLLM generation)
    seed: int = 20260621
    shuffle_dataset: bool = False  # ROLLOUT_SHUFFLE=0
    use_vllm: bool = False  # CPU: transformers generate; GPU: True with vllm_mode="server"
    vllm_mode: str = "server"
    vllm_server_base_url: str | None = None
    bf16: bool = False
    gradient_checkpointing: bool = False
    prefill: bool = False  # GRPO prompts ask for both blocks (see docs/grpo.md)
    prompt_prefix: str | None = None  # replaces the static prompt text before the marker (tiny models)
    log_path: str | None = None  # JSON-lines per reward call; default <output_dir>/reward_log.jsonl
    logging_steps: int = 1
    save_strategy: str = "no"
    extra: dict[str, Any] = field(default_factory=dict)  # any other GRPOConfig field

    def __post_init__(self) -> None:
        if self.num_generations < 2:
            raise ConfigError(f"num_generations={self.num_generations}: GRPO needs at least 2 completions per prompt "
                              "(group-relative advantages); set it to 2 or more")
        for name in ("prompts_per_step", "gradient_accumulation_steps", "num_iterations", "max_steps",
                     "max_completion_length", "env_batch_size", "max_prompt_tokens"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected an integer >= 1")
        if self.generation_batch_size % self.gradient_accumulation_steps:
            raise ConfigError(f"gradient_accumulation_steps={self.gradient_accumulation_steps} must divide the generation "
                              f"batch prompts_per_step*num_generations={self.generation_batch_size}")
        if not 0 < self.top_p <= 1 or self.temperature <= 0:
            raise ConfigError(f"temperature={self.temperature}, top_p={self.top_p}: GRPO samples, so expected "
                              "temperature > 0 and 0 < top_p <= 1")
        if self.vllm_mode not in ("server", "colocate"):
            raise ConfigError(f"vllm_mode={self.vllm_mode!r}: expected 'server' or 'colocate'")

    @property
    def generation_batch_size(self) -> int:
        return self.prompts_per_step * self.num_generations

    @property
    def per_device_train_batch_size(self) -> int:
        return self.generation_batch_size // self.gradient_accumulation_steps

    @property
    def reward_log(self) -> str:
        return self.log_path or f"{self.output_dir}/reward_log.jsonl"

    def replace(self, **changes: Any) -> GRPOEngineerConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def cpu_smoke(cls, output_dir: str, **changes: Any) -> GRPOEngineerConfig:
        """A few-step CPU run: groups of 2, 2 prompts per step, short completions, a large LR."""
        base: dict[str, Any] = {
            "output_dir": output_dir, "env_batch_size": 2, "num_generations": 2, "prompts_per_step": 2,
            "gradient_accumulation_steps": 1, "num_iterations": 1, "max_steps": 2, "temperature": 1.0, "top_p": 1.0,
            "max_completion_length": 32, "learning_rate": 1e-3,
        }
        base.update(changes)
        return cls(**base)

    def to_trl(self) -> Any:
        """The ``trl.GRPOConfig`` these settings describe."""
        try:
            from trl import GRPOConfig
        except ImportError as exc:
            raise ConfigError(f"GRPO training needs trl ({exc.name} missing): {TRAIN_EXTRA}") from None
        kwargs: dict[str, Any] = {
            "output_dir": self.output_dir, "num_generations": self.num_generations,
            "generation_batch_size": self.generation_batch_size,
            "per_device_train_batch_size": self.per_device_train_batch_size,
            "gradient_accumulation_steps": self.gradient_accumulation_steps, "num_iterations": self.num_iterations,
            "max_steps": self.max_steps, "temperature": self.temperature, "top_p": self.top_p,
            "max_completion_length": self.max_completion_length, "learning_rate": self.learning_rate,
            "lr_scheduler_type": self.lr_scheduler_type, "epsilon": self.epsilon, "epsilon_high": self.epsilon_high,
            "beta": self.beta, "seed": self.seed, "shuffle_dataset": self.shuffle_dataset, "use_vllm": self.use_vllm,
            "bf16": self.bf16, "gradient_checkpointing": self.gradient_checkpointing, "logging_steps": self.logging_steps,
            "save_strategy": self.save_strategy, "report_to": [], "use_cpu": not _has_gpu(),
        }
        if self.use_vllm:
            kwargs.update(vllm_mode=self.vllm_mode, vllm_importance_sampling_correction=self.importance_sampling_correction)
            if self.vllm_server_base_url:
                kwargs["vllm_server_base_url"] = self.vllm_server_base_url
        kwargs.update(self.extra)
        return GRPOConfig(**kwargs)


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False
