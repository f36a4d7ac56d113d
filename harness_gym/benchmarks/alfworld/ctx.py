"""The ALFWorld ``ctx`` of Harness-R1 (spec §3), derived only from what the agent has seen.

``AlfState`` follows an episode: the goal text, every executed command and observation
(through ``targets.alfworld.observe.Tracker``), the admissible list and the raw model
outputs. ``ctx()`` renders the dict hooks receive. Counters: ``nothing_happens_count`` is
the total of "Nothing happens." observations; ``repeated_observation_count`` and
``repeated_action_count`` are the lengths of the current runs of identical observations /
executed actions (1 = not repeated); ``invalid_action_count`` counts actions that were not
admissible. Predicates named ``*_repeated`` are true from a run of 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness_gym.benchmarks.alfworld.game import NOTHING
from harness_gym.benchmarks.alfworld.goals import SHORT_TYPE, parse_goal
from harness_gym.benchmarks.alfworld.observe import Tracker
from harness_gym.benchmarks.alfworld.tasks import kind

HISTORY = 5


def normalize_action(raw: str) -> str:
    """Lowercase, collapse whitespace, drop a leading ``>``/``Action:`` and a trailing period or quotes."""
    text = " ".join(str(raw).strip().split()).lower()
    for prefix in ("action:", ">"):
        if text.startswith(prefix):
            text = text[len(prefix):].strip()
    return text.strip("'\"` ").rstrip(".").strip()


def process_action(raw: str, admissible: list[str], mapping: str = "exact") -> str:
    """Map a model's raw action to a command (Harness-R1 ``process_action``).

    ``exact`` (default) keeps the normalized text, so anything not admissible gets
    "Nothing happens."; ``closest`` maps free text to the most similar admissible command
    (AgentBench-style), when one is similar enough.
    """
    action = normalize_action(raw)
    if action in admissible or mapping != "closest" or not admissible:
        return action
    import difflib

    best = difflib.get_close_matches(action, admissible, n=1, cutoff=0.6)
    return best[0] if best else action


@dataclass
class AlfState:
    goal: dict[str, str]
    max_steps: int
    observation: str
    admissible: list[str]
    tracker: Tracker
    step: int = 0
    output: str = ""
    nothing_happens_count: int = 0
    invalid_action_count: int = 0
    repeated_observation_count: int = 0
    repeated_action_count: int = 0
    nothing_streak: int = 0
    stepped: bool = False
    last_admissible: bool = False
    actions: list[str] = field(default_factory=list)
    observations: list[str] = field(default_factory=list)

    @classmethod
    def start(cls, first_observation: str, admissible: list[str], max_steps: int) -> AlfState:
        return cls(parse_goal(first_observation), max_steps, first_observation, list(admissible),
                   Tracker.start(first_observation))

    def note_output(self, text: str) -> None:
        self.output = text

    def after_step(self, action: str, observation: str, admissible: list[str]) -> None:
        was_admissible = action in self.admissible
        self.invalid_action_count += 0 if was_admissible else 1
        self.last_admissible = was_admissible
        nothing = observation.strip() == NOTHING
        self.nothing_happens_count += int(nothing)
        self.nothing_streak = self.nothing_streak + 1 if nothing else 0
        same_obs = bool(self.observations) and self.observations[-1] == observation
        self.repeated_observation_count = self.repeated_observation_count + 1 if same_obs else 1
        same_act = bool(self.actions) and self.actions[-1] == action
        self.repeated_action_count = self.repeated_action_count + 1 if same_act else 1
        self.actions.append(action)
        self.observations.append(observation)
        if not nothing:
            self.tracker.update(action, observation)
        self.observation = observation
        self.admissible = list(admissible)

    def world(self) -> dict[str, Any]:
        t, g = self.tracker, self.goal
        target, dest = g["target_type"], g["destination_type"]
        placed = t.placed(target, dest) if dest else []
        placed_names = {o for o, _ in placed}
        seen = [(o, r) for o, r in t.object_at.items() if kind(o) == target and o not in placed_names]
        return {
            "current_location": t.location or "",
            "inventory": t.inventory,
            "object_at": dict(t.object_at),
            "visited": list(t.visited),
            "unvisited": [r for r in t.receptacles if r not in t.visited],
            "target_found": bool(seen) or (t.inventory is not None and kind(t.inventory) == target),
            "target_location": seen[0][1] if seen else "",
            "placed_count": len(placed),
            "placed_items": [o for o, _ in placed],
            "placed_locations": sorted({r for _, r in placed}),
            "lamp_location": t.lamp_location or "",
        }

    def ctx(self, *, phase: str, raw: str = "", normalized: str = "", final_action: str = "") -> dict[str, Any]:
        remaining = self.max_steps - self.step - (1 if phase == "post_step" else 0)
        adm = list(self.admissible)
        action = final_action or normalized
        return {
            "phase": phase,
            "observation": self.observation,
            "admissible": adm,
            "output": self.output,
            "step": self.step,
            "max_step": self.max_steps,
            "remaining_steps": remaining,
            "action": {"raw": raw, "normalized": normalized, "final_action": final_action,
                       "in_admissible": self.last_admissible if phase == "post_step" else bool(action) and action in adm},
            "state": {
                "nothing_happens_count": self.nothing_happens_count,
                "repeated_observation_count": self.repeated_observation_count,
                "repeated_action_count": self.repeated_action_count,
                "invalid_action_count": self.invalid_action_count,
                "remaining_steps": remaining,
            },
            "task": {"task_type": SHORT_TYPE.get(self.goal["task_type"], ""), "target_type": self.goal["target_type"],
                     "destination_type": self.goal["destination_type"], "toggle_type": self.goal["toggle_type"]},
            "predicates": {
                "action_not_admissible": phase == "before_action" and bool(action) and action not in adm,
                "nothing_happens_repeated": self.nothing_streak >= 2,
                "same_observation_repeated": self.repeated_observation_count >= 2,
                "same_action_repeated": self.repeated_action_count >= 2,
                "remaining_steps_low": remaining <= 5,
            },
            "history": {"last_actions": self.actions[-HISTORY:], "last_observations": self.observations[-HISTORY:]},
            "world": self.world(),
        }
