"""Reports are typed and JSON round-trippable (artefacts, `--json`, replay)."""
from __future__ import annotations

import json

import pytest
import torch
from pydantic import ValidationError

from judge.contract import report as rep
from judge.contract.report import (
    BaselineTiming,
    BenchResult,
    BuildInfo,
    CheckResult,
    Environment,
    KernelInfo,
    Mismatch,
    Report,
    Stats,
    Telemetry,
)
from judge.contract.verdict import EXIT_CODES, Status
from judge.problem.checks import run_check
from judge.problem.spec import AllClose


def stats(m: float, samples: int = 120) -> Stats:
    return Stats(median_ms=m, ci_low_ms=m * 0.99, ci_high_ms=m * 1.01, min_ms=m * 0.97, samples=samples,
                 warmup_calls=5, stop_reason="noise")


def full_report() -> Report:
    check = CheckResult(check="allclose", output="C", passed=False, numel=1000, n_bad=2, max_abs_err=0.5,
                        max_rel_err=0.25, nan_count=0, inf_count=1,
                        mismatches=[Mismatch(index=[0, 3], got=1.5, expected=1.0),
                                    Mismatch(index=[9, 9], got=-3.0, expected=2.0)],
                        message=None)
    baseline = BaselineTiming(name="cuBLAS", before=stats(1.0), after=stats(1.02), median_ms=1.01, drift=0.02,
                              drift_flagged=False, speedup=0.8)
    tel = Telemetry(sm_clock_mhz=1980, mem_clock_mhz=2619, temperature_c=45, power_w=310.5,
                    throttle_reasons=["SwPowerCap"])
    bench = BenchResult(workload="M=4096,N=4096,K=4096", stats=stats(1.2625), flops=2 * 4096**3,
                        bytes=3 * 2 * 4096**2, tflops=108.8, gbps=79.7, floor_ms=0.18, roofline_pct=14.3,
                        baselines=[baseline], rechecked_slots=2, telemetry_before=tel, telemetry_after=Telemetry())
    return Report(
        problem="hgemm", solution="/tmp/x.cu", source_sha256="ab" * 32, mode="submit",
        status=Status.WRONG_ANSWER, message="wrong output on M=128,N=128,K=64",
        build=BuildInfo(ok=True, cached=False, seconds=2.1, command="cd /x && nvcc ...", arch="sm_90a",
                        kernels=[KernelInfo(kernel="k(float*)", registers=32, shared_bytes=1024, stack_bytes=0,
                                            spill_store_bytes=0, spill_load_bytes=0)],
                        log_tail="ptxas info"),
        tests=[rep.TestCase(workload="M=1,N=1,K=1", passed=True),
               rep.TestCase(workload="M=128,N=128,K=64", passed=False, checks=[check]),
               rep.TestCase(workload="M=7,N=7,K=7", passed=False, error="illegal address", hidden=True)],
        benchmarks=[bench], geomean_speedup=0.8, baseline_name="cuBLAS",
        environment=Environment(gpu="NVIDIA H100", gpu_uuid="GPU-1", driver="580.1", cuda_runtime="13.0",
                                nvcc="13.0.88", torch="2.13.0", judge="0.1.0", arch="sm_90a", flags="-O3",
                                peak_copy_gbps=2960.0, peak_tflops=759.0, peak_unit="fp16_tensor"),
        started_at="2026-11-22T09:31:00+00:00", wall_s=12.5)


def test_round_trip():
    r = full_report()
    text = r.model_dump_json()
    back = Report.model_validate_json(text)
    assert back == r
    assert back.benchmarks[0].speedup == 0.8
    assert back.exit_code == 1
    data = json.loads(text)
    assert data["status"] == "WRONG_ANSWER"
    assert data["tests"][1]["checks"][0]["mismatches"][0]["index"] == [0, 3]


def test_minimal_report_round_trip():
    r = Report(problem="p", solution="s.cu", source_sha256="0", mode="test", status=Status.INTERNAL_ERROR)
    assert Report.model_validate_json(r.model_dump_json()) == r
    assert r.exit_code == 3 and r.environment == Environment()


def test_unknown_fields_rejected():
    data = json.loads(full_report().model_dump_json())
    data["score"] = 1.0
    with pytest.raises(ValidationError):
        Report.model_validate(data)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_round_trip_with_nan_or_inf_evidence(bad):
    got = torch.tensor([1.0, bad])
    check = run_check(AllClose(name="allclose", rtol=0, atol=0), "C", got, torch.ones(2))
    r = full_report().model_copy(update={"tests": [rep.TestCase(workload="n=2", passed=False, checks=[check])]})
    back = Report.model_validate_json(r.model_dump_json())
    assert repr(back) == repr(r)


def test_exit_codes_follow_the_contract():
    assert EXIT_CODES[Status.ACCEPTED] == 0
    for s in (Status.WRONG_ANSWER, Status.COMPILE_ERROR, Status.RUNTIME_ERROR, Status.TIMEOUT, Status.REJECTED):
        assert s.exit_code == 1 and s.submitters_fault
    assert Status.INTERNAL_ERROR.exit_code == 3 and not Status.INTERNAL_ERROR.submitters_fault
    assert set(EXIT_CODES) == set(Status)
