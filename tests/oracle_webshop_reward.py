"""The original WebShop reward, written from the original's ``goal.py`` as read, as a test oracle.

Not part of the package. The formula follows ``web_agent_site/engine/goal.py``
(princeton-nlp/WebShop) step by step, with its library: ``thefuzz`` 0.19.0 (the version
in the original's requirements) imported here and used as is, on its pure-Python
``difflib`` matcher (the original lists no python-Levenshtein; ``oracle_fuzz`` refuses to
run on the Levenshtein one). Products are dicts in the original's form (``Title``,
``BulletPoints``, ``Description``, ``Attributes``, ``query``, ``product_category``, ``name``).
Its failures are the original's too: a goal with ``price_upper <= 0`` raises ``TypeError``
(``None`` added to a count), one without attributes ``ZeroDivisionError``.

``cases(n, seed)`` draws a broad table of reward cases (options with punctuation, case,
non-ASCII and colour words, attributes found by fuzzy match or by substring, prices around
the bound, product types) for ``tests/test_webshop_reward_oracle.py`` and
``benchmarks/bench_webshop_reward.py``.
"""
from __future__ import annotations

import difflib
import random
from collections.abc import Callable
from typing import Any


def oracle_fuzz() -> Any:
    try:
        from thefuzz import fuzz  # type: ignore[import-untyped]
    except ImportError as exc:  # pragma: no cover - a test-extra dependency
        raise ImportError("the WebShop reward oracle needs thefuzz 0.19.0: pip install thefuzz==0.19.0") from exc
    if fuzz.SequenceMatcher is not difflib.SequenceMatcher:
        raise RuntimeError("thefuzz is using python-Levenshtein; the original ran on difflib (uninstall python-Levenshtein)")
    return fuzz


# The original normalize.py's COLOR_SET, in its order.
ORIGINAL_COLORS = [
    "alabaster", "apricot", "aqua", "ash", "asphalt", "azure", "banana", "beige", "black", "blue", "blush", "bordeaux",
    "bronze", "brown", "burgundy", "camel", "camo", "caramel", "champagne", "charcoal", "cheetah", "chestnut", "chocolate",
    "christmas", "coffee", "cognac", "copper", "coral", "cranberry", "cream", "crystal", "dark", "denim", "eggplant",
    "elephant", "espresso", "fuchsia", "gold", "granite", "grape", "graphite", "grass", "gray", "green", "grey", "heather",
    "indigo", "ivory", "ivy", "khaki", "lavender", "lemon", "leopard", "light", "lilac", "lime", "magenta", "maroon",
    "mauve", "merlot", "midnight", "mint", "mocha", "multicolor", "mushroom", "mustard", "natural", "navy", "nude",
    "olive", "orange", "peach", "pewter", "pink", "plum", "purple", "rainbow", "red", "rose", "royal", "rust", "sand",
    "sapphire", "seashell", "silver", "skull", "slate", "steel", "stone", "stonewash", "sunflower", "tan", "taupe",
    "teal", "tiger", "turquoise", "violet", "walnut", "wheat", "white", "wine", "yellow",
]


def normalize_color(s: Any) -> Any:
    for c in ORIGINAL_COLORS:
        if c in s:
            return c
    return s


def type_reward(purchased: dict, goal: dict, nouns: Callable[[str], list[str]]) -> dict:
    query_match = purchased["query"] == goal["query"]
    pc = [x.strip() for x in purchased["product_category"].split("›")]
    gc = [x.strip() for x in goal["product_category"].split("›")]
    category_match = len(set(pc) & set(gc)) >= 2
    p_parse, d_parse = nouns(purchased["name"]), nouns(goal["name"])
    n_int = len(set(p_parse) & set(d_parse))
    title_score = 0.2 if len(d_parse) == 0 else n_int / len(d_parse)
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return {"r_type": r_type, "query_match": query_match, "category_match": category_match, "title_score": title_score}


def attribute_reward(purchased: dict, goal: dict) -> tuple[float, int]:
    fuzz = oracle_fuzz()
    n = 0
    for g in goal["attributes"]:
        matched = False
        for p in purchased["Attributes"]:
            if fuzz.token_set_ratio(p, g) > 85:
                n += 1
                matched = True
                break
        if not matched and (g in purchased["Title"].lower() or g in " ".join(purchased["BulletPoints"]).lower()
                            or g in purchased["Description"].lower()):
            n += 1
    return n / len(goal["attributes"]), n


def option_reward(purchased_options: list, goal_options: Any) -> tuple[float | None, int]:
    fuzz = oracle_fuzz()
    p_opts = [normalize_color(o) for o in purchased_options]
    g_opts = [normalize_color(o) for o in goal_options]
    n = 0
    for g in g_opts:
        for p in p_opts:
            if fuzz.token_set_ratio(p, g) > 85:
                n += 1
                break
    return (n / len(g_opts) if g_opts else None), n


def get_reward(purchased: dict, goal: dict, price: float, options: dict, nouns: Callable[[str], list[str]]) -> float:
    rt = type_reward(purchased, goal, nouns)
    r_price = (price <= goal["price_upper"]) if goal["price_upper"] > 0 else None
    _, n_att = attribute_reward(purchased, goal)
    go = goal["goal_options"]
    _, n_opt = option_reward(list(options.values()), go.items() if isinstance(go, dict) else go)
    total = (n_att + n_opt + r_price) / (len(goal["attributes"]) + len(go) + 1)
    return total * rt["r_type"]


# --- the case table ------------------------------------------------------------------------------
_SIZES = ["8 fl oz (pack of 2)", "3.4 fl oz (pack of 1)", "3.4 Fl Oz (Pack of 1)", "16 ounce (pack of 6)", "pack of 12",
          "12 count (pack of 1)", "x-large", "xx-large", "X-Large", "small", "medium", "large", "one size", "7.5", "8",
          "8.5 wide", "10 x 12 inch", "10\"x12\"", "24x36", "60\" x 80\"", "queen", "king", "twin", "full | queen",
          "2 piece set", "3-pack", "1.7 oz / 50 ml", "100 ml", "5 lb", "small-medium", "s/m", "l/xl", "size: large",
          "12 ounce (pack of 4)", "4 ounce (pack of 12)", "2 count", "1 count (pack of 3)", "50 count", "100 pcs"]
_COLORS = ["black", "Black", "navy blue", "dark grey", "light blue", "off white", "white | black", "rosé gold", "café brown",
           "crème", "beige/khaki", "coffee", "olive green", "cream", "royal blue", "seashell pink", "skull print",
           "steel gray", "stonewash denim", "sunflower yellow", "tan", "tiger stripe", "turquoise", "walnut", "wheat",
           "ruby red", "sage green", "salmon", "shadow black", "shell", "sky blue", "smoke grey", "snow white",
           "stripe", "tomato red", "wood", "zebra", "a-pink", "b-brown", "multi_color", "army green", "wine red",
           "leopard", "cheetah print", "cool powder snow", "powder snow", "hot pink", "matte black", "clear",
           "Naïve blue", "über black", "straße grey", "black—white", "colour №5", "½ grey"]
_FLAVORS = ["vanilla", "french vanilla", "chocolate chip", "peanut butter", "sea salt & vinegar", "variety pack",
            "original", "honey-roasted", "jalapeño", "crème brûlée", "unsweetened", "mint chocolate", "lemon-lime"]
_ATTRS = ["tea tree", "essential oils", "natural ingredients", "gluten free", "gluten-free", "sugar free",
          "long lasting", "long-lasting", "easy to use", "high quality", "non slip", "non-slip", "machine wash",
          "hand wash", "wireless bluetooth", "fast charging", "water resistant", "water-resistant", "dairy free",
          "low carb", "plant based", "stainless steel", "easy clean", "button closure", "elastic waistband",
          "quality materials", "double sided", "non toxic", "paraben free", "cruelty free", "high resolution",
          "4k ultra hd", "usb port", "light weight", "lightweight", "easy install", "wall mounted", "memory foam",
          "rubber sole", "slim fit", "long sleeve", "short sleeve", "quick drying", "soy wax", "lead free"]
_PRODUCT_ATTRS = _ATTRS + ["essential oil", "natural ingredient", "tea bag", "earl gray", "lipton", "glutenfree",
                           "long lasting formula", "easy-to-use", "high-quality", "slip resistant", "machine washable",
                           "bluetooth wireless", "quick charging", "waterproof", "dairy-free", "low-carb", "plant-based"]
_TYPES = [("Mens Basketball Sneakers Shoes Casual", "shoes men", "Clothing › Men › Shoes › Athletic › Basketball"),
          ("Women's Slim Fit Long Sleeve T-Shirt", "t-shirt women", "Clothing › Women › Tops › T-Shirts"),
          ("Organic Coffee Beans Medium Roast", "coffee", "Grocery › Beverages › Coffee › Whole Bean"),
          ("Extra Virgin Olive Oil Cold Pressed", "olive oil", "Grocery › Pantry › Oils › Olive"),
          ("Hydrating Face Cream Moisturizer", "face cream", "Beauty › Skin Care › Face › Moisturizers"),
          ("USB C Charging Cable Braided", "usb cable", "Electronics › Accessories › Cables › USB"),
          ("Wooden Coffee Table Set", "coffee table", "Home › Furniture › Living Room › Tables"),
          ("Tea Tree Shampoo and Conditioner Set", "shampoo", "Beauty › Hair Care › Shampoo"),
          ("Power Cord for Soundbar Home Theater System", "power cord", "Electronics › Accessories › Power Cords"),
          ("Stainless Steel Eyebrow Tweezers", "tweezers", "Beauty › Tools › Tweezers")]


def _mangle(rng: random.Random, s: str) -> str:
    """A spelling of ``s`` a catalogue or a goal might use: case, punctuation, spacing, order."""
    k = rng.randrange(8)
    if k == 0:
        return s.upper()
    if k == 1:
        return s.title()
    if k == 2:
        return s.replace(" ", "-")
    if k == 3:
        return f"({s})"
    if k == 4:
        return " ".join(reversed(s.split()))
    if k == 5:
        return s.replace(" ", "  ") + "."
    if k == 6:
        return s + rng.choice([" ™", " ®", " ×2", " – new", "!", ", 2-pack"])
    return s


def _product(rng: random.Random, name: str, query: str, category: str) -> dict:
    attrs = rng.sample(_PRODUCT_ATTRS, rng.randrange(0, 5))
    bullet_attrs = rng.sample(_ATTRS, rng.randrange(0, 3))
    desc_attrs = rng.sample(_ATTRS, rng.randrange(0, 2))
    return {"Title": name, "name": name, "query": query, "product_category": category, "Attributes": attrs,
            "BulletPoints": [f"{a.capitalize()} for every day" for a in bullet_attrs],
            "Description": " ".join(f"Made {_mangle(rng, a)}." for a in desc_attrs)}


def cases(n: int, seed: int = 0) -> list[dict]:
    """``n`` reward cases: {product, goal, price, options} in the original's form."""
    rng = random.Random(f"webshop-reward-oracle:{seed}")
    out = []
    for i in range(n):
        g_name, g_query, g_cat = rng.choice(_TYPES)
        if rng.random() < 0.5:
            p_name, p_query, p_cat = g_name, g_query, g_cat
            if rng.random() < 0.4:
                p_name = "Brand " + p_name + " " + rng.choice(["Pro", "Deluxe", "2 Pack", "for Travel"])
        else:
            p_name, p_query, p_cat = rng.choice(_TYPES)
        product = _product(rng, p_name, p_query, p_cat)
        goal_attrs = rng.sample(_ATTRS, rng.randrange(1, 4))
        pools = [_SIZES, _COLORS, _FLAVORS]
        names = ["size", "color", "flavor name"]
        k = rng.randrange(0, 4)
        idx = rng.sample(range(3), min(k, 3))
        g_opts = {names[j]: rng.choice(pools[j]) for j in idx}
        bought = {}
        for j in idx:
            r = rng.random()
            v = g_opts[names[j]]
            bought[names[j]] = v if r < 0.3 else _mangle(rng, v) if r < 0.6 else rng.choice(pools[j])
        if rng.random() < 0.2:
            bought["style"] = rng.choice(_SIZES + _COLORS)
        goal_options: Any = g_opts if rng.random() < 0.25 else list(g_opts.values())
        price_upper = rng.choice([10.0, 20.0, 30.0, 50.0, 100.0, 1000000])
        price = round(price_upper * rng.choice([0.5, 0.99, 1.0, 1.01, 1.5]), 2)
        goal = {"asin": f"B{i:09d}", "name": g_name, "query": g_query, "product_category": g_cat,
                "attributes": goal_attrs, "goal_options": goal_options, "price_upper": price_upper}
        out.append({"product": product, "goal": goal, "price": price, "options": bought})
    # the cases the issue names, and the original's own unit-test cases
    out.append({"product": _product(random.Random(1), *_TYPES[2]),
                "goal": {"name": _TYPES[2][0], "query": _TYPES[2][1], "product_category": _TYPES[2][2],
                         "attributes": ["gluten free"], "goal_options": ["3.4 fl oz (pack of 1)"], "price_upper": 30.0},
                "price": 20.0, "options": {"size": "8 fl oz (pack of 2)"}})
    return out
