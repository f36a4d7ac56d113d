"""The ALFWorld parts of the editor's observation: scope, example patch, hook API, runtime context."""
from __future__ import annotations

from harness_gym.packets.hook_api import _NORMALIZATION, _SANDBOX
from harness_gym.packets.registry import PromptParts

SCHEMA_VERSION = "harness-r1-patch-v1"

EXAMPLE_PATCH = {
    "schema_version": SCHEMA_VERSION,
    "benchmark": "alfworld",
    "description": "Track held and transformed objects; hint the appliance before placing.",
    "actions": [
        {
            "type": "add_code_hook",
            "hook": "on_post_step",
            "code": (
                "def hook(ctx, nb):\n"
                "    obs = ctx[\"observation\"].lower()\n"
                "    if obs.startswith(\"you heat\") or obs.startswith(\"you cool\") or obs.startswith(\"you clean\"):\n"
                "        nb[\"transformed\"] = True\n"
                "    if ctx[\"world\"][\"inventory\"] is None:\n"
                "        nb[\"transformed\"] = False\n"
                "    return None\n"
            ),
        },
        {
            "type": "add_code_hook",
            "hook": "make_pre_hint",
            "code": (
                "def hook(ctx, nb):\n"
                "    kind = ctx[\"task\"][\"task_type\"]\n"
                "    if kind != \"pick_heat_then_place\" or not ctx[\"world\"][\"inventory\"] or nb.get(\"transformed\"):\n"
                "        return None\n"
                "    if nb.get(\"last_hint\") == \"heat\":\n"
                "        return None\n"
                "    nb[\"last_hint\"] = \"heat\"\n"
                "    return {\"message\": \"Heat the object with the microwave before you put it in place.\"}\n"
            ),
        },
    ],
}


def hook_api() -> str:
    return f"""## Hook API (ALFWorld)

A patch installs Python code hooks into the ALFWorld agent loop. The agent has one tool,
`take_action(action)`, whose argument must be one of the AVAILABLE ACTIONS listed after
every observation (e.g. "go to X", "open X", "take O from X", "put O in/on X" — or
"move O to X" under the 2024 grammar — "clean/heat/cool O with X", "use LAMP",
"examine X", "inventory", "look"). Anything else returns "Nothing happens.". An episode
has at most 50 steps; a text-only reply and a blocked action each use a step; three
identical outputs in a row end the episode as a failure.

### The four hooks: when they run and what they may return
- `on_init` — once per episode, after reset, before the first model call. Returns
  `{{"skills": [TEXT or {{"text": TEXT}}, ...], "tool_hint": TEXT}}` or None. Skills go into
  the system prompt under "Some tips that may help for this task:"; the tool_hint is
  appended to the take_action tool description. Only the first 5 skills are kept.
- `make_pre_hint` — every step, before the model call. Returns `{{"message": TEXT}}` or
  None; the message is sent as a user message.
- `on_before_action` — after the model's raw action is mapped to a command and any
  pending force is applied, before the environment step. Returns one of
  `{{"type": "block_and_prompt", "message": TEXT}}` (no environment step, the step is used,
  the message is sent as a user message), `{{"type": "rewrite_action", "action": CMD}}` or
  `{{"type": "force_action", "action": CMD}}` (the command is replaced), or None.
- `on_post_step` — after the environment step and its observation. Returns
  `{{"type": "inject_hint", "message": TEXT}}` (a user message) or
  `{{"type": "force_action", "action": CMD, "message": TEXT}}` (CMD replaces the agent's
  next action), or None.
- Forced and rewritten actions are lowercased; an action that names a numbered instance
  must be in ctx["admissible"] or it is dropped (a post-step force with a message then
  becomes an inject_hint). Build such actions from ctx["admissible"], never from literals.

{_NORMALIZATION}

### ctx fields (ALFWorld)
- `ctx.action` — `raw` (the model's argument), `normalized` (after process_action),
  `final_action` (after a pending force; in on_post_step the executed command),
  `in_admissible` (whether it is one of the admissible commands).
- `ctx.state` — `nothing_happens_count` (total "Nothing happens." observations),
  `repeated_observation_count`, `repeated_action_count` (length of the current run of
  identical observations / executed actions; 1 = not repeated), `invalid_action_count`,
  `remaining_steps`.
- `ctx.task` — from the goal text: `task_type` (pick_and_place, pick_clean_then_place,
  pick_heat_then_place, pick_cool_then_place, pick_two_obj, look_at_obj), `target_type`
  (e.g. "apple"), `destination_type` (e.g. "countertop"; "" for look_at_obj),
  `toggle_type` ("desklamp" or "floorlamp" for look_at_obj, else "").
- `ctx.predicates` — `action_not_admissible` (on_before_action: the final action is not
  admissible), `nothing_happens_repeated`, `same_observation_repeated`,
  `same_action_repeated` (each a run of >= 2), `remaining_steps_low` (<= 5 steps left).
- `ctx.world` — the agent's observed world: `current_location` ("" before the first move),
  `inventory` (the held object, e.g. "apple 2", or None), `object_at` (object -> receptacle
  where last seen), `visited`, `unvisited` (receptacles), `target_found`,
  `target_location` (where an unplaced object of the target type was seen),
  `placed_count`, `placed_items`, `placed_locations` (target objects put into a receptacle
  of the destination type and still there), `lamp_location` (where a lamp was seen).
- Top level: `observation` (the latest observation, without the actions list),
  `admissible` (the current admissible commands), `output` (the model's last raw action),
  `step`, `max_step`, `remaining_steps`, `history` (`last_actions`, `last_observations`:
  the last 5 executed commands and observations).

{_SANDBOX}

### Leakage rules
- Hooks and the description must be reusable across all ALFWorld games: no task ids or
  indices, no numbered instances in string literals ("go to cabinet 4", "take apple 1"
  are rejected); match types and verbs instead ("countertop", startswith("put ")).
- Take concrete commands from ctx["admissible"] when a hook needs one."""


PROMPT = PromptParts(
    benchmark="alfworld",
    display="ALFWorld",
    scope=(
        "You are a harness engineer. You will edit only the reusable ALFWorld harness, not task answers. Below are "
        "failed rollouts of a frozen household agent on one batch of ALFWorld games; analyze the recurring failures "
        "and write one reusable patch. The same games are then rerun with your patch; the reward is the change in the "
        "batch success rate, so a patch that breaks games that already pass costs as much as it gains."
    ),
    roles='''Use 2 to 4 actions, each hook at most once. Preferred roles:
  on_init for a short skill about task order (find, take, transform, place); on_post_step
  to update nb["stage"] from ctx.world and the observation; make_pre_hint for
  de-duplicated stage hints (remember the last one in nb["last_hint"]); on_before_action
  only for narrow guards (a put of an untransformed or wrong object, a re-take of a placed
  object).''',
    example_patch=EXAMPLE_PATCH,
    hook_api=hook_api,
    runtime_context='''- ALFWorld is a text household: receptacles (cabinet, countertop, fridge, ...) hold
  objects; names are type + index ("cabinet 4"). The agent holds one object at a time;
  closed receptacles must be opened before taking or putting.
- Clean/heat/cool happen only while holding the object at a sinkbasin / microwave /
  fridge ("heat O with microwave N"); look-at tasks need the object held while a desk lamp
  or floor lamp at the same place is turned on ("use desklamp N", "use floorlamp N").
- Success is judged on the final state: the right object type, transformed if asked, in a
  receptacle of the destination type (two distinct objects for pick_two tasks).
- ctx["world"] is derived only from what the agent has observed; ctx["admissible"] is
  the exact list of valid commands now.
- Blocking broadly is risky: a blocked correct action wastes a step, and three identical
  outputs in a row end the episode.''',
)
