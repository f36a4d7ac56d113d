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
}


def available_policies() -> list[str]:
    return sorted(_POLICIES)


def make_policy(name: str, **kwargs: Any) -> Policy:
    if name not in _POLICIES:
        raise ConfigError(f"unknown policy {name!r}: expected one of {available_policies()}")
    module, cls = _POLICIES[name].split(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)
