"""The one interface every editing policy implements, and the policy factory."""
from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

from harness_gym.errors import ConfigError


@dataclass(frozen=True)
class PolicyInput:
    """What a policy reads: the env's observation text and the structured packet."""

    text: str
    packet: dict[str, Any]
    benchmark: str


class Policy(ABC):
    """``propose(packets, k)`` returns ``k`` patch texts for each packet."""

    name: str = "policy"

    @abstractmethod
    def propose(self, packets: Sequence[PolicyInput], k: int = 1) -> list[list[str]]:
        """One list of ``k`` candidate patches (any accepted patch format) per packet."""


_POLICIES = {
    "noop": "baselines.noop:NoopPolicy",
    "self-refine": "baselines.self_refine:SelfRefinePolicy",
    "template": "baselines.template:TemplatePolicy",
    "co-harness": "baselines.co_harness.propose:CoHarnessPolicy",
    "sb3-select": "baselines.sb3_select.policy:SB3SelectPolicy",
    "frontier": "baselines.frontier.policy:FrontierPolicy",
    "grpo": "baselines.grpo.policy:GRPOPolicy",
}


def available_policies() -> list[str]:
    return sorted(_POLICIES)


def make_policy(name: str, **kwargs: Any) -> Policy:
    """``name`` or ``name:<path>`` (e.g. ``sb3-select:runs/selector.zip``; the path goes to ``path=``)."""
    name, _, arg = name.partition(":")
    if arg:
        kwargs["path"] = arg
    if name not in _POLICIES:
        raise ConfigError(f"unknown policy {name!r}: expected one of {available_policies()}")
    module, cls = _POLICIES[name].split(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
