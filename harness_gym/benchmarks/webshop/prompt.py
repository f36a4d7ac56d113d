"""The WebShop parts of the editor's observation: scope, example patch, hook API, runtime context."""
from __future__ import annotations

from harness_gym.packets.hook_api import _NORMALIZATION, _SANDBOX
from harness_gym.packets.registry import PromptParts

SCHEMA_VERSION = "harness-r1-patch-v1"

EXAMPLE_PATCH = {
    "schema_version": SCHEMA_VERSION,
    "benchmark": "webshop",
    "description": "Block Buy Now while required options are unselected or the price is over budget.",
    "actions": [
        {
            "type": "add_code_hook",
            "hook": "on_before_action",
            "code": (
                "def hook(ctx, nb):\n"
                "    if ctx.action.value_normalized != \"buy now\":\n"
                "        return None\n"
                "    if ctx.predicates.required_options_unselected and nb.get(\"blocks\", 0) < 2:\n"
                "        nb[\"blocks\"] = nb.get(\"blocks\", 0) + 1\n"
                "        return {\"type\": \"block_and_prompt\", \"message\": \"Select the required options before you buy.\"}\n"
                "    return None\n"
            ),
        },
    ],
}


def hook_api() -> str:
    return f"""## Hook API (WebShop)

A patch installs Python code hooks into the WebShop agent loop. The agent has two tools:
`search_action(keywords)` and `click_action(value)`; each round it makes one call (only
the first tool call and its first argument are used). An episode has at most 20 rounds;
`click_action("buy now")` ends it with the shaped score in [0, 1] (1.0 = success).

### The four hooks: when they run and what they may return
- `on_init` — once per episode, after reset. Returns `{{"skills": [TEXT or {{"text": TEXT}}, ...],
  "tool_hint": TEXT}}` or None. Skills go into the system prompt under "Some tips that may
  help for this task:"; the tool_hint is appended to both tool descriptions. In on_init,
  `state.clickables` is empty and `state.page_type` is "unknown".
- `make_pre_hint` — every round, after the observation, before the model call. Returns
  `{{"message": TEXT}}` or None; the message is sent as a user message.
- `on_before_action` — on the agent's tool call, after any pending forced action is
  applied (`ctx.action.final_action` shows it, e.g. "click[buy now]"). Returns one of
  `{{"type": "block_and_prompt", "message": TEXT}}` (a user message; the action does NOT run;
  the round is used and the unchanged page is shown again),
  `{{"type": "rewrite_action", "action": TEXT, "message": TEXT?}}` or
  `{{"type": "force_action", ...}}` (the action is replaced; a bare value is wrapped as
  search[...] / click[...] per the tool the agent called; a message is sent first), or None.
- `on_post_step` — after each env step. Returns `{{"type": "inject_hint", "message": TEXT}}`
  (a user message placed before the next observation), `{{"type": "force_action", "action":
  TEXT}}` (bare values become click[...]; it replaces the agent's next action), or None.

{_NORMALIZATION}
- Forced and rewritten actions are lower-cased and whitespace-collapsed.

### ctx fields (WebShop)
- `ctx.action` — `tool` ("search_action" | "click_action" | ""), `value` (raw first argument),
  `value_normalized` (lower-cased, stripped), `final_action` (the action string that will
  run, after any forced action).
- `ctx.state` — `page_type` ("home" | "search_results" | "product_detail" | "unknown"; sub-pages
  and the done page are "unknown"), `has_search_bar`, `clickables` (lower-cased),
  `buy_now_available`, `back_to_search_count`, `duplicate_search_count` (max repeats of one
  query), `product_stall_turns` (steps on the same product without a new option selected),
  `same_click_count` (consecutive identical clicks), `remaining_steps`, `current_price` (the
  product page's price, lower bound of a range; None off product pages), `price_max` (the
  instruction's price bound or None).
- `ctx.task` — `task_type` (apparel | beauty | food | tech | home | general, from the
  instruction), `required_color`, `required_size`, `required_material` (parsed from the
  instruction; None when absent).
- `ctx.predicates` — `required_options_unselected` (only on a pending "buy now" click: a
  required colour/size is offered but not selected, or option groups exist and nothing is
  selected), `product_price_over_budget` (current_price > price_max x 1.05),
  `same_click_repeated` (>= 2), `duplicate_search_repeated` (>= 2), `search_loop_detected`
  (back_to_search_count >= 2 or a repeated query), `product_page_stalled` (stall >= 2),
  `buy_now_available`, `search_not_available`, `action_not_admissible` (always false).
- `ctx.webshop` — `search_queries`, `asins_visited`, `current_asin`, `selected_attributes`
  (group -> value, groups keyed "color" | "size" | "other"), `attribute_options` (group ->
  values on the current product page).
- Top level: `observation` (the current page text), `step`, `max_step`, `remaining_steps`
  (post-step: one less).

{_SANDBOX}

### Leakage rules
- No product ids (ASINs), product names or titles, task indices or answers in the code or
  the description; rules must be reusable across all WebShop tasks."""


PROMPT = PromptParts(
    benchmark="webshop",
    display="WebShop",
    scope=(
        "You are a harness engineer. You will edit only the reusable WebShop harness, not task answers. Below are "
        "failed rollouts of a frozen shopping agent on one batch of WebShop tasks; analyze the recurring failures "
        "and write one reusable patch. The same tasks are then rerun with your patch; the reward is the change in "
        "the batch's mean score, so a patch that breaks tasks that already pass costs as much as it gains."
    ),
    roles='''Use 1 to 4 actions, each hook at most once. Preferred
  roles: on_init for a short skill or flags; on_post_step to update nb["stage"]; make_pre_hint
  for de-duplicated hints (remember the last one in nb["last_hint"]); on_before_action only
  for narrow guards (for example on "buy now").''',
    example_patch=EXAMPLE_PATCH,
    hook_api=hook_api,
    runtime_context='''- WebShop is a text web shop: search page -> results (10 per page, up to 50) -> product
  page (option groups such as color and size, Description/Features/Reviews sub-pages) ->
  Buy Now, which ends the episode. Each tool result reads "Action: ...", "Observation:"
  (page texts joined by [SEP]) and "Available Actions:" ({'has_search_bar', 'clickables'}).
- search[...] works on any page; a click on a value that is not a current clickable does
  nothing and returns the same page.
- The score at Buy Now = (matched attributes + matched options + [price <= bound]) /
  (attributes + options + 1), times a product-type factor; success = 1.0. Unselected
  options and buying over the price bound cost score; running out of rounds scores 0.
- Hooks read ctx["action"], ctx["state"], ctx["task"], ctx["predicates"], ctx["webshop"].
  There is no ctx["world"] and no ctx["admissible"] on WebShop.
- Blocks use a round each: limit repeated blocks with counters in nb.''',
)
