"""The alignment phase of Co-Harness: SFT of an ``hf:`` target on trajectories from the improved harness.

Successful trajectories (reward >= 1) of the target under the registry head, on tasks of
``AlignConfig.split`` (``train`` by default: never the split being evaluated), become a
conversational dataset (``messages`` + ``tools``); ``trl.SFTTrainer`` trains for
``max_steps``; the weights are saved and the next round's target is ``hf:<dir>``.
Needs the ``train`` extra: ``pip install transformers trl datasets`` (and torch).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness_gym.errors import ConfigError
from harness_gym.harness.files import Harness

TRAIN_EXTRA = "pip install 'torch==2.13.0' transformers trl datasets"


@dataclass(frozen=True)
class AlignConfig:
    output_dir: str = "runs/co_harness_sft"
    split: str = "train"
    tasks: int = 32
    max_steps: int = 8
    learning_rate: float = 1e-5
    batch_size: int = 2
    max_length: int = 2048

    def __post_init__(self) -> None:
        if self.tasks < 1 or self.max_steps < 1 or self.batch_size < 1:
            raise ConfigError(f"AlignConfig: tasks={self.tasks}, max_steps={self.max_steps}, batch_size="
                              f"{self.batch_size}: each must be >= 1")


def collect_trajectories(env: Any, harness: Harness, cfg: AlignConfig, seed: int = 0) -> list[dict[str, Any]]:
    """SFT rows from the target's successful episodes under ``harness`` on ``cfg.split`` tasks."""
    u = env.unwrapped
    pool = u.spec_.load_tasks(cfg.split, Path(u.config.data_dir) if u.config.data_dir else None)
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(pool))[: cfg.tasks]
    tasks = [pool[i] for i in idx]
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(tasks))]
    results = u.evaluator.evaluate(harness, tasks, seeds)
    tools = harness.tools()
    return [{"messages": to_chat(r.messages), "tools": tools} for r in results if not r.is_env_error and r.reward >= 1.0]


def to_chat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI messages with tool-call arguments as dicts (what HF chat templates expect)."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = dict(c.get("function", {}))
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except ValueError:
                        pass
                calls.append({"type": "function", "id": c.get("id", ""), "function": fn})
            m["tool_calls"] = calls
        m["content"] = "" if m.get("content") is None else str(m["content"])
        out.append(m)
    return out


def as_text(row: dict[str, Any]) -> str:
    """Plain-text rendering for tokenizers without a chat template."""
    parts = []
    for m in row["messages"]:
        body = m.get("content", "")
        for c in m.get("tool_calls") or []:
            body += f"\n<tool_call>{json.dumps(c['function'], sort_keys=True)}</tool_call>"
        parts.append(f"<|{m.get('role')}|>\n{body}")
    return "\n".join(parts) + "\n"


def sft_step(target: str, rows: list[dict[str, Any]], cfg: AlignConfig, round_index: int = 0) -> str:
    """Fine-tune ``hf:<path>`` on ``rows``; return the new target string ``hf:<dir>``."""
    if not target.startswith("hf:"):
        raise ConfigError(f"target {target!r}: SFT needs an 'hf:<model dir>' target")
    if not rows:
        return target  # nothing to learn from; keep the weights
    try:
        from datasets import Dataset
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import SFTConfig, SFTTrainer
    except ImportError as exc:
        raise ConfigError(f"the alignment phase needs transformers, trl and datasets ({exc.name} missing): {TRAIN_EXTRA}") from None
    path = target[len("hf:"):]
    tok = AutoTokenizer.from_pretrained(path)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    model = AutoModelForCausalLM.from_pretrained(path)
    if getattr(tok, "chat_template", None):
        data = Dataset.from_list([{"messages": r["messages"], "tools": r["tools"]} for r in rows])
    else:
        data = Dataset.from_list([{"text": as_text(r)} for r in rows])
    out = Path(cfg.output_dir) / f"round{round_index}"
    args = SFTConfig(output_dir=str(out), max_steps=cfg.max_steps, learning_rate=cfg.learning_rate,
                     per_device_train_batch_size=cfg.batch_size, logging_steps=1, save_strategy="no",
                     report_to=[], max_length=cfg.max_length, use_cpu=not _has_gpu(), seed=round_index,
                     dataset_num_proc=None)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok)
    trainer.train()
    trainer.save_model(str(out))
    tok.save_pretrained(str(out))
    return f"hf:{out}"


def _has_gpu() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except ImportError:
        return False
