"""The timing loop the parent drives (DESIGN.md §6): warm-up, then batches until the stopping rule.

The worker times the calls it is told to (events around each call, L2 flushed and outputs
poisoned before each); the parent decides when to stop, and bounds every batch's reported GPU
time by its own wall clock: time that does not fit is tampering.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Generator
from typing import TypeVar

from judge.contract.report import Stats
from judge.engine.roles import Worker
from judge.engine.stats import TimingPolicy, batch_size, stop_reason, summarize, warmup_count
from judge.worker.client import WorkerFailure
from judge.worker.protocol import MAX_CALLS_PER_BATCH

WALL_SLACK_MS = 1.0
REST_PER_CALL_MS = 0.5  # calls at least this long rest after each call, shorter ones per batch
T = TypeVar("T")


class ImpossibleTime(Exception):
    """Reported GPU time that the parent's wall clock cannot contain."""


class Timer:
    """One target's timing loop, a batch at a time, so that the parent can interleave targets
    (`judge compare`): `warm_up()`, then `step()` until it returns a stop reason, then `stats()`."""

    def __init__(self, worker: Worker, policy: TimingPolicy, timeout_s: float,
                 before_batch: Callable[[int], object] | None = None,
                 after_batch: Callable[[int, list[float]], object] | None = None, max_k: int | None = None):
        """`before_batch(k)` and `after_batch(k, times)` run in the parent around every batch (warm-up
        included; `times` are the batch's reported times): the pipeline clears and reads the check
        records there, compares the times with the GPU's stamps, and re-draws the inputs. `max_k`
        caps the calls per batch after the warm-up (the pipeline's input slots: with one fresh
        draw per batch, no timed call sees inputs an earlier call saw)."""
        self.worker, self.policy, self.timeout_s = worker, policy, timeout_s
        self.before_batch, self.after_batch, self.max_k = before_batch, after_batch, max_k
        self.per_call = False  # becomes True once the warm-up shows long calls
        self.warm: list[float] = []
        self.samples: list[float] = []
        self.spent_s = 0.0
        self.k = 1
        self.reason: str | None = None

    def batch(self, k: int) -> list[float]:
        """k timed calls in the worker; their times, bounded by the parent's wall clock."""
        policy = self.policy
        if self.before_batch:
            self.before_batch(k)
        t0 = time.perf_counter()
        reply = self.worker.request("time_batch", (self.timeout_s * k) * (1 + policy.rest) + 30,
                                    "timing solve()", k=k, rest=policy.rest, per_call=self.per_call)
        wall_ms = (time.perf_counter() - t0) * 1000
        times = [float(x) for x in reply.get("times_ms", [])]
        if len(times) != k or any(not (t >= 0) for t in times):
            raise WorkerFailure("protocol", f"timing: asked for {k} times, got {len(times)} valid ones")
        if sum(times) > wall_ms + WALL_SLACK_MS:
            raise ImpossibleTime(f"the worker reported {sum(times):.3f} ms of GPU time for a batch "
                                 f"that took {wall_ms:.3f} ms of wall time")
        if self.after_batch:
            self.after_batch(k, times)
        return times

    def warm_up(self) -> None:
        self.warm = self.batch(1)
        more = warmup_count(self.warm[0], self.policy)
        while more > 0:
            self.warm += self.batch(min(more, MAX_CALLS_PER_BATCH))
            more -= MAX_CALLS_PER_BATCH
        call_ms = sorted(self.warm[-3:])[len(self.warm[-3:]) // 2]
        self.per_call = call_ms >= REST_PER_CALL_MS
        self.k = min(batch_size(call_ms, self.policy), self.max_k or MAX_CALLS_PER_BATCH)

    def step(self) -> str | None:
        """One batch of samples; the stopping rule's reason to stop now, or None to go on."""
        times = self.batch(min(self.k, self.policy.max_samples - len(self.samples)))
        self.samples += times
        self.spent_s += sum(times) / 1000
        self.reason = stop_reason(self.samples, self.spent_s, self.policy)
        return self.reason

    def stats(self) -> Stats:
        assert self.reason is not None, "stats() before the stopping rule said stop"
        return summarize(self.samples, len(self.warm), self.reason)


def time_target(worker: Worker, policy: TimingPolicy, timeout_s: float,
                progress: Callable[[int], T], before_batch: Callable[[int], object] | None = None,
                after_batch: Callable[[int, list[float]], object] | None = None,
                after_warmup: Callable[[], object] | None = None,
                max_k: int | None = None) -> Generator[T, None, Stats]:
    """Yields progress events (whatever `progress(n)` makes); returns the Stats. `after_warmup()`
    runs between the warm-up and the first timed batch."""
    timer = Timer(worker, policy, timeout_s, before_batch, after_batch, max_k)
    timer.warm_up()
    if after_warmup:
        after_warmup()
    while True:
        reason = timer.step()
        yield progress(len(timer.samples))
        if reason:
            return timer.stats()
