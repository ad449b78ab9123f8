"""Fresh inputs for every timed call (docs/security.md, "Inputs"): the parent's side of the candidate's timed
batches on one benchmark shape.

The worker's timed calls rotate over the shape's input slots, and after the warm-up a batch has at
most one call per slot. Before each timed batch the parent re-draws the inputs of exactly the
slots that batch will use (a new tag per draw, from the run's secret), so no timed call sees
inputs that an earlier call saw: an answer cached by pointer or by content is wrong. Then it
seals them (judge/gpu/seal.py): each call's inputs are noise until its own gate holds every SM and
the parent gives the worker that call's key, so no work in the gaps between timed windows can
compute a later call's answer. After the
batch, while its inputs are still in place, the parent checks that the inputs are unchanged
(checksums), reads the completeness counts, and stashes one of the batch's calls for the
re-check (judge/engine/reservoir.py: the same copy after every batch, so the candidate cannot
tell which calls will be checked); `finish()` re-checks the stashed calls once the target's
timing is over.
"""
from __future__ import annotations

from collections.abc import Callable

from judge.engine.reservoir import Reservoir
from judge.gpu.seal import Key


class FreshBatches:
    """Hooks for judge/engine/timing.py's `time_target`: `before(k)` (a timed batch's keys, per call,
    or None), `after(k, times)`, `after_warmup()`. `redraw(ids, draw)` fills slots `ids`; `seal(ids)`
    seals their inputs and returns their keys (judge/gpu/seal.py); `changed(ids)` names a modified input
    or returns ""; `counts(k)` raises on an incomplete output; `zero()` runs last before the
    request; `verify(ids, times)` checks the batch whose call i used slot ids[i] and reported
    times[i] (judge/engine/batch_checks.py); `reservoir` stashes a call of every timed batch and
    re-checks the ones it kept in `finish()`."""

    def __init__(self, n_slots: int, redraw: Callable[[list[int], int], None],
                 changed: Callable[[list[int]], str], counts: Callable[[int], None], zero: Callable[[], None],
                 reservoir: Reservoir, verify: Callable[[list[int], list[float]], None] = lambda ids, times: None,
                 seal: Callable[[list[int]], list[Key]] | None = None):
        self.n = n_slots
        self.redraw, self.changed, self.counts, self.zero, self.seal = redraw, changed, counts, zero, seal
        self.reservoir, self.verify = reservoir, verify
        self.calls = 0  # calls so far, warm-up included: the worker's next slot is calls % n
        self.timed = False
        self.draws = 0

    def ids(self, k: int) -> list[int]:
        return [(self.calls + i) % self.n for i in range(k)]

    def before(self, k: int) -> list[Key] | None:
        keys = None
        if self.timed:
            assert k <= self.n, "a timed batch with more calls than input slots"
            self.draws += 1
            self.redraw(self.ids(k), self.draws)
            if self.seal:
                keys = self.seal(self.ids(k))
        self.zero()
        return keys

    def after(self, k: int, times: list[float]) -> None:
        ids = self.ids(k)
        self.calls += k
        self.counts(k)
        self.verify(ids, times)
        if not self.timed:
            return
        if modified := self.changed(ids):
            raise InputsModified(modified)
        self.reservoir.add(ids)

    def after_warmup(self) -> None:
        self.timed = True

    def finish(self) -> int:
        """Once the target's timing is over: re-check the stashed calls (raises on a wrong one);
        returns how many timed outputs were re-checked."""
        return self.reservoir.check()


class InputsModified(Exception):
    """A timed call changed an input (the message names it and its slot)."""
