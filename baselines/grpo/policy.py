"""``grpo:<checkpoint dir>``: a trained engineer checkpoint as a policy (generation via the ``hf`` backend).

Prompts as in training: the two-block system prompt (no prefill) by default. Options go to
``FrontierConfig`` (``temperature``, ``max_tokens``, ``prompt_prefix``…); hf options in the
path (``grpo:runs/x/final?max_tokens=2048&dtype=bfloat16&device=cuda``).
"""
from __future__ import annotations

from typing import Any

from baselines.frontier.policy import FrontierPolicy
from harness_gym.errors import ConfigError


class GRPOPolicy(FrontierPolicy):
    name = "grpo"

    def __init__(self, path: str = "", **kwargs: Any) -> None:
        if not path:
            raise ConfigError("grpo: give the checkpoint folder, e.g. grpo:runs/grpo_engineer/final")
        kwargs.setdefault("prefill", "off")
        kwargs.setdefault("temperature", 0.0)  # Harness-R1 main eval: one greedy patch per batch
        super().__init__(path=f"hf:{path}", **kwargs)
