"""Scores and comparisons: speedup, geomean, and the conservative interval comparison."""
from __future__ import annotations

import math
from typing import Iterable, Literal

from .report import Stats

Comparison = Literal["FASTER", "SLOWER", "SAME"]


def geomean(values: Iterable[float]) -> float | None:
    vals = [v for v in values if v and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def compare(a: Stats, b: Stats) -> Comparison:
    """`a` vs `b`: FASTER / SLOWER only when the medians' confidence intervals do not overlap."""
    if a.ci_high_ms < b.ci_low_ms:
        return "FASTER"
    if a.ci_low_ms > b.ci_high_ms:
        return "SLOWER"
    return "SAME"


def drift(before: Stats, after: Stats) -> float:
    return abs(after.median_ms - before.median_ms) / before.median_ms if before.median_ms else 0.0


def drift_flagged(before: Stats, after: Stats, tolerance: float = 0.02) -> bool:
    """Two baseline runs disagree beyond noise: both CIs apart and the medians > tolerance apart."""
    return compare(before, after) != "SAME" and drift(before, after) > tolerance
