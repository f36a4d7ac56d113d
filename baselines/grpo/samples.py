"""Sample K completions per row from a model and score them with the env, outside the trainer.

Measures what GRPO will see before it trains: the valid-patch rate and the spread of rewards
within each group (GRPO learns nothing from a group whose K rewards are equal). Scoring goes
through ``EnvReward``, so the numbers are the trainer's reward, computed the same way.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from baselines.grpo.reward import EnvReward


def sample_completions(model: Any, tokenizer: Any, prompts: list[list[dict[str, str]]], k: int, *,
                       max_new_tokens: int, temperature: float = 0.7, top_p: float = 0.95, seed: int = 0,
                       ) -> list[list[str]]:
    """``k`` sampled replies per conversational prompt (chat template + generation prompt, as GRPO renders it)."""
    import torch

    torch.manual_seed(seed)
    was_training = model.training
    model.eval()
    out = []
    try:
        for messages in prompts:
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = tokenizer(text, add_special_tokens=False, return_tensors="pt")
            with torch.no_grad():
                gen = model.generate(**ids, do_sample=True, temperature=temperature, top_p=top_p,
                                     max_new_tokens=max_new_tokens, num_return_sequences=k,
                                     pad_token_id=tokenizer.pad_token_id)
            out.append(tokenizer.batch_decode(gen[:, ids["input_ids"].shape[1]:], skip_special_tokens=True))
    finally:
        model.train(was_training)
    return out


def score_samples(env: Any, rows: list[dict[str, Any]], texts: list[list[str]],
                  log_path: str | Path | None = None) -> dict[str, Any]:
    """Env rewards of ``texts[i]`` (K replies to ``rows[i]``): the ``EnvReward`` log row plus group spread."""
    reward = EnvReward(env, log_path)
    flat = [(row, t) for row, group in zip(rows, texts) for t in group]
    reward(prompts=[r["prompt"] for r, _ in flat], completions=[t for _, t in flat],
           batch_seed=[r["batch_seed"] for r, _ in flat], task_ids=[r["task_ids"] for r, _ in flat])
    stats = dict(reward.history[-1])
    spreads = [statistics.pstdev(g["rewards"]) if len(g["rewards"]) > 1 else 0.0 for g in stats["groups"]]
    stats["groups_with_signal"] = sum(s > 0 for s in spreads)  # groups whose rewards differ: non-zero advantage
    stats["group_std_mean"] = statistics.fmean(spreads) if spreads else 0.0
    return stats
