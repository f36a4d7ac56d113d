"""WebShop tasks: one human goal of a catalogue, with Harness-R1's task identity.

A task carries its goal (gold data: the target asin, attributes, options, price bound —
it reaches the world's scorer and the simulated target, never a hook or a packet), the
instruction the agent sees, and the key of the catalogue it belongs to.

``identity()`` is the ``webshop_task_manifest_v1`` digest of Harness-R1 §4: SHA-256 of
the canonical JSON of {protocol, goal_seed, index, sha256(instruction), sha256(goal),
sha256(product_prices)}.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness_gym.benchmarks.base import digest

MANIFEST_PROTOCOL = "webshop_task_manifest_v1"

_TYPES = (
    ("apparel", r"\b(shirts?|t-shirts?|dress(?:es)?|pants|jeans|jackets?|hoodies?|sweaters?|coats?|blous(?:es?)|shorts|skirts?|"
     r"sneakers?|shoes?|boots?|sandals?|heels?|slippers?|socks?|leggings?|cardigans?|sweatshirts?|vests?|polos?|"
     r"bikinis?|bras?|underwear|boxers?|pajamas?|robes?|scarv(?:es)?|hats?|caps?|gloves?|belts?|wigs?|bottoms?)\b"),
    ("beauty", r"\b(shampoo|conditioner|lotion|cream|serum|moisturizer|sunscreen|lipstick|mascara|foundation|concealer|"
     r"eyeshadow|nail\s+polish|perfume|cologne|cleanser|toner|scrub|mask|body\s+wash|soap|deodorant|toothpaste|"
     r"hair\s+dye|face\s+wash|lash|eyelash|brow)\b"),
    ("food", r"\b(chocolate|cookie|candy|gum|snack|coffee|tea\b|protein|vitamin|supplement|syrup|sauce|spice|seasoning|"
     r"butter|oil|honey|sugar|flour|cereal|granola|bar|drink|juice|water|soda|wine|beer|nut|pecan|almond|jerky|mix)\b"),
    ("tech", r"\b(phone|tablet|laptop|computer|keyboard|mouse|monitor|speaker|headphone|earphone|earbuds?|charger|cable|"
     r"usb|hdmi|adapter|case|cover|screen\s+protector|camera|webcam|projector|printer|router|battery|power\s+bank|led|bulb)\b"),
    ("home", r"\b(rugs?|curtains?|pillows?|blankets?|towels?|sheets?|bedding|mattress(?:es)?|furniture|chairs?|tables?|desks?|"
     r"shelv(?:es)?|cabinets?|lamps?|candles?|vases?|frames?|mirrors?|clocks?|organizers?|baskets?|storage|kitchen|"
     r"bathroom|garden|mugs?)\b"),
)


def detect_task_type(instruction: str) -> str:
    """Broad product category from the instruction (Harness-R1's ``_detect_task_type``)."""
    text = instruction.lower()
    for name, pattern in _TYPES:
        if re.search(pattern, text):
            return name
    return "general"


@dataclass(frozen=True)
class WebShopTask:
    """One WebShop goal. ``goal_json`` is the goal dict as canonical JSON (frozen, hashable)."""

    task_id: str
    task_type: str
    index: int
    instruction: str
    goal_json: str
    catalog: str
    goal_seed: int = 233
    prices_sha256: str = ""

    @property
    def goal(self) -> dict[str, Any]:
        return json.loads(self.goal_json)

    @property
    def asin(self) -> str:
        return str(self.goal["asin"])

    def manifest(self) -> dict[str, Any]:
        payload = {
            "protocol": MANIFEST_PROTOCOL,
            "goal_seed": int(self.goal_seed),
            "index": int(self.index),
            "instruction_sha256": digest(self.instruction),
            "goal_sha256": digest(self.goal),
            "product_prices_sha256": self.prices_sha256,
        }
        return {**payload, "sha256": digest(payload)}

    def identity(self) -> str:
        return self.manifest()["sha256"]

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WebShopTask:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__})


def make_task(goal: dict[str, Any], index: int, catalog: str, goal_seed: int, prices_sha256: str) -> WebShopTask:
    instruction = str(goal["instruction_text"])
    return WebShopTask(
        task_id=f"goal-{index}",
        task_type=detect_task_type(instruction),
        index=index,
        instruction=instruction,
        goal_json=json.dumps(goal, sort_keys=True, ensure_ascii=False),
        catalog=catalog,
        goal_seed=goal_seed,
        prices_sha256=prices_sha256,
    )
