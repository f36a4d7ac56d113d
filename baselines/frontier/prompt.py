"""Harness-R1's engineer prompt: one system message + one user message (the env observation).

The user message is the env's observation as is: it already holds the scope sentence, the
response protocol and patch schema, the hook contract, the runtime context, the marker and
the packet. The system message follows Harness-R1's two variants: *prefill* (the assistant
turn already opened ``<think>\\n``; continue it, close it, emit one ``<patch>``) and
*two blocks* (for backends that cannot continue a message: write both blocks).
"""
from __future__ import annotations

from harness_gym.packets.prompt import MARKER
from harness_gym.types import Message

PREFILL = "<think>\n"

SYSTEM_PREFILL = (
    "You are a harness engineer for a frozen tool-using agent. Analyze the recurring failures in the "
    "observed rollout evidence and emit one typed patch to the agent's reusable harness: a single JSON "
    "object inside <patch>...</patch> with a top-level \"actions\" array of add_code_hook actions. "
    "Your reply has already opened <think>; continue the concise reasoning, close it with </think>, "
    "then output exactly one <patch> block and nothing after it."
)

SYSTEM_TWO_BLOCKS = (
    "You are a harness engineer for a frozen tool-using agent. Analyze the recurring failures in the "
    "observed rollout evidence and emit one typed patch to the agent's reusable harness. Reply with exactly "
    "two blocks: <think>...</think> with concise reasoning, then <patch>{one JSON object}</patch> with a "
    "top-level \"actions\" array of add_code_hook actions. Nothing after </patch>."
)


def engineer_messages(observation: str, *, prefill: bool, prefix: str | None = None) -> list[Message]:
    """``[system, user]`` for one packet; ``prefix`` replaces the static text before the marker.

    Replacing the prefix mirrors Harness-R1's ``align_prompt_prefix_to_reference`` (keep the batch
    evidence, swap the static instructions); tiny test models use it to fit a short context.
    """
    user = observation if prefix is None else replace_prefix(observation, prefix)
    return [{"role": "system", "content": SYSTEM_PREFILL if prefill else SYSTEM_TWO_BLOCKS},
            {"role": "user", "content": user}]


def replace_prefix(observation: str, prefix: str) -> str:
    """``prefix`` + the marker + the evidence after it (the observation must contain the marker)."""
    at = observation.rfind(MARKER)
    if at < 0:
        raise ValueError(f"the observation has no marker {MARKER!r}: expected an env observation")
    return prefix.rstrip() + "\n\n" + observation[at:]
