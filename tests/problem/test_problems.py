"""Every problem under problems/ tests itself: it validates, its files build, its reference is accurate.

Problems are discovered at collection, so a new folder is covered without editing this file. The GPU
half (every reference solution ACCEPTED, every control its declared status) is tests/test_gpu.py.
"""
from __future__ import annotations

import math

import pytest
import torch
from conftest import (
    ARCHS,
    PROBLEMS_DIR,
    ROOT,
    control_files,
    declares_compile_error,
    nvcc_test,
    problem_names,
    reference_files,
    rel,
    wrong_files,
)

from judge.contract.verdict import Status
from judge.practice.verify import ControlError, controls, expected_status
from judge.problem import spec
from judge.problem.checks import run_check
from judge.problem.workloads import fill_inputs, reference_outputs

NAMES = problem_names()
SMALL_NUMEL = 4_000_000


def load(name: str) -> spec.Problem:
    try:
        return spec.load_problem(PROBLEMS_DIR / name)
    except spec.ProblemError as e:
        pytest.fail(f"{name} does not validate:\n{e}")


def total_numel(p: spec.Problem, w: spec.Workload) -> int:
    return sum(math.prod(p.shape_of(t.name, w)) for t in p.tensors)


def test_there_are_problems():
    assert "vector_add" in NAMES, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_validates(name):
    p = load(name)
    assert p.name == name
    try:
        controls(p)  # what `judge validate` checks besides the spec
    except ControlError as e:
        pytest.fail(str(e))


@pytest.mark.parametrize("name", NAMES)
def test_has_statement_hints_and_controls(name):
    p = load(name)
    readme = PROBLEMS_DIR / name / "README.md"
    assert readme.is_file() and readme.read_text().strip(), f"{rel(readme)} is missing or empty"
    assert len(p.spec.hints) >= 2, "needs at least 2 progressive hints"
    assert len(reference_files(name)) >= 1, f"no reference_solutions/{name}/*.cu"
    assert len(wrong_files(name)) >= 2, f"needs at least 2 problems/{name}/wrong/*.cu controls"


@pytest.mark.parametrize("name", NAMES)
def test_tests_include_the_largest_benchmark(name):
    p = load(name)
    assert p.spec.tests
    if p.spec.benchmarks:
        size = max(total_numel(p, w) for w in p.spec.benchmarks)
        largest = [w for w in p.spec.benchmarks if total_numel(p, w) == size]  # ties: any of them
        assert any(w in p.spec.tests for w in largest), \
            f"tests lack the largest benchmark workload {spec.workload_id(largest[0])}"


@pytest.mark.parametrize("path", [pytest.param(f, id=rel(f)) for n in NAMES for f in wrong_files(n)])
def test_wrong_control_declares_its_status(path):
    status, reason = expected_status(path)
    assert status is not Status.ACCEPTED
    assert reason, f"{rel(path)}: say why it is wrong after the status (`// expected: {status.value} — why`)"


BUILD_CASES = [pytest.param(n, f, arch, id=f"{rel(f)}@{arch}") for n in NAMES for f in control_files(n)
               for arch in ARCHS]


@nvcc_test
@pytest.mark.parametrize("name, path, arch", BUILD_CASES)
def test_control_builds(problem_builds, name, path, arch):
    r = problem_builds.get((name, rel(path), arch))
    assert r is not None, f"{name} did not load, so nothing was built (see test_validates)"
    if declares_compile_error(path):
        assert not r.ok, f"{rel(path)} declares COMPILE_ERROR but built for {arch}"
        assert r.error
    else:
        assert r.ok, f"{rel(path)} for {arch}:\n{r.error}\n{r.command}"


@pytest.mark.parametrize("name", NAMES)
def test_reference_agrees_with_float64(name):
    """The torch reference run on the real dtypes (rounded to the output dtype) passes the problem's own
    check against the same reference run in float64: the tolerance leaves room for a correct kernel."""
    p = load(name)
    small = [(i, w) for i, w in enumerate(p.spec.tests) if total_numel(p, w) < SMALL_NUMEL]
    assert small, f"no test workload with fewer than {SMALL_NUMEL} elements"
    failures = []
    for i, w in small:
        inputs = {t.name: torch.empty(p.shape_of(t.name, w), dtype=getattr(torch, t.ctype.element.dtype))
                  for t in p.tensors if not t.ctype.is_output}
        fill_inputs(p, w, inputs, secret=20261122, phase=f"test{i}")
        native = reference_outputs(p, w, inputs)
        wide = reference_outputs(p, w, {n: x.double() if x.is_floating_point() else x for n, x in inputs.items()})
        for o in p.outputs:
            dtype = getattr(torch, o.ctype.element.dtype)
            assert tuple(native[o.name].shape) == p.shape_of(o.name, w), \
                f"{spec.workload_id(w)}: reference output {o.name} has shape {tuple(native[o.name].shape)}"
            if dtype.is_floating_point:
                assert wide[o.name].dtype == torch.float64, \
                    f"{o.name}: the reference must compute in promote_types(dtype, float32) (got {wide[o.name].dtype})"
            got = native[o.name].to(dtype)
            r = run_check(p.spec.check, o.name, got, wide[o.name])
            if not r.passed:
                failures.append(f"{spec.workload_id(w)} {o.name}: {r.n_bad}/{r.numel} bad, max abs "
                                f"{r.max_abs_err:.3g}, max rel {r.max_rel_err:.3g}, e.g. {r.mismatches[:2]}")
    assert not failures, "\n".join(failures)


def test_reference_solution_folders_match_problems():
    """Every reference_solutions/<name>/ belongs to a problem (no orphans from a rename)."""
    sol = ROOT / "reference_solutions"
    if not sol.is_dir():
        pytest.skip("no reference_solutions/")
    orphans = [d.name for d in sol.iterdir() if d.is_dir() and not d.name.startswith(".") and d.name not in NAMES]
    assert not orphans, orphans
