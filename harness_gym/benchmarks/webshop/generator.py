"""The embedded default catalogue: a seeded generator in the original data format.

Products come in *families*: one product type from one brand, 3 siblings that share the
type, query and category but differ in attributes, option values and price — the
near-miss products real agents pick — and, for about half of the families, an
over-budget *twin* (same attributes and options, a "Premium" title, a price far above any
goal's bound). Each non-twin product gets one human-style instruction built like the
original annotations: 1–3 of its attributes and one value per option group, and
``catalog.build_catalogue`` turns them into goals exactly as the original
``get_human_goals`` does (price bound, goal seed 233 shuffle).

Splits of the generated goals: test = goals 0–199, valid = 200–299, train = the rest.
"""
from __future__ import annotations

import random
from typing import Any

from harness_gym.benchmarks.webshop.catalog import Catalogue, build_catalogue
from harness_gym.benchmarks.webshop.products import product_from_record

SPLITS = {"test": (0, 200), "valid": (200, 300), "train": (300, None)}

COLORS_APPAREL = ["black", "navy blue", "heather grey", "white", "red", "olive green", "burgundy", "light blue", "pink", "khaki"]
SIZES_APPAREL = ["small", "medium", "large", "x-large", "xx-large"]
SIZES_SHOES = ["6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "11"]

CATEGORIES: dict[str, dict[str, Any]] = {
    "apparel": {
        "category": "fashion",
        "path": "Clothing, Shoes & Jewelry › {who} › Clothing › {type_title}",
        "types": ["hoodie", "t-shirt", "sweatshirt", "jeans", "leggings", "cardigan", "pajama set", "rain jacket",
                  "polo shirt", "jogger pants", "sneakers", "running shoes", "ankle boots", "sandals"],
        "attrs": ["machine wash", "long sleeve", "short sleeve", "slim fit", "relaxed fit", "cotton spandex",
                  "polyester", "button closure", "elastic waist", "drawstring closure", "moisture wicking",
                  "quick dry", "non slip", "lace up", "rubber sole", "hand wash"],
        "groups": [("color", COLORS_APPAREL), ("size", SIZES_APPAREL)],
        "price": (12, 65),
    },
    "beauty": {
        "category": "beauty",
        "path": "Beauty & Personal Care › {who} › Skin Care › {type_title}",
        "types": ["face moisturizer", "shampoo", "conditioner", "lipstick", "nail polish", "body lotion",
                  "hair serum", "eye cream", "sunscreen", "face wash", "body scrub", "hair mask"],
        "attrs": ["paraben free", "cruelty free", "long lasting", "sulfate free", "fragrance free",
                  "hyaluronic acid", "vitamin c", "natural ingredients", "dry skin", "sensitive skin",
                  "alcohol free", "travel size", "tea tree", "argan oil"],
        "groups": [("scent", ["lavender", "unscented", "coconut", "citrus", "rose", "vanilla"]),
                   ("size", ["1 fl oz (pack of 1)", "1.7 fl oz (pack of 1)", "3.4 fl oz (pack of 1)", "8 fl oz (pack of 2)", "16 fl oz (pack of 1)"])],
        "price": (6, 48),
    },
    "food": {
        "category": "grocery",
        "path": "Grocery & Gourmet Food › Snacks & Sweets › {who} › {type_title}",
        "types": ["protein bars", "trail mix", "green tea", "coffee beans", "dark chocolate", "beef jerky",
                  "almond butter", "granola", "hot sauce", "olive oil", "rice crackers", "dried mango"],
        "attrs": ["gluten free", "low sugar", "keto friendly", "non gmo", "usda organic", "high protein",
                  "low carb", "sugar free", "kosher certified", "plant based", "individually wrapped",
                  "dairy free", "low calorie", "ready to eat"],
        "groups": [("flavor name", ["original", "sea salt", "honey roasted", "peanut butter", "vanilla", "spicy",
                                    "chocolate chip", "mixed berry"]),
                   ("size", ["4 ounce (pack of 6)", "12 ounce (pack of 1)", "1 pound (pack of 2)", "2.2 pound (pack of 1)", "8 ounce (pack of 3)"])],
        "price": (5, 42),
    },
    "tech": {
        "category": "electronics",
        "path": "Electronics › Computers & Accessories › {who} › {type_title}",
        "types": ["usb c cable", "wireless earbuds", "phone case", "bluetooth speaker", "hdmi cable", "power bank",
                  "wireless mouse", "laptop stand", "screen protector", "webcam", "wall charger", "keyboard"],
        "attrs": ["fast charging", "high speed", "noise cancelling", "water resistant", "easy install",
                  "long battery life", "plug and play", "aluminum alloy", "shockproof", "ultra slim",
                  "high definition", "wireless charging", "usb c", "hands free"],
        "groups": [("color", ["black", "white", "silver", "space gray", "blue", "rose gold"]),
                   ("style", ["1 pack", "2 pack", "3 pack", "6 ft", "10 ft"])],
        "price": (9, 80),
    },
    "home": {
        "category": "home",
        "path": "Home & Kitchen › {who} › Home Décor › {type_title}",
        "types": ["throw pillow covers", "area rug", "blackout curtains", "bath towels", "bed sheets", "wall clock",
                  "storage basket", "table lamp", "shower curtain", "coffee mug", "bath mat", "quilt set"],
        "attrs": ["machine washable", "easy clean", "living room", "bedroom", "non slip", "fade resistant",
                  "super soft", "eco friendly", "space saving", "heavy duty", "thermal insulated", "wrinkle free",
                  "dishwasher safe", "mid century"],
        "groups": [("color", ["grey", "beige", "navy", "sage green", "white", "charcoal", "terracotta"]),
                   ("size", ["18x18 inch", "5x7 ft", "queen", "king", "52x84 inch", "twin"])],
        "price": (10, 90),
    },
}
WHO = {"apparel": ["Women", "Men"], "beauty": ["Women", "Men"], "food": ["Snacks", "Pantry"],
       "tech": ["Accessories", "Audio"], "home": ["Bedroom", "Living Room"]}
_SYL = ["ka", "lo", "vi", "ra", "ne", "to", "mi", "sa", "de", "zu", "pe", "ri", "no", "va", "lu", "xe", "bo", "ta"]
_STYLE_WORDS = ["Classic", "Everyday", "Essential", "Comfort", "Modern", "Signature", "Lightweight", "Vintage"]
_TEMPLATES = [
    "i'm looking for a {attrs} {type}{opts}",
    "i need {type} that is {attrs_and}{opts}",
    "find me {type} with {attrs_and}{opts}",
    "i want to buy a {type} which is {attrs_and}{opts}",
]


def _brand(rng: random.Random) -> str:
    return "".join(rng.choice(_SYL) for _ in range(rng.choice((2, 3)))).capitalize()


def _asin(rng: random.Random, used: set[str]) -> str:
    while True:
        a = "B0" + "".join(rng.choice("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(8))
        if a not in used:
            used.add(a)
            return a


def _opt_phrase(name: str, value: str) -> str:
    if name == "color":
        return f"in {value} color"
    if name == "size":
        return f"in size {value}"
    if name == "flavor name":
        return f"with {value} flavor"
    if name == "scent":
        return f"in {value} scent"
    return f"in {value}"


def _instruction(rng: random.Random, ptype: str, attrs: list[str], opts: list[tuple[str, str]]) -> str:
    opt_text = (" " + " and ".join(_opt_phrase(n, v) for n, v in opts)) if opts else ""
    return rng.choice(_TEMPLATES).format(type=ptype, attrs=" ".join(attrs), attrs_and=" and ".join(attrs), opts=opt_text)


def _record(rng: random.Random, asin: str, brand: str, kind: str, cfg: dict[str, Any], ptype: str, who: str,
            attrs: list[str], groups: list[tuple[str, list[str]]], price: float, premium: bool) -> dict[str, Any]:
    style = "Premium" if premium else rng.choice(_STYLE_WORDS)
    type_title = ptype.title()
    who_text = f"{who}'s " if kind == "apparel" else ""
    name = f"{brand} {style} {who_text}{type_title} - {', '.join(a.title() for a in attrs[:2])}"
    ranged = rng.random() < 0.1
    pricing = f"${price:.2f} - ${price * 1.25:.2f}" if ranged else f"${price:.2f}"
    bullets = [f"{a.capitalize()}: designed for everyday use" for a in attrs]
    return {
        "asin": asin,
        "name": name,
        "category": cfg["category"],
        "query": f"{ptype} {who.lower()}" if kind == "apparel" else ptype,
        "product_category": cfg["path"].format(who=who, type_title=type_title),
        "full_description": f"{type_title} by {brand}. " + " ".join(f"This {ptype} is {a}." for a in attrs),
        "small_description": bullets,
        "pricing": pricing,
        "customization_options": {n: [{"value": v, "image": None} for v in vals] for n, vals in groups},
        "images": [f"https://example.invalid/{asin}.jpg"],
        "Rating": rng.choice(["N.A.", "4.5", "4.2", "3.9", "4.7"]),
    }


def generate_records(seed: int, n_products: int) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """``items_shuffle``, ``items_ins_v2`` and ``items_human_ins`` contents for ``n_products`` products."""
    rng = random.Random(f"webshop-catalogue:{seed}")
    used: set[str] = set()
    products: list[dict[str, Any]] = []
    attributes: dict[str, Any] = {}
    human: dict[str, list[dict[str, Any]]] = {}
    kinds = sorted(CATEGORIES)
    while len(products) < n_products:
        kind = rng.choice(kinds)
        cfg = CATEGORIES[kind]
        ptype = rng.choice(cfg["types"])
        who = rng.choice(WHO[kind])
        brand = _brand(rng)
        shoes = ptype in ("sneakers", "running shoes", "ankle boots", "sandals")
        base_groups = [(n, SIZES_SHOES if (shoes and n == "size") else vals) for n, vals in cfg["groups"]]
        lo, hi = cfg["price"]
        family: list[tuple[list[str], list[tuple[str, list[str]]], float]] = []
        for _ in range(3):
            attrs = rng.sample(cfg["attrs"], rng.choice((3, 4)))
            groups = [(n, sorted(rng.sample(vals, min(len(vals), rng.choice((3, 4, 5)))), key=vals.index))
                      for n, vals in base_groups if rng.random() < 0.9]
            family.append((attrs, groups, round(rng.uniform(lo, hi), 2)))
        for attrs, groups, price in family:
            if len(products) >= n_products:
                break
            asin = _asin(rng, used)
            products.append(_record(rng, asin, brand, kind, cfg, ptype, who, attrs, groups, price, False))
            attributes[asin] = {"attributes": attrs}
            ins_attrs = rng.sample(attrs, rng.choice((1, 2, 2, 3)))
            ins_opts = [(n, rng.choice(vals)) for n, vals in groups]
            human[asin] = [{
                "instruction": _instruction(rng, ptype, ins_attrs, ins_opts),
                "instruction_attributes": ins_attrs,
                "instruction_options": [v for _, v in ins_opts],
            }]
        if rng.random() < 0.5 and len(products) < n_products:
            attrs, groups, price = family[0]
            asin = _asin(rng, used)
            products.append(_record(rng, asin, brand, kind, cfg, ptype, who, attrs, groups, round(price + 45 + rng.uniform(5, 40), 2), True))
            attributes[asin] = {"attributes": attrs}
    order = list(range(len(products)))
    rng.shuffle(order)  # the original file is shuffled: families are not adjacent
    return [products[i] for i in order], attributes, human


def generate_catalogue(seed: int = 0, n_products: int = 1000) -> Catalogue:
    records, attributes, human = generate_records(seed, n_products)
    products = [product_from_record(r, attributes) for r in records]
    return build_catalogue(f"generated:{seed}:{n_products}", products, human, SPLITS)
