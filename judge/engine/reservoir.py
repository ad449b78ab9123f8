"""Which timed calls the parent re-checks (docs/security.md, "Re-check"): a uniform random sample,
taken so that the candidate can neither see nor foresee it. Pure Python: the tests drive it with
callbacks.

After every timed batch the parent does the same work: it copies the outputs of one of the
batch's calls, chosen uniformly at random, into a stash of `size` kept entries and one scratch
entry (`Reservoir.add`). With probability size × k / (timed calls so far) the copy goes into a
kept entry, chosen at random, replacing what it held (Chao's weighted reservoir: a batch of k
calls weighs k), otherwise into the scratch entry; the first `size` batches fill the kept
entries. Either way it is one copy of the same bytes, so nothing the candidate can time tells
which batches were kept, and nothing is checked while the target is being timed. At the end of
the target's timing, `check()` checks every kept entry against the reference.

Each timed call ends up kept with probability size / (timed calls) (exactly so for batches after
the first `size`, when the batches are equal: each batch is kept with probability size × k / N,
and the call within it with 1/k), so a strategy that makes a fraction f of the timed calls wrong
goes unseen with probability about (1 - f)^size.

The check itself costs a reference call per kept entry (flash_attn's at N = 16384: ~0.15 s), so
`check()` takes the kept entries in a random order and stops once it has checked MIN_CHECKS of them
and spent `budget_s`: any prefix of a random order of a uniform sample is a uniform sample, so every
timed call keeps the same chance of being checked, now checked / calls, and a strategy wrong on a
fraction f of the calls goes unseen on the shape with probability about (1 - f)^checked (and
across the run's shapes with the product of theirs).
"""
from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
MIN_STASH = 3  # kept entries wanted before the input slots take the rest of the memory budget
MAX_STASH = 8  # kept entries at most
MIN_CHECKS = 3  # kept entries checked whatever they cost (all of them when fewer were kept)
CHECK_BUDGET_S = 0.1  # the re-check goes past MIN_CHECKS while it has spent less than this


class Reservoir(Generic[T]):
    """`copy(slot, entry)` copies slot `slot`'s outputs into stash entry `entry` (0 ... size - 1:
    kept; `size`: the scratch) and returns what the check needs to know of that call (its draw);
    `check(what, entry)` raises on a wrong kept output."""

    def __init__(self, size: int, copy: Callable[[int, int], T], check: Callable[[T, int], None],
                 rng: random.Random | None = None):
        assert size >= 1, "a reservoir keeps at least one call"
        self.size, self.copy, self.check_one = size, copy, check
        self.rng = rng or secrets.SystemRandom()
        self.kept: list[T] = []  # per kept entry: what `copy` returned
        self.calls = 0  # timed calls seen

    def add(self, slots: list[int]) -> None:
        """After a timed batch whose calls used `slots`, in order: stash one of its calls."""
        k = len(slots)
        self.calls += k
        slot = slots[self.rng.randrange(k)]
        if len(self.kept) < self.size:
            entry = len(self.kept)
        elif self.rng.random() < self.size * k / self.calls:
            entry = self.rng.randrange(self.size)
        else:
            entry = self.size  # the scratch: the same copy, kept nowhere
        what = self.copy(slot, entry)
        if entry == self.size:
            return
        if entry == len(self.kept):
            self.kept.append(what)
        else:
            self.kept[entry] = what

    def check(self, budget_s: float | None = None) -> int:
        """Check the kept calls in a random order (raises on the first wrong one), at least
        MIN_CHECKS of them and then while less than `budget_s` (default CHECK_BUDGET_S) was spent;
        how many were checked."""
        budget_s = CHECK_BUDGET_S if budget_s is None else budget_s
        order = list(enumerate(self.kept))
        self.rng.shuffle(order)
        t0 = time.perf_counter()
        for n, (entry, what) in enumerate(order):
            if n >= MIN_CHECKS and time.perf_counter() - t0 >= budget_s:
                return n
            self.check_one(what, entry)
        return len(order)


def fit(budget: float, slot_bytes: int, out_bytes: int, max_slots: int) -> tuple[int, int]:
    """(input slots, kept stash entries) within `budget` bytes, for a shape whose input slot takes
    `slot_bytes` (inputs and outputs) and whose outputs take `out_bytes`. The stash takes kept + 1
    (the scratch) sets of outputs. First MIN_STASH kept entries (fewer, down to 1, when even one
    slot does not fit beside them), then up to `max_slots` slots, then kept entries up to
    MAX_STASH with what is left. Never fewer than one slot and one kept entry: the budget is
    exceeded then, as it was with one slot before."""
    slot_bytes, out_bytes = max(slot_bytes, 1), max(out_bytes, 1)
    kept = MIN_STASH
    while kept > 1 and slot_bytes + (kept + 1) * out_bytes > budget:
        kept -= 1
    slots = max(1, min(max_slots, int((budget - (kept + 1) * out_bytes) // slot_bytes)))
    kept = max(kept, min(MAX_STASH, int((budget - slots * slot_bytes) // out_bytes) - 1))
    return slots, kept
