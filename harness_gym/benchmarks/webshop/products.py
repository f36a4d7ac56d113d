"""Products as the original WebShop loads them (``engine.load_products``), frozen.

The original file format is ``items_shuffle*.json`` (a list of product dicts) plus
``items_ins_v2*.json`` (asin -> attributes) and ``items_human_ins.json`` (asin -> human
instructions). ``product_from_record`` applies the original normalization: title = name,
description = full_description, bullet points = small_description, price tag and
numeric pricing from the ``pricing`` string, option names and values lower-cased with
``/`` replaced by `` | ``. Ratings and reviews are not loaded (the original's review
file loading is commented out): every product shows ``Rating: N.A.`` and no reviews.
"""
from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

_NOT_PRICE = re.compile(r"[^\d.]")


@dataclass(frozen=True, slots=True)
class Product:
    asin: str
    name: str
    category: str
    query: str
    product_category: str
    description: str
    bullets: tuple[str, ...]
    price_tag: str
    pricing: tuple[float, ...]
    options: tuple[tuple[str, tuple[str, ...]], ...]
    attributes: tuple[str, ...]
    rating: str = "N.A."
    reviews: tuple[tuple[str, str, str], ...] = field(default=())

    @property
    def title(self) -> str:
        return self.name

    @property
    def option_dict(self) -> dict[str, tuple[str, ...]]:
        return dict(self.options)

    def document(self) -> str:
        """What the original indexes: lower(Title, Description, BulletPoints[0], option text)."""
        option_text = ", and ".join(f"{n}: {', '.join(v)}" for n, v in self.options)
        first_bullet = self.bullets[0] if self.bullets else ""
        return " ".join([self.name, self.description, first_bullet, option_text]).lower()


def parse_pricing(pricing: Any) -> tuple[tuple[float, ...], str]:
    """``"$12.99"`` -> ((12.99,), "$12.99"); ``"$5.99 - $9.99"`` -> ((5.99, 9.99), "$5.99 to $9.99")."""
    if not pricing or not isinstance(pricing, str):
        return (100.0,), "$100.0"
    values: list[float] = []
    for part in pricing.split("$")[1:]:
        digits = _NOT_PRICE.sub("", part)
        try:
            values.append(float(Decimal(digits)))
        except InvalidOperation:
            continue
    if not values:
        return (100.0,), "$100.0"
    if len(values) == 1:
        return (values[0],), f"${values[0]}"
    return (values[0], values[1]), f"${values[0]} to ${values[1]}"


def option_groups(customization: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(customization, Mapping):
        return ()
    out = []
    for name, contents in customization.items():
        if contents is None:
            continue
        values = tuple(str(c.get("value", "")).strip().replace("/", " | ").lower() for c in contents if isinstance(c, Mapping))
        out.append((str(name).lower(), values))
    return tuple(out)


def product_from_record(p: Mapping[str, Any], attributes: Mapping[str, Any] | None = None) -> Product:
    """One ``items_shuffle`` record (and its ``items_ins_v2`` entry) as the original loads it."""
    asin = str(p["asin"])
    pricing, tag = parse_pricing(p.get("pricing"))
    small = p.get("small_description")
    bullets = tuple(str(b) for b in small) if isinstance(small, list) else (str(small or ""),)
    attrs = (attributes or {}).get(asin, {})
    attr_list = attrs.get("attributes") if isinstance(attrs, Mapping) else None
    return Product(
        asin=asin,
        name=str(p.get("name") or ""),
        category=str(p.get("category") or ""),
        query=str(p.get("query") or "").lower().strip(),
        product_category=str(p.get("product_category") or ""),
        description=str(p.get("full_description") or ""),
        bullets=bullets,
        price_tag=tag,
        pricing=pricing,
        options=option_groups(p.get("customization_options")),
        attributes=tuple(attr_list) if attr_list else ("DUMMY_ATTR",),
        rating="N.A.",  # the original's load_products never reads ratings or reviews: every page shows
        reviews=(),  # "Rating: N.A." and an empty Reviews page, whatever the record holds
    )


def product_prices(products: list[Product], rng: random.Random) -> dict[str, float]:
    """The price each product sells at (``generate_product_prices``): a range draws uniformly."""
    out: dict[str, float] = {}
    for p in products:
        out[p.asin] = p.pricing[0] if len(p.pricing) == 1 else rng.uniform(p.pricing[0], p.pricing[1])
    return out
