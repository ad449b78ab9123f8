"""An empty or wrong problems folder is said, with where the judge looked, never an empty table."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()


def test_list_with_no_problems_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path))
    r = runner.invoke(app, ["list"])
    assert r.exit_code == 2, r.output
    assert f"no problems in {tmp_path}" in r.output and "JUDGE_PROBLEMS" in r.output
    assert "Traceback" not in r.output


def test_list_json_with_no_problems(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path / "missing"))
    r = runner.invoke(app, ["list", "--json"])
    assert r.exit_code == 2, r.output
    data = json.loads(r.stdout)
    assert data["exit_code"] == 2 and str(tmp_path / "missing") in data["error"]


def test_show_with_no_problems_says_where_it_looked(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGE_PROBLEMS", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["show", "vector_add"])
    assert r.exit_code == 2, r.output
    assert "no problem 'vector_add'" in r.output and str(tmp_path) in r.output and "JUDGE_PROBLEMS" in r.output
