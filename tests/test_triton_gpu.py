"""Triton (`.py`) submissions on the GPU (judge/worker/triton_gpu.py, judge/engine/warmup.py).

Without a GPU: every attack file declares its status and problem and passes the static policy
(so that it is the runtime that catches it). With `-m gpu`: every Python attack gets its GPU status
(`tests/exploits/python/runtime/*.py`, also checked on CPU by tests/engine/test_cpu_check.py, and
`gpu/*.py`, which only the GPU can catch), the honest controls are ACCEPTED, and a Triton model
answer's report says what its warm-up compiled and that its worker was confined.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, ROOT

from judge.build import pypolicy
from judge.contract.verdict import Status
from judge.problem import spec

PY = ROOT / "tests" / "exploits" / "python"
ATTACKS = sorted((PY / "runtime").glob("*.py")) + sorted((PY / "gpu").glob("*.py"))
HONEST = {"vector_add_from_imports.py": "vector_add", "softmax_autotuned.py": "softmax"}
SECRET = 20261125


def declared(path: Path) -> tuple[Status | None, str, str, str]:
    """(GPU status, what its message says, problem, mode): line 1's `# expected: STATUS — what`
    unless a `# gpu: STATUS — what` line says otherwise (`skip`: None), line 2's problem, and a
    `# mode: submit` line for the attacks only a timed run catches."""
    lines = path.read_text().splitlines()
    m = re.match(r"^#\s*expected:\s*(\w+)\s*—\s*(.*)$", lines[0])
    n = re.match(r"^#\s*problem:\s*(\w+)$", lines[1])
    assert m and n, f"{path.name}: lines 1-2 must be `# expected: STATUS — what` and `# problem: NAME`"
    status, what = m.group(1), m.group(2)
    mode = "test"
    for line in lines[2:12]:
        if g := re.match(r"^#\s*gpu:\s*(\w+)\s*—\s*(.*)$", line):
            status, what = g.group(1), g.group(2)
        if re.match(r"^#\s*mode:\s*submit\b", line):
            mode = "submit"
    return (None if status == "skip" else Status[status]), what, n.group(1), mode


def test_the_gpu_attacks_declare_and_pass_the_policy():
    assert len(list((PY / "gpu").glob("*.py"))) >= 3
    for path in ATTACKS:
        status, _, problem, _ = declared(path)
        assert (PROBLEMS_DIR / problem / "problem.yaml").is_file(), path.name
        assert status is not Status.COMPILE_ERROR, path.name
        pypolicy.check_source(path.read_text(), path.name)  # the runtime must be what catches it


def _gpu() -> bool:
    from judge.gpu import device

    return bool(device.gpus())


def _run(problem: str, path: Path, mode: str):
    from judge.contract.events import Finished
    from judge.engine.run import Options, evaluate
    from judge.engine.stats import TimingPolicy

    p = spec.load_problem(PROBLEMS_DIR / problem)
    quick = TimingPolicy(budget_s=0.3, min_time_s=0.1)
    opts = Options(mode=mode, policy=quick, baseline_policy=quick.for_baseline(), secret=SECRET)
    return next(ev.report for ev in evaluate(p, path, opts) if isinstance(ev, Finished))


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("path", ATTACKS, ids=[f"{p.parent.name}/{p.name}" for p in ATTACKS])
def test_python_attack_gets_its_gpu_status(path):
    status, what, problem, mode = declared(path)
    if status is None:
        pytest.skip(what)
    report = _run(problem, path, mode)
    assert report.status is status, report.message
    if status is Status.REJECTED:
        assert what in report.message, report.message


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_python_controls_are_accepted(name):
    report = _run(HONEST[name], PY / "honest" / name, "test")
    assert report.status is Status.ACCEPTED, report.message


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU")
def test_a_triton_answer_is_timed_after_its_warm_up_and_confined():
    path = ROOT / "reference_solutions" / "vector_add" / "triton_01_blocked.py"
    report = _run("vector_add", path, "submit")
    assert report.status is Status.ACCEPTED, report.message
    env = report.environment
    assert env.confined and env.cgroup in (True, False)
    assert [w.phase for w in report.warm_up] == ["tests", "timed"]
    tests, timed = report.warm_up
    assert tests.workloads == len(report.tests) and timed.workloads == len(report.benchmarks)
    assert tests.kernels >= 1 and tests.compile_s > 0 and timed.kernels >= 1
    assert all(b.stats.samples > 0 and b.baselines for b in report.benchmarks)


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs an NVIDIA GPU")
def test_an_autotuned_answer_says_which_configuration_each_shape_timed():
    """The timed worker's warm-up names, per benchmark shape, the configuration the autotuner kept
    (judge/worker/triton_tuned.py): what the timed calls ran."""
    path = ROOT / "reference_solutions" / "hgemm" / "triton_01_tl_dot.py"  # key M, N, K: one pick a shape
    report = _run("hgemm", path, "submit")
    assert report.status is Status.ACCEPTED, report.message
    timed = next(w for w in report.warm_up if w.phase == "timed")
    shapes = {line.split(": ", 1)[0] for line in timed.tuned}
    assert shapes == {b.workload for b in report.benchmarks}, timed.tuned
    assert all("num_warps: " in line for line in timed.tuned), timed.tuned
