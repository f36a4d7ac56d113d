"""``EnvConfig``: every env keyword argument, validated in one place."""
from __future__ import annotations

from dataclasses import dataclass

from harness_gym.errors import ConfigError

METRICS = ("score", "success")
# What Harness-R1 scored patches by: WebShop's stored evaluation reports ``reward_metric: delta_pass_rate``
# (Δ of the share of tasks with reward 1.0); DBBench and ALFWorld rewards are 0/1, so score == success.
DEFAULT_METRIC = {"webshop": "success"}


def default_metric(benchmark: str) -> str:
    return DEFAULT_METRIC.get(benchmark, "score")


@dataclass(frozen=True)
class EnvConfig:
    benchmark: str = "dbbench"
    target: str = "sim"
    split: str | None = None  # None: the benchmark's default split
    batch_size: int = 10
    data_dir: str | None = None
    backend: str | None = None  # None: the benchmark's default world backend
    invalid_patch_reward: float = -0.1
    heldout_batch_size: int = 0
    max_edits: int = 1
    temperature: float = 0.0
    concurrency: int = 64
    retries: int = 2
    cache_dir: str | None = None
    cache_entries: int = 256  # rollouts kept in memory (LRU); cache_dir keeps them all on disk
    executor: str = "local"  # "local", "ray" or "ray://host:port"
    sandbox_isolation: str | None = None  # None: the strongest that works here (bwrap > unshare > process)
    sandbox_timeout_s: float = 2.0  # per hook call, enforced from outside the worker
    metric: str | None = None  # "score" (mean reward) or "success" (share with reward 1.0); None: the benchmark's default
    progress: bool = False  # a bar on stderr over each evaluation call's episodes (for real targets, whose calls take minutes)

    def __post_init__(self) -> None:
        for name in ("batch_size", "max_edits", "concurrency"):
            if int(getattr(self, name)) < 1:
                raise ConfigError(f"{name}={getattr(self, name)!r}: expected an integer >= 1")
        if self.cache_entries < 1 or self.sandbox_timeout_s <= 0:
            raise ConfigError(f"cache_entries={self.cache_entries} and sandbox_timeout_s={self.sandbox_timeout_s} must be positive")
        if not (self.executor == "local" or self.executor == "ray" or self.executor.startswith("ray://")):
            raise ConfigError(f"executor={self.executor!r}: expected 'local', 'ray' or 'ray://host:port'")
        if self.heldout_batch_size < 0 or self.retries < 0:
            raise ConfigError("heldout_batch_size and retries must be >= 0")
        if not isinstance(self.progress, bool):  # "no" or "0" would be truthy: a bar nobody asked for
            raise ConfigError(f"progress={self.progress!r}: expected True or False")
        if self.metric is not None and self.metric not in METRICS:
            raise ConfigError(f"metric={self.metric!r}: expected one of {list(METRICS)} (or None for the benchmark's default)")
        if self.invalid_patch_reward > 0:
            raise ConfigError(
                f"invalid_patch_reward={self.invalid_patch_reward}: must be <= 0 (a no-op patch scores 0; an invalid one must not beat it)"
            )
