"""The original WebShop reward (``web_agent_site/engine/goal.py::get_reward``).

    R = (n_att + n_opt + 1[price <= price_upper]) / (|goal_attrs| + |goal_opts| + 1) * r_type

- an attribute counts if ``fuzz.token_set_ratio(p_attr, g) > 85`` for a product attribute,
  else if it is a substring of the lower-cased title, joined bullet points or description;
- an option counts if, after ``normalize_color`` on both sides, its token-set ratio with
  any purchased option value is above 85;
- ``r_type`` from query match, category match (>= 2 shared ``›`` levels) and the share of
  goal-name nouns found in the purchased name.

Noun extraction: spaCy (``en_core_web_lg``, else ``en_core_web_sm``) when installed, as the
original; otherwise a documented fallback (``NOUN_EXTRACTOR == "fallback"``): every
alphabetic token of 2+ letters that is not a stop word, adjective-like modifier, colour or
number counts as a noun. The fallback is deterministic and close to spaCy on product names
(which are mostly noun compounds); the active extractor is reported in episode info.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from rapidfuzz import fuzz

from harness_gym.benchmarks.webshop.products import Product

# The original's COLOR_SET (web_agent_site/engine/normalize.py): first contained colour wins.
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral",
    "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia",
    "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta",
    "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard",
    "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple",
    "rainbow", "red", "rose", "ruby", "rust", "sage", "salmon", "sand", "sapphire", "shadow", "shell",
    "silver", "sky", "slate", "smoke", "snow", "stone", "stripe", "taupe", "teal", "tomato", "violet",
    "white", "wine", "wood", "yellow", "zebra",
)
FUZZ_THRESHOLD = 85


def normalize_color(value: str) -> str:
    for color in COLOR_SET:
        if color in value:
            return color
    return value


# --- noun extraction ---------------------------------------------------------------------------
_STOP = frozenset(
    ["a", "an", "the", "and", "or", "of", "for", "with", "in", "on", "to", "by", "from", "at", "as", "is", "are", "be", "this", "that", "these", "those", "it", "its", "your", "our", "my", "his", "her", "their", "x", "pack", "set", "pcs", "piece", "pieces", "count", "size", "inch", "inches", "oz", "ounce", "ounces", "ft", "feet", "lb", "lbs", "new", "high", "low", "large", "small", "medium", "extra", "premium", "best", "great", "super", "ultra", "natural", "free", "soft", "compatible", "women", "womens", "men", "mens", "kids", "unisex"]
)
_WORD = re.compile(r"[a-z][a-z'\-]+")


def _fallback_nouns(text: str) -> list[str]:
    out = []
    for tok in _WORD.findall(text.lower()):
        tok = tok.strip("-'")
        if len(tok) < 2 or tok in _STOP or tok in COLOR_SET:
            continue
        if tok.endswith(("ly", "ful", "less", "ous", "able", "ible", "ive")):
            continue  # adverb/adjective suffixes
        out.append(tok)
    return out


def _load_spacy() -> tuple[str, Callable[[str], list[str]] | None]:
    try:
        import spacy  # type: ignore[import-not-found]
    except ImportError:
        return "fallback", None
    for model in ("en_core_web_lg", "en_core_web_sm"):
        try:
            nlp = spacy.load(model)
        except OSError:
            continue

        def nouns(text: str, _nlp: Any = nlp) -> list[str]:
            return [t.text.lower() for t in _nlp(text) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]

        return f"spacy:{model}", nouns
    return "fallback", None


NOUN_EXTRACTOR, _SPACY_NOUNS = _load_spacy()


@lru_cache(maxsize=65536)
def nouns(text: str) -> tuple[str, ...]:
    """Lower-cased NOUN/PROPN tokens of ``text`` (spaCy when available, else the fallback)."""
    if _SPACY_NOUNS is not None:
        return tuple(_SPACY_NOUNS(text))
    return tuple(_fallback_nouns(text))


# --- the reward ----------------------------------------------------------------------------------
def type_reward(product: Product, goal: Mapping[str, Any]) -> dict[str, Any]:
    query_match = product.query == goal["query"]
    p_cat = {x.strip() for x in product.product_category.split("›")}
    g_cat = {x.strip() for x in str(goal["product_category"]).split("›")}
    category_match = len(p_cat & g_cat) >= 2
    desired = nouns(str(goal["name"]))
    purchased = set(nouns(product.name))
    title_score = 0.2 if not desired else len(purchased & set(desired)) / len(desired)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match, "title_score": title_score}


def attribute_matches(product: Product, goal_attrs: Sequence[str]) -> int:
    title = product.name.lower()
    bullets = " ".join(product.bullets).lower()
    desc = product.description.lower()
    n = 0
    for g in goal_attrs:
        if any(fuzz.token_set_ratio(p, g) > FUZZ_THRESHOLD for p in product.attributes) or g in title or g in bullets or g in desc:
            n += 1
    return n


def option_matches(purchased: Sequence[str], goal_options: Sequence[str]) -> int:
    bought = [normalize_color(o) for o in purchased]
    n = 0
    for g in (normalize_color(o) for o in goal_options):
        if any(fuzz.token_set_ratio(p, g) > FUZZ_THRESHOLD for p in bought):
            n += 1
    return n


def goal_option_values(goal: Mapping[str, Any]) -> list[str]:
    opts = goal.get("goal_options") or []
    return [str(v) for v in (opts.values() if isinstance(opts, Mapping) else opts)]


def get_reward(product: Product, goal: Mapping[str, Any], price: float, options: Mapping[str, str]) -> tuple[float, dict[str, Any]]:
    """The shaped score in [0, 1] and its parts (the original's ``verbose`` info)."""
    rt = type_reward(product, goal)
    attrs = list(goal["attributes"])
    gopts = goal_option_values(goal)
    r_price = price <= float(goal["price_upper"])
    n_att = attribute_matches(product, attrs)
    n_opt = option_matches(list(options.values()), gopts)
    total = (n_att + n_opt + int(r_price)) / (len(attrs) + len(gopts) + 1) * rt["r_type"]
    info = {**rt, "r_att": n_att / len(attrs) if attrs else None, "r_option": n_opt / len(gopts) if gopts else None,
            "r_price": r_price, "noun_extractor": NOUN_EXTRACTOR}
    return total, info
