"""``harness-gym data download webshop``: fetch the original files from a configurable URL.

The original ``setup.sh`` downloads from Google Drive with gdown (quota failures,
WebShop#46); here any HTTP(S) base URL that serves the files works (a mirror, an internal
server). ``main_verify`` loads a split and checks every goal's target product scores 1.0
when bought with the goal's options.
"""
from __future__ import annotations

import os
import shutil
import sys
import urllib.error
import urllib.request
from pathlib import Path

FILES = ("items_shuffle_1000.json", "items_ins_v2_1000.json", "items_human_ins.json")
FULL_FILES = ("items_shuffle.json", "items_ins_v2.json")
URL_ENV = "HARNESS_GYM_WEBSHOP_URL"


def main_download(url: str | None, dest: Path) -> int:
    """Download the small set (and the full set when the server has it) into ``dest``."""
    base = url or os.environ.get(URL_ENV)
    if not base:
        print(f"harness-gym: error: no download URL: pass --url <base url> or set {URL_ENV}", file=sys.stderr)
        return 2
    base = base.rstrip("/")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name, required in [(f, True) for f in FILES] + [(f, False) for f in FULL_FILES]:
        target = dest / name
        tmp = target.with_suffix(target.suffix + ".part")
        try:
            with urllib.request.urlopen(f"{base}/{name}", timeout=60) as resp, open(tmp, "wb") as fh:
                shutil.copyfileobj(resp, fh)
        except (urllib.error.URLError, OSError) as exc:
            tmp.unlink(missing_ok=True)
            if required:
                print(f"harness-gym: error: could not download {base}/{name}: {exc}", file=sys.stderr)
                return 1
            continue
        os.replace(tmp, target)
        print(f"downloaded {name} -> {target}")
    return 0


def main_verify(split: str, data_dir: str | None, backend: str = "local") -> int:
    from harness_gym.benchmarks.webshop.catalog import get_catalog, load_split
    from harness_gym.benchmarks.webshop.reward import get_reward

    tasks = load_split(split, Path(data_dir) if data_dir else None)
    bad = 0
    for t in tasks:
        cat = get_catalog(t.catalog)
        goal = t.goal
        product = cat.products[goal["asin"]]
        opts = {f"o{i}": v for i, v in enumerate(goal["goal_options"])}
        score, _ = get_reward(product, goal, cat.prices[product.asin], opts)
        if score < 1.0:
            bad += 1
    print(f"{len(tasks) - bad}/{len(tasks)} goals score 1.0 with their target product and options")
    return 0 if bad == 0 else 1
