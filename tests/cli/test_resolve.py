"""A problem is named or given as a folder; a folder in the current directory that is named like a
problem but is not one (no problem.yaml: a folder of attempts) does not hide the problem."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()
REJECTED_SOURCE = '#include "/etc/passwd"\n'  # refused by the static policy: no build, no GPU needed


def test_a_folder_of_attempts_does_not_hide_the_problem(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vector_add").mkdir()
    (tmp_path / "vector_add" / "try1.cu").write_text(REJECTED_SOURCE)
    r = runner.invoke(app, ["test", "vector_add", "vector_add/try1.cu", "--json", "--no-record"])
    report = json.loads(r.stdout)
    assert report["problem"] == "vector_add" and report["status"] == "REJECTED", r.output
    assert r.exit_code == 1
    r = runner.invoke(app, ["show", "vector_add", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["name"] == "vector_add"


def test_a_problem_folder_here_wins_over_the_problem_of_that_name(tmp_path, monkeypatch):
    from toy_problem import VALID, write_problem

    write_problem(tmp_path, {**VALID, "name": "vector_add", "title": "my own copy"}, folder="vector_add")
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["show", "vector_add", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["title"] == "my own copy"


def test_init_prints_a_command_that_works_from_anywhere(tmp_path):
    r = runner.invoke(app, ["init", "vector_add", "-o", str(tmp_path / "x.cu")])
    assert r.exit_code == 0, r.output
    assert f"judge submit vector_add {tmp_path / 'x.cu'}" in r.output
    assert "problems/" not in r.output
