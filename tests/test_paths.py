"""Where the problem set comes from (judge/paths.py): $JUDGE_PROBLEMS, else the checkout the code
runs from, else the copy a normal install carries; the model answers always sit beside it."""
from __future__ import annotations

from pathlib import Path

import pytest

from judge import paths


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """The code's root and the installed copy moved to a temporary folder, JUDGE_PROBLEMS unset."""
    code = tmp_path / "code"
    code.mkdir()
    monkeypatch.setattr(paths, "CODE_ROOT", code)
    monkeypatch.setattr(paths, "INSTALLED_SET", code / "judge" / "problemset")
    monkeypatch.delenv(paths.ENV_PROBLEMS, raising=False)
    return code


def test_installed_copy_outside_a_checkout(layout):
    assert paths.checkout_root() is None
    assert paths.problems_root() == layout / "judge" / "problemset" / "problems"
    assert paths.solutions_root() == layout / "judge" / "problemset" / "reference_solutions"
    assert paths.problems_origin() == "the installed package"


@pytest.mark.parametrize("marker", ["pyproject.toml", "problems"])
def test_a_checkout_needs_both_its_pyproject_and_its_problems(layout, marker):
    (layout / "pyproject.toml").write_text("") if marker == "pyproject.toml" else (layout / "problems").mkdir()
    assert paths.checkout_root() is None
    assert paths.problems_root() == paths.INSTALLED_SET / "problems"


def test_checkout_problems_first(layout):
    (layout / "pyproject.toml").write_text("")
    (layout / "problems").mkdir()
    assert paths.checkout_root() == layout
    assert paths.problems_root() == layout / "problems"
    assert paths.solutions_dir(paths.problems_root() / "vector_add") == layout / "reference_solutions" / "vector_add"
    assert paths.problems_origin() == "this checkout"


def test_environment_wins(layout, monkeypatch, tmp_path):
    (layout / "pyproject.toml").write_text("")
    (layout / "problems").mkdir()
    monkeypatch.setenv(paths.ENV_PROBLEMS, str(tmp_path / "mine" / "problems"))
    assert paths.problems_root() == tmp_path / "mine" / "problems"
    assert paths.solutions_root() == tmp_path / "mine" / "reference_solutions"
    assert paths.problems_origin() == "$JUDGE_PROBLEMS"


def test_environment_expands_home(layout, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv(paths.ENV_PROBLEMS, "~/set/problems")
    assert paths.problems_root() == tmp_path / "set" / "problems"


def test_this_repository_is_a_checkout():
    """Run from the repository (as the suite is), the judge reads the repository's own problems."""
    root = Path(__file__).resolve().parents[1]
    assert paths.checkout_root() == root
