"""``harness-gym leaderboard rebuild-baselines --target sim``: the built-in policies' entries, from nothing.

For every table of the target: bench the baseline policies on the protocol's seeds, build
one submission per policy (``<benchmark>-<policy>.json`` for ``sim``,
``<benchmark>-<target>-<policy>.json`` otherwise), verify each with a record (the verifier's
secret held-out draws included), and render.
When a sim changes, this one command regenerates every baseline entry. ``sb3-select``
needs a trained selector per benchmark; a missing one is trained first with the
selector's own seeded defaults (``baselines/sb3_select/train.py``).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness_gym.errors import ConfigError
from harness_gym.leaderboard.protocol import Protocol, tables
from harness_gym.leaderboard.schema import SubmissionError

BASELINES = ("noop", "self-refine", "template", "co-harness", "sb3-select")


def entry_name(protocol: Protocol, policy: str) -> str:
    benchmark = protocol.env_id.removeprefix("HarnessEdit-").rsplit("-v", 1)[0].lower()
    return f"{benchmark}-{policy}" if protocol.target == "sim" else f"{benchmark}-{protocol.target}-{policy}"


def _train_selector(benchmark: str, say: Callable[[str], None], resume: bool) -> None:
    """Train the sb3-select selector on the sim as it is now (a selector trained on an earlier sim
    would make the rebuilt entry that sim's choice); ``resume`` keeps one already there."""
    from baselines.sb3_select.train import DEFAULT_OUT, SelectTrainConfig, train_selector

    out = Path(DEFAULT_OUT.format(benchmark=benchmark))
    if resume and out.exists():
        return
    say(f"training the sb3-select selector for {benchmark} -> {out} (then ship it: python -m "
        f"baselines.sb3_select.train --benchmark {benchmark} --export)")
    train_selector(SelectTrainConfig(benchmark=benchmark), out)


def rebuild_baselines(
    directory: Path,
    target: str,
    *,
    policies: tuple[str, ...] = BASELINES,
    env_ids: list[str] | None = None,
    runs: Path = Path("runs/leaderboard"),
    resume: bool = False,
    say: Callable[[str], None] = print,
) -> list[Path]:
    """Bench, submit, verify (with records) and render every baseline entry of ``target``'s tables.

    ``resume``: keep finished bench rows in ``runs`` (only for an interrupted rebuild on the same code;
    rows from before a change to a sim would not reproduce).
    """
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers env ids
    from harness_gym.bench import run_bench
    from harness_gym.leaderboard.records import write_record
    from harness_gym.leaderboard.render import render
    from harness_gym.leaderboard.submission import build_submission, load_submission, make_kwargs, save_submission
    from harness_gym.leaderboard.verify import draw_heldout_seed, verify_submission

    chosen = [p for p in tables(target) if env_ids is None or p.env_id in env_ids]
    if not chosen:
        raise ConfigError(f"no leaderboard tables for target={target!r}"
                          f"{' and env ' + ','.join(env_ids) if env_ids else ''}; see leaderboards/protocol.json")
    written: list[Path] = []
    failed: list[str] = []
    for p in chosen:
        if "sb3-select" in policies:
            _train_selector(gym.spec(p.env_id).kwargs["benchmark"], say, resume)
        out = Path(runs) / f"{p.slug}.jsonl"
        kwargs = make_kwargs(p)
        say(f"{p.key}: bench {', '.join(policies)} on seeds {p.seeds[0]}–{p.seeds[-1]} -> {out}")
        rows = run_bench([p.env_id], list(policies), p.episodes, out, resume=resume, seed=p.base_seed,
                         env_kwargs=kwargs, progress=False).rows
        for policy in policies:
            name = entry_name(p, policy)
            path = Path(directory) / "submissions" / f"{name}.json"
            sub = build_submission(rows, name=name, policy=policy, env_id=p.env_id, target=p.target,
                                   description=f"built-in baseline: {policy}")
            save_submission(sub, path)
            loaded = load_submission(path)
            verdict = verify_submission(loaded.data, heldout_seeds=draw_heldout_seed)
            written += [path, write_record(directory, loaded, verdict, p)]
            say(f"{path}: {verdict.message}")
            if not verdict.accepted:
                failed.append(f"{path}: {verdict.message}")
    written += render(directory)
    if failed:
        raise SubmissionError(f"{len(failed)} baseline entries did not reproduce; first: {failed[0]}")
    return written
