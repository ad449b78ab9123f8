"""The timing loop the parent drives (docs/timing.md): warm-up, then batches until the stopping rule.

The worker times the calls it is told to (events around each call, L2 flushed and outputs
poisoned before each); the parent decides when to stop, and bounds every batch's reported GPU
time by its own wall clock: time that does not fit is tampering.

Deadlines are per call, whatever the batch: every `time_batch` request must answer within the
problem's `timeout_s` plus DEADLINE_SLACK_S, and batches are sized so that an honest one stays
within BATCH_SHARE of `timeout_s` (calls and rests together, at the costliest call of the last
few batches). A call that stalls is a TIMEOUT about `timeout_s` after its batch began, never a
deadline grown with a batch that fast first calls made large; the warm-up's batches grow by
WARMUP_GROWTH at most.

The hold (docs/timing.md, "The hold"): every call is held on the GPU until the worker has issued
it, so its time is the GPU's alone. A hold the host did not let go in time (`late`: solve() waited
for the device, or took that long to issue its work, or the host was not scheduled) makes its batch
not count. Holding is off for the rest of the target once most calls of a batch were late (a
solve() that waits for the device is late at every call) or LATE_BATCHES batches in a row had a late
hold, except in the target's very first call (a library's one-off set-up): a rare host hiccup costs
one batch, not the hold. A `crowded` hold (kernels of an earlier call still held SMs when a call began: work
outside the timed windows) is an impossible time. The calls' host times (solve() on the CPU) are
kept apart from the GPU's.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Generator
from statistics import median
from typing import TypeVar

from judge.contract.report import Stats
from judge.engine.roles import Worker
from judge.engine.stats import (
    TimingPolicy,
    batch_sample,
    batch_size,
    stop_reason,
    summarize,
    wall_batch_size,
    warmup_left,
)
from judge.gpu.seal import Key
from judge.worker.client import WorkerFailure
from judge.worker.protocol import MAX_CALLS_PER_BATCH

WALL_SLACK_MS = 1.0
REST_PER_CALL_MS = 0.5  # calls at least this long rest after each call, shorter ones per batch
DEADLINE_SLACK_S = 2.0  # a time_batch request's deadline: timeout_s (one call) + this
BATCH_SHARE = 0.5  # an honest batch's calls and rests fit in this share of timeout_s
WARMUP_GROWTH = 4  # each warm-up batch has at most this many times the calls of the one before
LATE_BATCHES = 2  # this many batches in a row with a late hold turn holding off
COST_BATCHES = 3  # a call's cost: the most seen in this many last batches (a slow first call passes)
T = TypeVar("T")


class ImpossibleTime(Exception):
    """Reported GPU time that the parent's wall clock cannot contain."""


class Timer:
    """One target's timing loop, a batch at a time, so that the parent can interleave targets
    (`judge compare`): `warm_up()`, then `step()` until it returns a stop reason, then `stats()`."""

    def __init__(self, worker: Worker, policy: TimingPolicy, timeout_s: float,
                 before_batch: Callable[[int], list[Key] | None] | None = None,
                 after_batch: Callable[[int, list[float]], object] | None = None, max_k: int | None = None):
        """`before_batch(k)` and `after_batch(k, times)` run in the parent around every batch (warm-up
        included; `times` are the batch's reported times): the pipeline clears and reads the check
        records there, compares the times with the GPU's stamps, re-draws and seals the inputs and
        stashes a call for the re-check. What `before_batch` returns, if not None, is the batch's
        keys, one per call: the batch is sealed (judge/gpu/seal.py). `max_k` caps the calls per batch
        after the warm-up (the pipeline's input slots: with one fresh draw per batch, no timed call
        sees inputs an earlier call saw)."""
        self.worker, self.policy, self.timeout_s = worker, policy, timeout_s
        self.before_batch, self.after_batch, self.max_k = before_batch, after_batch, max_k
        self.per_call = False  # becomes True once the warm-up shows long calls
        self.warm: list[float] = []
        self.samples: list[float] = []  # one per timed batch: its summed time per call
        self.calls: list[float] = []  # every timed call's time
        self.spent_s = 0.0  # GPU time of the counted timed calls
        self.wall_s = 0.0  # wall time of every timed batch, the parent's hooks around it included
        self.costs: deque[float] = deque(maxlen=COST_BATCHES)  # per batch: its costliest call (ms)
        self.k = self.k_gpu = 1  # calls per timed batch: by the GPU time (`warm_up`), then the wall time (`step`)
        self.reason: str | None = None
        self.hold = policy.hold  # turned off by a late hold (the module's docstring)
        self.unheld = 0  # timed batches that were not held
        self.host: list[float] = []  # every timed call's host time (ms)
        self.last_held = True  # whether the last batch was held all through
        self.last_late = False  # whether a hold of the last batch was late
        self.late_run = 0  # batches in a row, up to the last, with a late hold
        self.last_host: list[float] = []

    @property
    def deadline_s(self) -> float:
        """Every time_batch request's deadline, whatever its calls."""
        return self.timeout_s + DEADLINE_SLACK_S

    def fit(self, k: int) -> int:
        """At most `k` calls, and few enough that the batch, at the costliest call of the last
        COST_BATCHES batches (its rest and the batch's overheads included), stays within
        BATCH_SHARE of timeout_s; 1 before anything was timed, and at least 1. Only an honest
        batch's fate depends on it: the deadline is per call whatever k is."""
        cost_ms = max(self.costs, default=0.0)
        if cost_ms <= 0:
            return 1
        return max(1, min(k, int(BATCH_SHARE * self.timeout_s * 1000 / cost_ms)))

    def batch(self, k: int) -> list[float]:
        """k timed calls in the worker; their times, bounded by the parent's wall clock. A batch of
        one call rests in the parent, after the reply: its request holds the call alone."""
        rest = self.policy.rest
        keys = self.before_batch(k) if self.before_batch else None
        sealed = {"sealed": True, "keys": [key.wire() for key in keys]} if keys is not None else {}
        t0 = time.perf_counter()
        reply = self.worker.request("time_batch", self.deadline_s, "timing solve()", k=k,
                                    rest=rest if k > 1 else 0.0, per_call=self.per_call, hold=self.hold, **sealed)
        wall_ms = (time.perf_counter() - t0) * 1000
        times = [float(x) for x in reply.get("times_ms", [])]
        if len(times) != k or any(not (t >= 0) for t in times):
            raise WorkerFailure("protocol", f"timing: asked for {k} times, got {len(times)} valid ones")
        if sum(times) > wall_ms + WALL_SLACK_MS:
            raise ImpossibleTime(f"the worker reported {sum(times):.3f} ms of GPU time for a batch "
                                 f"that took {wall_ms:.3f} ms of wall time")
        if reply.get("crowded"):
            raise ImpossibleTime(f"{reply['crowded']} of {k} calls began while kernels of an earlier call still held "
                                 "SMs (work on another stream, outside the timed windows)")
        late = int(reply.get("late") or 0)
        self.last_late = late > 0
        self.last_held = bool(reply.get("held")) and not self.last_late
        if not reply.get("held"):  # a worker that cannot hold (an SM-limited context) never will
            self.hold = False
        if self.warm:  # not the target's very first call
            self.late_run = self.late_run + 1 if late else 0
            if 2 * late > k or self.late_run >= LATE_BATCHES:
                self.hold = False
        self.last_host = [float(x) for x in reply.get("host_ms", [])][:k]
        self.costs.append(max(max(times) * (1 + rest), wall_ms / k))
        if k == 1 and rest > 0:
            time.sleep(times[0] * rest / 1000)
        if self.after_batch:
            self.after_batch(k, times)
        return times

    def warm_up(self) -> None:
        """1 call, then batches that grow by WARMUP_GROWTH (within `fit`) until the warm-up's
        calls and time are done (`stats.warmup_left`)."""
        self.warm = self.batch(1)
        k = 1
        while (more := warmup_left(self.warm, self.policy)) > 0:
            k = self.fit(min(k * WARMUP_GROWTH, more, MAX_CALLS_PER_BATCH))
            self.warm += self.batch(k)
        call_ms = sorted(self.warm[-3:])[len(self.warm[-3:]) // 2]
        self.per_call = call_ms >= REST_PER_CALL_MS
        self.k_gpu = self.k = min(batch_size(call_ms, self.policy), self.max_k or MAX_CALLS_PER_BATCH)

    def step(self) -> str | None:
        """One timed batch, one sample; the stopping rule's reason to stop now, or None to go on. A
        batch with a late hold is not counted (the module's docstring says when holding stops)."""
        t0 = time.perf_counter()
        times = self.batch(self.fit(min(self.k, self.policy.max_samples - len(self.calls))))
        took = time.perf_counter() - t0
        self.wall_s += took
        self.k = wall_batch_size(self.k_gpu, took / len(times), self.policy)
        if self.last_late:
            return None
        self.unheld += not self.last_held
        self.host += self.last_host
        self.samples.append(batch_sample(times))
        self.calls += times
        self.spent_s += sum(times) / 1000
        self.reason = stop_reason(self.samples, len(self.calls), self.spent_s, self.policy, wall_s=self.wall_s)
        return self.reason

    def stats(self) -> Stats:
        assert self.reason is not None, "stats() before the stopping rule said stop"
        stats = summarize(self.samples, self.calls, len(self.warm), self.reason)
        stats.held = self.unheld == 0
        stats.host_ms = round(median(self.host), 6) if self.host else None
        return stats


def time_target(worker: Worker, policy: TimingPolicy, timeout_s: float,
                progress: Callable[[int], T], before_batch: Callable[[int], list[Key] | None] | None = None,
                after_batch: Callable[[int, list[float]], object] | None = None,
                after_warmup: Callable[[], object] | None = None,
                max_k: int | None = None) -> Generator[T, None, Stats]:
    """Yields progress events (whatever `progress(n)` makes, n: timed calls so far); returns the
    Stats. `after_warmup()` runs between the warm-up and the first timed batch."""
    timer = Timer(worker, policy, timeout_s, before_batch, after_batch, max_k)
    timer.warm_up()
    if after_warmup:
        after_warmup()
    while True:
        reason = timer.step()
        yield progress(len(timer.calls))
        if reason:
            return timer.stats()
