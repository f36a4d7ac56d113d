"""Paired statistics for Δ_B: mean with a Student-t confidence interval."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

# two-sided 95% Student-t quantiles for df = 1..30
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df: int) -> float:
    if df < 1:
        return math.inf
    if df <= 30:
        return _T975[df - 1]
    # Cornish-Fisher expansion around the normal quantile; exact to ~1e-3 for df > 30
    z = 1.959964
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class MeanCI:
    mean: float
    lo: float
    hi: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:+.3f} [{self.lo:+.3f}, {self.hi:+.3f}]"


def mean_ci(values: Sequence[float]) -> MeanCI:
    """Mean and 95% t-interval; pass paired differences for a paired interval."""
    n = len(values)
    if n == 0:
        return MeanCI(math.nan, math.nan, math.nan, 0)
    mean = sum(values) / n
    if n == 1:
        return MeanCI(mean, -math.inf, math.inf, 1)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = t975(n - 1) * math.sqrt(var / n)
    return MeanCI(mean, mean - half, mean + half, n)


def paired_ci(a: Sequence[float], b: Sequence[float]) -> MeanCI:
    """CI of mean(b - a) over paired observations."""
    if len(a) != len(b):
        raise ValueError(f"paired_ci needs equal lengths, got {len(a)} and {len(b)}")
    return mean_ci([y - x for x, y in zip(a, b)])
