"""``HarnessEditEnv``: observation = failure packet, action = patch text, reward = Δ_B.

Description
    A frozen target agent (model + harness) runs a batch of tasks; its failures become a
    failure packet; the policy answers with a patch; the patched harness reruns the same
    task identities with the same sampling seeds; the reward is the change in mean reward.
Observation
    Text (``FreeText``): the engineer prompt with the packet (``info["packet"]`` holds the
    structured form); at most ``MAX_OBSERVATION_CHARS``: under sequential edits the
    harness-file section is cut, with a marker, so the observation stays in its space.
Action
    Text: Harness-R1 patch JSON, a unified diff over the harness files, or a Python module
    defining hooks (auto-detected).
Reward
    The change of the env's ``metric`` over the batch's completed tasks: ``"score"``, the
    mean reward, or ``"success"``, the share of tasks with reward 1.0 (Harness-R1's
    ``delta_pass_rate``). The default is the benchmark's: ``success`` on WebShop (what
    Harness-R1 scored WebShop patches by), ``score`` elsewhere (0/1 rewards: the same
    number). ``info`` always reports both (``delta_score``, ``delta_success``). An invalid
    patch scores ``invalid_patch_reward`` (below a no-op's 0) without any rollout.
Reset options
    ``task_ids``: the batch, instead of the seed's draw. ``heldout_seed``: an integer >= 0; the
    held-out batch (tasks and sampling seeds) is then drawn from it alone, disjoint from the
    batch and from the seed's own held-out batch, instead of being the seed's public draw
    (the leaderboard verifier draws it in secret). Without it the held-out batch is the seed's.
Termination
    After ``max_edits`` patches (1 = Harness-R1's single step; >1 = Co-Harness-style
    sequential editing where each valid patch becomes the new base).
Ids
    ``HarnessEdit-DBBench-v0``, ``HarnessEdit-WebShop-v0``, ``HarnessEdit-ALFWorld-v0``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from harness_gym.envs.config import EnvConfig, default_metric
from harness_gym.envs.spaces import MAX_OBSERVATION_CHARS, FreeText
from harness_gym.errors import ConfigError, PatchError, WorldError, one_line
from harness_gym.evaluation.benchmarks import get_benchmark
from harness_gym.evaluation.cache import RolloutCache
from harness_gym.evaluation.executors import make_evaluator
from harness_gym.evaluation.stats import paired_ci
from harness_gym.harness.files import Harness
from harness_gym.harness.leakage import GoldStrings, check_leakage
from harness_gym.harness.patch import MAX_PATCH_CHARS, parse_patch
from harness_gym.models.base import Sampling
from harness_gym.models.factory import make_backend
from harness_gym.packets.prompt import render_observation
from harness_gym.packets.registry import packet_builder
from harness_gym.runtime.trajectory import CAUSED_ENV_ERROR, EpisodeResult
from harness_gym.sandbox.isolation import announce as announce_isolation
from harness_gym.benchmarks.base import digest


class HarnessEditEnv(gym.Env):
    metadata = {"render_modes": []}

    def __init__(self, benchmark: str = "dbbench", **kwargs: Any) -> None:
        self.config = EnvConfig(benchmark=benchmark, **kwargs)
        cfg = self.config
        self.spec_ = get_benchmark(cfg.benchmark)
        self.split = cfg.split or self.spec_.default_split
        self.metric = cfg.metric or default_metric(cfg.benchmark)
        self.backend = cfg.backend or self.spec_.backend_for(cfg.data_dir)
        if self.split not in self.spec_.splits:
            raise ConfigError(f"split={self.split!r}: expected one of {list(self.spec_.splits)} for {cfg.benchmark}")
        self.observation_space = FreeText(MAX_OBSERVATION_CHARS)
        self.action_space = FreeText(MAX_PATCH_CHARS)
        self.default_harness = self.spec_.default_harness()
        self._pool = self.spec_.load_tasks(self.split, Path(cfg.data_dir) if cfg.data_dir else None)
        if len(self._pool) < cfg.batch_size + cfg.heldout_batch_size:
            raise ValueError(
                f"split {self.split!r} has {len(self._pool)} tasks, fewer than batch_size + heldout_batch_size = "
                f"{cfg.batch_size + cfg.heldout_batch_size}; lower them or use a larger split"
            )
        self._by_id = {t.task_id: t for t in self._pool}
        self._identity = {t.task_id: t.identity() for t in self._pool}  # hashed once, not per reset
        self.containers = None  # backend="docker[?…]": the target's container, removed on close
        world_backend = self.backend
        if self.backend.partition("?")[0] == "docker":
            from harness_gym.docker import start_target

            self.containers = start_target(cfg.benchmark, self.backend, data_dir=cfg.data_dir)
            world_backend = self.containers.backend
        announce_isolation(cfg.sandbox_isolation)  # one stderr line per process when weaker than bwrap
        try:
            self.evaluator = make_evaluator(
                cfg.executor,
                self.spec_,
                make_backend(cfg.target, benchmark=cfg.benchmark),
                world_backend=world_backend,
                world_label=self.backend,  # rollouts cache by backend kind, not by a container's port
                target_name=cfg.target,
                sampling=Sampling(temperature=cfg.temperature),
                max_concurrency=cfg.concurrency,
                retries=cfg.retries,
                cache=RolloutCache(cfg.cache_dir, max_entries=cfg.cache_entries),
                sandbox_isolation=cfg.sandbox_isolation,
                sandbox_timeout_s=cfg.sandbox_timeout_s,
                progress=cfg.progress,
            )
        except BaseException:
            if self.containers is not None:
                self.containers.close()
            raise
        self._batch: list[Any] = []
        self._seeds: list[int] = []
        self._heldout: list[Any] = []
        self._heldout_seeds: list[int] = []
        self._base: Harness = self.default_harness
        self._base_results: list[EpisodeResult] = []
        self._edits = 0
        self.gold = GoldStrings(benchmark=cfg.benchmark)  # the batch's gold strings, set at reset

    # --- gym API ----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        heldout_seed = _heldout_seed(options, self.config.heldout_batch_size)  # checked before anything is drawn
        rng = self.np_random
        if "task_ids" in options:
            missing = [t for t in options["task_ids"] if t not in self._by_id]
            if missing:
                raise ValueError(f"options['task_ids'] names tasks not in split {self.split!r}: {missing[:3]}")
            self._batch = [self._by_id[t] for t in options["task_ids"]]
            chosen = set(options["task_ids"])
            order = [i for i in rng.permutation(len(self._pool)) if self._pool[i].task_id not in chosen]
        else:
            order = list(rng.permutation(len(self._pool)))
            self._batch = [self._pool[i] for i in order[: self.config.batch_size]]
            order = order[self.config.batch_size :]
        self._seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(self._batch))]
        batch_ids = {self._identity[t.task_id] for t in self._batch}
        rest = [self._pool[i] for i in order if self._identity[self._pool[i].task_id] not in batch_ids]
        self._heldout = rest[: self.config.heldout_batch_size]
        self._heldout_seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(self._heldout))]
        if heldout_seed is not None:
            self._draw_heldout(heldout_seed, batch_ids)
        self._base = self.default_harness
        self._edits = 0
        self.gold = GoldStrings.from_tasks(self.spec_, self._batch + self._heldout, self.default_harness)
        self._base_results = self.evaluator.evaluate(self._base, self._batch, self._seeds)
        if self._base_results and all(r.is_env_error for r in self._base_results):
            self._batch = []  # no baseline: step() asks for a reset
            raise self._world_down(f"every one of the {len(self._base_results)} baseline episodes ended in an "
                                   "environment error", self._base_results[0].error)
        if self._heldout:  # the held-out baseline too, so a step runs (and costs) only the patched harness
            self.evaluator.evaluate(self._base, self._heldout, self._heldout_seeds)
        obs, packet = self._observe(self._base, self._base_results)
        info = {
            "packet": packet.to_dict(),
            "harness_version": self._base.version,
            "batch": [t.task_id for t in self._batch],
            "batch_digest": self.batch_digest,
            "baseline_score": _mean(self._base_results),
            "baseline_success": _mean(self._base_results, "success"),
            "metric": self.metric,
            "seeds": list(self._seeds),
        }
        if heldout_seed is not None:  # only then: without the option, info is what it always was
            info.update(heldout_seed=heldout_seed, heldout_batch=[t.task_id for t in self._heldout],
                        heldout_seeds=list(self._heldout_seeds))
        return obs, info

    def step(self, action: str | bytes) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._batch:
            raise RuntimeError("call reset() before step()")
        self._edits += 1
        terminated = self._edits >= self.config.max_edits
        base = self._base
        try:
            patch = parse_patch(action, base)
            check_leakage(patch, self.gold, base=base)
            patched = patch.apply(base)
        except PatchError as exc:
            obs, packet = self._observe(base, self._base_results)
            bad: dict[str, Any] = {"patch_valid": False, "patch_error": str(exc), "harness_version": base.version,
                                   "base_harness_version": base.version, "baseline_score": _mean(self._base_results),
                                   "baseline_success": _mean(self._base_results, "success"), "patched_score": None,
                                   "patched_success": None, "delta": None, "delta_score": None, "delta_success": None,
                                   "metric": self.metric, "per_task": [], "packet": packet.to_dict()}
            return obs, float(self.config.invalid_patch_reward), terminated, False, bad
        try:
            before, [(after, (deltas, per_task, incomplete))] = self.compare(base, [patched], self._batch, self._seeds,
                                                                             before=self._base_results)
            if self._heldout:
                _, [(_, held)] = self.compare(base, [patched], self._heldout, self._heldout_seeds)
        except WorldError:
            self._edits -= 1  # a failing environment scored nothing: the same step can be taken again
            raise
        delta = deltas[self.metric]
        info: dict[str, Any] = {
            "patch_valid": True,
            "patch_error": None,
            "patch_kind": patch.kind,
            "patch_hash": digest(patch.normalized)[:16],
            "harness_version": patched.version,
            "base_harness_version": base.version,
            "baseline_score": _mean(before),
            "patched_score": _mean(after),
            "baseline_success": _mean(before, "success"),
            "patched_success": _mean(after, "success"),
            "metric": self.metric,
            "delta": delta,
            "delta_score": deltas["score"],
            "delta_success": deltas["success"],
            "delta_ci": _ci(per_task, self.metric),
            "per_task": per_task,
            "incomplete": incomplete,
        }
        if self._heldout:
            h_deltas, h_per_task, h_incomplete = held
            info.update(heldout_delta=h_deltas[self.metric], heldout_delta_score=h_deltas["score"],
                        heldout_delta_success=h_deltas["success"], heldout_ci=_ci(h_per_task, self.metric),
                        heldout_incomplete=h_incomplete)
        if self.config.max_edits > 1:
            self._base, self._base_results = patched, after
        obs, packet = self._observe(patched, after)
        info["packet"] = packet.to_dict()
        return obs, float(delta), terminated, False, info

    def close(self) -> None:
        try:
            if hasattr(self, "evaluator"):
                self.evaluator.close()
        finally:
            if getattr(self, "containers", None) is not None:
                self.containers.close()
        super().close()

    # --- helpers ------------------------------------------------------------------------
    def _draw_heldout(self, heldout_seed: int, batch_ids: set[str]) -> None:
        """Replace the seed's public held-out batch with one drawn from ``heldout_seed`` alone.

        The draw is the public one's recipe on its own generator: a permutation of the split, tasks
        sharing an identity with the batch left out — and, here, the public held-out batch's tasks
        too, so nothing a submitter could have scored for this seed is in it — the first
        ``heldout_batch_size``, then their sampling seeds. The generator is
        ``SeedSequence(heldout_seed, spawn_key=(1,))``: it shares no stream with ``reset(seed=…)``.
        The batch, its sampling seeds and the packet are untouched."""
        seen = batch_ids | {self._identity[t.task_id] for t in self._heldout}
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(heldout_seed, spawn_key=(HELDOUT_DRAW_KEY,))))
        order = rng.permutation(len(self._pool))
        rest = [self._pool[i] for i in order if self._identity[self._pool[i].task_id] not in seen]
        if len(rest) < self.config.heldout_batch_size:
            self._batch = []  # nothing was evaluated: step() asks for a reset
            raise ConfigError(f"options['heldout_seed']: split {self.split!r} has {len(rest)} tasks outside the batch and "
                              f"the public held-out batch, fewer than heldout_batch_size={self.config.heldout_batch_size}; "
                              "lower it or use a larger split")
        self._heldout = rest[: self.config.heldout_batch_size]
        self._heldout_seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=len(self._heldout))]

    @property
    def batch_digest(self) -> str:
        return digest({"tasks": [self._identity[t.task_id] for t in self._batch], "seeds": self._seeds})

    def evaluate_patches(self, patches: Sequence[str], *, episodes: bool = False) -> list[dict[str, Any]]:
        """Score K candidate patches on the current batch in one concurrent, cached call. ``episodes``: each valid
        entry also carries its episodes and the baseline's (``EpisodeResult.to_dict``: messages, hook events)."""
        parsed: list[Harness | str] = []
        for text in patches:
            try:
                patch = parse_patch(text, self._base)
                check_leakage(patch, self.gold, base=self._base)
                parsed.append(patch.apply(self._base))
            except PatchError as exc:
                parsed.append(str(exc))
        valid = [h for h in parsed if isinstance(h, Harness)]
        before, compared = self.compare(self._base, valid, self._batch, self._seeds) if valid else ([], [])
        patched_runs = iter(compared)  # in ``valid`` order: never looked up by the 16-hex version, which can collide
        base_episodes = [r.to_dict() for r in before] if episodes else []  # one list, shared by every entry
        out = []
        for item in parsed:
            if isinstance(item, str):
                out.append({"patch_valid": False, "patch_error": item, "reward": float(self.config.invalid_patch_reward)})
            else:
                after, (deltas, per_task, incomplete) = next(patched_runs)
                out.append({"patch_valid": True, "patch_error": None, "reward": deltas[self.metric],
                            "delta_score": deltas["score"], "delta_success": deltas["success"],
                            "harness_version": item.version, "per_task": per_task, "incomplete": incomplete})
                if episodes:
                    out[-1]["episodes"] = [r.to_dict() for r in after]
                    out[-1]["baseline_episodes"] = base_episodes
        return out

    def compare(self, base: Harness, candidates: Sequence[Harness], tasks: Sequence[Any], seeds: Sequence[int],
                before: Sequence[EpisodeResult] | None = None
                ) -> tuple[list[EpisodeResult], list[tuple[list[EpisodeResult], tuple[dict[str, float], list[dict[str, Any]], list[str]]]]]:
        """Run ``base`` (unless its results, ``before``, are given) and every candidate on the same
        tasks and seeds; return the base's results and, per candidate, its results and (Δ by metric,
        per-task rows, incomplete task ids) against the base.

        An environment error is never scored as a task failure — unless a harness caused it. Where
        one side's episode ended in one and the other's did not, the task is run again afresh (no
        cache) ``ENV_ERROR_CHECKS`` times under each harness, each harness in its own call: an
        episode that completes on a rerun replaces the errored one (the error was transient); one
        that fails on every rerun while the other side completes on every rerun was caused by its
        harness (a hook that rewrites an action into one that kills the session, a tool list the
        model server refuses, …) and is scored as a failure (status ``caused_env_error``, reward 0)
        — on either side, so a patch can neither hide its losses as errors nor inherit a base's;
        anything else is left out as incomplete. If every candidate's comparison is left with no
        completed task, the environment is failing: ``WorldError``, and nothing is scored."""
        tasks, seeds = list(tasks), [int(x) for x in seeds]
        if before is None:
            runs = self.evaluator.evaluate_many([base, *candidates], tasks, seeds)
            before, afters = list(runs[0]), [list(r) for r in runs[1:]]
        else:
            before = list(before)
            afters = [list(r) for r in self.evaluator.evaluate_many(list(candidates), tasks, seeds)] if candidates else []
        suspect = sorted({i for after in afters for i, (b, a) in enumerate(zip(before, after))
                          if b.is_env_error != a.is_env_error})
        if suspect:
            sub_t, sub_s = [tasks[i] for i in suspect], [seeds[i] for i in suspect]
            checks = range(ENV_ERROR_CHECKS)
            base_checks = [self.evaluator.evaluate_many([base], sub_t, sub_s, fresh=True)[0] for _ in checks]
            cand_checks = [self.evaluator.evaluate_many(list(candidates), sub_t, sub_s, fresh=True) for _ in checks]
            for k, i in enumerate(suspect):
                b_runs = [run[k] for run in base_checks]
                c_runs = [[run[c][k] for run in cand_checks] for c in range(len(candidates))]
                before[i] = _settle(before[i], b_runs, others=c_runs)
                for c, after in enumerate(afters):
                    after[i] = _settle(after[i], c_runs[c], others=[b_runs])
        out = [(after, _compare_metrics(before, after)) for after in afters]
        if tasks and out and all(len(inc) == len(tasks) for _, (_, _, inc) in out):
            first = next((r.error for run in (before, *afters) for r in run if r.is_env_error), None) or "unknown"
            raise self._world_down(f"nothing was scored — every one of the {len(tasks)} tasks ended in an environment "
                                   "error under both harnesses", first)
        return before, out

    def _world_down(self, what: str, first: str) -> WorldError:
        """The one-line error for a target or world server that completed nothing: what failed first,
        the episode's own error last (so a long one is what the cut at 500 characters shortens)."""
        return WorldError(one_line(f"{self.config.benchmark} on target {self.config.target!r}: {what}; is the target "
                                   f"or world server up? First: {first}", limit=500))

    def report(self) -> dict[str, Any]:
        """Non-deterministic facts kept out of ``info``: cache hits, episodes run, sandbox layers."""
        ev = self.evaluator
        return {"episodes_run": ev.episodes_run, "cache_hits": ev.cache.hits, "cache_misses": ev.cache.misses,
                "model_batches": ev.batcher.batches, "model_requests": ev.batcher.requests, "memo_hits": ev.batcher.memo_hits,
                "sandbox_layers": ev.sandbox.layers()}

    def _observe(self, harness: Harness, results: list[EpisodeResult]) -> tuple[str, Any]:
        builder = packet_builder(self.config.benchmark)
        packet = builder(results, batch_tag=f"{self.split}-{self.batch_digest[:12]}",
                         batch_digest=self.batch_digest, harness=harness)
        return render_observation(packet, harness, max_chars=self.observation_space.max_length), packet


ENV_ERROR_CHECKS = 2  # fresh reruns per harness before an environment error is put down to a harness
HELDOUT_DRAW_KEY = 1  # the spawn key of the held-out draw's generator (``_draw_heldout``)


def _heldout_seed(options: dict[str, Any], heldout_batch_size: int) -> int | None:
    """``options["heldout_seed"]`` checked: None when absent (or None: the seed's public draw), else an int >= 0."""
    value = options.get("heldout_seed")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ConfigError(f"options['heldout_seed']={one_line(repr(value), limit=40)}: expected an integer >= 0 (the seed of an independent "
                          "held-out draw, e.g. secrets.randbelow(2**53)), or None for the seed's own held-out batch")
    if not heldout_batch_size:
        raise ConfigError(f"options['heldout_seed']={int(value)}: this env has heldout_batch_size=0, so there is no "
                          "held-out batch to draw; make it with heldout_batch_size > 0 or drop the option")
    return int(value)


def _settle(result: EpisodeResult, reruns: list[EpisodeResult], others: list[list[EpisodeResult]]) -> EpisodeResult:
    """An episode after its fresh reruns (``compare``): unchanged if it completed; the first rerun that
    completed if any (a transient error); scored as a failure its harness caused if every rerun failed
    while one of ``others`` (the other side's reruns) completed every time; else still an error."""
    if not result.is_env_error:
        return result
    done = next((r for r in reruns if not r.is_env_error), None)
    if done is not None:
        return done
    if any(runs and all(not r.is_env_error for r in runs) for runs in others):
        return replace(result, status=CAUSED_ENV_ERROR, reward=0.0, success=False)
    return result


def solved(reward: float) -> float:
    """Harness-R1's pass: reward 1.0 (``reward_threshold``)."""
    return 1.0 if reward >= 1.0 else 0.0


def _mean(results: list[EpisodeResult], metric: str = "score") -> float:
    done = [r.reward if metric == "score" else solved(r.reward) for r in results if not r.is_env_error]
    return sum(done) / len(done) if done else 0.0


def _compare_metrics(before: list[EpisodeResult], after: list[EpisodeResult]) -> tuple[dict[str, float], list[dict[str, Any]], list[str]]:
    """Δ score and Δ success over tasks completed in both runs; env errors are reported, never scored."""
    per_task, incomplete, diffs, solves = [], [], [], []
    for b, a in zip(before, after):
        row = {"task_id": b.task_id, "baseline_reward": b.reward, "patched_reward": a.reward,
               "baseline_status": b.status, "patched_status": a.status}
        per_task.append(row)
        if b.is_env_error or a.is_env_error:
            incomplete.append(b.task_id)
        else:
            diffs.append(a.reward - b.reward)
            solves.append(solved(a.reward) - solved(b.reward))
    deltas = {"score": sum(diffs) / len(diffs) if diffs else 0.0, "success": sum(solves) / len(solves) if solves else 0.0}
    return deltas, per_task, incomplete


def _ci(per_task: list[dict[str, Any]], metric: str = "score") -> list[float]:
    rows = [r for r in per_task if "env_error" not in (r["baseline_status"], r["patched_status"])]
    f = (lambda x: x) if metric == "score" else solved  # noqa: E731
    ci = paired_ci([f(r["baseline_reward"]) for r in rows], [f(r["patched_reward"]) for r in rows])
    return [ci.lo, ci.hi]
