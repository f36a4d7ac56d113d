"""``harness-gym leaderboard submit | verify | render | schema``.

Exit codes: 0 ok; 1 a submission was rejected (a claim does not reproduce, or the file
breaks the schema) — the reason is one line on stderr; 2 a usage or configuration error.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from harness_gym.errors import HarnessGymError


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    lb = subparsers.add_parser("leaderboard", help="build, verify and render leaderboard submissions")
    sub = lb.add_subparsers(dest="leaderboard_command", required=True)

    s = sub.add_parser("submit", help="build a submission from `harness-gym bench` rows")
    s.add_argument("--from", dest="source", type=Path, default=Path("runs/bench.jsonl"), help="bench JSON lines")
    s.add_argument("--policy", required=True, help="policy name in the bench rows")
    s.add_argument("--env", default=None, help="env id (needed when the rows cover several envs)")
    s.add_argument("--name", default=None, help="submission name (default: the --out file stem)")
    s.add_argument("--out", type=Path, required=True, help="e.g. leaderboards/submissions/NAME.json")
    s.add_argument("--target", default="sim", help="the target the bench ran with")
    s.add_argument("--split", default=None)
    s.add_argument("--heldout-batch-size", type=int, default=0, help="the bench's --heldout-batch-size")
    s.add_argument("--data-dir", default=None)
    s.add_argument("--backend", default=None)
    s.add_argument("--attempts", type=int, default=1, help="patches scored per packet before submitting one")
    s.add_argument("--description", default=None)

    v = sub.add_parser("verify", help="rerun a submission's patches and accept only matching claims")
    v.add_argument("submission", type=Path, nargs="+")
    v.add_argument("--tolerance", type=float, default=0.0, help="allowed |claimed − recomputed| (0 = exact; >0 for real models)")
    v.add_argument("--limit", type=int, default=None, help="check only the first N episodes (a quick pre-check)")
    v.add_argument("--mark-verified", action="store_true", help="maintainers: set verified=true in files that pass in full")
    v.add_argument("-q", "--quiet", action="store_true")

    r = sub.add_parser("render", help="write leaderboards/README.md and leaderboards/<env>.md")
    r.add_argument("--dir", type=Path, default=Path("leaderboards"))

    sc = sub.add_parser("schema", help="print (or --write) the submission JSON schema")
    sc.add_argument("--write", type=Path, default=None)
    return lb


def run(args: argparse.Namespace) -> int:
    try:
        return _COMMANDS[args.leaderboard_command](args)
    except HarnessGymError as exc:
        # schema violations and unreadable files are rejections (1); config errors are usage errors (2)
        from harness_gym.leaderboard.schema import SubmissionError

        print(f"harness-gym leaderboard: {exc}", file=sys.stderr)
        return 1 if isinstance(exc, SubmissionError) and args.leaderboard_command == "verify" else 2


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)


def _submit(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.submission import (
        build_submission,
        read_rows,
        save_submission,
    )

    kwargs = {"split": args.split, "heldout_batch_size": args.heldout_batch_size, "data_dir": args.data_dir,
              "backend": args.backend}
    sub = build_submission(read_rows(args.source), name=args.name or args.out.stem, policy=args.policy, env_id=args.env,
                           target=args.target, env_kwargs=kwargs, attempts=args.attempts, description=args.description,
                           progress=lambda m: _say(args, m))
    save_submission(sub, args.out)
    print(f"wrote {args.out} ({len(sub['episodes'])} episodes of {sub['policy']} on {sub['env']['id']}); "
          f"check it with: harness-gym leaderboard verify {args.out}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.schema import SubmissionError
    from harness_gym.leaderboard.submission import load_submission, save_submission
    from harness_gym.leaderboard.verify import verify_submission

    status = 0
    for path in args.submission:
        try:
            sub = load_submission(path)
            verdict = verify_submission(sub, tolerance=args.tolerance, limit=args.limit, progress=lambda m: _say(args, m))
        except SubmissionError as exc:
            print(f"{path}: rejected: {exc}".replace(f"{path}: {path}: ", f"{path}: "), file=sys.stderr)
            status = 1
            continue
        if not verdict.accepted:
            print(f"{path}: {verdict.message}", file=sys.stderr)
            status = 1
            continue
        print(f"{path}: {verdict.message}")
        if args.mark_verified and args.limit is None and not sub["verified"]:
            sub["verified"] = True
            save_submission(sub, path)
    return status


def _render(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.render import render

    for p in render(args.dir):
        print(f"wrote {p}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.schema import schema_text

    if args.write:
        args.write.parent.mkdir(parents=True, exist_ok=True)
        args.write.write_text(schema_text(), encoding="utf-8")
        print(f"wrote {args.write}")
    else:
        sys.stdout.write(schema_text())
    return 0


_COMMANDS = {"submit": _submit, "verify": _verify, "render": _render, "schema": _schema}


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m harness_gym.leaderboard.cli``) until ``harness-gym`` wires it in."""
    p = argparse.ArgumentParser(prog="harness-gym")
    add_parser(p.add_subparsers(dest="command", required=True))
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
