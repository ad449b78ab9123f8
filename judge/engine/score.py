"""Scores and comparisons: speedup, geomean, and the conservative interval comparison."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

from judge.contract.report import Stats

IntervalOrder = Literal["FASTER", "SLOWER", "SAME"]
CompareVerdict = Literal["FASTER", "SLOWER", "SAME", "AMBIGUOUS"]
NOISE_FLOOR = 0.01  # differences of medians within 1% are noise, never FASTER / SLOWER
NOISE_TARGET = 0.005  # a CI half-width within ±0.5% of its median is narrow (the timing's noise target)


def geomean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v and v > 0]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def interval_order(a: Stats, b: Stats) -> IntervalOrder:
    """`a` vs `b`: FASTER / SLOWER only when the medians' confidence intervals do not overlap."""
    if a.ci_high_ms < b.ci_low_ms:
        return "FASTER"
    if a.ci_low_ms > b.ci_high_ms:
        return "SLOWER"
    return "SAME"


def compare_verdict(a: Stats, b: Stats, floor: float = NOISE_FLOOR,
                    noise: float = NOISE_TARGET) -> CompareVerdict:
    """`a` vs `b`, nvbench-style and conservative (docs/timing.md):

    - FASTER / SLOWER: the medians' 95% CIs do not overlap and the medians differ by more than
      `floor` (relative to `b`'s);
    - SAME: no such difference is possible: the CIs overlap (or the medians are within `floor`)
      and both CIs are narrow (half-width within `noise` of the median);
    - AMBIGUOUS: anything else (wide intervals that overlap: more samples could go either way).
    """
    if not (a.median_ms > 0 and b.median_ms > 0):
        return "AMBIGUOUS"
    apart = interval_order(a, b)
    beyond = abs(a.median_ms / b.median_ms - 1) > floor
    if apart != "SAME" and beyond:
        return apart
    narrow = a.ci_halfwidth_rel <= noise and b.ci_halfwidth_rel <= noise
    return "SAME" if narrow else "AMBIGUOUS"


def ratio_interval(a: Stats, b: Stats) -> tuple[float, float, float]:
    """`a`/`b`: the ratio of the medians, and the interval the two CIs allow (low, high)."""
    return (a.median_ms / b.median_ms, a.ci_low_ms / b.ci_high_ms if b.ci_high_ms else math.inf,
            a.ci_high_ms / b.ci_low_ms if b.ci_low_ms else math.inf)


def drift(before: Stats, after: Stats) -> float:
    return abs(after.median_ms - before.median_ms) / before.median_ms if before.median_ms else 0.0


def drift_flagged(before: Stats, after: Stats, tolerance: float = 0.02) -> bool:
    """Two baseline runs disagree beyond noise: both CIs apart and the medians > tolerance apart."""
    return interval_order(before, after) != "SAME" and drift(before, after) > tolerance
