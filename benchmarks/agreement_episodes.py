"""What each target did under each patch: a summary of ``agreement.py --transcripts`` folders.

For every patch of the panel and every target (``transcripts_<env>_a`` / ``_b``), over the batches both
folders hold: in how many episodes each hook effect fired (block, rewrite, hint, force), how those episodes
ended against the same task's baseline (fixed / broke / same, by reward 1.0), how many ran to the round
limit, and the mean rounds — side by side, so a disagreement in Δ shows as a difference in behaviour (a
guard that fires as often on both but leaves one target looping to the limit, a rewrite one target needs
more often). Writes a markdown table and prints it.

Usage:
  python benchmarks/agreement_episodes.py runs/agreement/ws [--env webshop] [--patches 'webshop-guard-*,ws-rewrite-only']
"""
from __future__ import annotations

import argparse
import fnmatch
import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SHORT = {"block_and_prompt": "block", "rewrite_action": "rewrite", "inject_hint": "hint", "force_action": "force",
         "message": "pre-hint"}
LIMIT = "task_limit_reached"


def read_folder(folder: Path) -> dict[int, list[dict[str, Any]]]:
    """Episodes per batch of one transcripts folder (``batch<s>.jsonl.gz``); a torn or unreadable file is an error
    naming it."""
    out: dict[int, list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("batch*.jsonl.gz")):
        try:
            s = int(path.name[len("batch"):].split(".")[0])
            with gzip.open(path, "rt", encoding="utf-8") as fh:
                out[s] = [json.loads(line) for line in fh if line.strip()]
            if not all(isinstance(e, dict) and {"patch", "task_id", "seed"} <= e.keys() for e in out[s]):
                raise ValueError("a line without patch, task_id and seed")
        except (OSError, ValueError, EOFError) as exc:
            raise SystemExit(f"agreement_episodes: error: {path}: unreadable ({type(exc).__name__}: {exc})") from None
    return out


def fired(episode: dict[str, Any]) -> set[str]:
    """The hook effects the runtime applied in this episode (a pre-hint, ``make_pre_hint``'s message, is recorded
    as the hook's effect only)."""
    out = set()
    for e in episode.get("events") or []:
        if e.get("kind") == "effect" and e.get("applied") and e.get("type") in SHORT:
            out.add(SHORT[e["type"]])
        elif e.get("kind") == "hook" and e.get("point") == "make_pre_hint" and (e.get("effect") or {}).get("type") == "message":
            out.add("pre-hint")
    return out


def summarize(batches: dict[int, list[dict[str, Any]]], keep: list[int]) -> dict[str, dict[str, Any]]:
    """Per patch name: episodes, and per effect fired: episodes, fixed, broke, at the round limit."""
    out: dict[str, dict[str, Any]] = {}
    for s in keep:
        eps = batches[s]
        base = {(e["task_id"], e["seed"]): e for e in eps if e["patch"] is None}
        by_patch: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for e in eps:
            if e["patch"] is not None:
                by_patch[e["patch"]].append(e)
        for name, rows in by_patch.items():
            rec = out.setdefault(name, {"episodes": 0, "rounds": 0, "limit": 0, "fixed": 0, "broke": 0,
                                        **{k: {"n": 0, "fixed": 0, "broke": 0, "limit": 0} for k in SHORT.values()}})
            for e in rows:
                b = base.get((e["task_id"], e["seed"]))
                solved, was = float(e.get("reward") or 0) >= 1.0, b is not None and float(b.get("reward") or 0) >= 1.0
                fix, brk, lim = int(solved and not was), int(was and not solved), int(e.get("status") == LIMIT)
                rec["episodes"] += 1
                rec["rounds"] += int(e.get("rounds") or 0)
                rec["limit"] += lim
                rec["fixed"] += fix
                rec["broke"] += brk
                for k in fired(e):
                    c = rec[k]
                    c["n"] += 1
                    c["fixed"] += fix
                    c["broke"] += brk
                    c["limit"] += lim
    return out


def _cell(rec: dict[str, Any] | None) -> str:
    if not rec or not rec["episodes"]:
        return "– | – | –"
    effects = ", ".join(f"{k} {rec[k]['n']} ({rec[k]['fixed']}/{rec[k]['broke']}, {rec[k]['limit']} lim)"
                        for k in SHORT.values() if rec[k]["n"]) or "none"
    return f"{effects} | {rec['fixed']}/{rec['broke']} | {rec['limit']} / {rec['rounds'] / rec['episodes']:.1f}"


def table(env: str, a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], keep: list[int]) -> str:
    names = sorted(set(a) | set(b))
    out = [f"## {env}: what each target did under each patch, batches {', '.join(map(str, keep))}",
           "",
           "Per target: episodes in which each effect fired (tasks it fixed/broke among them, episodes among them that "
           "ran to the round limit); all the patch's fixed/broke; episodes at the round limit / mean rounds.",
           "",
           "| patch | A: effects fired | A: fixed/broke | A: limit / rounds | B: effects fired | B: fixed/broke | B: limit / rounds |",
           "|---|---|---|---|---|---|---|"]
    out += [f"| {n} | {_cell(a.get(n))} | {_cell(b.get(n))} |" for n in names]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path, help="an agreement.py --out folder that was run with --transcripts")
    ap.add_argument("--env", default="webshop", choices=("webshop", "dbbench", "alfworld"))
    ap.add_argument("--patches", default="", help="comma-separated name patterns (fnmatch): only these patches")
    args = ap.parse_args(argv)
    folders = [args.out / f"transcripts_{args.env}_{side}" for side in ("a", "b")]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        print(f"agreement_episodes: error: no transcripts at {', '.join(missing)} "
              "(run benchmarks/agreement.py with --transcripts)", file=sys.stderr)
        return 2
    a_batches, b_batches = (read_folder(f) for f in folders)
    keep = sorted(set(a_batches) & set(b_batches))
    if not keep:
        print(f"agreement_episodes: error: {folders[0]} and {folders[1]} share no batch", file=sys.stderr)
        return 2
    a, b = summarize(a_batches, keep), summarize(b_batches, keep)
    pats = [p.strip() for p in args.patches.split(",") if p.strip()]
    if pats:
        a = {n: r for n, r in a.items() if any(fnmatch.fnmatch(n, p) for p in pats)}
        b = {n: r for n, r in b.items() if any(fnmatch.fnmatch(n, p) for p in pats)}
    md = table(args.env, a, b, keep)
    (args.out / f"episodes_{args.env}.md").write_text(md + "\n", encoding="utf-8")
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
