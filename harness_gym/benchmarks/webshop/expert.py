"""A WebShop expert that shops from what the pages show: search, pick, choose options, buy.

``respond`` has the sim policy's contract (a ``ChatRequest`` whose ``knowledge`` is the
task; an assistant message with one ``search_action``/``click_action`` call back). It
reads only the instruction and the conversation — the runtime's ``Observation:``/
``Available Actions:`` messages — never the goal's product, options or attributes, so
every step is derivable from the transcript and a model can learn it:

- on the search page it searches with the instruction (the part before the price bound);
- on a results page it opens the listed product whose title shares the most words with
  the instruction among those within the price bound (``pick_product``; ties: the first
  listed), else pages on with ``next >`` (up to ``MAX_PAGES`` pages);
- on a product page it clicks, in each option group, the value the instruction names
  (``wanted_options``: every word of the value in the instruction, the longest such
  value), then ``buy now``; from a sub-page it goes back.

Its thoughts quote only what the page showed. The gold is used by nobody here: the
episode's reward (the world's own check) decides which transcripts are kept
(``smol/data.py``); a wrong pick is a failed episode.
"""
from __future__ import annotations

import ast
import asyncio
import re
from dataclasses import dataclass, field

from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.harness.files import Harness
from harness_gym.models.base import ChatRequest
from harness_gym.runtime.trajectory import EpisodeResult
from harness_gym.types import Message, ToolCall, assistant_message

MAX_PAGES = 3
_OBS = re.compile(r"^(?:Action: (?P<action>.*?)\n\n)?(?:The initial observation|Observation):\n(?P<obs>.*?)\n\n"
                  r"Available Actions:\n(?P<aa>.*)$", re.DOTALL)
_ASIN = re.compile(r"^B[0-9A-Z]{9}$")
_PRICE = re.compile(r"\$([0-9][0-9,]*(?:\.[0-9]+)?)")
_BOUND = re.compile(r"price lower than ([0-9][0-9,]*(?:\.[0-9]+)?) dollars")
_WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
_STOP = frozenset("a an and the i i'm im want to buy need looking for which is that in of with color colour size "
                  "price lower than dollars m".split())

NAV = ("back to search", "< prev", "next >", "description", "features", "reviews", "buy now")


@dataclass
class View:
    """What the conversation shows: the current page's text and clickables, the options clicked
    on the product page, the products opened and the pages turned since the last search."""

    clickables: list[str] = field(default_factory=list)
    text: str = ""
    has_search_bar: bool = False
    selected: list[str] = field(default_factory=list)
    pages: int = 0
    opened: list[str] = field(default_factory=list)  # products opened since the last search

    @classmethod
    def read(cls, messages: list[Message]) -> View:
        view = cls()
        for msg in messages[1:]:
            role, text = msg.get("role"), str(msg.get("content") or "")
            if role == "assistant":
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
                view.selected, view.pages, view.opened = [], 0, []
            elif executed.startswith("click[") and executed.endswith("]"):
                value = executed[6:-1].strip().lower()
                if value == "next >":
                    view.pages += 1
                elif value == "< prev" and "next >" in before:
                    view.pages = max(0, view.pages - 1)
                elif value == "back to search":
                    view.selected, view.pages, view.opened = [], 0, []
                elif value not in NAV and value in before:
                    if "next >" in before:  # clicked on a results page: a product
                        view.selected = []
                        view.opened.append(value)
                    elif "buy now" in before:  # clicked on a product page: an option
                        view.selected.append(value)
            view.clickables = [str(c) for c in aa.get("clickables", [])]
            view.has_search_bar = bool(aa.get("has_search_bar"))
            view.text = m.group("obs")
        return view


def search_keywords(task: WebShopTask) -> str:
    """The instruction without its price clause (what a shopper types)."""
    return search_keywords_of(task.instruction)


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def price_bound(instruction: str) -> float | None:
    m = _BOUND.search(instruction.lower())
    return float(m.group(1).replace(",", "")) if m else None


def listed_products(page: str) -> list[tuple[str, str, float | None]]:
    """(asin, title, lowest price) of each product a results page lists, in order."""
    parts = [p.strip() for p in page.split("[SEP]")]
    out = []
    for i, part in enumerate(parts):
        if _ASIN.match(part) and i + 1 < len(parts):
            price = _PRICE.search(parts[i + 2]) if i + 2 < len(parts) else None
            out.append((part.lower(), parts[i + 1], float(price.group(1).replace(",", "")) if price else None))
    return out


def pick_product(instruction: str, products: list[tuple[str, str, float | None]],
                 skip: list[str] = ()) -> tuple[str, str, float | None] | None:
    """The product whose title shares the most instruction words, within the price bound (first listed on ties)."""
    want, bound = _words(search_keywords_of(instruction)), price_bound(instruction)
    best, best_score = None, 0
    for p in products:
        asin, title, price = p
        if asin in skip or (bound is not None and price is not None and price > bound):
            continue
        score = len(want & _words(title))
        if score > best_score:
            best, best_score = p, score
    return best


def search_keywords_of(instruction: str) -> str:
    """``instruction`` without its price clause."""
    return instruction.split(", and price lower")[0].strip() or instruction


def option_groups(page: str, clickables: list[str]) -> list[list[str]]:
    """The option values of a product page, grouped under their names (the text between ``< Prev`` and the title)."""
    parts = [p.strip() for p in page.split("[SEP]")]
    values = {c for c in clickables if c not in NAV}
    groups: list[list[str]] = []
    started = False
    for part in parts:
        low = part.lower()
        if low == "< prev":
            started = True
            continue
        if not started:
            continue
        if low in values:
            if groups:
                groups[-1].append(low)
        elif groups and not groups[-1]:
            break  # a second name in a row: the options are over (the title)
        elif groups or len(part.split()) <= 3:
            if groups and groups[-1] and len(part.split()) > 3:
                break
            groups.append([])
    return [g for g in groups if g]


def wanted_options(instruction: str, groups: list[list[str]]) -> list[str]:
    """For each option group, the value every one of whose words the instruction has (the longest such value)."""
    have = set(_WORD.findall(instruction.lower()))
    out = []
    for values in groups:
        fits = [v for v in values if _WORD.findall(v) and all(w in have for w in _WORD.findall(v))]
        if fits:
            out.append(max(fits, key=lambda v: (len(_WORD.findall(v)), -values.index(v))))
    return out


def respond(request: ChatRequest) -> Message:
    """The expert's next message for the conversation in ``request`` (module doc)."""
    task: WebShopTask = request.knowledge
    instruction = task.instruction
    rnd = int(request.meta.get("round", 0))
    view = View.read(request.messages)
    c = view.clickables
    if view.has_search_bar or not c:
        return _call(rnd, "search_action", search_keywords(task), "Let me search for the product.")
    if "buy now" in c:  # a product page
        for v in wanted_options(instruction, option_groups(view.text, c)):
            if v not in view.selected:
                return _call(rnd, "click_action", v, f"The instruction asks for '{v}'; selecting it.")
        return _call(rnd, "click_action", "buy now", "The options match the instruction; buying it.")
    if "next >" in c:  # a results page
        pick = pick_product(instruction, listed_products(view.text), view.opened)
        if pick is not None:
            asin, title, price = pick
            cost = f" at ${price:.2f}" if price is not None else ""
            return _call(rnd, "click_action", asin, f"'{title}'{cost} matches the instruction best; opening it.")
        if view.pages + 1 < MAX_PAGES:
            return _call(rnd, "click_action", "next >", "Nothing on this page fits; let me look at the next one.")
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
