"""evaluate() on a machine without a GPU, verify's controls, and seeded inputs — no nvcc needed here."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import torch
from conftest import PROBLEMS_DIR, SOLUTIONS_DIR
from toy_problem import VALID, write_problem

from judge.build import nvcc as build
from judge.build import policy
from judge.build.cuda import CUDA
from judge.contract.events import Built, Finished, Stage
from judge.contract.verdict import Status
from judge.engine.run import Options, evaluate
from judge.gpu import device
from judge.practice.verify import ControlError, controls, expected_status
from judge.problem import spec, workloads
from judge.worker import protocol

NO_GPU = not device.gpus()


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


def run(problem, source, **kw):
    events = list(evaluate(problem, source, Options(mode="test", **kw)))
    assert isinstance(events[-1], Finished) and not any(isinstance(e, Finished) for e in events[:-1])
    return events[-1].report, events


def fake_result(problem, source: Path, ok: bool, error: str | None = None, arch: str = "sm_90a"):
    """A finished build (no nvcc), through the CUDA toolchain's verdict on it."""
    req = CUDA.request(problem, source, arch)
    result = build.BuildResult(req, ok, "k" * 24, source if ok else None, "cd /x && nvcc -o lib.so src.cu",
                               "ptxas info : Used 8 registers", 1.5, False, error=error,
                               resources=[build.KernelResources("k(int)", registers=8)])
    return CUDA.from_build(problem, source, arch, result)


def test_compile_error_verdict_from_a_prebuilt_result(vector_add, tmp_path):
    src = tmp_path / "x.cu"
    src.write_text("broken")
    prepared = fake_result(vector_add, src, False, "x.cu(1): error: this declaration has no storage class")
    report, events = run(vector_add, src, prepared=prepared)
    assert report.status == Status.COMPILE_ERROR and report.exit_code == 1
    assert "no storage class" in report.message and "command: cd /x && nvcc" in report.message
    assert report.build and not report.build.ok and report.build.kernels[0].registers == 8
    assert report.source_sha256 == hashlib.sha256(b"broken").hexdigest()
    assert report.problem == "vector_add" and report.mode == "test" and report.environment.arch == "sm_90a"
    assert [type(e) for e in events] == [Stage, Built, Finished]
    assert report.wall_s >= 0 and report.started_at
    assert list(report.phases_s) == ["build", "close"]  # the build failed: no phase after it ran


@pytest.mark.skipif(not NO_GPU, reason="the no-GPU verdict")
def test_built_but_no_gpu_is_internal_error(vector_add, tmp_path, monkeypatch):
    src = tmp_path / "x.cu"
    src.write_text("// fine")
    monkeypatch.setattr(policy, "check_build", lambda *a, **k: None)  # the fake build has no library
    report, _ = run(vector_add, src, prepared=fake_result(vector_add, src, True))
    assert report.status == Status.INTERNAL_ERROR and report.exit_code == 3
    assert "no CUDA device" in report.message and report.build.ok


@pytest.mark.skipif(not NO_GPU, reason="the no-GPU verdict")
def test_a_triton_file_without_a_gpu_points_at_the_cpu_check(vector_add):
    report, _ = run(vector_add, SOLUTIONS_DIR / "vector_add" / "triton_01_blocked.py")
    assert report.status == Status.INTERNAL_ERROR and report.build is None  # nothing is built for Triton
    assert "no CUDA device" in report.message and "passed the checks" in report.message
    assert "--cpu" in report.message and "build succeeded" not in report.message


def test_missing_nvcc_is_internal_error(vector_add, tmp_path, monkeypatch):
    monkeypatch.setattr(build.toolkit, "nvcc_path", lambda: None)
    monkeypatch.setattr(build.toolkit, "nvcc_version", lambda: None)
    src = tmp_path / "x.cu"
    src.write_text("// anything")
    report, _ = run(vector_add, src)
    assert report.status == Status.INTERNAL_ERROR and "nvcc not found" in report.message


def test_arch_option_is_used(vector_add, tmp_path):
    src = tmp_path / "x.cu"
    src.write_text("broken")
    report, _ = run(vector_add, src, arch="sm_80", prepared=fake_result(vector_add, src, False, "e", "sm_80"))
    assert report.environment.arch == "sm_80" and "arch=compute_80" in report.environment.flags


# -- verify's controls -------------------------------------------------------------------------------

@pytest.mark.parametrize("first_line, status, reason", [
    ("// expected: WRONG_ANSWER — tail not handled", Status.WRONG_ANSWER, "tail not handled"),
    ("// expected: TIMEOUT - spins forever", Status.TIMEOUT, "spins forever"),
    ("//expected:RUNTIME_ERROR", Status.RUNTIME_ERROR, ""),
    ("  // expected: REJECTED -- side stream", Status.REJECTED, "side stream"),
    ("// expected: COMPILE_ERROR", Status.COMPILE_ERROR, ""),
])
def test_expected_status_parses(tmp_path, first_line, status, reason):
    f = tmp_path / "c.cu"
    f.write_text(first_line + "\n__global__ void k() {}\n")
    assert expected_status(f) == (status, reason)


@pytest.mark.parametrize("text", ["", "// expected: WRONG\n", "// WRONG_ANSWER\n",
                                  "#include <x>\n// expected: TIMEOUT\n",
                                  "// expected: wrong_answer\n"])
def test_expected_status_rejects(tmp_path, text):
    f = tmp_path / "c.cu"
    f.write_text(text)
    with pytest.raises(ControlError) as info:
        expected_status(f)
    assert "expected: STATUS" in str(info.value) and str(f) in str(info.value)


def test_controls_lists_references_then_wrongs(tmp_path):
    d = write_problem(tmp_path / "problems", VALID)
    sol = tmp_path / "reference_solutions" / "toy"
    sol.mkdir(parents=True)
    (sol / "02_fast.cu").write_text("// fast")
    (sol / "01_naive.cu").write_text("// naive")
    (d / "wrong").mkdir()
    (d / "wrong" / "race.cu").write_text("// expected: WRONG_ANSWER — race\n")
    cs = controls(spec.load_problem(d))
    assert [(c.path.name, c.kind, c.expected) for c in cs] == [
        ("01_naive.cu", "reference", Status.ACCEPTED), ("02_fast.cu", "reference", Status.ACCEPTED),
        ("race.cu", "wrong", Status.WRONG_ANSWER)]
    assert cs[2].reason == "race"


# -- seeded inputs -----------------------------------------------------------------------------------

def test_inputs_are_seeded_and_fresh_per_secret_phase_and_workload():
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")

    def draw(secret, phase, n=64):
        t = {x.name: torch.empty(n) for x in p.tensors}
        workloads.fill_inputs(p, {"n": n}, t, secret, phase)
        return t

    a, b = draw(1, "test0"), draw(1, "test0")
    assert torch.equal(a["A"], b["A"]) and torch.equal(a["B"], b["B"])   # replayable
    assert not torch.equal(a["A"], a["B"])                               # per tensor
    assert not torch.equal(a["A"], draw(2, "test0")["A"])                # per secret
    assert not torch.equal(a["A"], draw(1, "test1")["A"])                # per phase
    assert not torch.equal(a["A"][:32], draw(1, "test0", 32)["A"])       # per workload


def test_fill_input_kinds():
    out = torch.empty(10000)
    workloads.fill_input(out, spec.InputSpec(init="rand", low=2, high=3, scale=2.0), 2.0, 1)
    assert 4.0 <= out.min() and out.max() < 6.0
    workloads.fill_input(out, spec.InputSpec(init="randn"), 3.0, 1)
    assert 2.7 < float(out.std()) < 3.3
    ints = torch.empty(1000, dtype=torch.int32)
    workloads.fill_input(ints, spec.InputSpec(init="randint", low=-3, high=4), 1.0, 1)
    assert int(ints.min()) == -3 and int(ints.max()) == 3


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2])
def test_narrow_floats_are_the_float32_draw_rounded_once(dtype):
    """Every dtype gets the float32 draw, scaled in float32 and rounded once to it (FP8 by a cast:
    torch defines no arithmetic on it), so a 16-bit and an FP8 input of one seed hold the same values
    as far as each can."""
    wide, narrow = torch.empty(4096), torch.empty(4096, dtype=dtype)
    for out in (wide, narrow):
        workloads.fill_input(out, spec.InputSpec(init="randn"), 16.0, 7)
    assert torch.equal(narrow, wide.to(dtype))
    assert 14 < float(narrow.float().std()) < 18


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_poison_makes_every_element_large_or_nan(dtype):
    for byte in (*protocol.POISON_BYTES, 0x7F, 0xC0):
        t = torch.zeros(8, dtype=dtype)
        workloads.poison(t, byte)
        v = t.double()
        assert bool(((v.abs() >= 2) | torch.isnan(v)).all()), (dtype, hex(byte), v)


def test_as_outputs():
    p = spec.load_problem(PROBLEMS_DIR / "vector_add")
    t = torch.zeros(3)
    assert workloads.as_outputs(p, t) == {"C": t}
    assert workloads.as_outputs(p, {"C": t})["C"] is t
    with pytest.raises(TypeError):
        workloads.as_outputs(p, {"D": t})
    with pytest.raises(TypeError):
        workloads.as_outputs(p, [t])


def test_device_means_the_nvml_index_under_cuda_visible_devices():
    """`--device N` is NVML's N (the workers get CUDA_VISIBLE_DEVICES=N); the parent's own CUDA
    ordinal for it depends on the parent's CUDA_VISIBLE_DEVICES (indices or UUID prefixes)."""
    from judge.gpu.device import GpuInfo, NotVisible, cuda_index

    gs = [GpuInfo(i, "H100", f"GPU-{i}aaa-{i}", "580", 9, 0, 80 << 30) for i in range(4)]
    assert cuda_index(2, visible="2,3", all_gpus=gs) == 0
    assert cuda_index(3, visible="2,3", all_gpus=gs) == 1
    assert cuda_index(1, visible="GPU-3aaa,GPU-1a", all_gpus=gs) == 1  # a UUID prefix
    with pytest.raises(NotVisible, match="GPU 0 is not among"):
        cuda_index(0, visible="2,3", all_gpus=gs)
    with pytest.raises(NotVisible):
        cuda_index(3, visible="2,x,3", all_gpus=gs)  # CUDA stops at the first entry it cannot parse
    with pytest.raises(NotVisible):
        cuda_index(1, visible="", all_gpus=gs)


def test_default_device_is_the_first_gpu_cuda_visible_devices_lists(monkeypatch):
    """No `--device`: the GPU this process's CUDA calls 0 (it was always NVML's 0, which
    `CUDA_VISIBLE_DEVICES=3` hides: every run then stopped at "GPU 0 is not among ...")."""
    from judge.engine.session import Options
    from judge.gpu.device import GpuInfo, cuda_index, default_index

    gs = [GpuInfo(i, "H100", f"GPU-{i}aaa-{i}", "580", 9, 0, 80 << 30) for i in range(4)]
    assert default_index(visible="3", all_gpus=gs) == 3
    assert cuda_index(default_index(visible="3", all_gpus=gs), visible="3", all_gpus=gs) == 0
    assert default_index(visible="2,0", all_gpus=gs) == 2
    assert default_index(visible=" GPU-1a,GPU-3", all_gpus=gs) == 1  # a UUID prefix
    assert default_index(visible="", all_gpus=gs) == 0  # no GPU visible: cuda_index says so
    assert default_index(visible="GPU-zzz", all_gpus=gs) == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert Options().device == 3
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert Options().device == 0
    assert Options(device=2).device == 2  # --device wins


def test_cli_device_defaults_to_cuda_visible_devices(monkeypatch):
    from cli.common import DeviceOpt

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,2")
    assert DeviceOpt.default_factory() == 1


def test_device_without_cuda_visible_devices_is_itself(monkeypatch):
    from judge.gpu.device import cuda_index

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert cuda_index(5) == 5


def test_fp8_work_is_bounded_by_the_fp8_peak_or_else_the_fp16_one():
    """`compute: fp8_tensor` uses the measured FP8 peak; a GPU without FP8 tensor cores (peak 0)
    runs FP8 work on its fp16 ones, whose peak bounds it there."""
    from judge.gpu.device import Peaks

    hopper = Peaks("H100", "GPU-h", 3000.0, 50.0, 700.0, 700.0, 1300.0)
    ampere = Peaks("A100", "GPU-a", 1800.0, 19.0, 290.0, 290.0, 0.0)
    assert hopper.tflops("fp8_tensor") == 1300.0 and hopper.tflops("fp16_tensor") == 700.0
    assert ampere.tflops("fp8_tensor") == 290.0


def test_a_peaks_cache_without_a_newer_peak_is_measured_again(monkeypatch, tmp_path):
    """A cache file written before the FP8 peak existed is no cache: every peak is measured again
    (once), never read with the new peak missing."""
    import json

    from judge.gpu import device

    monkeypatch.setenv("JUDGE_CACHE", str(tmp_path))
    gpu = device.GpuInfo(0, "H100", "GPU-old", "580", 9, 0, 80 << 30)
    path = tmp_path / "devices" / "GPU-old.json"
    path.parent.mkdir()
    old = {"gpu": "H100", "uuid": "GPU-old", "copy_gbps": 3000.0, "fp32_tflops": 50.0,
           "fp16_tensor_tflops": 700.0, "bf16_tensor_tflops": 700.0}
    path.write_text(json.dumps(old))
    assert device.cached_peaks(gpu) is None
    measured = device.Peaks("H100", "GPU-old", 3000.0, 50.0, 700.0, 700.0, 1300.0)
    monkeypatch.setattr(device, "_measure", lambda g: measured)
    assert device.peaks(gpu) == measured
    assert device.cached_peaks(gpu) == measured  # and kept


def test_an_fp8_peak_that_cannot_be_measured_is_zero_not_a_failure(monkeypatch):
    """The FP8 peak is measured with the others, once per GPU: a torch or cuBLAS that cannot run
    torch._scaled_mm (here: no CUDA at all, on a GPU that claims sm_90) gives 0, so that every other
    problem's peaks are still measured and FP8 work falls back to the fp16 peak."""
    from judge.gpu import device

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    assert device._fp8_tflops(lambda fn, *a, **kw: 1.0, size=64) == 0.0
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    assert device._fp8_tflops(lambda fn, *a, **kw: 1.0 / 0, size=64) == 0.0  # no FP8 tensor cores: never tried


def test_an_integer_input_is_never_filled_from_a_float_draw():
    """Only FP8 outputs take the cast branch: a 1-byte integer input asked for a float draw is refused
    by the multiply, as before, not silently truncated."""
    with pytest.raises(RuntimeError):
        workloads.fill_input(torch.empty(8, dtype=torch.uint8), spec.InputSpec(init="randn"), 16.0, 1)
