"""One exception class per failure boundary.

Messages read: what was expected, what was given, how to fix it — on one line.
"""
from __future__ import annotations


class HarnessGymError(Exception):
    """Base class of every error harness-gym raises on purpose."""


class PatchError(HarnessGymError):
    """A patch could not be parsed, validated or applied (never reaches a rollout)."""


class SandboxError(HarnessGymError):
    """The hook sandbox could not start or answer."""


class BackendError(HarnessGymError):
    """A model backend failed (server down, bad reply, missing extra)."""


class WorldError(HarnessGymError):
    """A task world failed for reasons outside the agent's control (environment failure)."""


class TaskDataError(HarnessGymError):
    """Task data is missing or malformed."""


class ConfigError(HarnessGymError, ValueError):
    """A configuration value is invalid."""


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so an error message stays on one line."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."
