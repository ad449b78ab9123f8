"""The results store: migrations, append-only rows, solved state, and concurrent writers."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest
from conftest import ROOT

from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.store import MIGRATIONS, Store, StoreError


def report(problem: str = "relu", status: Status = Status.ACCEPTED, speedup: float | None = None,
           sha: str = "0") -> Report:
    return Report(problem=problem, solution=f"{problem}.cu", source_sha256=sha, mode="submit", status=status,
                  geomean_speedup=speedup, started_at="2026-11-22T12:00:00+00:00")


def test_record_and_read_back(tmp_path):
    with Store(tmp_path / "j.db") as s:
        r = report(speedup=1.25)
        rid = s.record(r)
        assert rid == 1 and s.count() == 1
        assert s.reports() == [r]
        assert s.reports("other") == []


def test_migrations_run_once_and_set_the_version(tmp_path):
    path = tmp_path / "j.db"
    Store(path).close()
    Store(path).close()  # a second open must not re-run (CREATE TABLE would fail)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "j.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version={len(MIGRATIONS) + 1}")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="schema version"):
        Store(path)


def test_results_are_append_only(tmp_path):
    with Store(tmp_path / "j.db") as s:
        s.record(report())
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            s.db.execute("UPDATE results SET status = 'WRONG_ANSWER'")
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            s.db.execute("DELETE FROM results")
        assert s.count() == 1


def test_progress(tmp_path):
    with Store(tmp_path / "j.db") as s:
        s.record(report("relu", Status.WRONG_ANSWER))
        s.record(report("relu", Status.ACCEPTED, 1.5))
        s.record(report("relu", Status.ACCEPTED, 2.0))
        s.record(report("relu", Status.WRONG_ANSWER, None))
        s.record(report("gelu", Status.COMPILE_ERROR))
        p = s.progress()
    assert p["relu"].attempts == 4 and p["relu"].solved and p["relu"].best_speedup == 2.0
    assert p["gelu"].attempts == 1 and not p["gelu"].solved and p["gelu"].best_speedup is None
    assert "hgemm" not in p


def test_a_path_that_cannot_be_a_database(tmp_path):
    bad = tmp_path / "not-a-db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        Store(bad)


WRITER = """
import sys
from judge.contract.report import Report
from judge.store import Store
from judge.contract.verdict import Status
path, who, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Store(path) as s:
    for i in range(n):
        s.record(Report(problem=who, solution=f"{i}.cu", source_sha256=str(i), mode="submit",
                        status=Status.ACCEPTED))
"""


def test_concurrent_writers_lose_nothing(tmp_path):
    """Six processes start at once on a fresh file (so they also race to migrate it) and each
    appends 60 results: every one of the 360 is there afterwards."""
    path = tmp_path / "j.db"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{k}", "60"], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for k in range(6)]
    for p in procs:
        _, errout = p.communicate(timeout=120)
        assert p.returncode == 0, errout
    with Store(path) as s:
        assert s.count() == 360
        prog = s.progress()
    assert {k: v.attempts for k, v in prog.items()} == {f"w{k}": 60 for k in range(6)}
