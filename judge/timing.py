"""The timing loop the parent drives (DESIGN.md §6): warm-up, then batches until the stopping rule.

The worker times the calls it is told to (events around each call, L2 flushed and outputs
poisoned before each); the parent decides when to stop, and bounds every batch's reported GPU
time by its own wall clock: time that does not fit is tampering.
"""
from __future__ import annotations

import time
from typing import Callable, Generator

from .bench import Policy, batch_size, stop_reason, summarize, warmup_count
from .report import Stats
from .runner.local import WorkerFailure, WorkerProcess

WALL_SLACK_MS = 1.0
REST_PER_CALL_MS = 0.5  # calls at least this long rest after each call, shorter ones per batch


class ImpossibleTime(Exception):
    """Reported GPU time that the parent's wall clock cannot contain."""


def time_target(worker: WorkerProcess, policy: Policy, timeout_s: float,
                progress: Callable[[int], object]) -> Generator[object, None, Stats]:
    """Yields progress events (whatever `progress(n)` makes); returns the Stats."""
    per_call = False  # becomes True once the warm-up shows long calls

    def batch(k: int) -> list[float]:
        t0 = time.perf_counter()
        reply = worker.request("time_batch", (timeout_s * k) * (1 + policy.rest) + 30, "timing solve()",
                               k=k, rest=policy.rest, per_call=per_call)
        wall_ms = (time.perf_counter() - t0) * 1000
        times = [float(x) for x in reply.get("times_ms", [])]
        if len(times) != k or any(not (t >= 0) for t in times):
            raise WorkerFailure("protocol", f"timing: asked for {k} times, got {len(times)} valid ones")
        if sum(times) > wall_ms + WALL_SLACK_MS:
            raise ImpossibleTime(f"the worker reported {sum(times):.3f} ms of GPU time for a batch "
                                 f"that took {wall_ms:.3f} ms of wall time")
        return times

    warm = batch(1)
    more = warmup_count(warm[0], policy)
    while more > 0:
        warm += batch(min(more, 1000))
        more -= 1000
    call_ms = sorted(warm[-3:])[len(warm[-3:]) // 2]
    per_call = call_ms >= REST_PER_CALL_MS  # noqa: F841 (read by batch() through the closure)
    k = batch_size(call_ms, policy)
    samples: list[float] = []
    spent_s = 0.0
    while True:
        times = batch(min(k, policy.max_samples - len(samples)))
        samples += times
        spent_s += sum(times) / 1000
        yield progress(len(samples))
        reason = stop_reason(samples, spent_s, policy)
        if reason:
            return summarize(samples, len(warm), reason)
