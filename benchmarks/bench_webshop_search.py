"""Page-1 agreement of WebShop search with the original's pyserini/Lucene ranking.

Queries: every goal instruction of the catalogue, every product's query and the first 300
product names (1,236 queries on the default ``generated:0:1000``). ``--record`` runs the real
pyserini 0.17.0 (Anserini 0.14.3, Lucene 8.11; ``pip install --no-deps pyserini==0.17.0 pyjnius``
and a JDK) over the catalogue's documents and writes each query's page 1 (top 10 of k=50) to
``tests/fixtures/webshop/pyserini_<key>.json``; without it, the package's emulation (or
``--engine PATH``, another ``search.py``) is compared with that recording, or with a live
pyserini (``--live``).

Usage: python benchmarks/bench_webshop_search.py [--catalog generated:0:1000] [--record | --live] [--engine PATH]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "webshop"


def queries(cat: Any, n_names: int = 300) -> list[str]:
    qs = {g["instruction_text"] for g in cat.goals} | {p.query for p in cat.products.values()}
    qs |= {p.name.lower() for p in list(cat.products.values())[:n_names]}
    return sorted(q for q in qs if q.strip())


def fixture_path(key: str) -> Path:
    return FIXTURES / f"pyserini_{key.replace(':', '_')}.json"


def agreement(engine: Any, recorded: dict[str, list[str]]) -> dict[str, Any]:
    n = len(recorded)
    order = sum(engine.search(q)[:10] == hits[:10] for q, hits in recorded.items())
    same_set = sum(set(engine.search(q)[:10]) == set(hits[:10]) for q, hits in recorded.items())
    return {"queries": n, "page1_order": order, "page1_set": same_set}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalog", default="generated:0:1000")
    ap.add_argument("--record", action="store_true", help="run pyserini and write the fixture")
    ap.add_argument("--live", action="store_true", help="compare with pyserini run now instead of the recording")
    ap.add_argument("--engine", type=Path, help="a search.py whose SearchEngine to compare instead of the package's")
    args = ap.parse_args()
    from harness_gym.benchmarks.webshop.catalog import get_catalog
    from harness_gym.benchmarks.webshop.search import PyseriniSearchEngine, SearchEngine

    cat = get_catalog(args.catalog)
    asins = list(cat.products)
    docs = [cat.products[a].document() for a in asins]
    qs = queries(cat)
    if args.record or args.live:
        real = PyseriniSearchEngine(asins, docs)
        recorded = {q: real.search(q)[:10] for q in qs}
        if args.record:
            fixture_path(args.catalog).write_text(json.dumps({"catalog": args.catalog, "searcher": "pyserini 0.17.0 LuceneSearcher, k=50, page 1 (top 10) kept",
                                                              "results": recorded}, indent=0, sort_keys=True) + "\n")
            print(f"recorded {len(recorded)} queries to {fixture_path(args.catalog)}")
            return
    else:
        path = fixture_path(args.catalog)
        if not path.exists():
            sys.exit(f"no recording for {args.catalog} at {path}: run with --record (needs pyserini and a JDK)")
        recorded = json.loads(path.read_text())["results"]
    engine_cls = SearchEngine
    if args.engine:
        spec = importlib.util.spec_from_file_location("search_under_test", args.engine)
        if spec is None or spec.loader is None:
            sys.exit(f"cannot load {args.engine}")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        engine_cls = mod.SearchEngine
    res = agreement(engine_cls(asins, docs), recorded)
    n = res["queries"]
    print(f"{args.catalog}: {n} queries; page-1 identical order {res['page1_order']}/{n} ({100 * res['page1_order'] / n:.1f}%), "
          f"page-1 same set {res['page1_set']}/{n} ({100 * res['page1_set'] / n:.1f}%)")


if __name__ == "__main__":
    main()
