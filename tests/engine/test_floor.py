"""The roofline floor a report gives each shape: the peaks' time, unless a baseline beat it."""
from __future__ import annotations

from types import SimpleNamespace

from conftest import PROBLEMS_DIR

from judge.contract.report import Stats, Telemetry
from judge.engine.benchmarks import CandidateTiming, TimedPhase, reported_floor, sandwich
from judge.problem import spec


def stats(ms: float) -> Stats:
    return Stats(median_ms=ms, ci_low_ms=ms, ci_high_ms=ms, min_ms=ms, samples=50, warmup_calls=3,
                 stop_reason="noise")


def session(problem, *names: str):
    return SimpleNamespace(problem=problem, baselines=[(SimpleNamespace(name=n), None) for n in names])


def test_a_baseline_faster_than_the_peaks_lowers_the_floor_to_its_time():
    """fp8_gemm on an H200 (2026-11-28): the measured FP8 peak put 8192³ at 0.82 ms, and cuBLAS
    ran it in 0.756 ms, so cuBLAS showed 108% of the roofline and a kernel at 0.78× cuBLAS 85%."""
    fp8 = spec.load_problem(PROBLEMS_DIR / "fp8_gemm")
    w = fp8.spec.benchmarks[-1]
    s = session(fp8, "cuBLAS FP8")
    peaks_floor = 2 * 8192**3 / (1345.0 * 1e9)  # ~0.8175 ms at the peak that run measured
    c = CandidateTiming(stats(0.9704), 0, None, peaks_floor, Telemetry(), Telemetry())
    r = TimedPhase().result(s, w, {"cuBLAS FP8": stats(0.755)}, c, {"cuBLAS FP8": stats(0.757)})
    assert r.floor_ms == 0.756 and round(r.roofline_pct, 1) == 77.9  # the candidate's speedup, as a %
    assert r.baselines[0].median_ms == 0.756


def test_the_peaks_floor_stands_where_every_baseline_is_slower():
    va = spec.load_problem(PROBLEMS_DIR / "vector_add")
    w = va.spec.benchmarks[-1]
    s = session(va, "torch.add", "other")
    c = CandidateTiming(stats(1.1), 0, None, 1.0, Telemetry(), Telemetry())
    r = TimedPhase().result(s, w, {"torch.add": stats(1.2), "other": stats(1.5)}, c,
                            {"torch.add": stats(1.2), "other": stats(1.5)})
    assert r.floor_ms == 1.0 and round(r.roofline_pct, 2) == 90.91


def test_reported_floor_takes_the_fastest_and_ignores_empty_times():
    s = session(None, "a", "b")
    base = sandwich(s, {"a": stats(2.0), "b": stats(0.0)}, {"a": stats(2.0), "b": stats(0.0)}, stats(1.0))
    assert reported_floor(3.0, base) == 2.0 and reported_floor(1.5, base) == 1.5 and reported_floor(1.5, []) == 1.5
