"""Fresh inputs for every timed call (DESIGN.md §5): the parent's side of the candidate's timed
batches on one benchmark shape.

The worker's timed calls rotate over the shape's input slots, and after the warm-up a batch has at
most one call per slot. Before each timed batch the parent re-draws the inputs of exactly the
slots that batch will use (a new tag per draw, from the run's secret), so no timed call sees
inputs that an earlier call saw: an answer cached by pointer or by content is wrong. After the
batch, while its inputs are still in place, the parent checks that the inputs are unchanged
(checksums), reads the completeness counts, and, at random batches the worker cannot foresee,
re-checks one of the batch's outputs against the reference.
"""
from __future__ import annotations

import secrets
from collections.abc import Callable

RECHECK_CHANCE = 0.25  # per timed batch, until the shape's re-check quota is spent


class FreshBatches:
    """Hooks for judge/engine/timing.py's `time_target`: `before(k)`, `after(k, times)`,
    `after_warmup()`. `redraw(ids, draw)` fills slots `ids`; `changed(ids)` names a modified input
    or returns ""; `recheck(slot)` raises on a wrong output; `counts(k)` raises on an incomplete
    one; `zero()` runs last before the request; `verify(ids, times)` checks the batch whose call i
    used slot ids[i] and reported times[i] (judge/engine/batch_checks.py)."""

    def __init__(self, n_slots: int, quota: int, redraw: Callable[[list[int], int], None],
                 changed: Callable[[list[int]], str], recheck: Callable[[int], None],
                 counts: Callable[[int], None], zero: Callable[[], None],
                 verify: Callable[[list[int], list[float]], None] = lambda ids, times: None):
        self.n, self.quota = n_slots, quota
        self.redraw, self.changed, self.recheck, self.counts, self.zero = redraw, changed, recheck, counts, zero
        self.verify = verify
        self.calls = 0  # calls so far, warm-up included: the worker's next slot is calls % n
        self.timed = False
        self.draws = 0
        self.rechecked = 0
        self.last: list[int] = []  # the slots of the last timed batch
        self.rng = secrets.SystemRandom()

    def ids(self, k: int) -> list[int]:
        return [(self.calls + i) % self.n for i in range(k)]

    def before(self, k: int) -> None:
        if self.timed:
            assert k <= self.n, "a timed batch with more calls than input slots"
            self.draws += 1
            self.redraw(self.ids(k), self.draws)
        self.zero()

    def after(self, k: int, times: list[float]) -> None:
        ids = self.ids(k)
        self.calls += k
        self.counts(k)
        self.verify(ids, times)
        if not self.timed:
            return
        if modified := self.changed(ids):
            raise InputsModified(modified)
        self.last = ids
        if self.rechecked < self.quota and self.rng.random() < RECHECK_CHANCE:
            self._recheck(self.rng.choice(ids))

    def after_warmup(self) -> None:
        self.timed = True

    def finish(self) -> int:
        """Top the re-checks up to the quota from the last batch (its inputs are still in place);
        returns how many timed outputs were re-checked in all."""
        pool = list(self.last)
        self.rng.shuffle(pool)
        while self.rechecked < self.quota and pool:
            self._recheck(pool.pop())
        return self.rechecked

    def _recheck(self, slot: int) -> None:
        self.rechecked += 1
        self.recheck(slot)


class InputsModified(Exception):
    """A timed call changed an input (the message names it and its slot)."""
