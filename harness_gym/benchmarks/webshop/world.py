"""WebShopWorld: the original WebShop text mode (``WebAgentTextEnv(observation_mode='text')``).

Pages: search (index) → ``search[kw]`` → results (50 hits, 10 a page) → ``click[<asin>]`` →
item (option groups, Description/Features/Reviews sub-pages) → ``click[buy now]`` → done,
with the reward. Observations are the visible texts joined with ``' [SEP] '``; clickables
are lower-cased button texts, product ids and option values. As in the original,
``search[...]`` is accepted on any page, ``click[x]`` only when ``x`` is a current
clickable other than ``search``, and anything else is a silent no-op (same observation).
Nothing here shows the goal's target product, attributes or options.
"""
from __future__ import annotations

import json
import re
from typing import Any

from harness_gym.benchmarks.base import World
from harness_gym.benchmarks.webshop.catalog import Catalogue, get_catalog
from harness_gym.benchmarks.webshop.products import Product
from harness_gym.benchmarks.webshop.reward import get_reward, noun_extractor
from harness_gym.benchmarks.webshop.tasks import WebShopTask
from harness_gym.types import StepResult, ToolCall

SEP = " [SEP] "
PRODUCT_WINDOW = 10
BACK_TO_SEARCH, NEXT_PAGE, PREV_PAGE, END_BUTTON = "Back to Search", "Next >", "< Prev", "Buy Now"
SUB_PAGES = ("Description", "Features", "Reviews")
_ACTION = re.compile(r"(.+)\[(.+)\]")


def parse_action(action: str) -> tuple[str, str | None]:
    """The original ``parse_action``: ``name[arg]`` (greedy), else (action, None)."""
    m = _ACTION.match(action)
    return (action, None) if m is None else (m.group(1), m.group(2))


def action_of(call: ToolCall) -> str:
    """The action string a tool call stands for (first argument value only, as Harness-R1)."""
    args = call.arguments if isinstance(call.arguments, dict) else {}
    value = next(iter(args.values()), "") if args else ""
    value = value if isinstance(value, str) else json.dumps(value)
    if call.name == "search_action":
        return f"search[{value}]"
    if call.name == "click_action":
        return f"click[{value}]"
    return value  # "action": a raw action string (rewrites and forced actions)


class WebShopWorld(World):
    """One session of the WebShop state machine on a shared catalogue."""

    def __init__(self, catalogue: Catalogue | None = None, search: str = "lucene") -> None:
        if search not in ("lucene", "pyserini"):
            raise ValueError(f"unknown WebShop search {search!r}: expected 'lucene' or 'pyserini'")
        self.search_kind = search
        self._fixed = catalogue
        self.cat: Catalogue | None = catalogue
        self.task: WebShopTask | None = None
        self.goal: dict[str, Any] = {}
        self._reset_state()

    def _reset_state(self) -> None:
        self.page = "search"
        self.keywords: list[str] | None = None
        self.page_num = 1
        self.results: list[Product] = []
        self.asin: str | None = None
        self.options: dict[str, str] = {}
        self.sub: str | None = None
        self.done = False
        self._score = 0.0
        self.reward_info: dict[str, Any] = {}

    # --- contract ------------------------------------------------------------------------
    def reset(self, task: WebShopTask) -> str:
        self.cat = self._fixed if self._fixed is not None and self._fixed.key == task.catalog else get_catalog(task.catalog)
        self.task, self.goal = task, task.goal
        self._reset_state()
        return self.observation()

    def step(self, call: ToolCall) -> StepResult:
        return self.act(action_of(call))

    def act(self, action: str) -> StepResult:
        """Apply one action string exactly as ``WebAgentTextEnv.step`` does."""
        if self.task is None:
            return StepResult("No task is loaded; call reset first.", False, {"valid": False})
        if self.done:
            return StepResult(self.observation(), True, self._info(False, 0.0))
        clickables = self.clickables()
        name, arg = parse_action(action)
        arg = arg.lower() if arg is not None else None
        reward, valid = 0.0, False
        if name == "search" and arg:
            self._search(arg.split(" "), 1)
            valid = True
        elif name == "click" and arg is not None and arg in clickables and arg != "search":
            reward = self._click(arg)
            valid = True
        return StepResult(self.observation(), self.done, self._info(valid, reward))

    @property
    def score(self) -> float:
        return self._score

    # --- transitions ---------------------------------------------------------------------
    def _search(self, keywords: list[str], page: int) -> None:
        assert self.cat is not None
        self.keywords, self.page_num, self.asin, self.options, self.sub = keywords, page, None, {}, None
        self.results = self.cat.search(" ".join(keywords), self.search_kind)
        self.page = "results"

    def _click(self, value: str) -> float:
        assert self.cat is not None
        if value == END_BUTTON.lower():
            product = self.cat.products[str(self.asin)]
            price = self.cat.prices[product.asin]
            self._score, self.reward_info = get_reward(product, self.goal, price, self.options)
            self.page, self.done = "done", True
            return self._score
        if value == BACK_TO_SEARCH.lower():
            self.page, self.keywords, self.asin, self.options, self.sub, self.results = "search", None, None, {}, None, []
        elif value == NEXT_PAGE.lower() and self.page == "results":
            self._search(self.keywords or [], self.page_num + 1)
        elif value == PREV_PAGE.lower() and self.page == "results":
            self._search(self.keywords or [], self.page_num - 1)
        elif value == PREV_PAGE.lower() and self.page == "item_sub":
            self.page, self.sub = "item", None
        elif value == PREV_PAGE.lower() and self.page == "item":
            self._search(self.keywords or [], self.page_num)
        elif value in (s.lower() for s in SUB_PAGES):
            self.page, self.sub = "item_sub", value
        elif self.page == "results":
            self.asin, self.page = value.upper(), "item"
        elif self.page == "item":
            group = self._option_group(value)
            if group is not None:
                self.options[group] = value
        return 0.0

    def _option_group(self, value: str) -> str | None:
        group = None
        for name, values in self._product().options:
            if value in values:
                group = name  # the last radio with that value wins, as in the original
        return group

    def _product(self) -> Product:
        assert self.cat is not None and self.asin is not None
        return self.cat.products[self.asin]

    # --- rendering -----------------------------------------------------------------------
    def _page_products(self) -> list[Product]:
        start = (self.page_num - 1) * PRODUCT_WINDOW
        return self.results[start : start + PRODUCT_WINDOW] if start >= 0 else []

    def observation(self) -> str:
        instr = self.task.instruction if self.task else ""
        head = ["Instruction:", instr]
        if self.page == "search":
            return SEP.join(["WebShop", *head, "Search"])
        if self.page == "results":
            parts = [*head, BACK_TO_SEARCH, f"Page {self.page_num} (Total results: {len(self.results)})"]
            if self.page_num > 1:
                parts.append(PREV_PAGE)
            parts.append(NEXT_PAGE)
            for p in self._page_products():
                parts += [p.asin, p.name, p.price_tag]
            return _join(parts)
        if self.page == "item":
            p = self._product()
            parts = [*head, BACK_TO_SEARCH, PREV_PAGE]
            for name, values in p.options:
                parts += [name, *values]
            parts += [p.name, f"Price: {p.price_tag}", f"Rating: {p.rating}", *SUB_PAGES, END_BUTTON]
            return _join(parts)
        if self.page == "item_sub":
            p = self._product()
            parts = [*head, BACK_TO_SEARCH, PREV_PAGE]
            if self.sub == "description":
                parts.append(p.description)
            elif self.sub == "features":
                parts += list(p.bullets)
            else:
                for title, score, body in p.reviews:
                    parts += [title, score, body]
            return _join(parts)
        return _join(["Thank you for shopping with us!", "Your code:", "None", "(Paste it in your MTurk interface.)",
                      "Purchased", "asin", str(self.asin), "options", json.dumps(self.options),
                      "Your score (min 0.0, max 1.0)", str(self._score)])

    def clickables(self) -> list[str]:
        if self.page == "search":
            return ["search"]
        if self.page == "results":
            out = [BACK_TO_SEARCH.lower()]
            if self.page_num > 1:
                out.append(PREV_PAGE.lower())
            out.append(NEXT_PAGE.lower())
            return out + [p.asin.lower() for p in self._page_products()]
        if self.page == "item":
            out = [BACK_TO_SEARCH.lower(), PREV_PAGE.lower(), *(s.lower() for s in SUB_PAGES), END_BUTTON.lower()]
            for _, values in self._product().options:
                out += [v for v in values if v not in out]
            return out
        if self.page == "item_sub":
            return [BACK_TO_SEARCH.lower(), PREV_PAGE.lower()]
        return []

    def available_actions(self) -> dict[str, Any]:
        return {"has_search_bar": self.page == "search", "clickables": self.clickables()}

    def _info(self, valid: bool, reward: float) -> dict[str, Any]:
        info: dict[str, Any] = {"valid": valid, "reward": reward, "page": self.page,
                                "available_actions": self.available_actions()}
        if self.page in ("item", "item_sub") and self.asin:
            p = self._product()
            info.update(asin=p.asin, price_tag=p.price_tag, option_groups=[[n, list(v)] for n, v in p.options],
                        selected=dict(self.options))
        if self.done:
            info.update(score=self._score, noun_extractor=noun_extractor()[0])
        return info


def _join(parts: list[str]) -> str:
    return SEP.join(p.strip() for p in parts if p and p.strip())
