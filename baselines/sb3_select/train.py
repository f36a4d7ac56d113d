"""Train a PPO selector on ``HarnessSelectEnv`` with stable-baselines3, and compare it with ``template``.

``python -m baselines.sb3_select.train --benchmark webshop`` trains on the ``train`` split
(batches from a pool of ``--seed-pool`` seeds, so rollouts are cached after their first
visit), saves ``runs/sb3_select_webshop.zip`` (where plain ``sb3-select`` looks) and
reports mean Δ_B on ``--eval-episodes`` test batches against the template policy on the
same batches. ``--benchmark dbbench,webshop,alfworld`` trains one selector per benchmark; ``--export``
also writes the small weights-only policy the package ships (``models/<benchmark>.pt``,
what plain ``sb3-select`` uses when ``runs/`` has no model). Needs ``pip install stable-baselines3`` (and torch).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from harness_gym.errors import ConfigError

SB3_EXTRA = "pip install 'torch==2.13.0' stable-baselines3"
DEFAULT_OUT = "runs/sb3_select_{benchmark}.zip"  # where plain ``sb3-select`` looks first
# The selectors shipped with the package (``--export``): plain ``sb3-select`` falls back to them.
SHIPPED_DIR = Path(__file__).resolve().parent / "models"
NET_ARCH = [64, 64]


@dataclass(frozen=True)
class SelectTrainConfig:
    benchmark: str = "dbbench"
    timesteps: int = 512
    seed: int = 0
    seed_pool: int | None = 64
    split: str = "train"
    batch_size: int = 10
    n_steps: int = 64
    learning_rate: float = 3e-3
    ent_coef: float = 0.01

    def __post_init__(self) -> None:
        from harness_gym.envs.select import select_spec

        select_spec(self.benchmark)  # an unknown benchmark fails here, with the known ones
        if self.timesteps < 1 or self.n_steps < 2 or self.batch_size < 1:
            raise ConfigError(f"timesteps={self.timesteps}, n_steps={self.n_steps}, batch_size={self.batch_size}: "
                              "timesteps and batch_size must be >= 1 and n_steps >= 2")


def _sb3() -> Any:
    try:
        import stable_baselines3
    except ImportError:
        raise ConfigError(f"the sb3-select policy needs stable-baselines3: {SB3_EXTRA}") from None
    return stable_baselines3


def train_selector(cfg: SelectTrainConfig, out: str | Path, env_kwargs: dict[str, Any] | None = None,
                   verbose: int = 0) -> tuple[Any, list[dict[str, Any]]]:
    """Train PPO (one-step episodes, gamma 0) and save it to ``out`` with its library names beside it."""
    from harness_gym.envs.select import HarnessSelectEnv

    sb3 = _sb3()
    import torch
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.monitor import Monitor

    log: list[dict[str, Any]] = []

    class Rollouts(BaseCallback):
        def _on_rollout_end(self) -> None:
            buf = cast(Any, self.model).rollout_buffer  # on-policy algorithms have one
            log.append({"timesteps": int(self.num_timesteps), "mean_reward": float(buf.rewards.mean()),
                        "top_action": int(_mode(buf.actions.reshape(-1)))})

        def _on_step(self) -> bool:
            return True

    select_env = HarnessSelectEnv(cfg.benchmark, seed_pool=cfg.seed_pool, split=cfg.split,
                                  batch_size=cfg.batch_size, **(env_kwargs or {}))
    env = Monitor(select_env)
    env.reset(seed=cfg.seed)
    # A 64x64 MLP on CPU: one torch thread is faster than several, and leaves the cores to the rollouts.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = sb3.PPO("MlpPolicy", env, n_steps=cfg.n_steps, batch_size=min(cfg.n_steps, 32), n_epochs=8,
                        gamma=0.0, gae_lambda=1.0, learning_rate=cfg.learning_rate, ent_coef=cfg.ent_coef,
                        seed=cfg.seed, device="cpu", verbose=verbose, policy_kwargs={"net_arch": list(NET_ARCH)})
        model.learn(total_timesteps=cfg.timesteps, callback=Rollouts())
    finally:
        torch.set_num_threads(threads)
        env.close()
    names = select_env.names
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    meta_path(out).write_text(json.dumps({"benchmark": cfg.benchmark, "library": names}, indent=1), encoding="utf-8")
    return model, log


def meta_path(model_path: str | Path) -> Path:
    p = Path(model_path)
    return p.with_name(p.name.removesuffix(".zip").removesuffix(".pt") + ".library.json")


def export_policy(model_path: str | Path, out: str | Path, cfg: SelectTrainConfig) -> Path:
    """Write the policy network of a trained selector as a small weights-only file (``.pt``).

    Only the actor-critic weights are kept (no optimizer state, no pickled objects: it loads
    with ``torch.load(weights_only=True)``); the ``.library.json`` beside it records the arms,
    the training config and the file's sha256.
    """
    import hashlib

    import torch

    model = _sb3().PPO.load(str(model_path), device="cpu")
    meta = json.loads(meta_path(model_path).read_text(encoding="utf-8"))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().clone().contiguous() for k, v in model.policy.state_dict().items()}
    torch.save(state, str(out))
    meta.update(format="policy-state-dict", net_arch=list(NET_ARCH), features=int(model.observation_space.shape[0]),
                trained={"command": f"python -m baselines.sb3_select.train --benchmark {cfg.benchmark} --timesteps "
                                    f"{cfg.timesteps} --seed {cfg.seed} --seed-pool {cfg.seed_pool} --export",
                         **{k: getattr(cfg, k) for k in ("timesteps", "seed", "seed_pool", "split", "batch_size",
                                                         "n_steps", "learning_rate", "ent_coef")},
                         "target": "sim"},
                sha256=hashlib.sha256(out.read_bytes()).hexdigest())
    meta_path(out).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return out


def _mode(xs: Any) -> int:
    import numpy as np

    vals, counts = np.unique(np.asarray(xs, dtype=int), return_counts=True)
    return int(vals[int(np.argmax(counts))])


def edit_env_id(benchmark: str) -> str:
    """The ``HarnessEdit-*`` id of ``benchmark`` (what ``harness-gym bench`` runs policies on)."""
    from harness_gym.envs.registration import edit_env_id as env_id

    return env_id(benchmark)


def evaluate_selector(path: str | Path, episodes: int = 20, seed: int = 0, env_id: str | None = None,
                      env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """Mean Δ_B of the selector and of ``template`` on the same ``episodes`` test batches.

    ``env_id``: default, the ``HarnessEdit-*`` env of the benchmark the selector was trained on.
    """
    import gymnasium as gym

    import harness_gym  # noqa: F401 - registers the env ids
    from baselines.base import PolicyInput
    from baselines.sb3_select.policy import SB3SelectPolicy
    from baselines.template import TemplatePolicy

    selector = SB3SelectPolicy(str(path))
    policies = {"sb3-select": selector, "template": TemplatePolicy()}
    trained_on = json.loads(meta_path(path).read_text(encoding="utf-8"))["benchmark"]
    env = gym.make(env_id or edit_env_id(trained_on), **(env_kwargs or {}))
    benchmark = cast(Any, env.unwrapped).config.benchmark
    rows: dict[str, list[float]] = {k: [] for k in policies}
    chosen: list[str] = []
    try:
        for e in range(episodes):
            for name, pol in policies.items():
                obs, info = env.reset(seed=seed + e)
                patch = pol.propose([PolicyInput(obs, info["packet"], benchmark)])[0][0]
                _, r, *_ = env.step(patch)
                rows[name].append(float(r))
            chosen.append(selector.last_choice)
    finally:
        env.close()
    return {"episodes": episodes, "mean": {k: sum(v) / len(v) for k, v in rows.items()}, "per_episode": rows,
            "choices": chosen}


def make_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--benchmark", default="dbbench", help="one benchmark, or several comma-separated")
    p.add_argument("--timesteps", type=int, default=512)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seed-pool", type=int, default=64)
    p.add_argument("--out", default=DEFAULT_OUT, help="model path; {benchmark} is filled in (default: %(default)s)")
    p.add_argument("--eval-episodes", type=int, default=20)
    p.add_argument("--export", action="store_true",
                   help="also write the weights-only policy to baselines/sb3_select/models/<benchmark>.pt (the shipped selectors)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    benchmarks = [b.strip() for b in args.benchmark.split(",") if b.strip()]
    try:
        if len(benchmarks) > 1 and "{benchmark}" not in args.out:
            raise ConfigError(f"--out={args.out!r} with {len(benchmarks)} benchmarks: put {{benchmark}} in the path "
                              "so each selector gets its own file")
        cfgs = [SelectTrainConfig(benchmark=b, timesteps=args.timesteps, seed=args.seed, seed_pool=args.seed_pool)
                for b in benchmarks]  # every config is checked before any training starts
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for cfg in cfgs:
        out = args.out.replace("{benchmark}", cfg.benchmark)
        _, log = train_selector(cfg, out)
        print(f"{cfg.benchmark}: saved {out}")
        if args.export:
            shipped = export_policy(out, SHIPPED_DIR / f"{cfg.benchmark}.pt", cfg)
            print(f"{cfg.benchmark}: exported {shipped} ({shipped.stat().st_size:,} bytes)")
        for row in log:
            print(f"timesteps={row['timesteps']:5d} mean_reward={row['mean_reward']:+.4f} top_action={row['top_action']}")
        if args.eval_episodes:
            res = evaluate_selector(out, episodes=args.eval_episodes)
            print(f"{cfg.benchmark} test, {res['episodes']} episodes: mean Δ_B sb3-select {res['mean']['sb3-select']:+.3f} "
                  f"vs template {res['mean']['template']:+.3f}")
            print("choices:", dict(sorted({c: res["choices"].count(c) for c in res["choices"]}.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
