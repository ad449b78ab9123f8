"""One spelling per option across commands: `-o/--output` is where a command writes (init's file,
leaderboard show's page, drill's folder); old spellings stay as hidden aliases."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from cli.app import app

runner = CliRunner()


def test_drill_writes_into_output_and_dir_still_works(tmp_path):
    for i, flag in enumerate(("-o", "--output", "--dir")):
        folder = tmp_path / f"work{i}"
        r = runner.invoke(app, ["drill", "--set", "vector_add", flag, str(folder), "--json",
                                "--db", str(tmp_path / f"j{i}.db")])
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["problems"][0]["starter"] == str(folder / "vector_add.cu")
        assert (folder / "vector_add.cu").is_file()


def test_drill_output_and_dir_that_differ_are_a_usage_error(tmp_path):
    r = runner.invoke(app, ["drill", "--set", "vector_add", "-o", str(tmp_path / "a"), "--dir", str(tmp_path / "b"),
                            "--db", str(tmp_path / "j.db")])
    assert r.exit_code == 2 and "--dir is the old name of --output" in r.output


def test_help_shows_the_one_spelling():
    shown = runner.invoke(app, ["drill", "--help"]).output
    assert "--output" in shown and "--dir" not in shown
