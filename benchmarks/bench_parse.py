"""Patch parsing on hostile 10 KB / 100 KB inputs: the parser before issue 11 and now, side by side in one run.

Each case is an input built to make a parser do super-linear work (whitespace floods
between tags, unclosed and nested tags, many ``<patch>`` markers, long lines, ``{`` floods,
``@@`` floods, many hunks over a large file, regex-backtracking bait for the leakage
patterns). The env's whole path is timed: ``parse_patch``, ``check_leakage`` and
``Patch.apply`` (which hashes the new harness). "Before" is the package as it was at
``--before`` (``git archive`` into a temporary folder), "after" is this checkout; each
runs in its own subprocess, so a parser that never finishes is cut at ``--timeout`` and
shown as a lower bound. No model or rollout is involved: the numbers hold for any target.

Usage: python benchmarks/bench_parse.py [--sizes 10000,100000] [--before 42be44a]
       [--timeout 20] [--cases think_whitespace,...] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "42be44a"  # main just before issue 11's parser work
DIFF_HEAD = "--- a/system_prompt.md\n+++ b/system_prompt.md\n"
NOTES = "notes.md"  # a large file the base harness gets for the hunk-placement case
REPEATS = 5


def _think_whitespace(n: int) -> str:
    return "<think>" + " " * max(n - 14, 0) + "<patch>"


def _unclosed_think(n: int) -> str:
    return "<think>" * (n // 7)


def _nested_tags(n: int) -> str:
    return "<think><patch>" * (n // 30) + "</patch></think>" * (n // 30)


def _many_patch_blocks(n: int) -> str:
    return "x</think>" + "<patch>{}</patch>" * (n // 17)


def _unclosed_string(n: int) -> str:
    return '</think><patch>{"a": "' + "x" * n


def _brace_nesting(n: int) -> str:
    return "</think><patch>" + '{"a":' * (n // 5) + "</patch>"


def _brace_flood(n: int) -> str:
    return "</think><patch>" + '{"{"' * (n // 4) + "</patch>"


def _json_whitespace(n: int) -> str:
    return '{"actions": [' + " " * n + "]}"


def _hunk_flood(n: int) -> str:
    return DIFF_HEAD + "@@ -1,0 +1,0 @@\n" * (n // 16)


def _many_hunks_large_file(n: int) -> str:
    return "--- a/notes.md\n+++ b/notes.md\n" + "@@ -1,1 +1,1 @@\n-x\n+y\n" * (n // 22)


def _leakage_whitespace(n: int) -> str:
    line = "+task" + " " * 3000 + "x\n"
    k = max(n // len(line), 1)
    return f"--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -0,0 +1,{k} @@\n" + line * k


def _alfworld_verbs(n: int) -> str:
    line = "+" + "take " * 700 + "\n"
    k = max(n // len(line), 1)
    return f"--- a/system_prompt.md\n+++ b/system_prompt.md\n@@ -0,0 +1,{k} @@\n" + line * k


def _module_flood(n: int) -> str:
    return "def on_init(ctx, nb):\n" + "    x = 1\n" * (n // 10)


# name -> (benchmark, builder(size) -> patch text, whether the base harness gets a large notes.md)
CASES: dict[str, tuple[str, Callable[[int], str], bool]] = {
    "think_whitespace": ("dbbench", _think_whitespace, False),
    "unclosed_think": ("dbbench", _unclosed_think, False),
    "nested_tags": ("dbbench", _nested_tags, False),
    "many_patch_blocks": ("dbbench", _many_patch_blocks, False),
    "unclosed_string": ("dbbench", _unclosed_string, False),
    "brace_nesting": ("dbbench", _brace_nesting, False),
    "brace_flood": ("dbbench", _brace_flood, False),
    "json_whitespace": ("dbbench", _json_whitespace, False),
    "hunk_flood": ("dbbench", _hunk_flood, False),
    "many_hunks_large_file": ("dbbench", _many_hunks_large_file, True),
    "leakage_whitespace": ("dbbench", _leakage_whitespace, False),
    "alfworld_verbs": ("alfworld", _alfworld_verbs, False),
    "module_flood": ("dbbench", _module_flood, False),
}


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="input sizes in characters")
    ap.add_argument("--before", default=BEFORE, help="git revision of the parser to compare against")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a run is cut (shown as '> T')")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated case names")
    ap.add_argument("--json", default=None, help="write the rows here too")
    ap.add_argument("--one", nargs=2, metavar=("CASE", "SIZE"), help=argparse.SUPPRESS)  # child mode
    return ap


def run_one(case: str, size: int) -> dict[str, Any]:
    """Child mode: time the env's patch path on one input with whatever ``harness_gym`` is importable."""
    from harness_gym.errors import PatchError
    from harness_gym.evaluation.benchmarks import get_benchmark
    from harness_gym.harness.files import Harness
    from harness_gym.harness.leakage import GoldStrings, check_leakage
    from harness_gym.harness.patch import parse_patch

    benchmark, build, large_file = CASES[case]
    base = get_benchmark(benchmark).default_harness()
    if large_file:
        base = Harness(benchmark, {**dict(base.files), NOTES: "x\n" * (size // 2)})
    text = build(size)
    best = float("inf")
    for _ in range(REPEATS):  # best of a few runs when a run is quick: the machine is shared
        start = time.perf_counter()
        try:
            patch = parse_patch(text, base)
            check_leakage(patch, GoldStrings(benchmark=benchmark), base=base)
            patch.apply(base)
            outcome = "valid"
        except PatchError as exc:
            outcome = "PatchError: " + str(exc)[:70]
        except Exception as exc:  # noqa: BLE001 - an exception other than PatchError is the finding
            outcome = f"EXCEPTION {type(exc).__name__}: {str(exc)[:60]}"
        best = min(best, time.perf_counter() - start)
        if best > 1.0:
            break
    return {"seconds": best, "outcome": outcome, "chars": len(text)}


def _child(tree: Path, case: str, size: int, timeout: float) -> dict[str, Any]:
    """One case in a subprocess importing ``harness_gym`` from ``tree``; its parse is cut after ``timeout`` s."""
    env = {**os.environ, "PYTHONPATH": str(tree), "BENCH_PARSE_ALARM": str(timeout)}
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", case, str(size)]
    try:
        done = subprocess.run(cmd, env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=timeout + 120)
    except subprocess.TimeoutExpired:  # the alarm did not get through (a C loop that never checks signals)
        return {"seconds": None, "outcome": f"killed after {timeout + 120:g} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"seconds": None, "outcome": "child failed: " + (done.stderr.strip().splitlines() or ["?"])[-1][:80]}
    return json.loads(lines[-1])


def _old_tree(rev: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "harness_gym"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _fmt(row: dict[str, Any], timeout: float) -> str:
    if row.get("seconds") is None:
        return f"> {timeout:g}"
    return f"{row['seconds']:.4f}"


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    if args.one:
        alarm = float(os.environ.get("BENCH_PARSE_ALARM", "0"))
        if alarm:
            import signal

            def _cut(signum: int, frame: Any) -> None:
                print(json.dumps({"seconds": None, "outcome": f"cut after {alarm:g} s"}), flush=True)
                os._exit(0)

            signal.signal(signal.SIGALRM, _cut)
            signal.setitimer(signal.ITIMER_REAL, alarm)
        print(json.dumps(run_one(args.one[0], int(args.one[1]))), flush=True)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    cases = [c for c in args.cases.split(",") if c]
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print(f"unknown cases {unknown}; expected some of {', '.join(CASES)}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-parse-before-") as tmp:
        old = _old_tree(args.before, Path(tmp))
        print(f"before = {args.before} (git archive), after = {ROOT} (this checkout); seconds of parse_patch + check_leakage + apply")
        print("| case | size (chars) | before (s) | after (s) | before / after | outcome before | outcome after |")
        print("|---|---:|---:|---:|---:|---|---|")
        for case in cases:
            for size in sizes:
                before = _child(old, case, size, args.timeout)
                after = _child(ROOT, case, size, args.timeout)
                ratio = "n/a"
                if after.get("seconds"):
                    lower = "≥ " if before.get("seconds") is None else ""
                    b = before["seconds"] if before.get("seconds") is not None else args.timeout
                    r = b / after["seconds"]
                    ratio = f"{lower}{r:.0f}×" if r >= 10 else f"{lower}{r:.1f}×"
                rows.append({"case": case, "size": after.get("chars", size), "before": before, "after": after})
                print(f"| {case} | {after.get('chars', size):,} | {_fmt(before, args.timeout)} | {_fmt(after, args.timeout)} | "
                      f"{ratio} | {before['outcome'][:50]} | {after['outcome'][:50]} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"before": args.before, "timeout": args.timeout, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
