"""``harness-gym`` command line: bench, data verify/download, leaderboard, docker, envs, serve."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from harness_gym.errors import ConfigError, HarnessGymError
from harness_gym.evaluation.benchmarks import get_benchmark, known_benchmarks
from harness_gym.leaderboard import cli as leaderboard_cli
from harness_gym.docker import cli as docker_cli


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="harness-gym", description="Harness editing as an RL environment.")
    sub = p.add_subparsers(dest="command", required=True)

    b = sub.add_parser("bench", help="run editing policies on the same env seeds and print a table")
    b.add_argument("--env", default="HarnessEdit-DBBench-v0", help="comma-separated env ids")
    b.add_argument("--policy", default="noop,self-refine,template", help="comma-separated policy names")
    b.add_argument("--episodes", type=int, default=20, help="env episodes (batches) per policy")
    b.add_argument("--seed", type=int, default=0, help="first episode seed")
    b.add_argument("--out", type=Path, default=Path("runs/bench.jsonl"), help="per-episode results (JSON lines)")
    b.add_argument("--resume", action="store_true", help="keep finished rows of --out and do only the rest")
    b.add_argument("--target", default=None, help="target model: sim (default), hf:…, vllm:…, openai:…")
    b.add_argument("--split", default=None)
    b.add_argument("--batch-size", type=int, default=None)
    b.add_argument("--heldout-batch-size", type=int, default=None)
    b.add_argument("--data-dir", default=None, help="original task data (default: the embedded generator)")
    b.add_argument("--backend", default=None, help="world backend, e.g. sqlite, mysql://user:pass@host:port or docker[?network=host]")
    b.add_argument("--metric", choices=("score", "success"), default=None,
                   help="what Δ_B measures: mean score or share solved (default: the benchmark's; success on WebShop)")
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--no-plot", action="store_true")

    d = sub.add_parser("data", help="task data: verify or download")
    dsub = d.add_subparsers(dest="data_command", required=True)
    v = dsub.add_parser("verify", help="run every task's reference solution through the world and checker")
    v.add_argument("benchmark", choices=known_benchmarks())
    v.add_argument("--data-dir", default=None, help="original data dir (default: the embedded generator)")
    v.add_argument("--split", default="test")
    v.add_argument("--backend", default=None, help="world backend (default: the benchmark's, for --data-dir its original-files one)")
    dl = dsub.add_parser("download", help="fetch the original task files")
    dl.add_argument("benchmark", choices=known_benchmarks())
    dl.add_argument("--url", default=None, help="base URL holding the files")
    dl.add_argument("--dest", type=Path, default=None, help="destination folder (default: data/<benchmark>)")

    leaderboard_cli.add_parser(sub)
    docker_cli.add_parser(sub)
    sub.add_parser("envs", help="list registered env ids (and benchmark entry points that failed to load)")

    s = sub.add_parser("serve", help="serve an env over OpenEnv's HTTP/WebSocket protocol (needs the openenv extra)")
    s.add_argument("--env", default="HarnessEdit-DBBench-v0", help="env id every session gets")
    s.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback only)")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-sessions", type=int, default=4, help="concurrent sessions (one env each); more are refused")
    s.add_argument("--env-kwargs", default="{}", help='JSON object of env keyword arguments, e.g. \'{"batch_size": 4}\'')
    return p


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    try:
        if args.command == "bench":
            return _bench(args)
        if args.command == "data":
            return _data(args)
        if args.command == "leaderboard":
            return int(leaderboard_cli.run(args))
        if args.command == "docker":
            return int(docker_cli.run(args))
        if args.command == "envs":
            import harness_gym.envs.registration as reg
            from harness_gym.benchmarks import plugins

            print("\n".join([*reg.ENV_IDS, *reg.SELECT_ENV_IDS]))
            for line in plugins.discover().refused:
                print(f"harness-gym: error: {line}", file=sys.stderr)
            return 0
        if args.command == "serve":
            from harness_gym.server import serve

            return serve(args.env, host=args.host, port=args.port, max_sessions=args.max_sessions,
                         env_kwargs=_json_object(args.env_kwargs, "--env-kwargs"))
    except HarnessGymError as exc:
        print(f"harness-gym: error: {exc}", file=sys.stderr)
        return 2
    return 1


def _bench(args: argparse.Namespace) -> int:
    import harness_gym  # noqa: F401 - registers env ids
    from harness_gym.bench import render_table, run_bench, save_plot

    env_ids = [e.strip() for e in args.env.split(",") if e.strip()]
    policies = [p.strip() for p in args.policy.split(",") if p.strip()]
    kwargs = {k: v for k, v in {
        "target": args.target, "split": args.split, "batch_size": args.batch_size,
        "heldout_batch_size": args.heldout_batch_size, "data_dir": args.data_dir, "backend": args.backend,
        "metric": args.metric,
    }.items() if v is not None}
    rows = run_bench(env_ids, policies, args.episodes, args.out, resume=args.resume, seed=args.seed,
                     env_kwargs=kwargs, progress=not args.no_progress)
    for env_id in env_ids:
        print(render_table(rows, env_id))
    print(f"\nper-episode results: {args.out}")
    if not args.no_plot:
        png = save_plot(rows, env_ids, args.out.with_suffix(".png"))
        if png:
            print(f"plot: {png}")
    return 0


def _json_object(text: str, flag: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{flag}={text!r} is not JSON ({exc}); give an object, e.g. '{{\"batch_size\": 4}}'") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{flag}={text!r}: expected a JSON object, got {type(value).__name__}")
    return value


def _data(args: argparse.Namespace) -> int:
    """Each benchmark's ``Benchmark.data()`` provides ``main_verify`` and/or ``main_download``."""
    from harness_gym.benchmarks import plugins

    data = plugins.get(args.benchmark).data()
    if data is None:
        print(f"harness-gym: error: no data commands for {args.benchmark}", file=sys.stderr)
        return 2
    if args.data_command == "download" and not hasattr(data, "main_download"):
        print(f"harness-gym: error: `data download` is not available for {args.benchmark}", file=sys.stderr)
        return 2
    if args.data_command == "verify":
        if not hasattr(data, "main_verify"):
            print(f"harness-gym: error: `data verify` is not available for {args.benchmark}", file=sys.stderr)
            return 2
        backend = args.backend or get_benchmark(args.benchmark).backend_for(args.data_dir)
        return int(data.main_verify(args.split, args.data_dir, backend))
    return int(data.main_download(args.url, args.dest or Path("data") / args.benchmark))


if __name__ == "__main__":
    sys.exit(main())
