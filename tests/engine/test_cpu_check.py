"""`judge test FILE.py --cpu` (judge/engine/cpu_check.py, judge/worker/triton_cpu.py): Triton's
interpreter in a sandboxed child. The run-time attacks in tests/exploits/python/runtime/ (each passes
the static policy, so the run-time record is what stops it) get their declared status; the honest
controls in tests/exploits/python/honest/ pass. Needs Triton (skipped without it, except where
JUDGE_REQUIRE_TRITON=1: CI)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, ROOT
from typer.testing import CliRunner

from cli.app import app
from judge.build import pypolicy
from judge.contract.verdict import Status
from judge.engine import cpu_check
from judge.problem import spec

PY = ROOT / "tests" / "exploits" / "python"
RUNTIME = sorted((PY / "runtime").glob("*.py"))
HONEST = {"vector_add_from_imports.py": "vector_add", "softmax_autotuned.py": "softmax"}


pytestmark = pytest.mark.usefixtures("triton_installed")  # tests/conftest.py


def problem(name: str) -> spec.Problem:
    return spec.load_problem(PROBLEMS_DIR / name)


def declared(path: Path) -> tuple[Status, str, str]:
    lines = path.read_text().splitlines()
    m = re.match(r"^#\s*expected:\s*(\w+)\s*—\s*(.*)$", lines[0])
    n = re.match(r"^#\s*problem:\s*(\w+)$", lines[1])
    assert m and n, f"{path.name}: lines 1-2 must be `# expected: STATUS — what` and `# problem: NAME`"
    return Status[m.group(1)], m.group(2), n.group(1)


def test_there_are_runtime_attacks():
    assert len(RUNTIME) >= 6


@pytest.mark.parametrize("path", RUNTIME, ids=[p.name for p in RUNTIME])
def test_every_runtime_attack_passes_the_policy_and_gets_its_status(path):
    status, what, name = declared(path)
    pypolicy.check_source(path.read_text(), path.name)  # the policy lets it through: run time stops it
    r = cpu_check.run(problem(name), path, timeout_s=15 if status is Status.TIMEOUT else cpu_check.TIMEOUT_S)
    assert r.status is status, (r.status, r.message)
    assert what in r.message, r.message
    assert r.exit_code == 1


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_controls_pass_in_the_sandbox(name):
    r = cpu_check.run(problem(HONEST[name]), PY / "honest" / name)
    assert r.status is None, r.message
    assert r.exit_code == 0 and r.cases and all(c.passed and c.launches and not c.ops for c in r.cases)
    assert r.sandboxed == (cpu_check_filter_here() is None)


def cpu_check_filter_here() -> str | None:
    from judge.sandbox import seccomp

    return seccomp.supported()


def test_the_large_workloads_are_skipped_and_named():
    take, skip = cpu_check.checked_workloads(problem("vector_add"))
    assert skip == ["n=268435456"] and len(take) == 5


def test_static_verdicts_come_first(tmp_path):
    va = problem("vector_add")
    bad = tmp_path / "bad.py"
    bad.write_text("import os\ndef solve(A, B, C, n):\n    pass\n")
    r = cpu_check.run(va, bad)
    assert r.status is Status.REJECTED and "`import os`" in r.message and not r.cases
    bad.write_text("def solve(A, B, C):\n    pass\n")
    r = cpu_check.run(va, bad)
    assert r.status is Status.COMPILE_ERROR and "solve takes (A, B, C)" in r.message
    bad.write_text("def solve(A, B, C, n:\n")
    r = cpu_check.run(va, bad)
    assert r.status is Status.COMPILE_ERROR and "bad.py:1" in r.message


def test_cli_json_and_usage(tmp_path):
    runner = CliRunner()
    r = runner.invoke(app, ["test", "vector_add", str(PY / "runtime" / "no_kernel.py"), "--cpu", "--json"])
    assert r.exit_code == 1, r.output
    d = json.loads(r.stdout)
    assert d["status"] == "REJECTED" and d["practice"] is True and d["cases"][0]["launches"] == 0
    r = runner.invoke(app, ["test", "vector_add", str(PY / "honest" / "vector_add_from_imports.py"), "--cpu",
                            "--workload", "3"])
    assert r.exit_code == 0 and "PASSED on CPU" in r.output and "test 1/1" in r.output, r.output
    cu = tmp_path / "x.cu"
    cu.write_text('extern "C" void solve(const float* A, const float* B, float* C, int n) {}\n')
    r = runner.invoke(app, ["test", "vector_add", str(cu), "--cpu"])
    assert r.exit_code == 2 and "--cpu checks Triton (.py) files" in r.output


def test_outputs_that_come_back_malformed_are_no_outputs(tmp_path):
    import torch

    cases = [{"args": {}, "outputs": ["C"]}]
    f = tmp_path / "out.pt"
    f.write_bytes(b"not a tensor file")
    assert cpu_check._outputs(f, cases) is None
    torch.save([{"D": torch.zeros(1)}], f)
    assert cpu_check._outputs(f, cases) is None
    torch.save([{"C": torch.zeros(1)}, {"C": torch.zeros(1)}], f)
    assert cpu_check._outputs(f, cases) is None
    torch.save([{"C": torch.zeros(1)}], f)
    assert cpu_check._outputs(f, cases)[0]["C"].shape == (1,)
    assert cpu_check._outputs(tmp_path / "missing.pt", cases) is None
