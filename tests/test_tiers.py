"""The test tiers (tests/conftest.py): what puts a test in the slow tier, every name the tables
there give still existing, the default run leaving the tier out and CI running it."""
from __future__ import annotations

import ast
import shlex
from pathlib import Path

import pytest
from conftest import ROOT, SLOW_FIXTURES, SLOW_MODULES, SLOW_TESTS, slow_reason

TESTS = ROOT / "tests"


def defined(path: Path) -> set[str]:
    return {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}


@pytest.mark.parametrize(("nodeid", "markers", "fixtures", "slow"), [
    ("tests/build/test_build.py::test_x", {"nvcc"}, set(), True),
    ("tests/runner/test_docker.py::test_x", {"docker"}, set(), True),
    ("tests/problem/test_problems.py::test_control_builds[a-b-sm_80]", set(), {"problem_builds", "tmp_path"}, True),
    ("tests/board/test_cluster.py::test_anything", set(), set(), True),
    ("tests/problem/test_classic_wrong.py::test_anything[hgemm]", set(), set(), True),
    ("tests/problem/test_problems.py::test_validates[hgemm]", set(), set(), False),
    ("tests/engine/test_reservoir.py::test_the_stash_is_checked_against_its_own_draw", set(), set(), True),
    ("tests/engine/test_reservoir.py::test_make_slots_leaves_room_for_the_stash", set(), set(), False),
    ("tests/cli/test_cli.py::test_list", {"parametrize", "skipif"}, {"tmp_path"}, False),
    ("tests/test_gpu.py::test_x", {"gpu"}, set(), False),  # the gpu tier is its own
])
def test_slow_reason(nodeid, markers, fixtures, slow):
    assert bool(slow_reason(nodeid, markers, fixtures)) is slow


def test_every_named_module_test_and_fixture_exists():
    for path in SLOW_MODULES:
        assert (TESTS / path).is_file(), path
    for name in SLOW_TESTS:
        path, _, function = name.partition("::")
        assert function in defined(TESTS / path), name
    fixtures = set().union(*(defined(p) for p in TESTS.rglob("*.py")))
    assert SLOW_FIXTURES.keys() <= fixtures, SLOW_FIXTURES.keys() - fixtures


def test_default_run_leaves_the_slow_tier_out_and_ci_runs_it():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert shlex.split(addopts) == ["-m", "not gpu and not slow"]
    runs = [shlex.split(line) for line in (ROOT / ".ci" / "run").read_text().splitlines()
            if line.startswith("python3 -m pytest")]
    selected = [r[i + 1] for r in runs for i in range(3, len(r) - 1) if r[i] == "-m"]
    assert selected == ["not gpu"], runs  # one run, every tier but the GPU's
