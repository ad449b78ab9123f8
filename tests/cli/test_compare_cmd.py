"""`judge compare A B` that ends on A (no GPU here, or A's own failure) still names B's build
failure: B is built with A, and a B that does not build is part of the answer."""
from __future__ import annotations

import json

import pytest
from conftest import nvcc_test
from typer.testing import CliRunner

import judge.engine.compare as comparing
from cli.app import app
from judge.build import toolchain
from judge.build.language import Prepared
from judge.contract.report import Environment, Report
from judge.contract.verdict import Status
from judge.engine.compare import Compared, Comparison
from judge.gpu import device

runner = CliRunner()
OK = """\
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* A, const float* B, float* C, int n) { add<<<(n + 255) / 256, 256>>>(A, B, C, n); }
"""
BROKEN = 'extern "C" void solve(const float* A, const float* B, float* C, int n) { this is not C++; }\n'


@pytest.fixture
def files(tmp_path):
    a, b = tmp_path / "a_ok.cu", tmp_path / "b_broken.cu"
    a.write_text(OK)
    b.write_text(BROKEN)
    return a, b


def ended_on_a(status: Status, message: str) -> Comparison:
    a_test = Report(problem="vector_add", solution="a_ok.cu", source_sha256="1", mode="test", status=status,
                    message=message, environment=Environment(arch="sm_90a"))
    return Comparison(problem="vector_add", a="a_ok.cu", b="b_broken.cu", status=status, failed="A",
                      message=f"A (a_ok.cu): {status.value}: {message}", a_test=a_test)


@pytest.mark.parametrize("a_status, code, first", [(Status.INTERNAL_ERROR, 1, "B ("),
                                                   (Status.WRONG_ANSWER, 1, "A (")])
def test_b_that_does_not_build_is_named(monkeypatch, files, a_status, code, first):
    monkeypatch.setattr(comparing, "compare", lambda *a: iter([Compared(ended_on_a(a_status, "no CUDA device"))]))
    monkeypatch.setattr(toolchain, "prepare", lambda p, src, arch, **k: Prepared(
        src, "cuda", Status.COMPILE_ERROR, "b_broken.cu(1): error: this is not C++"))
    r = runner.invoke(app, ["compare", "vector_add", *map(str, files), "--json"])
    assert r.exit_code == code, r.output
    data = json.loads(r.stdout)
    assert data["message"].startswith(first)
    assert "B (" in data["message"] and "COMPILE_ERROR" in data["message"] and "no CUDA device" in data["message"]


def test_b_that_builds_changes_nothing(monkeypatch, files):
    monkeypatch.setattr(comparing, "compare", lambda *a: iter([Compared(ended_on_a(Status.INTERNAL_ERROR, "no GPU"))]))
    monkeypatch.setattr(toolchain, "prepare", lambda p, src, arch, **k: Prepared(src, "cuda"))
    r = runner.invoke(app, ["compare", "vector_add", *map(str, files), "--json"])
    assert r.exit_code == 3, r.output
    assert "B (" not in json.loads(r.stdout)["message"]


@nvcc_test
@pytest.mark.skipif(bool(device.gpus()), reason="the no-GPU answer of judge compare")
def test_compare_without_gpu_mentions_bs_compile_error(files):
    r = runner.invoke(app, ["compare", "vector_add", *map(str, files), "--arch", "sm_90a"])
    assert r.exit_code == 1, r.output
    assert "B (" in r.output and "COMPILE_ERROR" in r.output and "b_broken.cu(1): error" in r.output
    assert "no CUDA device" in r.output
