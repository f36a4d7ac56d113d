"""Agreement of the WebShop reward with the original's formula on a generated case table.

The oracle is ``tests/oracle_webshop_reward.py`` (the original ``goal.py`` as read, on
thefuzz 0.19.0). Both sides use the package's noun extractor, so the comparison is of the
formula (options, attributes, price, type). ``--reward PATH`` scores another reward module
(e.g. an older ``reward.py``) instead of the package's.

Usage: python benchmarks/bench_webshop_reward.py [--cases 2000] [--seed 0] [--reward PATH]
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import oracle_webshop_reward as oracle  # noqa: E402

from harness_gym.benchmarks.webshop import reward as package_reward  # noqa: E402
from harness_gym.benchmarks.webshop.products import Product  # noqa: E402


def to_product(d: dict) -> Product:
    return Product(asin="B000000000", name=d["Title"], category="", query=d["query"], product_category=d["product_category"],
                   description=d["Description"], bullets=tuple(d["BulletPoints"]), price_tag="$1.0", pricing=(1.0,),
                   options=(), attributes=tuple(d["Attributes"]))


def _score(fn: Any, *args: Any) -> float | str:
    try:
        return float(fn(*args))
    except Exception as exc:  # noqa: BLE001 - a failure is an outcome to compare
        return type(exc).__name__


def compare(table: list[dict], reward: Any = package_reward) -> dict[str, Any]:
    nouns = package_reward.nouns
    diff: Counter[str] = Counter()
    examples = []
    for c in table:
        want = _score(lambda: oracle.get_reward(c["product"], c["goal"], c["price"], c["options"], lambda t: list(nouns(t))))
        got = _score(lambda: reward.get_reward(to_product(c["product"]), c["goal"], c["price"], c["options"])[0])
        same = (isinstance(want, str) and isinstance(got, str)) or (
            isinstance(want, float) and isinstance(got, float) and math.isclose(want, got, abs_tol=1e-9))
        if not same:
            kind = "exception" if isinstance(want, str) or isinstance(got, str) else "score"
            diff[kind] += 1
            if len(examples) < 5:
                examples.append((c["goal"].get("goal_options"), c["options"], want, got))
    return {"cases": len(table), "agree": len(table) - sum(diff.values()), "differ": dict(diff), "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reward", type=Path, help="a reward.py to score instead of the package's")
    args = ap.parse_args()
    reward: Any = package_reward
    if args.reward:
        spec = importlib.util.spec_from_file_location("reward_under_test", args.reward)
        if spec is None or spec.loader is None:
            sys.exit(f"cannot load {args.reward}")
        reward = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(reward)
        reward.nouns = package_reward.nouns  # the same nouns on both sides: the formula is compared
    res = compare(oracle.cases(args.cases, args.seed), reward)
    print(f"noun extractor: {package_reward.noun_extractor()[0]}")
    print(f"{res['agree']}/{res['cases']} cases agree with the original formula ({100 * res['agree'] / res['cases']:.1f}%); differ: {res['differ']}")
    for ex in res["examples"]:
        print("  e.g. goal options", ex[0], "bought", ex[1], "original", ex[2], "ours", ex[3])


if __name__ == "__main__":
    main()
