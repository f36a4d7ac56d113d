"""The embedded scenes as games of the original ALFWorld engine (``backend="textworld"``).

``compile_game(task, grammar)`` writes one ``AlfTask`` as a ``game.tw-pddl`` document the way
ALFWorld's own games are stored: the ``alfworld`` package's PDDL domain and TWL2 grammar (the
goal text in place of ``UNKNOWN GOAL``) plus a PDDL problem built from the scene (AI2-THOR
style ids, so ALFWorld's demangler names them ``cabinet 3``; types, locations, ``canContain``,
the object properties and the goal of the task type). ``TextWorldWorld`` plays it with
TextWorld's PDDL engine (``fast-downward-textworld``) wrapped in ALFWorld's ``AlfredDemangler``,
behind the same interface as the embedded world. Games are cached under
``$HARNESS_GYM_CACHE/alfworld-textworld`` (default ``~/.cache/harness-gym``), one folder per
game with the ``traj_data.json`` that ALFWorld's handcoded expert reads.

``grammar="move"`` is the installed ``alfworld`` (0.4.2) grammar as it is; ``"classic"`` is the
same grammar as the games were before ALFWorld 0.4 (``put X in/on Y``, ``You arrive at loc N.``,
no ``help``), derived from it at run time.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from harness_gym.errors import ConfigError, WorldError, one_line
from harness_gym.benchmarks.alfworld import scenes as S
from harness_gym.benchmarks.alfworld.game import GRAMMARS, Game, pddl_ids
from harness_gym.benchmarks.alfworld.scenes import THOR_NAME
from harness_gym.benchmarks.alfworld.tasks import AlfTask, kind
from harness_gym.benchmarks.alfworld.world import TOOL, AlfWorldBase, action_of
from harness_gym.types import StepResult, ToolCall

INSTALL = "pip install 'harness-gym[alfworld]' (alfworld==0.4.2 textworld fast-downward-textworld)"


_FAST = False


def _memoize_text_parsers() -> None:
    """Cache TextWorld's grammar and query parsers (TatSu), which it re-runs on every step, and
    Fast Downward's PDDL-to-SAS translation, which it runs four times per game load; copy the
    text generator's contexts shallowly instead of deeply.

    The parsers and the translation are pure functions of their text: cached grammar symbols and
    translated tasks are handed out as deep copies (the engine sets their context), parsed query
    rules are never mutated; the contexts' dicts only ever get keys added. This changes how fast the engine runs, not what it says (``test_alfworld_textworld``
    plays the same game with and without it)."""
    global _FAST
    if _FAST:
        return
    from copy import deepcopy
    from functools import lru_cache

    import textworld.envs.pddl.textgen as textgen
    from textworld.logic import Rule

    parse = textgen._parse_and_convert
    cached = lru_cache(maxsize=4096)(lambda text, rule_name, trace=False: parse(text, rule_name=rule_name, trace=trace))

    def parse_and_convert(text: str, rule_name: str = "symbols", trace: bool = False) -> Any:
        return deepcopy(cached(text, rule_name, trace))

    import fast_downward

    translate = fast_downward.pddl2sas
    translated = lru_cache(maxsize=64)(lambda d, p, optimize: translate(d, p, optimize=optimize))

    def pddl2sas(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        task, sas = translated(domain, problem, optimize)
        return deepcopy(task), sas

    def copy_context(context: dict[str, Any]) -> dict[str, Any]:
        # the engine deep-copies the variable and mapping dicts for every symbol it derives; it only
        # ever adds keys to them (their values, entity infos and variables, are never changed in place)
        return {"state": context["state"], "facts": context["facts"], "variables": dict(context["variables"]),
                "mapping": dict(context["mapping"]), "entity_infos": context["entity_infos"]}

    query = Rule.parse_conjunctive_query.__func__  # type: ignore[attr-defined]
    textgen.copy_context = copy_context
    fast_downward.pddl2sas = pddl2sas
    textgen._parse_and_convert = parse_and_convert
    Rule.parse_conjunctive_query = classmethod(lru_cache(maxsize=4096)(query))  # type: ignore[method-assign]
    _FAST = True


def _require() -> Any:
    try:
        import textworld
        from textworld.envs import PddlEnv  # noqa: F401
        import fast_downward  # noqa: F401
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler  # noqa: F401
        import alfworld.info  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"backend='textworld' needs the original ALFWorld engine ({exc}); {INSTALL}") from None
    return textworld


def logic(grammar: str) -> tuple[str, str]:
    """``(pddl_domain, twl2 grammar)`` of the installed ``alfworld`` package for ``grammar``."""
    if grammar not in GRAMMARS:
        raise ConfigError(f"grammar={grammar!r}: expected one of {list(GRAMMARS)} for backend='textworld'")
    _require()
    import alfworld.info as info

    domain = Path(info.ALFRED_PDDL_PATH).read_text()
    twl2 = Path(info.ALFRED_TWL2_PATH).read_text()
    if grammar == "move":
        return domain, twl2
    # the pre-0.4 games: no help action, put X in/on Y, arrival at the location's name (loc N)
    edits = [("You arrive at {r.name}.", "You arrive at {lend.name}."),
             ('"move {o} to {r}"', '"put {o} in/on {r}"'),
             ("You move the {o.name} to the {r.name}.", "You put the {o.name} in/on the {r.name}.")]
    for old, new in edits:
        if old not in twl2:
            raise ConfigError(f"the installed alfworld grammar ({info.ALFRED_TWL2_PATH}) lacks {old!r}; "
                              "backend='textworld:classic' expects alfworld 0.4.x")
        twl2 = twl2.replace(old, new)
    twl2, n_help = re.subn(r"\naction help \{.*?\n\}\n?", "\n", twl2, flags=re.S)
    domain, n_dom = re.subn(r"\(:action help\b.*?\n\)\n", "", domain, flags=re.S)
    if not (n_help and n_dom):
        raise ConfigError("the installed alfworld domain/grammar has no help action to drop; expected alfworld 0.4.x")
    return domain, twl2


def _ids(task: AlfTask, game: Game) -> tuple[dict[str, str], dict[str, str], dict[str, str], str]:
    """PDDL ids of receptacles, objects and locations that ALFWorld's demangler turns back
    into the task's names (see ``game.pddl_ids``); locations are numbered the same way."""
    ids = pddl_ids(task)
    rec = {n: ids[n] for n, _, _ in task.receptacles}
    obj = {o: ids[o] for o, _ in task.objects}
    total = len(set(game.loc_number.values())) + 1  # the agent's start point is a location too (lowest id: loc N+1)
    loc = {n: f"loc_bar_{total - game.loc_number[n]:04d}" for n, _, _ in task.receptacles}
    return rec, obj, loc, "loc_bar_0000"


def _goal(task: AlfTask) -> str:
    o = THOR_NAME[task.target_type]
    if task.task_type == "look_at_obj_in_light":
        lamp = THOR_NAME[task.toggle_type]
        return (f"(:goal (and (exists (?ot - object ?r - receptacle ?a - agent ?l - location) (and (objectType ?ot {lamp}Type) "
                "(toggleable ?ot) (isToggled ?ot) (receptacleAtLocation ?r ?l) (atLocation ?a ?l) (inReceptacle ?ot ?r))) "
                f"(exists (?o - object ?a - agent) (and (objectType ?o {o}Type) (holds ?a ?o)))))")
    r = THOR_NAME[task.destination_type]
    if task.task_type == "pick_two_obj_and_place":
        return (f"(:goal (exists (?r - receptacle ?o1 - object ?o2 - object) (and (not (= ?o1 ?o2)) (objectType ?o1 {o}Type) "
                f"(objectType ?o2 {o}Type) (receptacleType ?r {r}Type) (inReceptacle ?o1 ?r) (inReceptacle ?o2 ?r))))")
    state = {"clean": "(cleanable ?o) (isClean ?o) ", "heat": "(heatable ?o) (isHot ?o) ",
             "cool": "(coolable ?o) (isCool ?o) "}.get(task.transform, "")
    return (f"(:goal (exists (?r - receptacle ?o - object) (and {state}(objectType ?o {o}Type) "
            f"(receptacleType ?r {r}Type) (inReceptacle ?o ?r))))")


def pddl_problem(task: AlfTask) -> str:
    """The PDDL problem of one scene, with the facts ALFWorld's game generator states."""
    game = Game(task)
    rec, obj, loc, start = _ids(task, game)
    rtypes = sorted({kind(n) for n in rec})
    otypes = sorted({kind(n) for n in obj})
    objects = (["agent1 - agent"] + [f"{i} - receptacle" for i in rec.values()] + [f"{i} - object" for i in obj.values()]
               + [f"{i} - location" for i in dict.fromkeys((start, *loc.values()))]
               + [f"{THOR_NAME[t]}Type - rtype" for t in rtypes] + [f"{THOR_NAME[t]}Type - otype" for t in otypes])
    init = [f"(atLocation agent1 {start})"]
    for name, openable, is_open in task.receptacles:
        init += [f"(receptacleType {rec[name]} {THOR_NAME[kind(name)]}Type)", f"(receptacleAtLocation {rec[name]} {loc[name]})"]
        init += [f"(openable {rec[name]})"] * openable + [f"(opened {rec[name]})"] * is_open
    for rt in rtypes:
        init += [f"(canContain {THOR_NAME[rt]}Type {THOR_NAME[ot]}Type)" for ot in otypes if S.can_contain(rt, ot)]
    for name, where in task.objects:
        t, i = kind(name), obj[name]
        init += [f"(objectType {i} {THOR_NAME[t]}Type)", f"(inReceptacle {i} {rec[where]})",
                 f"(objectAtLocation {i} {loc[where]})"]
        init.append(f"(toggleable {i})" if t in S.LAMPS else f"(pickupable {i})")
        init += [f"({p} {i})" for p, eligible in (("cleanable", S.CLEANABLE), ("heatable", S.HEATABLE),
                                                  ("coolable", S.COOLABLE)) if t in eligible]
        if t == task.target_type and kind(where) == "fridge":
            init.append(f"(isCool {i})")  # objects of the target type that start in the fridge are already cool
    return ("(define (problem harness_gym)\n    (:domain alfred)\n    (:objects\n        " + "\n        ".join(objects)
            + "\n    )\n    (:init\n        " + "\n        ".join(init) + "\n    )\n    " + _goal(task) + "\n)\n")


def traj_data(task: AlfTask) -> dict[str, Any]:
    """What ALFWorld's handcoded expert reads next to a game (``pddl_params``, ``task_type``)."""
    return {"task_type": task.task_type, "pddl_params": {
        "object_target": THOR_NAME[task.target_type], "parent_target": THOR_NAME.get(task.destination_type, ""),
        "toggle_target": THOR_NAME.get(task.toggle_type, ""), "mrecep_target": "", "object_sliced": False}}


def compile_game(task: AlfTask, grammar: str = "classic") -> dict[str, Any]:
    """The ``game.tw-pddl`` document of ``task`` (domain, grammar with the goal, problem)."""
    domain, twl2 = logic(grammar)
    return {"pddl_domain": domain, "grammar": twl2.replace("UNKNOWN GOAL", task.goal),
            "pddl_problem": pddl_problem(task), "solvable": True, "walkthrough": None}


def cache_root() -> Path:
    base = os.environ.get("HARNESS_GYM_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "harness-gym")
    return Path(base) / "alfworld-textworld"


def game_file(task: AlfTask, grammar: str = "classic") -> Path:
    """The cached ``game.tw-pddl`` of ``task`` (written once; the folder is named by content)."""
    data = compile_game(task, grammar)
    text = json.dumps(data, sort_keys=True)
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    folder = cache_root() / f"{task.task_id}-{grammar}-{key}"
    path = folder / "game.tw-pddl"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "traj_data.json").write_text(json.dumps(traj_data(task)))
        tmp = folder / f".game.{os.getpid()}.tmp"
        tmp.write_text(text)
        tmp.replace(path)
    return path


class TextWorldWorld(AlfWorldBase):
    """An embedded scene played by the original engine (TextWorld PDDL + ALFWorld's demangler)."""

    def __init__(self, grammar: str = "classic", facts: bool = False, fast: bool = True) -> None:
        if grammar not in GRAMMARS:
            raise ConfigError(f"grammar={grammar!r}: expected one of {list(GRAMMARS)} for backend='textworld'")
        self.textworld = _require()
        if fast:
            _memoize_text_parsers()
        self.grammar, self.facts = grammar, facts
        self.env: Any = None
        self.state: Any = None
        self.path: Path | None = None

    def reset(self, task: AlfTask) -> str:
        from textworld.envs import PddlEnv
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler

        if not isinstance(task, AlfTask):
            raise ConfigError(f"backend='textworld' plays the embedded scenes; got a {type(task).__name__}")
        self.close()
        self.path = game_file(task, self.grammar)
        infos = self.textworld.EnvInfos(won=True, admissible_commands=True, facts=self.facts)
        env: Any = AlfredDemangler(PddlEnv(infos))
        try:
            env.load(str(self.path))
            self.state = env.reset()
        except Exception as exc:  # the engine could not load the game: an environment failure
            raise WorldError(one_line(f"textworld could not load {task.task_id} ({self.path}): {type(exc).__name__}: {exc}")) from None
        self.env = env
        return str(self.state.feedback)

    def restart(self) -> str:
        """The loaded game from its start again (no reload)."""
        if self.env is None:
            raise WorldError("TextWorldWorld.restart before reset")
        self.state = self.env.reset()
        return str(self.state.feedback)

    @property
    def admissible_commands(self) -> list[str]:
        return sorted(self.state["admissible_commands"]) if self.state is not None else []

    @property
    def won(self) -> bool:
        return bool(self.state is not None and self.state["won"])

    def step(self, call: ToolCall) -> StepResult:
        if self.env is None:
            return StepResult("No task is loaded; the episode has not started.", False, {"admissible_commands": []})
        command = action_of(call) if call.name == TOOL else ""
        try:
            self.state, _, _ = self.env.step(command)
        except Exception as exc:
            raise WorldError(one_line(f"textworld step {command!r} failed on {self.path}: {exc}")) from None
        won = self.won
        return StepResult(str(self.state.feedback), won, {"admissible_commands": self.admissible_commands, "won": won})

    @property
    def score(self) -> float:
        return 1.0 if self.won else 0.0

    def close(self) -> None:
        if self.env is not None:
            try:
                self.env.close()
            finally:
                self.env = None
