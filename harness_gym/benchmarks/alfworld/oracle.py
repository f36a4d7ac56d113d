"""Lockstep play of the embedded world against the original engine (``backend="textworld"``).

``lockstep(task, grammar, seed)`` plays one scene in both worlds at once, twice: first ALFWorld's
handcoded expert (``alfworld.agents.expert``, reading the engine's state) walks it through to
the win, then, from the start again, a seeded random explorer plays admissible commands and
commands an agent gets wrong (upper case, doubled, leading or trailing spaces, unknown objects,
refused actions, other verbs). After every command it compares the observation, the admissible
commands and ``won``. The classic grammar gets the expert's commands translated
(``move X to Y`` -> ``put X in/on Y``), since the installed expert speaks the move grammar;
the expert is told its last command in the classic form, since alfworld 0.4.2's expert
forgets a placed object unless the command contains "put" (it then walks back to put it
again, and never finishes a two-object task in the move grammar).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from harness_gym.benchmarks.alfworld.tasks import AlfTask
from harness_gym.benchmarks.alfworld.world import TOOL, ALFWorldWorld
from harness_gym.types import ToolCall

ODD = ("jump", "take apple", "go to", "look around", "put", "examine", "inventory please", "use lamp", "help me")


@dataclass
class Difference:
    step: int
    command: str
    field: str  # observation | admissible | won
    embedded: Any
    original: Any

    def line(self) -> str:
        if self.field == "admissible":
            a, b = set(self.embedded), set(self.original)
            return (f"step {self.step} {self.command!r}: admissible only embedded {sorted(a - b)}, "
                    f"only original {sorted(b - a)}")
        return f"step {self.step} {self.command!r}: {self.field} embedded {self.embedded!r} != original {self.original!r}"


@dataclass
class Lockstep:
    task_id: str
    grammar: str
    steps: int = 0
    agreeing: int = 0
    won_step_embedded: int | None = None
    won_step_original: int | None = None
    commands: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    @property
    def same_win(self) -> bool:
        return self.won_step_original is not None and self.won_step_embedded == self.won_step_original


def _to_classic(command: str) -> str:
    if command.startswith("move ") and " to " in command:
        obj, _, rec = command[5:].partition(" to ")
        return f"put {obj} in/on {rec}"
    return command


def _to_move(command: str) -> str:
    if command.startswith("put ") and " in/on " in command:
        obj, _, rec = command[4:].partition(" in/on ")
        return f"move {obj} to {rec}"
    return command


def _odd(rng: random.Random, admissible: list[str], task: AlfTask) -> str:
    pick = rng.choice(admissible)
    r = rng.random()
    if r < 0.25:
        return pick.upper() if rng.random() < 0.5 else pick.capitalize()
    if r < 0.5:
        return rng.choice([" " + pick, pick + "  ", pick.replace(" ", "  ", 1), "\t" + pick])
    if r < 0.75:
        obj = rng.choice(task.objects)[0]
        rec = rng.choice(task.receptacles)[0]
        return rng.choice([f"examine {obj}", f"take {obj} from {rec}", f"go to {rec}", f"open {rec}", f"close {rec}",
                           f"use {obj}", f"clean {obj} with {rec}", f"heat {obj} with {rec}", f"cool {obj} with {rec}",
                           f"put {obj} in/on {rec}", f"move {obj} to {rec}"])
    return rng.choice(ODD)


def lockstep(task: AlfTask, grammar: str = "classic", seed: int = 0, expert_steps: int = 80,
             explore_steps: int = 30, odd_prob: float = 0.35) -> Lockstep:
    """Play ``task`` in both worlds twice: ALFWorld's handcoded expert's walkthrough (it must win
    in both at the same step), then, from the start again, seeded exploration with odd
    commands. Every step is compared."""
    from alfworld.agents.expert import HandCodedTWAgent

    from harness_gym.benchmarks.alfworld.twgame import TextWorldWorld

    out = Lockstep(task.task_id, grammar)
    emb, orig = ALFWorldWorld(grammar), TextWorldWorld(grammar, facts=True)  # the expert reads the facts
    step = 0

    def play(command: str) -> None:
        nonlocal step
        step += 1
        out.commands.append(command)
        call = ToolCall(f"c{step}", TOOL, {"action": command})
        obs_e, obs_o = emb.step(call).observation, orig.step(call).observation
        _compare(out, step, command, obs_e, obs_o, emb, orig)

    state = random.getstate()
    random.seed(f"alfworld-expert:{task.task_id}:{seed}")  # the expert falls back on the global random
    try:
        obs_e, obs_o = emb.reset(task), orig.reset(task)
        _compare(out, 0, "", obs_e, obs_o, emb, orig)
        expert = HandCodedTWAgent(max_steps=200)
        assert orig.path is not None
        expert.reset(str(orig.path))
        expert.observe(obs_o)
        last = ""
        for n in range(1, expert_steps + 1):
            try:
                command = expert.act(_ExpertView(orig.state, orig.admissible_commands), 0, orig.won, _to_classic(last))
            except Exception:  # the expert gave up (its step budget, or a state it does not know)
                break
            play(_to_classic(command) if grammar == "classic" else command)
            last = command
            if emb.score and out.won_step_embedded is None:
                out.won_step_embedded = n
            if orig.won and out.won_step_original is None:
                out.won_step_original = n
            if emb.score or orig.won:
                break
        # from the start again: seeded exploration, a share of it commands an agent gets wrong
        rng = random.Random(f"alfworld-lockstep:{task.task_id}:{grammar}:{seed}")
        obs_e, obs_o = emb.reset(task), orig.restart()
        _compare(out, step, "(restart)", obs_e, obs_o, emb, orig)
        for _ in range(explore_steps):
            admissible = orig.admissible_commands
            play(_odd(rng, admissible, task) if rng.random() < odd_prob else rng.choice(admissible))
    finally:
        random.setstate(state)
        orig.close()
    return out


class _ExpertView(dict):
    """The engine's state as the move-grammar expert expects it (admissible commands translated)."""

    def __init__(self, state: Any, admissible: list[str]) -> None:
        super().__init__(state.items() if hasattr(state, "items") else state)
        self["admissible_commands"] = [_to_move(c) for c in admissible]


def _compare(out: Lockstep, step: int, command: str, obs_e: str, obs_o: str, emb: ALFWorldWorld, orig: Any) -> None:
    out.steps += 1
    pairs = (("observation", obs_e, obs_o), ("admissible", emb.admissible_commands, orig.admissible_commands),
             ("won", bool(emb.score), orig.won))
    bad = [Difference(step, command, name, a, b) for name, a, b in pairs if a != b]
    if bad:
        out.differences += bad
    else:
        out.agreeing += 1
