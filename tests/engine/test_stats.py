"""Timing statistics, the stopping rule, the timing loop (with a fake worker), and scoring."""
from __future__ import annotations

import math
import random
import statistics

import pytest
from fakes import FakeWorker

from judge.contract.report import Stats
from judge.engine import score
from judge.engine import stats as bench
from judge.engine.stats import (
    MIN_CALL_MS,
    TimingPolicy,
    batch_sample,
    batch_size,
    median_ci,
    stop_reason,
    summarize,
    warmup_left,
)
from judge.engine.timing import ImpossibleTime, time_target
from judge.worker.client import WorkerFailure


def stats(median: float, lo: float, hi: float) -> Stats:
    return Stats(median_ms=median, ci_low_ms=lo, ci_high_ms=hi, min_ms=lo, samples=100, warmup_calls=3,
                 stop_reason="noise")


# -- median_ci ---------------------------------------------------------------------------------------

def test_median_ci_known_samples():
    # n=100: ranks 50 ± 1.96*sqrt(100)/2 = 50 ± 9.8 → 0-based indices 40 and 59.
    assert median_ci(list(range(1, 101))) == (41, 60)
    assert median_ci(list(range(100, 0, -1))) == (41, 60)  # order does not matter


@pytest.mark.parametrize("n", [1, 2, 3, 5, 20, 21, 1000])
def test_median_ci_brackets_the_median(n):
    rng = random.Random(n)
    s = [rng.lognormvariate(0, 0.5) for _ in range(n)]
    lo, hi = median_ci(s)
    assert min(s) <= lo <= statistics.median(s) <= hi <= max(s)
    assert lo in s and hi in s


def test_median_ci_single_and_constant():
    assert median_ci([3.5]) == (3.5, 3.5)
    assert median_ci([2.0] * 50) == (2.0, 2.0)


def test_median_ci_empty_raises():
    with pytest.raises(ValueError):
        median_ci([])


def test_median_ci_narrows_with_more_samples():
    rng = random.Random(7)
    widths = []
    for n in (20, 200, 2000):
        lo, hi = median_ci([rng.gauss(10, 1) for _ in range(n)])
        widths.append(hi - lo)
    assert widths[0] > widths[1] > widths[2]


@pytest.mark.parametrize("n, draw, true_median", [
    (50, lambda r: r.expovariate(1.0), math.log(2)),            # skewed
    (20, lambda r: r.lognormvariate(0.0, 1.0), 1.0),            # the minimum sample count
    (200, lambda r: r.gauss(5.0, 2.0), 5.0),
])
def test_median_ci_coverage(n, draw, true_median):
    rng = random.Random(12345)
    trials = 1000
    hits = 0
    for _ in range(trials):
        lo, hi = median_ci([draw(rng) for _ in range(n)])
        hits += lo <= true_median <= hi
    assert 0.92 <= hits / trials <= 0.995, hits / trials


def test_summarize():
    s = summarize([3.0, 1.0, 2.0, 5.0, 4.0], [0.5] + [3.0] * 9, warmup_calls=7, stop_reason="budget")
    assert s.median_ms == 3.0 and s.min_ms == 0.5 and s.samples == 10 and s.batches == 5 and s.warmup_calls == 7
    assert s.stop_reason == "budget" and s.ci_low_ms <= 3.0 <= s.ci_high_ms
    assert s.ci_halfwidth_rel == pytest.approx((s.ci_high_ms - s.ci_low_ms) / 2 / 3.0)


def test_a_batch_sample_is_its_time_per_call():
    """Work moved between a batch's calls (the first computes every answer, the others copy) does
    not change its sample: a per-call median of [8, 0.1 x 7] would say 0.1."""
    honest, front_loaded = [1.0] * 8, [8.0] + [0.1] * 7
    assert batch_sample(honest) == 1.0 and batch_sample(front_loaded) == pytest.approx(1.0875)
    assert statistics.median(front_loaded) == 0.1


# -- stop_reason ---------------------------------------------------------------------------------------

def noisy(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [1.0 + rng.random() for _ in range(n)]  # ±50%: never within a 0.5% noise target


def test_stop_on_noise():
    p = TimingPolicy(noise=0.01, min_samples=20, min_batches=10, min_time_s=0.0)
    steady = [1.0 + 0.001 * (i % 3) for i in range(20)]
    assert stop_reason(steady, 20, 0.0, p) == "noise"
    assert stop_reason(steady, 19, 0.0, p) is None  # fewer timed calls than min_samples
    assert stop_reason(steady[:10], 80, 0.0, p) == "noise"  # 10 batches of 8 calls
    assert stop_reason(steady[:9], 72, 0.0, p) is None  # fewer batch samples than min_batches


def test_long_calls_one_to_a_batch_stop_after_min_batches_once_the_window_is_met():
    """By default a call of 5 ms or more, one to a batch, stops on noise after 10 calls when they
    meet the window (sgemm at 8192^3: 24 ms calls); 20 once held them to twice that."""
    p = TimingPolicy()
    steady = [24.0 + 0.001 * (i % 3) for i in range(10)]
    assert p.min_samples <= p.min_batches
    assert stop_reason(steady, 10, 0.24, p, wall_s=0.5) == "noise"
    assert stop_reason(steady[:9], 9, 0.216, p, wall_s=0.45) is None  # min_batches still holds
    assert stop_reason(steady, 10, 0.05, p, wall_s=0.1) is None  # and the window


def test_noise_waits_for_the_minimum_time():
    """A tight CI from a short window is not enough: the window must span the power management's
    slow phases (min_time_s of timed GPU time), unless the budget is smaller still."""
    steady = [1.0 + 0.001 * (i % 3) for i in range(100)]
    p = TimingPolicy(noise=0.01, min_samples=20, min_time_s=0.3)
    assert stop_reason(steady, 100, 0.1, p) is None
    assert stop_reason(steady, 100, 0.3, p) == "noise"
    assert stop_reason(steady, 100, 0.1, TimingPolicy(noise=0.01, min_time_s=0.3, budget_s=0.05)) == "noise"


def test_the_window_is_met_by_gpu_time_or_by_wall_time_whichever_comes_first():
    """Short calls fill little GPU time in much wall time (the parent's fresh inputs and checks
    around each batch): the power management's phases pass in wall time, so min_wall_s of the
    timed batches' wall time meets the window too; long calls meet it by GPU time first."""
    steady = [1.0 + 0.001 * (i % 3) for i in range(100)]
    p = TimingPolicy(noise=0.01, min_samples=20, min_time_s=0.1, min_wall_s=0.3, budget_s=2.0)
    assert stop_reason(steady, 100, 0.01, p, wall_s=0.29) is None
    assert stop_reason(steady, 100, 0.01, p, wall_s=0.3) == "noise"  # vector_add: 0.14 ms calls
    assert stop_reason(steady, 100, 0.1, p, wall_s=0.15) == "noise"  # flash_attn at N = 16384
    assert stop_reason(steady[:9], 100, 0.01, p, wall_s=1.0) is None  # still min_batches


def test_baselines_get_half():
    b = TimingPolicy(budget_s=2.0, min_time_s=0.3, min_wall_s=0.4, noise=0.01).for_baseline()
    assert (b.budget_s, b.min_time_s, b.min_wall_s, b.noise) == (1.0, 0.15, 0.2, 0.01)


def test_noisy_samples_go_on_until_budget():
    p = TimingPolicy(noise=0.005, min_samples=20, budget_s=1.0)
    assert stop_reason(noisy(100), 100, 0.5, p) is None
    assert stop_reason(noisy(100), 100, 1.0, p) == "budget"
    assert stop_reason(noisy(2), 16, 5.0, p) is None   # at least 3 batch samples even past the budget
    assert stop_reason(noisy(3), 3, 5.0, p) == "budget"


def test_max_samples_wins():
    """max_samples counts timed calls (the report's `samples`), whatever the batches."""
    p = TimingPolicy(noise=0.005, max_samples=50, budget_s=100.0)
    assert stop_reason(noisy(49), 49, 0.0, p) is None
    assert stop_reason(noisy(50), 50, 0.0, p) == "max_samples"
    assert stop_reason(noisy(7), 50, 0.0, p) == "max_samples"  # 7 batches of about 7 calls
    assert stop_reason([1.0] * 50, 50, 0.0, p) == "max_samples"  # checked before noise


def test_zero_times_do_not_stop_on_noise():
    p = TimingPolicy(min_samples=20, budget_s=1.0)
    assert stop_reason([0.0] * 30, 30, 0.0, p) is None


# -- batch_size / warmup_left ---------------------------------------------------------------------------

@pytest.mark.parametrize("per_call_ms, expected", [(0.5, 100), (50.0, 1), (1000.0, 1), (1e-6, 1000),
                                                   (0.0, 1000), (0.05, 1000), (0.1, 500)])
def test_batch_size(per_call_ms, expected):
    assert batch_size(per_call_ms, TimingPolicy(batch_s=0.05)) == expected


@pytest.mark.parametrize("per_call_ms", [0.0, 1e-5, 0.003, 0.2, 7.0, 3000.0])
def test_batch_size_bounds(per_call_ms):
    k = batch_size(per_call_ms, TimingPolicy())
    assert 1 <= k <= 1000
    if k > 1:
        assert (k - 1) * per_call_ms <= TimingPolicy().batch_s * 1000


@pytest.mark.parametrize("first_ms", [0.0, 1e-4, 0.01, 1.0, 12.5, 25.0, 100.0, 5000.0])
def test_warmup_left_bounds(first_ms):
    p = TimingPolicy(warmup_ms=25.0, min_warmup_calls=3)
    more = warmup_left([first_ms], p)
    calls = more + 1  # with the first one
    per_call = max(first_ms, MIN_CALL_MS)
    assert more >= p.min_warmup_calls - 1
    assert calls * per_call >= p.warmup_ms - 1e-9  # enough warm-up time
    if more > p.min_warmup_calls - 1:
        assert (calls - 1) * per_call < p.warmup_ms  # and not more calls than needed


def test_warmup_left_examples():
    p = TimingPolicy(warmup_ms=25.0, min_warmup_calls=3)
    assert warmup_left([1.0], p) == 24
    assert warmup_left([100.0], p) == 2
    assert warmup_left([0.1], p) == 249
    assert warmup_left([0.1, 1.0, 1.0, 1.0], p) == 22  # the later calls' time, not the first's
    assert warmup_left([1.0] * 25, p) == 0 and warmup_left([30.0], p) == 2
    assert warmup_left([0.0] * 25000, p) == 0  # every call counts: the warm-up ends


def test_warmup_left_ends_for_any_times():
    rng = random.Random(3)
    p = TimingPolicy()
    for _ in range(50):
        warm = [rng.choice([0.0, 1e-5, 0.3, 40.0])]
        while (more := warmup_left(warm, p)) > 0:
            warm += [rng.choice([0.0, 1e-5, 0.3, 40.0])] * min(more, 1000)
        assert len(warm) >= p.min_warmup_calls and len(warm) <= 1 + p.warmup_ms / MIN_CALL_MS + 1000


# -- the timing loop, driven through a fake worker --------------------------------------------------------

def drive(gen):
    events = []
    try:
        while True:
            events.append(next(gen))
    except StopIteration as stop:
        return stop.value, events


def test_time_target_stops_on_noise_and_counts_warmup():
    w = FakeWorker(lambda b, i: 0.001, only={"time_batch"})
    policy = TimingPolicy(min_samples=20, warmup_ms=0.5, batch_s=0.0001, budget_s=10, min_time_s=0.0)
    result, events = drive(time_target(w, policy, 1.0, lambda n: ("progress", n)))
    assert result.stop_reason == "noise" and result.median_ms == pytest.approx(0.001) and result.min_ms == 0.001
    assert result.samples >= 20 and result.batches >= 10 and result.warmup_calls == sum(w.asked[:-len(events)])
    assert result.batches == len(events) and result.samples == sum(w.asked[-len(events):])
    assert events[-1] == ("progress", result.samples)
    assert [n for _, n in events] == sorted(n for _, n in events)


def test_time_target_respects_max_samples():
    rng = random.Random(0)
    w = FakeWorker(lambda b, i: 0.001 * (1 + rng.random()), only={"time_batch"})
    policy = TimingPolicy(max_samples=30, warmup_ms=0.001, batch_s=0.000007, budget_s=100)
    result, _ = drive(time_target(w, policy, 1.0, lambda n: n))
    assert result.stop_reason == "max_samples" and result.samples == 30


def test_time_target_rejects_impossible_times():
    w = FakeWorker(lambda b, i: 10_000.0, only={"time_batch"})  # 10 s of "GPU time" reported instantly
    with pytest.raises(ImpossibleTime):
        drive(time_target(w, TimingPolicy(), 1.0, lambda n: n))


@pytest.mark.parametrize("count, value", [(lambda k: k - 1 if k > 1 else 0, 0.001), (None, float("nan")),
                                          (None, -1.0)])
def test_time_target_rejects_malformed_batches(count, value):
    w = FakeWorker(lambda b, i: value, count=count, only={"time_batch"})
    with pytest.raises(WorkerFailure) as info:
        drive(time_target(w, TimingPolicy(), 1.0, lambda n: n))
    assert info.value.kind == "protocol"


# -- score ----------------------------------------------------------------------------------------------

def test_geomean():
    assert score.geomean([1.0, 4.0]) == pytest.approx(2.0)
    assert score.geomean([2.0, 8.0, 4.0]) == pytest.approx(4.0)
    assert score.geomean([3.0]) == pytest.approx(3.0)
    assert score.geomean([2.0, None, 0.0, 8.0]) == pytest.approx(4.0)  # unmeasured values ignored
    assert score.geomean([]) is None and score.geomean([None]) is None


def test_compare():
    fast, slow = stats(1.0, 0.9, 1.1), stats(2.0, 1.9, 2.1)
    assert score.interval_order(fast, slow) == "FASTER"
    assert score.interval_order(slow, fast) == "SLOWER"
    overlap = stats(1.15, 1.05, 1.25)
    assert score.interval_order(fast, overlap) == "SAME" == score.interval_order(overlap, fast)
    touching = stats(1.2, 1.1, 1.3)  # intervals share an endpoint
    assert score.interval_order(fast, touching) == "SAME"
    assert score.interval_order(fast, fast) == "SAME"
    # medians 10% apart, but the intervals overlap: a tie, not a rank
    assert score.interval_order(stats(1.0, 0.8, 1.2), stats(1.1, 0.9, 1.3)) == "SAME"


def test_drift_and_flag():
    before = stats(1.0, 0.99, 1.01)
    assert score.drift(before, stats(1.1, 1.09, 1.11)) == pytest.approx(0.1)
    assert score.drift_flagged(before, stats(1.1, 1.09, 1.11))
    assert not score.drift_flagged(before, stats(1.1, 1.0, 1.2))             # overlapping: noise
    assert not score.drift_flagged(before, stats(1.015, 1.0105, 1.02))       # apart, but only 1.5%
    assert score.drift_flagged(before, stats(0.9, 0.89, 0.91))              # faster after counts too
    assert score.drift(stats(0.0, 0.0, 0.0), before) == 0.0


def test_bench_module_has_no_heavy_imports():
    """The worker imports judge.engine.stats: it must stay pure Python (no torch, no pydantic at import)."""
    import subprocess
    import sys

    code = ("import sys, judge.engine.stats; bad = [m for m in ('torch', 'pydantic') if m in sys.modules]; "
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert bench.TimingPolicy().noise > 0
