"""Loading the original WebShop files into a ``Catalogue``.

A data folder holds ``items_shuffle.json`` (full set) or ``items_shuffle_1000.json``,
the matching ``items_ins_v2.json`` / ``items_ins_v2_1000.json`` (asin -> attributes) and
``items_human_ins.json`` (asin -> human instructions). Human goals are built the original
way (``catalog.human_goals``, goal seed 233); splits follow ``baseline_models/env.py``:
test = goals 0–499, valid = 500–1499, train = the rest.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_gym.errors import TaskDataError
from harness_gym.benchmarks.webshop.catalog import Catalogue, build_catalogue
from harness_gym.benchmarks.webshop.products import product_from_record

SPLITS = {"test": (0, 500), "valid": (500, 1500), "train": (1500, None)}
PRODUCT_FILES = (("items_shuffle.json", "items_ins_v2.json"), ("items_shuffle_1000.json", "items_ins_v2_1000.json"))
HUMAN_FILE = "items_human_ins.json"


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskDataError(f"cannot read {path}: {exc}; re-download with `harness-gym data download webshop`") from exc


def find_files(data_dir: Path) -> tuple[Path, Path, Path]:
    for products, attrs in PRODUCT_FILES:
        if (data_dir / products).exists():
            return data_dir / products, data_dir / attrs, data_dir / HUMAN_FILE
    raise TaskDataError(
        f"no WebShop product file in {data_dir}: expected items_shuffle.json or items_shuffle_1000.json "
        "(get them with `harness-gym data download webshop --url <base url>`)"
    )


def load_catalogue(data_dir: Path) -> Catalogue:
    products_path, attrs_path, human_path = find_files(Path(data_dir))
    records = _read(products_path)
    attributes = _read(attrs_path) if attrs_path.exists() else {}
    human = _read(human_path) if human_path.exists() else {}
    if not isinstance(records, list) or not isinstance(attributes, dict) or not isinstance(human, dict):
        raise TaskDataError(f"{data_dir}: expected a list of products and asin-keyed dicts of attributes and instructions")
    products = []
    for i, rec in enumerate(records):
        if not isinstance(rec, dict) or "asin" not in rec:
            raise TaskDataError(f"{products_path}: record {i} is not a product with an 'asin'")
        products.append(product_from_record(rec, attributes))
    return build_catalogue(f"dir:{Path(data_dir).resolve()}", products, human, SPLITS)
