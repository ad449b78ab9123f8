"""The re-check's sample (judge/engine/reservoir.py) and stash (judge/engine/stash.py), on the CPU:
uniform over the timed calls, the same work after every batch, checked only after the timing."""
from __future__ import annotations

import random
from collections import Counter

import pytest
from conftest import PROBLEMS_DIR
from fakes import PEAKS, CpuSolver, FakeWorker, cpu_session, drive

from judge.contract.verdict import Status
from judge.engine import reservoir, stash
from judge.engine.benchmarks import TimedPhase
from judge.engine.outcome import RunFailure
from judge.engine.reservoir import MAX_STASH, MIN_STASH, Reservoir, fit
from judge.engine.stats import TimingPolicy
from judge.problem import spec

pytestmark = pytest.mark.usefixtures("no_nvml")  # tests/conftest.py

# The budget is out of reach: with constant fake times the noise rule stops at min_batches. A wall-time
# budget of 0.05 s stopped a loaded CPU after 6 batches, and one of 5 s after 7 (CI, 2026-11-28, one
# of test_the_stash_is_checked_against_its_own_draw's 100 runs, beside nvcc builds).
QUICK = TimingPolicy(min_samples=5, min_batches=10, warmup_ms=0.0, batch_s=0.00001, budget_s=3600,
                     min_time_s=0.0, rest=0.0)


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")




def run(size: int, batches: list[int], rng: random.Random) -> tuple[list[tuple[int, int]], list, int]:
    """A reservoir over `batches` (calls per batch), slots numbered by call; (copies, kept, checked)."""
    copies: list[tuple[int, int]] = []
    checked: list = []
    r: Reservoir[int] = Reservoir(size, lambda slot, entry: copies.append((slot, entry)) or slot,
                                  lambda what, entry: checked.append((what, entry)), rng)
    call = 0
    for k in batches:
        r.add(list(range(call, call + k)))
        call += k
    return copies, checked, r.check()


def test_one_copy_after_every_batch_whatever_is_kept():
    copies, checked, n = run(3, [8] * 50, random.Random(1))
    assert len(copies) == 50  # the same work after each batch: one copy, kept or into the scratch
    assert all(0 <= e <= 3 for _, e in copies) and any(e == 3 for _, e in copies)
    assert [e for _, e in copies[:3]] == [0, 1, 2]  # the first batches fill the kept entries
    for b, (slot, _) in enumerate(copies):
        assert 8 * b <= slot < 8 * (b + 1)  # a call of that batch
    assert n == 3 and sorted(e for _, e in checked) == [0, 1, 2]
    last = {e: s for s, e in copies if e < 3}  # each kept entry holds the last call copied into it
    assert sorted(checked) == sorted((s, e) for e, s in last.items())


def test_fewer_batches_than_entries_are_all_checked():
    copies, checked, n = run(8, [8, 8, 5], random.Random(2))
    assert n == 3 and [e for _, e in copies] == [0, 1, 2] and len(checked) == 3
    assert run(8, [], random.Random(3))[2] == 0


@pytest.mark.parametrize("batches", [[8] * 40, [8] * 39 + [3], [1] * 60])
def test_every_timed_call_is_kept_with_the_same_chance(batches):
    """Each call ends up checked with probability size / calls (batches after the first `size`
    exactly; the first ones too when the batches are equal)."""
    size, trials, rng = 3, 20000, random.Random(4)
    n = sum(batches)
    kept: Counter[int] = Counter()
    for _ in range(trials):
        _, checked, _ = run(size, batches, rng)
        kept.update(s for s, _ in checked)
    expected = trials * size / n
    first = sum(batches[:size])
    for call in range(first, n):  # past the first `size` batches
        assert abs(kept[call] - expected) < 5 * expected ** 0.5 + 0.05 * expected, (call, kept[call], expected)
    assert sum(kept.values()) == trials * size


def test_a_fraction_of_wrong_calls_escapes_about_as_seldom_as_the_argument_says():
    """Half of the batches wrong (the cheapest way to move a median of batch samples): unseen with
    probability about (1/2)^size."""
    size, trials, rng = 3, 20000, random.Random(5)
    escaped = 0
    for _ in range(trials):
        _, checked, _ = run(size, [8] * 40, rng)
        escaped += all((s // 8) % 2 == 0 for s, _ in checked)  # the odd batches are the wrong ones
    assert abs(escaped / trials - 0.5 ** size) < 0.02


@pytest.mark.parametrize("budget, slot, out, slots, kept", [
    (1e12, 100, 10, 8, MAX_STASH),       # plenty: every slot, the most kept entries
    (31e9, 3.22e9, 1.07e9, 8, 3),        # vector_add n=2^28 in 40% of an H100: 8 slots and 3 kept
    (10e9, 3.22e9, 1.07e9, 1, 5),        # one slot fits beside MIN_STASH; what is left keeps more
    (6e9, 3.22e9, 1.07e9, 1, 1),         # tight: fewer kept entries, never fewer than 1
    (1e9, 3.22e9, 1.07e9, 1, 1),         # over budget: one slot and one kept entry anyway
])
def test_fit(budget, slot, out, slots, kept):
    assert fit(budget, int(slot), int(out), 8) == (slots, kept)
    if budget >= slot + (MIN_STASH + 1) * out:
        assert kept >= MIN_STASH and slots * slot + (kept + 1) * out <= budget


def test_make_slots_leaves_room_for_the_stash(vector_add, monkeypatch):
    from fakes import FakeCuda

    from judge.engine import buffers

    s = cpu_session(vector_add, mode="submit")
    w = {"n": 1 << 20}  # 12 MiB a slot, 4 MiB of outputs
    monkeypatch.setattr(FakeCuda, "mem_get_info", staticmethod(lambda: (int(100 << 20) * 5 // 2, 1 << 31)))
    slots = buffers.make_slots(s, 0, w)  # 40% of 250 MiB: 100 MiB
    assert (len(slots.bufs), slots.stash) == fit(100 << 20, 12 << 20, 4 << 20, buffers.MAX_SLOTS) == (7, 3)
    assert len(slots.bufs) * (12 << 20) + (slots.stash + 1) * (4 << 20) <= 100 << 20


# -- in the timed phase ------------------------------------------------------------------------------

class Wrong(CpuSolver):
    """C = A + B, but C = A in the timed batches `wrong(b)` says (b: the batch's number, warm-up
    included)."""

    def __init__(self, s, wrong):
        super().__init__(s)
        self.wrong, self.batch = wrong, 0

    def __call__(self, op, args, worker):
        if op == "time_batch":
            self.batch += 1
        super().__call__(op, args, worker)

    def solve(self, call_args, slot):
        super().solve(call_args, slot)
        if slot is not None and self.wrong(self.batch):
            bufs = self.s.buffers.buffers
            bufs[call_args[2]["buf"]].tensor.copy_(bufs[call_args[0]["buf"]].tensor)


def timed(vector_add, make, monkeypatch, policy=QUICK):
    """A session whose candidate runs `make(session)`; the log of its requests and the reference's
    calls, in order."""
    s = cpu_session(vector_add, mode="submit", policy=policy)
    log: list[str] = []
    solver = make(s)
    s.candidate = FakeWorker(0.002, on=lambda op, a, w: (log.append(op), solver(op, a, w)))
    real = stash.buffers.reference
    monkeypatch.setattr(stash.buffers, "reference", lambda *a: (log.append("reference"), real(*a))[1])
    return s, log


def test_wrong_timed_calls_are_caught_after_the_timing_only(vector_add, monkeypatch):
    s, log = timed(vector_add, lambda s: Wrong(s, lambda b: b % 2 == 0), monkeypatch)
    with pytest.raises(RunFailure) as info:
        drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert info.value.status == Status.WRONG_ANSWER and "timed call" in s.report.tests[-1].workload
    first_check = log.index("reference")
    assert "time_batch" not in log[first_check:]  # no re-check while the candidate is timed
    assert log[:first_check].count("time_batch") >= QUICK.min_batches


def test_right_timed_calls_are_all_rechecked_after_the_timing(vector_add, monkeypatch):
    s, log = timed(vector_add, CpuSolver, monkeypatch)
    r = drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
    assert r.rechecked_slots == min(MAX_STASH, r.stats.batches) == log.count("reference")
    assert "time_batch" not in log[log.index("reference"):]


def test_the_stash_is_checked_against_its_own_draw(vector_add, monkeypatch):
    """A kept call's slot was re-drawn by later batches: the check draws its inputs again from its
    tag. With a stash of one entry and one wrong batch among 10 timed ones (the 9th), the wrong
    call is kept only when its batch is (chance 1/10), and caught exactly then."""
    monkeypatch.setattr(reservoir, "MIN_STASH", 1)
    monkeypatch.setattr(reservoir, "MAX_STASH", 1)
    outcomes: Counter = Counter()
    for _ in range(100):
        s, _ = timed(vector_add, lambda s: Wrong(s, lambda b: b == 11), monkeypatch)  # 2 warm-up batches
        try:
            r = drive(TimedPhase().shape(s, 0, {"n": 1000}, PEAKS))
            assert r.stats.batches == 10
            outcomes[r.rechecked_slots] += 1
        except RunFailure as f:
            assert f.status == Status.WRONG_ANSWER
            outcomes["caught"] += 1
    assert 2 <= outcomes["caught"] <= 25 and outcomes["caught"] + outcomes[1] == 100


def test_the_check_stops_after_its_budget_but_never_before_min_checks():
    """Costly references (flash_attn at N = 16384): at least MIN_CHECKS kept calls are checked,
    then only while the budget lasts; a budget that is never reached checks them all."""
    import time

    checked: list[int] = []

    def full(rng: random.Random) -> Reservoir[int]:
        r: Reservoir[int] = Reservoir(8, lambda slot, entry: slot,
                                      lambda what, entry: (checked.append(what), time.sleep(0.02)), rng)
        for b in range(40):
            r.add(list(range(8 * b, 8 * b + 8)))
        return r

    assert full(random.Random(5)).check(budget_s=0.0) == reservoir.MIN_CHECKS == 3 and len(checked) == 3
    checked.clear()
    assert full(random.Random(5)).check(budget_s=0.05) in (3, 4)  # 3 checks took 60 ms already
    checked.clear()
    assert full(random.Random(5)).check(budget_s=60) == 8 and len(set(checked)) == 8


def test_a_budgeted_check_is_still_uniform_over_the_timed_calls():
    """The checked calls are a random prefix of the kept ones: each timed call is checked with
    probability MIN_CHECKS / calls when the budget stops the check at MIN_CHECKS."""
    trials, n, rng = 20000, 320, random.Random(6)
    seen: Counter[int] = Counter()
    for _ in range(trials):
        got: list[int] = []
        r: Reservoir[int] = Reservoir(8, lambda slot, entry: slot, lambda what, entry: got.append(what), rng)
        for b in range(n // 8):
            r.add(list(range(8 * b, 8 * b + 8)))
        assert r.check(budget_s=0.0) == 3
        seen.update(got)
    expected = trials * 3 / n
    assert all(abs(seen[c] - expected) < 5 * expected ** 0.5 for c in range(n))
