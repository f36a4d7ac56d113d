"""The WebShop ``ctx`` of Harness-R1 (spec §3), derived only from what the agent has seen.

``WSState`` follows an episode step by step (page type, clickables, searches, clicks,
the product page's option groups and selections); ``ctx()`` renders the dict hooks
receive. Field and predicate names follow Harness-R1 so its published patches run
unchanged. Requirements (``task.required_color/size/material``, ``state.price_max``) are
parsed from the instruction text, as Harness-R1's task parser does — never from the goal.

Decisions where Harness-R1 leaves a gap:
- ``same_click_count`` counts consecutive identical executed clicks (Harness-R1 fills it
  only from its built-in H2 gate, which is off in this setting);
- ``product_stall_turns`` counts consecutive steps ending on the same product's pages
  without a new option selected (1 on arrival);
- sub-pages (Description/Features/Reviews) and the done page have page type ``unknown``.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import Any

PRICE_TOLERANCE = 0.05
_PRICE_MAX = re.compile(r"price lower than\s*\$?\s*([\d,]+(?:\.\d+)?)\s*dollars", re.IGNORECASE)
_PRICE = re.compile(r"Price:\s*\$([\d,]+(?:\.\d+)?)")
_COLOR_PHRASE = re.compile(r"\b(?:in|with)\s+([a-z][a-z \-]{1,30}?)\s+colou?r\b", re.IGNORECASE)
_SIZE_PHRASE = re.compile(r"\bsize\s*:?\s*([a-z0-9][\w.\-]*(?:\s(?:fl\s)?(?:oz|ounce|inch|ft|pound)\b)?)", re.IGNORECASE)
_MEASURE = re.compile(r"\b(\d[\d.,]*\s*-?\s*(?:fl\.?\s*oz|oz|ounce|pound|lb|inch|in|ft|feet|cm|mm|gb|tb|ml|pack|count))\b", re.IGNORECASE)
CORE_COLORS = (
    "black", "white", "red", "blue", "green", "yellow", "orange", "purple", "pink", "brown", "grey", "gray", "silver",
    "gold", "navy", "beige", "tan", "maroon", "ivory", "cream", "charcoal", "teal", "turquoise", "coral", "lavender",
    "magenta", "cyan", "lime", "indigo", "violet", "rose", "khaki", "olive", "burgundy", "aqua", "fuchsia", "bronze",
    "copper", "rust", "sage", "mint", "peach", "plum", "taupe", "wine", "blush", "nude", "multicolor",
)
SIZE_WORDS = ("xx-large", "x-large", "xxx-large", "x-small", "small", "medium", "large", "twin", "full", "queen", "king", "one size")
MATERIALS = ("cotton", "leather", "wool", "silk", "polyester", "linen", "denim", "nylon", "bamboo", "cashmere",
             "stainless steel", "aluminum", "wood", "glass", "ceramic", "velvet", "fleece", "spandex")
NAV = ("back to search", "next >", "< prev", "description", "features", "reviews", "buy now", "search")


@dataclass(frozen=True)
class Requirements:
    task_type: str
    color: str | None
    size: str | None
    material: str | None
    price_max: float | None


def _phrase_or_word(body: str, phrase: re.Pattern[str], words: Sequence[str], word_re: Callable[[str], str]) -> str | None:
    """The value a phrase names ("in navy blue color"), else the first listed word the text contains."""
    m = phrase.search(body)
    if m:
        return m.group(1).strip()
    return next((w for w in words if re.search(word_re(w), body)), None)


def parse_requirements(instruction: str, task_type: str) -> Requirements:
    text = instruction.lower()
    m = _PRICE_MAX.search(text)
    price_max = float(m.group(1).replace(",", "")) if m else None
    body = _PRICE_MAX.split(text)[0]
    color = _phrase_or_word(body, _COLOR_PHRASE, CORE_COLORS, lambda c: rf"\b{c}\b")
    size = _phrase_or_word(body, _SIZE_PHRASE, SIZE_WORDS, lambda s: rf"(?<![\w-]){re.escape(s)}(?![\w-])")
    if size is None:
        mm = _MEASURE.search(body)
        size = mm.group(1).strip() if mm else None
    material = next((x for x in MATERIALS if re.search(rf"\b{x}\b", body)), None)
    return Requirements(task_type, color, size, material, price_max)


def group_key(name: str) -> str:
    n = name.lower()
    if "color" in n or "colour" in n:
        return "color"
    if "size" in n:
        return "size"
    return "other"


def match_option(wanted: str, options: list[str]) -> str | None:
    """The option value that best matches ``wanted`` (exact, substring, then fuzzy >= 0.8)."""
    w = wanted.lower().strip()
    for o in options:
        if o.lower() == w:
            return o
    for o in options:
        if w in o.lower() or o.lower() in w:
            return o
    best, score = None, 0.0
    for o in options:
        r = SequenceMatcher(None, w, o.lower()).ratio()
        if r > score:
            best, score = o, r
    return best if score >= 0.8 else None


def page_type(available: dict[str, Any], observation: str) -> str:
    clickables = [str(c).lower() for c in available.get("clickables", [])]
    if available.get("has_search_bar"):
        return "home"
    if "buy now" in clickables:
        return "product_detail"
    if "next >" in clickables or re.search(r"Page \d+ \(Total results", observation):
        return "search_results"
    return "unknown"


@dataclass
class WSState:
    """Per-episode page state behind the WebShop ctx."""

    instruction: str
    req: Requirements
    max_rounds: int
    observation: str = ""
    available: dict[str, Any] = field(default_factory=lambda: {"has_search_bar": True, "clickables": ["search"]})
    page: str = "unknown"
    round: int = 0
    back_to_search_count: int = 0
    search_queries: list[str] = field(default_factory=list)
    asins_visited: list[str] = field(default_factory=list)
    current_asin: str | None = None
    current_price: float | None = None
    selected: dict[str, str] = field(default_factory=dict)
    attribute_options: dict[str, list[str]] = field(default_factory=dict)
    last_click: str = ""
    same_click_count: int = 0
    stall_turns: int = 0

    @classmethod
    def start(cls, instruction: str, task_type: str, max_rounds: int) -> WSState:
        return cls(instruction, parse_requirements(instruction, task_type), max_rounds)

    def see(self, observation: str, available: dict[str, Any]) -> None:
        """The page after reset (page type becomes known only now, as in Harness-R1)."""
        self.observation, self.available = observation, dict(available)
        self.page = page_type(available, observation)

    def after_step(self, action: str, observation: str, info: dict[str, Any]) -> None:
        available = info.get("available_actions") or self.available
        prev_asin, prev_selected = self.current_asin, dict(self.selected)
        self.observation, self.available = observation, dict(available)
        self.page = page_type(available, observation)
        name, _, rest = action.partition("[")
        value = rest[:-1].strip().lower() if rest.endswith("]") else ""
        valid = bool(info.get("valid"))
        if valid and name == "search":
            self.search_queries.append(" ".join(value.split()))
        if valid and name == "click":
            self.same_click_count = self.same_click_count + 1 if value == self.last_click else 1
            self.last_click = value
            if value == "back to search":
                self.back_to_search_count += 1
        if self.page in ("product_detail", "unknown") and info.get("asin"):
            asin = str(info["asin"])
            if asin not in self.asins_visited:
                self.asins_visited.append(asin)
            self.current_asin = asin
            groups = info.get("option_groups") or []
            self.attribute_options = {}
            for gname, values in groups:
                self.attribute_options.setdefault(group_key(gname), []).extend(values)
            self.selected = {}
            for gname, v in (info.get("selected") or {}).items():
                self.selected[group_key(gname)] = v
            m = _PRICE.search(observation)
            self.current_price = float(m.group(1).replace(",", "")) if m else self.current_price
            progressed = asin != prev_asin or self.selected != prev_selected
            self.stall_turns = 1 if asin != prev_asin else (0 if progressed else self.stall_turns + 1)
        else:
            self.current_asin, self.current_price, self.selected, self.attribute_options = None, None, {}, {}
            self.stall_turns = 0

    # --- predicates ------------------------------------------------------------------------
    def duplicate_search_count(self) -> int:
        return max(Counter(self.search_queries).values()) if self.search_queries else 0

    def options_unselected(self) -> bool:
        """The built-in buy-now precheck (without its safety valve): a required colour/size
        is offered but not selected, or option groups exist and nothing is selected."""
        if self.page != "product_detail":
            return False
        for key, wanted in (("color", self.req.color), ("size", self.req.size)):
            if not wanted:
                continue
            sel = self.selected.get(key, "").lower()
            if sel and (sel == wanted or wanted in sel or sel in wanted):
                continue
            match = match_option(wanted, self.attribute_options.get(key, []))
            if match and sel != match.lower():
                return True
        return bool(self.attribute_options) and not any(self.selected.values())

    def over_budget(self) -> bool:
        return (self.current_price is not None and self.req.price_max is not None
                and self.current_price > self.req.price_max * (1 + PRICE_TOLERANCE))

    # --- rendering ---------------------------------------------------------------------------
    def ctx(self, *, phase: str, tool: str = "", value: str = "", final_action: str | None = None) -> dict[str, Any]:
        clickables = [str(c).lower() for c in self.available.get("clickables", [])] if phase != "init" else []
        page = self.page if phase != "init" else "unknown"
        remaining = self.max_rounds - self.round - (1 if phase == "post_step" else 0)
        value_norm = str(value or "").strip().lower()
        dup = self.duplicate_search_count()
        buy_now = "buy now" in clickables
        pending_buy = tool == "click_action" and value_norm == "buy now"
        return {
            "phase": phase,
            "observation": self.observation,
            "step": self.round,
            "max_step": self.max_rounds,
            "remaining_steps": remaining,
            "action": {"tool": tool, "value": value, "value_normalized": value_norm, "final_action": final_action},
            "state": {
                "page_type": page,
                "has_search_bar": bool(self.available.get("has_search_bar")) if phase != "init" else False,
                "clickables": clickables,
                "buy_now_available": buy_now,
                "back_to_search_count": self.back_to_search_count,
                "duplicate_search_count": dup,
                "product_stall_turns": self.stall_turns,
                "same_click_count": self.same_click_count,
                "remaining_steps": remaining,
                "current_price": self.current_price,
                "price_max": self.req.price_max,
            },
            "task": {
                "task_type": self.req.task_type,
                "required_color": self.req.color,
                "required_size": self.req.size,
                "required_material": self.req.material,
            },
            "predicates": {
                "required_options_unselected": pending_buy and self.options_unselected(),
                "product_price_over_budget": self.over_budget(),
                "same_click_repeated": self.same_click_count >= 2,
                "duplicate_search_repeated": dup >= 2,
                "search_loop_detected": self.back_to_search_count >= 2 or dup >= 2,
                "product_page_stalled": self.stall_turns >= 2,
                "buy_now_available": buy_now,
                "search_not_available": not bool(self.available.get("has_search_bar")),
                "action_not_admissible": False,
            },
            "webshop": {
                "search_queries": list(self.search_queries),
                "asins_visited": list(self.asins_visited),
                "current_asin": self.current_asin,
                "selected_attributes": dict(self.selected),
                "attribute_options": {k: list(v) for k, v in self.attribute_options.items()},
            },
        }
