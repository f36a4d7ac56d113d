"""``harness-gym leaderboard submit | verify | check-record | render | protocol | schema | rebuild-baselines``.

Exit codes: 0 ok; 1 a submission was rejected (it breaks the schema or its table's protocol,
or a claim does not reproduce) or a record's held-out numbers do not recompute — the reason
is one line on stderr; 2 a usage or configuration error.
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
    s.add_argument("--env", required=True, help="env id of the table")
    s.add_argument("--target", default="sim", help="target of the table (sim, smol)")
    s.add_argument("--out", type=Path, required=True, help="leaderboards/submissions/NAME.json (NAME becomes the name)")
    s.add_argument("--attempts", type=int, default=1, help="patches scored per packet before submitting one")
    s.add_argument("--description", default=None, help="one line, shown on the table's page")
    s.add_argument("-q", "--quiet", action="store_true")

    v = sub.add_parser("verify", help="check a submission against its protocol and rerun its patches")
    v.add_argument("submission", type=Path, nargs="+")
    v.add_argument("--limit", type=int, default=None, help="check only the first N episodes (a quick pre-check; no record)")
    v.add_argument("--record", action="store_true",
                   help="maintainers: write DIR/verified/<name>.json with the outcome of the full rerun and, once "
                        "every claim reproduced, the verifier's held-out draws from secret seeds")
    v.add_argument("--dir", type=Path, default=Path("leaderboards"), help="leaderboards folder (for --record)")
    v.add_argument("-q", "--quiet", action="store_true")

    c = sub.add_parser("check-record", help="rerun the verifier's held-out draws a record reveals; fail on any mismatch")
    c.add_argument("submission", type=Path, nargs="+", help="DIR/submissions/<name>.json (its record: DIR/verified/)")
    c.add_argument("--dir", type=Path, default=Path("leaderboards"), help="leaderboards folder")
    c.add_argument("-q", "--quiet", action="store_true")

    r = sub.add_parser("render", help="write leaderboards/README.md and one page per table")
    r.add_argument("--dir", type=Path, default=Path("leaderboards"))

    p = sub.add_parser("protocol", help="print (or --write) every table's protocol as JSON")
    p.add_argument("--write", type=Path, default=None)

    sc = sub.add_parser("schema", help="print (or --write) the submission JSON schema")
    sc.add_argument("--write", type=Path, default=None)

    rb = sub.add_parser("rebuild-baselines", help="bench, submit, verify --record and render the built-in policies")
    rb.add_argument("--target", default="sim", help="rebuild every table of this target")
    rb.add_argument("--env", default=None, help="comma-separated env ids (default: all tables of the target)")
    rb.add_argument("--policy", default=None, help="comma-separated policies (default: the five built-in baselines)")
    rb.add_argument("--dir", type=Path, default=Path("leaderboards"))
    rb.add_argument("--runs", type=Path, default=Path("runs/leaderboard"), help="where the bench rows go")
    rb.add_argument("--resume", action="store_true", help="keep finished bench rows (same code only)")
    return lb


def run(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.schema import SubmissionError

    try:
        return _COMMANDS[args.leaderboard_command](args)
    except SubmissionError as exc:
        print(f"harness-gym leaderboard: rejected: {exc}", file=sys.stderr)
        return 1
    except HarnessGymError as exc:
        print(f"harness-gym leaderboard: {exc}", file=sys.stderr)
        return 2


def _say(args: argparse.Namespace, text: str) -> None:
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)


def _submit(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.submission import build_submission, read_rows, save_submission

    sub = build_submission(read_rows(args.source), name=args.out.stem, policy=args.policy, env_id=args.env,
                           target=args.target, attempts=args.attempts, description=args.description,
                           progress=lambda m: _say(args, m))
    save_submission(sub, args.out)
    print(f"wrote {args.out} ({len(sub['episodes'])} episodes of {sub['policy']} on {args.env}/{args.target}); "
          f"check it with: harness-gym leaderboard verify {args.out}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.protocol import table_for
    from harness_gym.leaderboard.records import record_path, write_record
    from harness_gym.leaderboard.schema import SubmissionError
    from harness_gym.leaderboard.submission import load_submission
    from harness_gym.leaderboard.verify import REJECTED, Verdict, draw_heldout_seed, verify_submission

    if args.record and args.limit is not None:
        print("harness-gym leaderboard: --record needs the full rerun; drop --limit", file=sys.stderr)
        return 2
    status = 0
    for path in args.submission:
        try:
            if args.record:
                record_path(args.dir, path)  # refuse a file outside DIR/submissions before rerunning it
            sub = load_submission(path)
        except SubmissionError as exc:
            print(f"{path}: rejected: {str(exc).removeprefix(f'{path}: ')}", file=sys.stderr)
            status = 1
            continue
        try:
            verdict = verify_submission(sub.data, limit=args.limit, progress=lambda m: _say(args, m),
                                        heldout_seeds=draw_heldout_seed if args.record else None)
        except SubmissionError as exc:
            verdict = Verdict(REJECTED, 0, f"rejected: {exc}")
        print(f"{path}: {verdict.message}", file=sys.stdout if verdict.accepted else sys.stderr)
        status = status if verdict.accepted else 1
        if args.record:
            try:
                protocol = table_for(sub.data["env"]["id"], sub.data["target"]["model"])
            except SubmissionError:
                protocol = None
            try:
                print(f"recorded {write_record(args.dir, sub, verdict, protocol)}{_draws_note(verdict, sub.data)}")
            except OSError as exc:  # written to a temp file and renamed: the old record, if any, is intact
                why = exc.strerror or type(exc).__name__
                print(f"{path}: record {record_path(args.dir, path)} not written ({why}); nothing was replaced",
                      file=sys.stderr)
                status = 2
    return status


def _draws_note(verdict: Any, sub: dict[str, Any]) -> str:
    """The recorded verifier held-out mean beside the claimed one (the seeds are in the record)."""
    if not verdict.heldout:
        return ""
    from harness_gym.leaderboard.render import heldout_deltas

    mine = [d.heldout_delta for d in verdict.heldout]
    claimed = heldout_deltas(sub) or []
    return (f" (verifier's held-out Δ {sum(mine) / len(mine):+.3f} over {len(mine)} secret draws; claimed "
            f"{sum(claimed) / max(len(claimed), 1):+.3f})")


def _check_record(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.protocol import table_for
    from harness_gym.leaderboard.records import RERUN, record_path, status
    from harness_gym.leaderboard.schema import SubmissionError
    from harness_gym.leaderboard.submission import load_submission
    from harness_gym.leaderboard.verify import addresses_note, protocol_violation, recompute_heldout

    code = 0
    for path in args.submission:
        try:
            where = record_path(args.dir, path)
            sub = load_submission(path)
            problem = protocol_violation(sub.data)
            if problem:
                raise SubmissionError(problem)
            protocol = table_for(sub.data["env"]["id"], sub.data["target"]["model"])
            st = status(args.dir, sub, protocol)  # reads the record; a malformed one is one line naming it
            if st.state == "unverified":
                raise SubmissionError(f"no record {where}; the maintainers write it with `harness-gym leaderboard "
                                      "verify --record`")
            if st.state == "stale":
                raise SubmissionError(f"{where}: a record of other bytes or other rules than {path} under table "
                                      f"{protocol.key} now (stale: no ✓); {RERUN}")
            if st.state == "outdated":
                raise SubmissionError(f"{where}: a harness-gym-verification-v1 record predates the verifier's held-out "
                                      f"draws: it has no seeds to recompute; {RERUN}")
            if st.draws is None:
                why = "its outcome is rejected" if st.state == "rejected" else f"{protocol.key} has no held-out batch"
                print(f"{path}: {where}: no verifier draws to recompute ({why})")
                continue
            bad = recompute_heldout(sub.data, st.draws, progress=lambda m: _say(args, m))
        except SubmissionError as exc:
            print(f"{path}: {str(exc).removeprefix(f'{path}: ')}", file=sys.stderr)
            code = 1
            continue
        if bad:
            note = addresses_note(st.addresses, "the verifier's machine")
            print(f"{path}: {where}: does not recompute: {bad}{note}", file=sys.stderr)
            code = 1
        else:
            how = "exactly" if protocol.tolerance == 0 else f"within {protocol.tolerance}"
            mean = sum(d.heldout_delta for d in st.draws) / len(st.draws)
            print(f"{path}: {where}: {len(st.draws)} verifier held-out draws recompute {how} "
                  f"(mean held-out Δ {mean:+.3f})")
    return code


def _render(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.render import render

    for p in render(args.dir):
        print(f"wrote {p}")
    return 0


def _write_or_print(text: str, path: Path | None) -> int:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        sys.stdout.write(text)
    return 0


def _protocol(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.protocol import protocol_text

    return _write_or_print(protocol_text(), args.write)


def _schema(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.schema import schema_text

    return _write_or_print(schema_text(), args.write)


def _rebuild(args: argparse.Namespace) -> int:
    from harness_gym.leaderboard.rebuild import BASELINES, rebuild_baselines

    split = lambda v: [x.strip() for x in v.split(",") if x.strip()]  # noqa: E731
    policies = tuple(split(args.policy)) if args.policy else BASELINES
    rebuild_baselines(args.dir, args.target, policies=policies, env_ids=split(args.env) if args.env else None,
                      runs=args.runs, resume=args.resume, say=lambda m: print(m, file=sys.stderr))
    return 0


_COMMANDS = {"submit": _submit, "verify": _verify, "check-record": _check_record, "render": _render,
             "protocol": _protocol, "schema": _schema, "rebuild-baselines": _rebuild}


def main(argv: list[str] | None = None) -> int:
    """Standalone entry (``python -m harness_gym.leaderboard.cli``); ``harness-gym leaderboard`` is the same."""
    p = argparse.ArgumentParser(prog="harness-gym")
    add_parser(p.add_subparsers(dest="command", required=True))
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
