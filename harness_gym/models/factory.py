"""Target strings → chat backends: one factory, chosen by the string's prefix."""
from __future__ import annotations

from harness_gym.errors import ConfigError
from harness_gym.models.base import ChatBackend

KNOWN_PREFIXES = ("sim", "hf:", "vllm:", "openai:")


def make_backend(target: str) -> ChatBackend:
    """``sim`` (simulated target, CPU) — real-model backends ``hf:``/``vllm:``/``openai:`` come with their extras."""
    if target == "sim":
        from harness_gym.models.sim import SimBackend

        return SimBackend()
    if target.startswith(("hf:", "vllm:", "openai:")):
        raise ConfigError(
            f"target {target!r}: real-model backends are not available in this version yet; use target='sim'"
        )
    raise ConfigError(f"unknown target {target!r}: expected one of 'sim', 'hf:<path>', 'vllm:<path>', 'openai:<base_url>#<model>'")
