"""`judge compare`: the verdict rule on synthetic Stats, the interleaving through fake workers, the CLI."""
from __future__ import annotations

import json
import math

import pytest
from conftest import PROBLEMS_DIR, SOLUTIONS_DIR, nvcc_test
from fakes import GPU, FakeWorker, Log, pair_session, with_benchmarks
from typer.testing import CliRunner

import cli.tools_cmd  # noqa: F401  (registers `judge compare`)
from cli.app import app
from judge.contract.report import Stats
from judge.contract.verdict import Status
from judge.engine import compare as comparing
from judge.engine.compare import Compared, Comparison, ShapeComparison, interleave
from judge.engine.score import compare_verdict, drift_flagged, interval_order, ratio_interval
from judge.engine.stats import TimingPolicy
from judge.engine.timing import Timer
from judge.worker.client import WorkerFailure

runner = CliRunner()


def stats(median: float, half: float, lo: float | None = None, hi: float | None = None) -> Stats:
    """A median (ms) with a CI of ±`half` (relative), or explicit CI bounds."""
    lo = median * (1 - half) if lo is None else lo
    hi = median * (1 + half) if hi is None else hi
    return Stats(median_ms=median, ci_low_ms=lo, ci_high_ms=hi, min_ms=lo, samples=100, warmup_calls=3,
                 stop_reason="noise")


# -- the verdict rule ----------------------------------------------------------------------------

def test_faster_and_slower_when_cis_apart_beyond_the_floor():
    fast, slow = stats(1.00, 0.003), stats(1.05, 0.003)
    assert compare_verdict(fast, slow) == "FASTER"
    assert compare_verdict(slow, fast) == "SLOWER"


def test_apart_beyond_the_floor_even_with_wide_intervals():
    fast, slow = stats(1.0, 0.05), stats(2.0, 0.05)  # wide, but far apart: still a difference
    assert compare_verdict(fast, slow) == "FASTER" and compare_verdict(slow, fast) == "SLOWER"


def test_same_when_overlapping_and_both_narrow():
    assert compare_verdict(stats(1.000, 0.004), stats(1.003, 0.004)) == "SAME"
    x = stats(0.5, 0.002)
    assert compare_verdict(x, x) == "SAME"


def test_ambiguous_when_overlapping_and_wide():
    a, b = stats(1.00, 0.03), stats(1.02, 0.03)  # a 2% difference neither shown nor ruled out
    assert compare_verdict(a, b) == "AMBIGUOUS" and compare_verdict(b, a) == "AMBIGUOUS"


def test_one_wide_interval_is_enough_for_ambiguous():
    assert compare_verdict(stats(1.0, 0.002), stats(1.0, 0.02)) == "AMBIGUOUS"


def test_apart_but_within_the_floor_is_same_when_narrow():
    # CIs apart (a real 0.6% difference), but below the 1% floor: noise for a verdict
    a, b = stats(1.000, 0.002), stats(1.006, 0.002)
    assert interval_order(a, b) == "FASTER"
    assert compare_verdict(a, b) == "SAME"


def test_apart_within_the_floor_with_a_wide_interval_is_ambiguous():
    a = stats(1.000, 0.0, lo=0.95, hi=1.001)  # skewed, wide below
    b = stats(1.005, 0.0, lo=1.002, hi=1.008)
    assert interval_order(a, b) == "FASTER" and compare_verdict(a, b) == "AMBIGUOUS"


def test_touching_intervals_overlap():
    a = stats(1.0, 0.0, lo=0.99, hi=1.01)
    b = stats(1.02, 0.0, lo=1.01, hi=1.03)  # a's high == b's low: not apart
    assert interval_order(a, b) == "SAME"
    assert compare_verdict(a, b) == "AMBIGUOUS"  # a's CI is ±1%: wider than the noise target


def test_floor_and_noise_are_parameters():
    a, b = stats(1.000, 0.002), stats(1.006, 0.002)
    assert compare_verdict(a, b, floor=0.005) == "FASTER"
    wide_a, wide_b = stats(1.0, 0.02), stats(1.0, 0.02)
    assert compare_verdict(wide_a, wide_b) == "AMBIGUOUS"
    assert compare_verdict(wide_a, wide_b, noise=0.03) == "SAME"


def test_a_difference_at_exactly_the_floor_is_not_beyond_it():
    a, b = stats(1.0, 0.001), stats(1.01, 0.001)
    assert interval_order(a, b) == "FASTER" and compare_verdict(a, b, floor=0.011) == "SAME"


@pytest.mark.parametrize("zero", [stats(0.0, 0.0), Stats(median_ms=0.0, ci_low_ms=0.0, ci_high_ms=0.0, min_ms=0.0,
                                                          samples=3, warmup_calls=3, stop_reason="budget")])
def test_zero_medians_are_ambiguous(zero):
    assert compare_verdict(zero, stats(1.0, 0.001)) == "AMBIGUOUS"
    assert compare_verdict(stats(1.0, 0.001), zero) == "AMBIGUOUS"


def test_verdict_is_antisymmetric():
    cases = [(1.0, 0.003, 1.05, 0.003), (1.0, 0.03, 1.02, 0.03), (1.0, 0.004, 1.003, 0.004), (1.0, 0.1, 3.0, 0.2)]
    flip = {"FASTER": "SLOWER", "SLOWER": "FASTER", "SAME": "SAME", "AMBIGUOUS": "AMBIGUOUS"}
    for m1, h1, m2, h2 in cases:
        a, b = stats(m1, h1), stats(m2, h2)
        assert compare_verdict(b, a) == flip[compare_verdict(a, b)]


def test_ratio_interval():
    a, b = stats(2.0, 0.0, lo=1.9, hi=2.2), stats(1.0, 0.0, lo=0.95, hi=1.1)
    ratio, low, high = ratio_interval(a, b)
    assert ratio == pytest.approx(2.0) and low == pytest.approx(1.9 / 1.1) and high == pytest.approx(2.2 / 0.95)
    assert low <= ratio <= high
    assert ratio_interval(a, stats(1.0, 0.0, lo=0.0, hi=1.0))[2] == math.inf


def test_existing_callers_unchanged():
    before, after = stats(1.0, 0.001), stats(1.05, 0.001)
    assert interval_order(before, after) == "FASTER" and interval_order(after, before) == "SLOWER"
    assert drift_flagged(before, after) and not drift_flagged(before, stats(1.01, 0.02))


# -- interleaving, through fake workers -------------------------------------------------------------

def test_interleave_alternates_and_stops_each_target_on_its_own_rule():
    log = Log()
    policy = TimingPolicy(min_samples=20, min_batches=10, warmup_ms=0.0, batch_s=0.00001, budget_s=10, min_time_s=0.0)
    fast = Timer(FakeWorker(0.001, name="A", log=log, only={"time_batch"}), policy, 1.0)
    slow = Timer(FakeWorker(0.002, name="B", log=log, only={"time_batch"}),
                 TimingPolicy(min_samples=40, min_batches=20, warmup_ms=0.0, batch_s=0.00001,
                              budget_s=10, min_time_s=0.0), 1.0)
    for t in (fast, slow):
        t.warm_up()
    log.batches.clear()
    counts = list(interleave([fast, slow], lambda t: t.step()))
    order = [name for name, _ in log.batches]
    assert order[:4] == ["A", "B", "B", "A"]  # A B, then B A: no side always goes first
    assert fast.reason == "noise" and slow.reason == "noise"
    assert len(slow.samples) > len(fast.samples)
    a_done = max(i for i, n in enumerate(order) if n == "A")
    assert all(n == "B" for n in order[a_done + 1:])  # a stopped target takes no more batches
    assert counts == sorted(counts) and counts[-1] == len(fast.calls) + len(slow.calls)
    assert fast.stats().median_ms == pytest.approx(0.001) and slow.stats().median_ms == pytest.approx(0.002)
    assert fast.stats().batches == len(fast.samples) and fast.stats().samples == len(fast.calls)


def test_interleave_propagates_a_step_failure():
    log = Log()
    timers = [Timer(FakeWorker(0.001, name=n, log=log, only={"time_batch"}), TimingPolicy(), 1.0) for n in "AB"]

    def boom(t):
        raise RuntimeError(t.worker.name)

    with pytest.raises(RuntimeError, match="A"):
        list(interleave(timers, boom))


# -- the interleaved run, GPU parts faked -----------------------------------------------------------

def small_vector_add():
    """vector_add with benchmark shapes small enough for the CPU fakes."""
    from judge.problem import spec

    return with_benchmarks(spec.load_problem(PROBLEMS_DIR / "vector_add"), {"n": 1000}, {"n": 4099})


def interleaved(monkeypatch, workers, solvers=None, problem=None):
    """Runs compare's timing (`time_pair`) of a small vector_add on `workers` (A, B), each solving on
    the session's CPU buffers (tests/fakes.py's CpuSolver, with `solvers[i]`); returns the result."""
    from judge.gpu import device

    p = problem or small_vector_add()
    result = Comparison(problem=p.name, a="a.cu", b="b.cu", status=Status.INTERNAL_ERROR)
    policy = TimingPolicy(min_samples=5, warmup_ms=0.0, batch_s=0.00001, budget_s=10, min_time_s=0.0, rest=0.0)
    built = [type("B", (), {"load": {"lib": f"/x/{n}.so"}, "language": "cuda"})() for n in "ab"]
    monkeypatch.setattr(device, "gpus", lambda: [GPU])
    s = pair_session(p, workers, solvers, policy=policy)
    list(comparing.time_pair(s, built, result))
    return result


def test_interleaved_run_times_both_on_every_shape_and_rechecks_each(monkeypatch):
    log = Log()
    a, b = FakeWorker(0.002, name="A", log=log), FakeWorker(0.001, name="B", log=log)
    result = interleaved(monkeypatch, [a, b])
    assert result.status == Status.ACCEPTED and result.failed is None, result.message
    assert [s.workload for s in result.shapes] == ["n=1000", "n=4099"]
    assert all(s.verdict == "FASTER" and s.ratio == pytest.approx(0.5) for s in result.shapes)
    assert a.ops[0] == "init" and a.ops.count("map") == 2 and a.ops.count("unmap") == 2
    # each side's stash was re-checked on every shape (every batch stashes a call; up to 8 are kept)
    assert all(s.a_rechecked >= 3 and s.b_rechecked >= 3 for s in result.shapes), result.shapes
    order = [n for n, _ in log.batches]
    assert "A" in order and "B" in order and max(k for _, k in log.batches) <= 8  # at most a call per slot
    assert a.closed and b.closed


def test_each_side_has_its_own_records_and_its_own_draws(monkeypatch):
    """The sides share the input slots but not their check records, nor their draws: no timed
    batch of A's or B's gets inputs drawn under a tag any other batch's were drawn under (a
    stashed call's re-check draws its call's tag again)."""
    from judge.engine import guards

    tags: list[str] = []
    redraw = guards.redraw

    def spy(s, w, bufs, tag, where):
        tags.append(tag)
        return redraw(s, w, bufs, tag, where)

    monkeypatch.setattr(guards, "redraw", spy)
    a, b = FakeWorker(0.002), FakeWorker(0.001)
    result = interleaved(monkeypatch, [a, b])
    assert result.status == Status.ACCEPTED, result.message
    assert a.on.counter == "bench1.A#completeness" and b.on.counter == "bench1.B#completeness"  # the last shape's
    rechecked = sum(s.a_rechecked + s.b_rechecked for s in result.shapes)
    assert len(set(tags)) > 10 and len(tags) - len(set(tags)) == rechecked  # only a re-check draws a tag again
    assert {t.split(".")[1] for t in tags} == {"A", "B"}  # bench0.A.3.draw5: side, slot, draw


def test_interleaved_run_blames_the_worker_that_failed(monkeypatch):
    log = Log()
    crash = WorkerFailure("crash", "timing solve(): the worker was killed by SIGSEGV", signal="SIGSEGV")
    a = FakeWorker(0.001, name="A", log=log)
    b = FakeWorker(0.001, name="B", log=log, fail=lambda op, w: crash if op == "time_batch" and len(log.batches) >= 6
                   else None)
    result = interleaved(monkeypatch, [a, b])
    assert result.status == Status.RUNTIME_ERROR and result.message.startswith("B: ")
    assert "SIGSEGV" in result.message and result.failed == "B"
    assert result.shapes == [] and a.closed and b.closed


# -- the CLI --------------------------------------------------------------------------------------

def fake_result(status=Status.ACCEPTED, message="") -> Comparison:
    shapes = [ShapeComparison(workload="n=1024", a=stats(1.0, 0.003), b=stats(0.5, 0.003), ratio=0.5,
                              ratio_low=0.49, ratio_high=0.51, verdict="FASTER"),
              ShapeComparison(workload="n=4096", a=stats(2.0, 0.02), b=stats(2.01, 0.02), ratio=1.005,
                              ratio_low=0.96, ratio_high=1.05, verdict="AMBIGUOUS")]
    return Comparison(problem="vector_add", a="a.cu", b="b.cu", status=status, message=message,
                      shapes=shapes if status is Status.ACCEPTED else [],
                      failed=None if status is Status.ACCEPTED else "B")


@pytest.fixture
def two_files(tmp_path):
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text("// a\n")
    b.write_text("// b\n")
    return a, b


def test_cli_json_shape(monkeypatch, two_files):
    seen = {}

    def fake_compare(problem, a, b, opts):
        seen.update(problem=problem.name, a=a, b=b, budget=opts.policy.budget_s)
        yield Compared(fake_result())

    monkeypatch.setattr(comparing, "compare", fake_compare)
    a, b = two_files
    r = runner.invoke(app, ["compare", "vector_add", str(a), str(b), "--json", "--budget", "0.7"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert seen == {"problem": "vector_add", "a": a, "b": b, "budget": 0.7}
    assert data["status"] == "ACCEPTED" and [s["verdict"] for s in data["shapes"]] == ["FASTER", "AMBIGUOUS"]
    assert set(data["shapes"][0]) >= {"workload", "a", "b", "ratio", "ratio_low", "ratio_high", "verdict"}
    assert data["shapes"][0]["a"]["median_ms"] == 1.0
    assert Comparison.model_validate_json(r.stdout).shapes[1].verdict == "AMBIGUOUS"  # round-trips


def test_cli_table(monkeypatch, two_files):
    monkeypatch.setattr(comparing, "compare", lambda *a: iter([Compared(fake_result())]))
    r = runner.invoke(app, ["compare", "vector_add", *map(str, two_files)])
    assert r.exit_code == 0, r.output
    assert "FASTER" in r.output and "AMBIGUOUS" in r.output and "0.500" in r.output
    assert "[0.490, 0.510]" in r.output and "ACCEPTED" in r.output


def test_cli_a_wrong_solution_ends_with_its_verdict(monkeypatch, two_files):
    monkeypatch.setattr(comparing, "compare", lambda *a: iter([Compared(fake_result(
        Status.WRONG_ANSWER, "B (b.cu): WRONG_ANSWER: wrong output on n=7"))]))
    r = runner.invoke(app, ["compare", "vector_add", *map(str, two_files)])
    assert r.exit_code == 1, r.output
    assert "WRONG_ANSWER" in r.output and "B (b.cu)" in r.output


@pytest.mark.parametrize("args, text", [(["vector_add", "nope.cu", "{b}"], "no such file"),
                                        (["vector_add", "{a}", "{b}", "--budget", "0"], "--budget"),
                                        (["no_such_problem", "{a}", "{b}"], "no problem")])
def test_cli_usage_errors(two_files, args, text):
    a, b = two_files
    r = runner.invoke(app, ["compare", *[x.format(a=a, b=b) for x in args]])
    assert r.exit_code == 2, r.output
    assert text in r.output and "Traceback" not in r.output


@nvcc_test
def test_a_compile_error_ends_the_comparison(tmp_path):
    broken = tmp_path / "broken.cu"
    broken.write_text('extern "C" void solve(const float* A, const float* B, float* C, int n) { nope; }\n')
    good = SOLUTIONS_DIR / "vector_add" / "01_naive.cu"
    r = runner.invoke(app, ["compare", str(PROBLEMS_DIR / "vector_add"), str(broken), str(good), "--json"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert data["status"] == "COMPILE_ERROR" and data["failed"] == "A" and data["message"].startswith("A (")
    assert data["a_test"]["status"] == "COMPILE_ERROR" and data["b_test"] is None and data["shapes"] == []


# -- on a GPU (`pytest -m gpu`) -------------------------------------------------------------------

def _gpu(f):
    from judge.gpu import device

    return pytest.mark.gpu(pytest.mark.skipif(not device.gpus(), reason="needs an NVIDIA GPU")(f))


def _run(a, b, budget=0.5):
    from judge.engine.run import Options
    from judge.problem import spec

    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    events = list(comparing.compare(p, a, b, Options(policy=TimingPolicy(budget_s=budget))))
    assert isinstance(events[-1], Compared)
    return events[-1].result


@_gpu
def test_gpu_naive_against_float4():
    r = _run(SOLUTIONS_DIR / "vector_add" / "01_naive.cu", SOLUTIONS_DIR / "vector_add" / "02_float4.cu")
    assert r.status == Status.ACCEPTED, r.message
    assert r.a_test.status == r.b_test.status == Status.ACCEPTED and len(r.shapes) == 2
    for s in r.shapes:
        assert s.a.samples >= 3 and s.b.samples >= 3
        assert s.ratio == pytest.approx(s.b.median_ms / s.a.median_ms)
        assert s.ratio_low <= s.ratio <= s.ratio_high
        assert s.verdict in ("FASTER", "SLOWER", "SAME", "AMBIGUOUS")


@_gpu
def test_gpu_self_compare_finds_no_difference():
    f = SOLUTIONS_DIR / "vector_add" / "02_float4.cu"
    r = _run(f, f, budget=1.0)
    assert r.status == Status.ACCEPTED, r.message
    assert all(s.verdict in ("SAME", "AMBIGUOUS") for s in r.shapes), [(s.workload, s.verdict) for s in r.shapes]


@_gpu
def test_gpu_a_wrong_b_ends_with_its_verdict():
    r = _run(SOLUTIONS_DIR / "vector_add" / "01_naive.cu", PROBLEMS_DIR / "vector_add" / "wrong" / "no_tail.cu")
    assert r.status == Status.WRONG_ANSWER and r.failed == "B" and r.message.startswith("B (")
    assert r.shapes == [] and r.a_test.status == Status.ACCEPTED
