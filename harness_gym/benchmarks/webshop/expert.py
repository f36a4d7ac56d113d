"""A clean WebShop expert: it knows the goal's product and options, and shops without flaws.

``respond`` has the sim policy's contract (a ``ChatRequest`` whose ``knowledge`` is the
task; an assistant message with one ``search_action``/``click_action`` call back). It
reads only the conversation — the runtime's ``Observation:``/``Available Actions:``
messages — and the goal (target ASIN, goal option values):

- on the search page it searches with the instruction (the part before the price bound);
- on a results page it clicks the target ASIN when it is listed, else pages on with
  ``next >`` (up to ``MAX_PAGES`` pages), else searches again with the product's title
  (read from the goal, never from the catalogue internals);
- on the target's page it clicks each clickable value that matches a goal option
  (token-set ratio above 85, the reward's own test) and is not yet selected, then
  ``buy now``; on any other product or a sub-page it goes back.

It answers through the same runtime, tool schema and messages a model sees, so its
episodes are expert trajectories for supervised fine-tuning (``run_expert_episode``).
"""
from __future__ import annotations

import ast
import asyncio
import re
from dataclasses import dataclass, field

from rapidfuzz import fuzz

from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.webshop.reward import goal_option_values
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.types import Message, ToolCall, assistant_message

MAX_PAGES = 5
_OBS = re.compile(r"^(?:Action: (?P<action>.*?)\n\n)?(?:The initial observation|Observation):\n(?P<obs>.*?)\n\n"
                  r"Available Actions:\n(?P<aa>.*)$", re.DOTALL)


NAV = ("back to search", "< prev", "next >", "description", "features", "reviews", "buy now")


@dataclass
class View:
    """What the conversation shows: the current clickables, the product opened last and the
    options clicked on its page, and how many searches and page turns were made."""

    clickables: list[str] = field(default_factory=list)
    has_search_bar: bool = False
    product: str | None = None
    selected: list[str] = field(default_factory=list)
    pages: int = 0
    searches: int = 0

    @classmethod
    def read(cls, messages: list[Message]) -> View:
        view = cls()
        for msg in messages[1:]:
            role, text = msg.get("role"), str(msg.get("content") or "")
            if role == "assistant":
                calls = msg.get("tool_calls") or []
                if calls and ToolCall.from_message_call(calls[0]).name == "search_action":
                    view.searches += 1
                continue
            m = _OBS.match(text) if role in ("user", "tool") else None
            if m is None:
                continue
            before = view.clickables
            try:
                aa = ast.literal_eval(m.group("aa").strip())
            except (ValueError, SyntaxError):
                aa = {}
            aa = aa if isinstance(aa, dict) else {}
            executed = (m.group("action") or "").strip()
            if executed.startswith("search["):
                view.product, view.selected, view.pages = None, [], 0
            elif executed.startswith("click[") and executed.endswith("]"):
                value = executed[6:-1].strip().lower()
                if value == "next >":
                    view.pages += 1
                elif value == "< prev" and "next >" in before:
                    view.pages = max(0, view.pages - 1)
                elif value == "back to search":
                    view.product, view.selected, view.pages = None, [], 0
                elif value not in NAV and value in before:
                    if "next >" in before:  # clicked on a results page: a product
                        view.product, view.selected = value, []
                    elif "buy now" in before:  # clicked on a product page: an option
                        view.selected.append(value)
            view.clickables = [str(c) for c in aa.get("clickables", [])]
            view.has_search_bar = bool(aa.get("has_search_bar"))
        return view


def search_keywords(task: WebShopTask) -> str:
    """The instruction without its price clause (what a shopper types)."""
    text = task.instruction.split(", and price lower")[0].strip()
    return text or task.instruction


def wanted_options(goal_values: list[str], clickables: list[str]) -> list[str]:
    """For each goal option value, the best-matching clickable (ratio > 85), in goal order."""
    out: list[str] = []
    for g in goal_values:
        g = g.lower()
        best = max(clickables, key=lambda v: fuzz.token_set_ratio(v, g), default=None)
        if best is not None and fuzz.token_set_ratio(best, g) > 85 and best not in out:
            out.append(best)
    return out


def respond(request: ChatRequest) -> Message:
    """The expert's next message for the conversation in ``request`` (module doc)."""
    task: WebShopTask = request.knowledge
    goal = task.goal
    rnd = int(request.meta.get("round", 0))
    view = View.read(request.messages)
    asin = str(goal["asin"]).lower()
    c = view.clickables
    if view.has_search_bar or not c:
        return _call(rnd, "search_action", search_keywords(task), "Let me search for the product.")
    if "buy now" in c:  # a product page
        if view.product is not None and view.product != asin:
            return _call(rnd, "click_action", "< prev", "This is not the product I want; back to the results.")
        options = [v for v in c if v not in NAV]
        for v in wanted_options(goal_option_values(goal), options):
            if v not in view.selected:
                return _call(rnd, "click_action", v, f"Selecting the option '{v}'.")
        return _call(rnd, "click_action", "buy now", "The product and its options match; buying it.")
    if "next >" in c:  # a results page
        if asin in c:
            return _call(rnd, "click_action", asin, "This product matches the instruction.")
        if view.pages + 1 < MAX_PAGES:
            return _call(rnd, "click_action", "next >", "The product is not on this page; let me look at the next one.")
        if view.searches < 2 and goal.get("name"):
            return _call(rnd, "search_action", str(goal["name"]).lower(), "Let me search with more precise words.")
        return _call(rnd, "click_action", "back to search", "Let me start the search again.")
    if "< prev" in c:  # a sub-page
        return _call(rnd, "click_action", "< prev", "Back to the product page.")
    return _call(rnd, "click_action", "back to search", "Let me start over.")


def _call(rnd: int, tool: str, value: str, thought: str) -> Message:
    key = "keywords" if tool == "search_action" else "value"
    return assistant_message(thought, [ToolCall(f"call_{rnd}_0", tool, {key: value})])


def run_expert_episode(task: WebShopTask, world: World, harness: Harness | None = None, *, seed: int = 0) -> EpisodeResult:
    """One episode with the expert as the model, through the WebShop runtime (default harness unless given)."""
    from harness_gym.benchmarks.webshop.episode import run_episode
    from harness_gym.evaluation.benchmarks import get_benchmark

    async def submit(request: ChatRequest) -> Message:
        return respond(request)

    harness = harness or get_benchmark("webshop").default_harness()
    return asyncio.run(run_episode(task, world, harness, None, submit, seed=seed))
