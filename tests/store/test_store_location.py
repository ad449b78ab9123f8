"""Which results store a command uses: one per user by default (the platform's data folder), --db and
JUDGE_DB to override, a per-folder store of an older kernel-judge named (never read, never lost
silently), and every command that reads the store saying which file it read."""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cli.drill_cmd as drill_cmd
from cli.app import app
from judge import paths
from judge.contract.report import Report
from judge.store import Store

runner = CliRunner()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """No JUDGE_DB: the default store, under a temporary XDG_DATA_HOME; the command runs in `work/`."""
    monkeypatch.delenv("JUDGE_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(drill_cmd, "now", lambda: datetime(2026, 11, 24, 10, 0, tzinfo=timezone.utc))
    return tmp_path


def invoke(*args: str, code: int = 0):
    r = runner.invoke(app, list(args))
    assert r.exit_code == code, r.output
    assert "Traceback" not in r.output, r.output
    return r


def solved(path: Path, problem: str = "relu") -> None:
    with Store(path) as s:
        s.record(Report(problem=problem, solution="r.cu", source_sha256="1", mode="submit", status="ACCEPTED",
                        geomean_speedup=1.5))


def test_the_suite_never_uses_the_real_user_store(monkeypatch):
    """conftest points JUDGE_DB and XDG_DATA_HOME at this run's temporary folders."""
    assert Path(os.environ["JUDGE_DB"]).resolve() != paths.user_store().resolve()
    monkeypatch.delenv("JUDGE_DB")
    real = Path("~/.local/share").expanduser().resolve()
    assert real not in paths.user_store().resolve().parents


def test_default_is_one_store_per_user_in_the_data_folder(home):
    where = paths.store_location()
    assert where.path == home / "data" / "kernel-judge" / "judge.db"
    assert (where.chosen_by, where.folder_store) == ("default", None)


def test_judge_db_and_db_override_in_that_order(home, monkeypatch):
    monkeypatch.setenv("JUDGE_DB", str(home / "env.db"))
    assert (paths.store_location().path, paths.store_location().chosen_by) == (home / "env.db", "JUDGE_DB")
    explicit = paths.store_location(home / "flag.db")
    assert (explicit.path, explicit.chosen_by) == (home / "flag.db", "--db")


def test_a_drill_follows_the_user_from_folder_to_folder(home):
    """Started in one folder, `judge drill status` finds it from another (the store was per folder)."""
    started = json.loads(invoke("drill", "--level", "easy", "--seed", "1", "--json").stdout)
    store = home / "data" / "kernel-judge" / "judge.db"
    assert started["store"] == str(store) and store.is_file()
    elsewhere = home / "work" / "sub"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    status = json.loads(invoke("drill", "status", "--json").stdout)
    assert status["drill"]["id"] == started["drill"]["id"] and status["store"] == str(store)
    assert f"results store {store}" in invoke("drill", "status").stdout
    assert not (home / "work" / ".judge").exists() and not (elsewhere / ".judge").exists()
    for args in (["hint"], ["stats"], ["solution", "vector_add", "--force"]):
        assert json.loads(invoke(*args, "--json").stdout)["store"] == str(store), args
    assert f"results store {store}" in invoke("stats").stdout


def test_list_says_which_store_it_read(home, monkeypatch):
    store = home / "data" / "kernel-judge" / "judge.db"
    r = invoke("list")
    assert f"results store {store} (none yet)" in r.stdout
    assert not store.exists()  # listing never creates one
    solved(store)
    listed = json.loads(invoke("list", "--json").stdout)
    assert listed["store"] == str(store)
    assert {p["name"]: p["solved"] for p in listed["problems"]}["relu"]
    other = home / "other.db"
    assert json.loads(invoke("list", "--json", "--db", str(other)).stdout)["store"] == str(other)
    monkeypatch.setenv("JUDGE_DB", str(other))
    assert json.loads(invoke("list", "--json").stdout)["store"] == str(other)


def test_a_folder_store_of_an_older_judge_is_named_not_read(home):
    old = home / "work" / ".judge" / "judge.db"
    old.parent.mkdir()
    solved(old, "gelu")
    r = invoke("list", "--json")
    listed = json.loads(r.stdout)
    assert not {p["name"]: p["solved"] for p in listed["problems"]}["gelu"]  # not read...
    assert r.stderr.count("note:") == 1 and ".judge/judge.db" in r.stderr  # ...but said, once
    assert "mv .judge/judge.db*" in r.stderr  # no user store yet: moving it makes it the user's
    solved(home / "data" / "kernel-judge" / "judge.db")
    r = invoke("list")
    assert "--db .judge/judge.db" in r.stderr and "not merged" in r.stderr and "mv " not in r.stderr
    r = invoke("list", "--json", "--db", ".judge/judge.db")  # read when asked, without the note
    assert {p["name"]: p["solved"] for p in json.loads(r.stdout)["problems"]}["gelu"] and "note:" not in r.stderr
    assert json.loads(invoke("store", "--json").stdout)["folder_store"] == ".judge/judge.db"


def test_store_command(home):
    store = home / "data" / "kernel-judge" / "judge.db"
    got = json.loads(invoke("store", "--json").stdout)
    assert got == {"path": str(store), "chosen_by": "default", "exists": False, "results": 0, "drills": 0,
                   "active_drill": None, "folder_store": None}
    assert not store.exists()  # reading never creates a store
    assert "not created yet" in invoke("store").stdout
    solved(store)
    invoke("drill", "--level", "easy", "--seed", "1")
    got = json.loads(invoke("store", "--json").stdout)
    assert (got["exists"], got["results"], got["drills"], got["active_drill"]) == (True, 1, 1, 1)
    assert "1 result(s), 1 drill(s), drill 1 active" in invoke("store").stdout
    other = json.loads(invoke("store", "--json", "--db", str(home / "x.db")).stdout)
    assert (other["path"], other["chosen_by"], other["exists"]) == (str(home / "x.db"), "--db", False)
