"""What the compiler said reaches the user: a long COMPILE_ERROR says how many lines it leaves out
and where the whole log is; a build that succeeds with warnings carries them (counted, the first
few shown) and the log's path."""
from __future__ import annotations

import io

import pytest
from conftest import PROBLEMS_DIR, nvcc_test
from rich.console import Console

from cli import render
from judge.build import nvcc, toolchain
from judge.contract.report import BuildInfo
from judge.contract.verdict import Status
from judge.problem.spec import load_problem

WARNS = """\
#include <cuda_runtime.h>
__global__ void add(const float* a, const float* b, float* c, int n) {
    int unused = 3;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" void solve(const float* A, const float* B, float* C, int n) {
    int also_unused;
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
"""
N_ERRORS = 30
MANY_ERRORS = ('extern "C" void solve(const float* A, const float* B, float* C, int n) {\n'
               + "".join(f"  undefined_{i}(A);\n" for i in range(N_ERRORS)) + "}\n")


@pytest.fixture(scope="module")
def vector_add():
    return load_problem(PROBLEMS_DIR / "vector_add")


@nvcc_test
def test_a_long_compile_error_says_what_it_leaves_out(vector_add, tmp_path):
    src = tmp_path / "many.cu"
    src.write_text(MANY_ERRORS)
    p = toolchain.prepare(vector_add, src, "sm_90a")
    assert p.status is Status.COMPILE_ERROR
    shown = [ln for ln in p.message.splitlines() if "error: identifier" in ln]
    assert len(shown) == nvcc.SHOWN_ERROR_LINES
    # nvcc's last line ("30 errors detected ...") is an error line too
    assert f"... {N_ERRORS + 1 - nvcc.SHOWN_ERROR_LINES} more error lines" in p.message
    assert p.build is not None and p.build.log_path and p.build.log_path in p.message
    assert "undefined_29" in open(p.build.log_path).read()


@nvcc_test
def test_warnings_of_a_successful_build_are_kept(vector_add, tmp_path):
    src = tmp_path / "warns.cu"
    src.write_text(WARNS)
    p = toolchain.prepare(vector_add, src, "sm_90a")
    assert p.ok and p.build is not None
    assert p.build.warning_count == 2, p.build.warnings
    assert all("warns.cu" in w and "declared but never referenced" in w for w in p.build.warnings)
    assert p.build.log_path.endswith("build.log")


def test_build_summary_shows_warnings_with_the_log_path():
    info = BuildInfo(ok=True, cached=False, seconds=1.0, command="nvcc", arch="sm_90a",
                     warnings=[f"x.cu({i}): warning #177-D: unused" for i in range(5)], warning_count=7,
                     log_path="/cache/build/k/build.log")
    buf = io.StringIO()
    render.build_summary(Console(file=buf, width=200), info)
    text = buf.getvalue()
    assert "7 compiler warnings" in text and "/cache/build/k/build.log" in text
    assert text.count("warning #177-D") == render.SHOWN_WARNINGS
    assert f"... {7 - render.SHOWN_WARNINGS} more" in text
