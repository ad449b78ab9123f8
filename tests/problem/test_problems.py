"""Every problem under problems/ tests itself: it passes every rule of `judge validate` (the spec, the
files around it, its reference run on CPU: judge/problem/validate.py, documented in
docs/problem-format.md) and its files build.

Problems are discovered at collection, so a new folder is covered without editing this file. The GPU
half (every reference solution ACCEPTED, every control its declared status) is tests/test_gpu.py.
"""
from __future__ import annotations

import pytest
from conftest import (
    ARCHS,
    PROBLEMS_DIR,
    control_files,
    declares_compile_error,
    nvcc_test,
    problem_names,
    rel,
)

from judge.build import toolchain
from judge.problem import validate

NAMES = problem_names()
LANGUAGES = list(toolchain.REGISTRY.values())


def test_there_are_problems():
    assert "vector_add" in NAMES, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_validates(name):
    found = validate.validate(PROBLEMS_DIR / name, LANGUAGES)
    assert not found, "\n".join(f"[{f.rule}] {f}" for f in found)


def test_the_set_validates():
    """Every reference_solutions/<name>/ belongs to a problem (no orphans from a rename)."""
    found = validate.validate_set(PROBLEMS_DIR)
    assert not found, "\n".join(map(str, found))


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
