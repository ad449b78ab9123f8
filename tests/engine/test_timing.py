"""The parent's timing loop (judge/engine/timing.py) through fake workers: one sample per batch,
per-call deadlines, batch sizes that keep an honest batch inside them, a warm-up that grows."""
from __future__ import annotations

import pytest
from fakes import FakeWorker, drive

from judge.engine.stats import TimingPolicy
from judge.engine.timing import BATCH_SHARE, DEADLINE_SLACK_S, WARMUP_GROWTH, Timer, time_target
from judge.worker.client import WorkerFailure
from judge.worker.protocol import MAX_CALLS_PER_BATCH

POLICY = TimingPolicy(min_samples=20, warmup_ms=0.05, batch_s=0.016, budget_s=10, min_time_s=0.0, rest=0.0)


def test_front_loading_a_batch_buys_nothing():
    """issue 16, 4: every slot of a batch is drawn before it, so its first call can compute all the
    answers and the others copy. A per-call median saw the copies; a batch's sample is its time
    per call, at least the honest one."""
    honest = drive(time_target(FakeWorker(0.002), POLICY, 10.0, lambda n: n, max_k=8))
    front = drive(time_target(FakeWorker(lambda b, i: 0.016 if i == 0 else 0.0002), POLICY, 10.0, lambda n: n,
                              max_k=8))
    assert honest.median_ms == pytest.approx(0.002) and front.median_ms >= honest.median_ms
    assert front.min_ms == 0.0002 and front.samples == 8 * front.batches  # the report still counts calls


def test_every_time_batch_has_the_per_call_deadline():
    w = FakeWorker(0.002, realtime=True)
    drive(time_target(w, TimingPolicy(min_samples=20, warmup_ms=25.0, budget_s=10, min_time_s=0.0), 3.0,
                      lambda n: n))
    assert {d for op, d in w.requests} == {3.0 + DEADLINE_SLACK_S}
    assert max(w.asked) <= MAX_CALLS_PER_BATCH and w.asked[0] == 1


def test_the_warm_up_grows_gradually():
    """A fast first call no longer makes the next batch warmup_ms / first_ms calls at once."""
    w = FakeWorker(0.0001)
    t = Timer(w, TimingPolicy(warmup_ms=25.0), 10.0)
    t.warm_up()
    assert w.asked[:5] == [1, 4, 16, 64, 256]
    assert all(b <= a * WARMUP_GROWTH for a, b in zip(w.asked, w.asked[1:]))
    assert sum(w.asked) == len(t.warm) >= 25.0 / 0.001  # each call counts at least 1 µs (MIN_CALL_MS)


@pytest.mark.parametrize("call_ms, rest, most", [(1000.0, 1.0, 2), (400.0, 0.0, 12), (3000.0, 1.0, 1),
                                                 (20_000.0, 0.0, 1)])
def test_batches_stay_within_a_share_of_the_timeout(call_ms, rest, most):
    """k × the costliest call × (1 + rest) ≤ BATCH_SHARE × timeout_s, at least 1 call."""
    t = Timer(FakeWorker(), TimingPolicy(rest=rest), 10.0)
    assert t.fit(100) == 1  # nothing timed yet
    t.costs.append(call_ms * (1 + rest))
    assert t.fit(100) == most and t.fit(1) == 1
    if most > 1:
        assert most * call_ms * (1 + rest) <= BATCH_SHARE * 10_000


def test_batch_sizes_follow_the_recent_calls():
    """A slow first call (a library's first use) does not keep every later batch small; a call that
    becomes slow shrinks the next batches at once."""
    t = Timer(FakeWorker(), TimingPolicy(rest=0.0), 10.0)
    t.costs.append(2000.0)
    assert t.fit(8) == 2
    t.costs.extend([0.5, 0.5])
    assert t.fit(8) == 2  # still among the last COST_BATCHES
    t.costs.append(0.5)
    assert t.fit(8) == 8
    t.costs.append(4000.0)
    assert t.fit(8) == 1


def test_a_single_call_rests_in_the_parent(monkeypatch):
    """A batch of one call asks the worker for no rest: the request holds the call alone, so an
    honest call up to timeout_s fits its deadline; the parent rests as long after the reply."""
    from judge.engine import timing

    slept = []
    monkeypatch.setattr(timing.time, "sleep", slept.append)
    w = FakeWorker(0.2)
    t = Timer(w, TimingPolicy(rest=1.0), 10.0)
    t.batch(1)
    t.batch(3)
    assert slept == [pytest.approx(0.0002)] and w.rests == [0.0, 1.0]


def test_a_stall_is_a_timeout():
    calls = []

    def times(b, i):
        calls.append(1)
        return 60_000.0 if len(calls) == 30 else 0.001

    w = FakeWorker(times, realtime=True)
    with pytest.raises(WorkerFailure) as info:
        Timer(w, TimingPolicy(), 10.0).warm_up()
    assert info.value.kind == "timeout" and w.waited_s <= 10.0 + DEADLINE_SLACK_S + 0.1


# -- the hold (docs/timing.md, "The hold") ---------------------------------------------------------------
def test_calls_are_held_and_their_host_time_is_reported_apart():
    w = FakeWorker(0.002, holds=lambda b, held: {"host_ms": [0.05 + 0.001 * b] * 8})
    stats = drive(time_target(w, POLICY, 10.0, lambda n: n, max_k=8))
    assert all(w.hold_asked) and stats.held is True
    assert stats.median_ms == pytest.approx(0.002)  # the host's time is not in the GPU's
    assert 0.05 < stats.host_ms < 0.05 + 0.001 * len(w.asked)


def test_a_late_first_call_keeps_holding_a_later_late_call_stops_it():
    """A library's one-off set-up in the very first call (a cuDNN plan) does not turn holds off;
    a solve() that waits for the device later does, at once."""
    first = FakeWorker(0.002, holds=lambda b, held: {"late": int(held and b == 1)})
    assert drive(time_target(first, POLICY, 10.0, lambda n: n, max_k=8)).held is True
    assert all(first.hold_asked)
    later = FakeWorker(0.002, holds=lambda b, held: {"late": later.asked[-1] if held and b == 2 else 0})
    stats = drive(time_target(later, POLICY, 10.0, lambda n: n, max_k=8))
    assert later.hold_asked[:2] == [True, True] and not any(later.hold_asked[2:])
    assert stats.held is False


def test_a_timed_batch_with_a_late_hold_is_not_a_sample():
    """Its calls may have started before their work was issued: the batch is dropped; with every
    call late, holding is off, and the next batch (unheld) counts."""
    first_timed = []
    w = FakeWorker(0.002, holds=lambda b, held: {"late": w.asked[-1] if held and b == first_timed[0] else 0})
    t = Timer(w, POLICY, 10.0, max_k=8)
    first_timed.append(99)
    t.warm_up()
    first_timed[0] = len(t.worker.asked) + 1
    assert t.step() is None and t.samples == [] and t.hold is False
    t.step()
    assert t.samples == [pytest.approx(0.002)] and t.worker.hold_asked[-1] is False


def test_one_late_call_drops_its_batch_and_keeps_holding_two_batches_in_a_row_stop_it():
    """A host hiccup (one late call of a batch) costs that batch, not the hold; a late hold in two
    batches in a row turns holding off (so a sparse late call at every batch cannot drop them all)."""
    once = []
    t = Timer(FakeWorker(0.002, holds=lambda b, held: {"late": int(held and b == once[0])}), POLICY, 10.0, max_k=8)
    once.append(99)
    t.warm_up()
    once[0] = len(t.worker.asked) + 1
    t.k = 8
    assert t.step() is None and t.samples == [] and t.hold is True
    t.step()
    assert t.samples == [pytest.approx(0.002)] and t.worker.hold_asked[-1] is True
    sparse = FakeWorker(0.002, holds=lambda b, held: {"late": int(held)})  # one late call per batch
    t = Timer(sparse, POLICY, 10.0, max_k=8)
    t.warm_up()  # the first call's late hold is exempt: the second and third batches' stop it
    assert t.hold is False and sparse.hold_asked[:4] == [True, True, True, False]
    t.step()
    assert t.samples == [pytest.approx(0.002)] and sparse.hold_asked[-1] is False


def test_a_crowded_hold_is_an_impossible_time():
    """Kernels of an earlier call held SMs when a call began: work outside every timed window."""
    from judge.engine.timing import ImpossibleTime

    w = FakeWorker(0.002, holds=lambda b, held: {"crowded": int(b == 4)})
    with pytest.raises(ImpossibleTime, match="earlier call"):
        drive(time_target(w, POLICY, 10.0, lambda n: n, max_k=8))


def test_a_worker_that_cannot_hold_is_timed_unheld_not_forever():
    """An SM-limited context's worker answers every batch unheld: its batches count (as before
    holds), the report says so, and the loop ends."""
    w = FakeWorker(0.002, holds=lambda b, held: {"held": False})
    stats = drive(time_target(w, POLICY, 10.0, lambda n: n, max_k=8))
    assert stats.held is False and stats.batches >= POLICY.min_batches
    assert w.hold_asked[0] is True and not any(w.hold_asked[1:])


# -- --budget bounds the wall time ---------------------------------------------------------------------------
def test_the_budget_bounds_the_timed_batches_wall_time_the_parents_checks_and_rests_included():
    """issue 17: `--budget 0.3` took 17 s when it counted GPU time only. A target that never meets
    its noise target stops once its timed batches took `budget_s` of wall time (the worker's rests
    and the parent's checks around each batch included), one batch over at most."""
    import time

    budget = 0.3
    policy = TimingPolicy(min_batches=10_000, warmup_ms=0.5, batch_s=0.01, budget_s=budget,
                          min_time_s=0.0, rest=1.0)
    def checks(k, times):  # the parent's work after each batch
        time.sleep(0.01)

    w = FakeWorker(0.5, realtime=True)  # 0.5 ms calls, each resting as long as it ran
    t = Timer(w, policy, 10.0, after_batch=checks)
    t.warm_up()
    t0 = time.perf_counter()
    while not t.step():
        pass
    took = time.perf_counter() - t0
    one_batch = max(w.asked) * 0.5e-3 * 2 + 0.01
    assert t.reason == "budget" and budget <= took <= budget + one_batch + 0.1, (took, one_batch)
    assert t.spent_s < budget / 2  # GPU time alone would have run on past 0.6 s of wall time


# -- batches sized by their wall time ------------------------------------------------------------------------
def test_slow_checks_around_each_call_make_batches_smaller_so_the_minimum_window_is_not_overrun():
    """issue 17 (d): on large inputs the parent's fresh draw, seal and checksums cost several times
    the call itself (vector_add at 2^28: ~7 ms a call around 0.73 ms of GPU time); with 8 calls a
    batch, the 10 batches the stopping rule needs took 0.7 s where the window asks for 0.3 s. After
    each timed batch the next one is sized so that min_batches of them take about min_wall_s."""
    import time

    policy = TimingPolicy(noise=1.0, min_samples=1, min_batches=10, warmup_ms=0.05, batch_s=0.05,
                          min_time_s=10.0, min_wall_s=0.2, rest=0.0)

    def checks(k, times):  # the parent's per-call work after each batch: 5 ms a call
        time.sleep(0.005 * k)

    w = FakeWorker(0.5, realtime=True)
    t = Timer(w, policy, 10.0, after_batch=checks, max_k=8)
    t.warm_up()
    assert t.k == 8  # by the GPU time: 8 slots
    while not t.step():
        pass
    timed = w.asked[-len(t.samples):]
    assert timed[0] == 8 and set(timed[1:]) <= {2, 3}, timed  # 0.2 s / 10 batches / 5.5 ms a call
    assert t.reason == "noise" and len(t.samples) >= policy.min_batches
    assert t.wall_s < 0.3, t.wall_s  # batches of 8 throughout: 0.44 s


def test_cheap_checks_keep_the_batches_the_gpu_time_asks_for():
    w = FakeWorker(0.5, realtime=True)
    t = Timer(w, TimingPolicy(min_samples=1, warmup_ms=0.05, batch_s=0.05, min_time_s=10.0, min_wall_s=0.3,
                              rest=0.0), 10.0, max_k=8)
    t.warm_up()
    for _ in range(3):
        t.step()
    assert w.asked[-3:] == [8, 8, 8]
