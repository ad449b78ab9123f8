"""The timing method's statistics (docs/timing.md): median with a distribution-free confidence
interval, and the adaptive stopping rule. Pure Python (no torch, no pydantic at import): the
tests drive it with synthetic samples. The parent runs the loop (judge/engine/timing.py): the
worker only times the batches it is asked for.

A sample is one timed batch: its summed GPU time divided by its calls (`batch_sample`). Within a
batch the calls' inputs are all in place before its first call, so a first call can compute every
answer and leave the others a copy: a per-call median would see the copies, the batch's total
cannot be lowered by moving work between its calls.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import median
from typing import TYPE_CHECKING

from judge.worker.protocol import MAX_CALLS_PER_BATCH

if TYPE_CHECKING:  # stays light to import (no pydantic)
    from judge.contract.report import Stats


@dataclass(frozen=True)
class TimingPolicy:
    noise: float = 0.005  # stop when the 95% CI half-width of the median is within this fraction
    # Timed calls before the noise target may stop the loop: at 10, no more than min_batches asks
    # for. It was 20, which bound only where a batch is one call (5 ms or more). On an H200 (2026-11-29,
    # scripts/probes/repeatability.py, docs/benchmarks.md) 10 kept sgemm 03's 5-run spreads within
    # 0.18% (cuBLAS 0.48%; 0.10% / 0.34% at 20), its medians where they were (23.945 ms at 8192^3),
    # and took 1.2 s off its verdict: 10 more calls of 22-24 ms, and their rests, per target run.
    min_samples: int = 10
    min_batches: int = 10  # and batch samples: the median and its CI are over batches
    max_samples: int = 5000  # timed calls: the loop stops there ("max_samples")
    budget_s: float = 2.0  # wall time of one target's timed batches on one shape (parent's checks and rests included)
    # GPU time in timed calls before the noise target may stop the loop. The CI of the median
    # assumes independent samples, but the clock follows the board's power management, so a
    # window too short sees one phase of it: with one sample per call and no hold, hgemm's medians
    # over 5 runs spread up to 1.3% when the loop could stop after ~50 ms, 0.46% with 0.3 s. With
    # batch samples and the hold (H100, 2026-11-24, docs/benchmarks.md), 0.1 s kept every
    # candidate median of hgemm 06 and vector_add 02 within 0.23% over 5 runs (baselines 0.87%),
    # and cut their verdicts from 13-14 s to 6-10 s.
    min_time_s: float = 0.1
    # ... or this much wall time of timed batches, whichever comes first: the power management's
    # phases pass in wall time, and a short call's batches are spread over far more wall time than
    # GPU time by the parent's fresh inputs and checks around each (vector_add's 0.14 ms calls
    # took 2.3 s of wall time to fill 0.1 s of GPU time). It was 0.3 s, and warmup_ms 25: on an
    # H200 (2026-11-28, scripts/probes/repeatability.py, docs/benchmarks.md) 0.15 s and 10 ms kept
    # every 5-run spread of six problems' model answers and baselines within 0.82% (0.66% before)
    # and cut their in-process verdicts from 6.0-6.8 s to 4.3-4.9 s; 0.1 s saved little more.
    min_wall_s: float = 0.15
    warmup_ms: float = 10.0
    min_warmup_calls: int = 3
    # GPU time per batch between stopping checks (the input slots cap a batch too: 8 calls at most).
    # It was 0.05: then every call under 6 ms had 8 per batch, and the minimum window of 10 batches
    # was 80 calls, 0.35 s per run of flash_attn's baselines at N = 16384 (4.4 ms calls) where 20
    # calls met min_samples (20 then) and min_time_s. Shorter batches also mean less to front-load.
    batch_s: float = 0.01
    rest: float = 1.0  # GPU idle after timed work, as a multiple of its time (power stays under the cap)
    hold: bool = True  # hold each call on the GPU until it is issued (judge/engine/timing.py)

    def for_baseline(self) -> TimingPolicy:
        """Each baseline run (before and after the candidate) gets half the candidate's time."""
        return replace(self, budget_s=self.budget_s / 2, min_time_s=self.min_time_s / 2, min_wall_s=self.min_wall_s / 2)


def median_ci(samples: list[float], z: float = 1.96) -> tuple[float, float]:
    """95% CI of the median from order statistics (binomial, normal approximation).

    Ranks n/2 ± z·√n/2 of the sorted samples; it needs no assumption on the distribution, which
    for GPU timings is skewed (a few slow outliers), so mean ± σ would be misleading.
    """
    s = sorted(samples)
    n = len(s)
    if n == 0:
        raise ValueError("no samples")
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half))
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return s[lo], s[max(lo, hi)]


def batch_sample(times: list[float]) -> float:
    """A timed batch's sample: its summed time per call (ms)."""
    return sum(times) / len(times)


def summarize(samples: list[float], calls: list[float], warmup_calls: int, stop_reason: str) -> Stats:
    """`samples`: one per timed batch (`batch_sample`); `calls`: every timed call's time."""
    from judge.contract.report import Stats

    lo, hi = median_ci(samples)
    return Stats(median_ms=median(samples), ci_low_ms=lo, ci_high_ms=hi, min_ms=min(calls),
                 samples=len(calls), batches=len(samples), warmup_calls=warmup_calls, stop_reason=stop_reason)


def stop_reason(samples: list[float], calls: int, spent_s: float, policy: TimingPolicy,
                wall_s: float | None = None) -> str | None:
    """Why to stop now, or None to go on. `samples`: one per timed batch; `calls`: timed calls;
    `spent_s`: their GPU time (the window `min_time_s` asks for); `wall_s`: the wall time the timed
    batches took, everything the parent did around them included, which `budget_s` bounds and
    which meets the window at `min_wall_s` (GPU time where it is not given: it is never more than
    the wall time)."""
    n = len(samples)
    wall = spent_s if wall_s is None else wall_s
    if calls >= policy.max_samples:
        return "max_samples"
    window = spent_s >= min(policy.min_time_s, policy.budget_s) or wall >= min(policy.min_wall_s, policy.budget_s)
    if n >= policy.min_batches and calls >= policy.min_samples and window:
        lo, hi = median_ci(samples)
        m = median(samples)
        if m > 0 and (hi - lo) / 2 / m <= policy.noise:
            return "noise"
    if wall >= policy.budget_s and n >= 3:
        return "budget"
    return None


def batch_size(per_call_ms: float, policy: TimingPolicy) -> int:
    """Calls per batch so that one batch takes about `policy.batch_s` of GPU time."""
    return max(1, min(MAX_CALLS_PER_BATCH, int(policy.batch_s * 1000 / max(per_call_ms, 1e-4))))


def wall_batch_size(k: int, wall_per_call_s: float, policy: TimingPolicy) -> int:
    """At most `k` calls, and few enough that `min_batches` batches take about `min_wall_s` at the
    wall time per call the last timed batch took, the parent's fresh inputs and checks around it
    included. Those are per call and, on large inputs, many times the call (vector_add at 2^28: 0.73
    ms of GPU time, ~7 ms of drawing, sealing and checksums), so that batches of 8 made the minimum
    of 10 batches take 0.7 s where the window then asked for 0.3 s; smaller batches meet both at once."""
    if policy.min_wall_s <= 0 or wall_per_call_s <= 0:
        return k
    return max(1, min(k, int(policy.min_wall_s / policy.min_batches / wall_per_call_s)))


MIN_CALL_MS = 1e-3  # a call counts at least this much towards the warm-up (bounds its length)


def warmup_left(warm: list[float], policy: TimingPolicy) -> int:
    """How many more warm-up calls after `warm` (the warm-up's times so far, in order): at least
    `min_warmup_calls` in all and `warmup_ms` of time, each call counted as at least MIN_CALL_MS,
    the calls still missing estimated at the median of the last three."""
    done = sum(max(t, MIN_CALL_MS) for t in warm)
    calls = max(0, policy.min_warmup_calls - len(warm))
    if done >= policy.warmup_ms:
        return calls
    recent = max(median(warm[-3:]), MIN_CALL_MS) if warm else MIN_CALL_MS
    return max(calls, math.ceil((policy.warmup_ms - done) / recent))
