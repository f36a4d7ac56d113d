"""Running a harness's hooks at the four lifecycle points, through the sandbox.

For one point, every entry of every hook module runs in path order and they share
``nb`` (Harness-R1: duplicates run in order). A failing entry has no effect, keeps
``nb`` as it was before that call, and is recorded as an event. Return values are
normalized as Harness-R1 ``_normalize_hook_result`` does, with the effect kind under
``"type"`` (``"kind"`` accepted as an alias).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_gym.harness.files import Harness, HookModule
from harness_gym.harness.policy import HOOK_POINTS, instance_action
from harness_gym.sandbox.pool import SandboxPool

MAX_TEXT_CHARS = 900
# An episode's hook calls together may keep the sandbox busy for this many call timeouts
# (20 s at the default 2 s); then the episode's remaining hook calls are skipped. Each call
# is bounded by the timeout, but a harness has up to 64 hook files with four entries each,
# called every round: without a per-episode bound, a patch whose hooks all run to the
# timeout holds one episode for hours. Ordinary hooks take milliseconds a call.
EPISODE_BUDGET_CALLS = 10
MAX_SKILLS = 5
ALLOWED_KINDS = {
    "on_before_action": ("block_and_prompt", "rewrite_action", "force_action"),
    "on_post_step": ("inject_hint", "force_action"),
}


class HookBudget:
    """The sandbox time an episode's hook calls may still take (``CallResult.elapsed_s``: per call, the
    start of a worker when the call needed a new one plus the worker's own time, so a harness of more
    hook modules than the pool keeps warm pays for its restarts, and waiting behind other episodes'
    or patches' calls costs nothing)."""

    def __init__(self, seconds: float) -> None:
        self.total = self.left = float(seconds)
        self.reported = False

    @classmethod
    def for_sandbox(cls, sandbox: Any) -> "HookBudget":
        return cls(EPISODE_BUDGET_CALLS * float(getattr(sandbox, "call_timeout_s", 2.0)))


@dataclass
class HookRun:
    """What one hook point produced: effects in order, the notebook, one event per call."""

    effects: list[dict] = field(default_factory=list)
    nb: dict = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)


class HookRunner:
    """Runs a harness's hook entries in the sandbox and normalizes their effects."""

    def __init__(self, harness: Harness, sandbox: SandboxPool) -> None:
        self.harness = harness
        self.sandbox = sandbox
        self._by_point: dict[str, list[tuple[HookModule, str]]] = {p: [] for p in HOOK_POINTS}
        for module in harness.hook_modules():
            for point, fn in module.entries:
                if point in self._by_point:
                    self._by_point[point].append((module, fn))

    @property
    def active(self) -> bool:
        """Whether the harness has any hook entries."""
        return any(self._by_point.values())

    def entries(self, point: str) -> list[tuple[str, str]]:
        """``(file, function)`` pairs that run at ``point``, in order."""
        return [(m.path, fn) for m, fn in self._by_point.get(point, [])]

    async def run(self, point: str, ctx: dict, nb: dict, budget: HookBudget | None = None) -> HookRun:
        """Run every entry for ``point``; ``nb`` is threaded through the calls. With ``budget``,
        entries are skipped once it is spent (one event says so, the first time)."""
        if point not in HOOK_POINTS:
            raise ValueError(f"unknown hook point {point!r}; expected one of {', '.join(HOOK_POINTS)}")
        result = HookRun(effects=[], nb=nb, events=[])
        for module, fn in self._by_point[point]:
            if budget is not None and budget.left <= 0:
                if not budget.reported:
                    budget.reported = True
                    result.events.append({"kind": "hook", "point": point, "file": module.path, "effect": None,
                                          "error": f"skipped: this episode's hooks used their time budget "
                                                   f"({budget.total:g}s in the sandbox); no more hook calls this episode"})
                continue
            call = await self.sandbox.call(module.code, fn, self.harness.benchmark, ctx, result.nb)
            if budget is not None:
                budget.left -= float(getattr(call, "elapsed_s", 0.0))
            effect = normalize_effect(point, call.value, ctx) if call.ok else None
            if call.ok:
                result.nb = call.nb
            if effect is not None:
                result.effects.append(effect)
            result.events.append({"kind": "hook", "point": point, "file": module.path, "effect": effect, "error": call.error})
        return result


def _clean_text(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return " ".join(value.split())[:MAX_TEXT_CHARS]


def _admissible(ctx: Any) -> set[str]:
    raw = ctx.get("admissible") if isinstance(ctx, dict) else None
    if not isinstance(raw, (list, tuple, set)):
        return set()
    return {" ".join(str(x).lower().split()) for x in raw}


def _clean_action(value: Any, ctx: Any) -> str:
    if not isinstance(value, str):
        return ""
    action = " ".join(value.lower().split())
    if action and instance_action(action) and action not in _admissible(ctx):
        return ""
    return action[:MAX_TEXT_CHARS]


def normalize_effect(point: str, value: Any, ctx: dict) -> dict | None:
    """Normalize a hook's return value into an effect (Harness-R1 return contract), or None."""
    if not isinstance(value, dict):
        return None
    if point == "on_init":
        skills_raw = value.get("skills") or []
        skills: list[str] = []
        if isinstance(skills_raw, list):
            for item in skills_raw[:MAX_SKILLS]:
                text = _clean_text(item.get("text", "") if isinstance(item, dict) else item)
                if text:
                    skills.append(text)
        tool_hint = _clean_text(value.get("tool_hint", ""))
        if not skills and not tool_hint:
            return None
        return {"type": "init", "skills": skills, "tool_hint": tool_hint}
    if point == "make_pre_hint":
        message = _clean_text(value.get("message", ""))
        return {"type": "message", "message": message} if message else None
    allowed = ALLOWED_KINDS.get(point, ())
    kinds = [str(k).strip() for k in (value.get("type"), value.get("kind")) if k is not None]
    kind = next((k for k in kinds if k in allowed), None)
    if kind is None:
        return None
    message = _clean_text(value.get("message", ""))
    action = ""
    if kind in ("force_action", "rewrite_action"):
        action = _clean_action(value.get("action", ""), ctx)
        if not action:
            if point == "on_post_step" and message:
                return {"type": "inject_hint", "message": message, "action": ""}
            return None
    if kind in ("block_and_prompt", "inject_hint") and not message:
        return None
    return {"type": kind, "message": message, "action": action}
