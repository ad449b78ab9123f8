"""The results store: one SQLite file (default: one per user, judge.paths.user_store; `JUDGE_DB` or
a command's --db to use another), WAL mode, append-only. Every report is kept whole as JSON; the
columns beside it are for queries.

Schema changes are a list of migrations; `PRAGMA user_version` says how many have run.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from judge import paths
from judge.contract.report import Report
from judge.contract.verdict import Status

MIGRATIONS: list[str] = [
    """
    CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        problem TEXT NOT NULL,
        solution TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        mode TEXT NOT NULL,
        status TEXT NOT NULL,
        geomean_speedup REAL,
        gpu TEXT,
        report_json TEXT NOT NULL
    );
    CREATE INDEX results_problem ON results (problem, status);
    CREATE TRIGGER results_append_only_update BEFORE UPDATE ON results
        BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
    CREATE TRIGGER results_append_only_delete BEFORE DELETE ON results
        BEGIN SELECT RAISE(ABORT, 'results are append-only'); END;
    """,
    # 2: who submitted (leaderboard participants), which drill an attempt belongs to, drills, hints.
    """
    ALTER TABLE results ADD COLUMN participant TEXT;
    ALTER TABLE results ADD COLUMN drill_id INTEGER;
    ALTER TABLE results ADD COLUMN gpu_kind TEXT;
    CREATE INDEX results_participant ON results (participant, problem, source_sha256);
    CREATE TABLE drills (
        id INTEGER PRIMARY KEY,
        started_at TEXT NOT NULL,
        minutes REAL NOT NULL,
        problems TEXT NOT NULL,
        ended_at TEXT
    );
    CREATE TABLE hints (
        id INTEGER PRIMARY KEY,
        drill_id INTEGER,
        problem TEXT NOT NULL,
        hint_index INTEGER NOT NULL,
        shown_at TEXT NOT NULL
    );
    """,
    # 3: build checks (`judge leaderboard run --build-only`, judge/board/cluster.py): compiled and
    # policy-checked, never timed. Kept apart from results: they never rank and never count as judged.
    """
    CREATE TABLE build_checks (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        participant TEXT NOT NULL,
        problem TEXT NOT NULL,
        source_sha256 TEXT NOT NULL,
        gpu_kind TEXT NOT NULL,
        arch TEXT,
        outcome TEXT NOT NULL,
        message TEXT NOT NULL,
        node TEXT,
        report_json TEXT NOT NULL
    );
    CREATE INDEX build_checks_key ON build_checks (gpu_kind, participant, problem, source_sha256);
    CREATE TRIGGER build_checks_append_only_update BEFORE UPDATE ON build_checks
        BEGIN SELECT RAISE(ABORT, 'build checks are append-only'); END;
    CREATE TRIGGER build_checks_append_only_delete BEFORE DELETE ON build_checks
        BEGIN SELECT RAISE(ABORT, 'build checks are append-only'); END;
    """,
]


def default_path() -> Path:
    return paths.store_path()


class StoreError(Exception):
    """The store cannot be opened or written (a bad path, a file that is not a judge database)."""


@dataclass(frozen=True)
class Progress:
    """What one user has done on one problem."""
    problem: str
    attempts: int
    solved: bool
    best_speedup: float | None


class Store:
    def __init__(self, path: Path | str | None = None, timeout_s: float = 30.0):
        self.path = Path(path) if path is not None else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path, timeout=timeout_s, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
            self._migrate()
        except (OSError, sqlite3.Error) as e:
            raise StoreError(f"cannot open the results store {self.path}: {e}") from e

    def _migrate(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")  # one migrator at a time
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            if version > len(MIGRATIONS):
                raise StoreError(f"{self.path} has schema version {version}; this judge knows "
                                 f"{len(MIGRATIONS)} (upgrade kernel-judge)")
            for i, sql in enumerate(MIGRATIONS[version:], start=version + 1):
                for stmt in _statements(sql):
                    self.db.execute(stmt)
                self.db.execute(f"PRAGMA user_version={i}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def record(self, report: Report, participant: str | None = None, drill_id: int | None = None,
               gpu_kind: str | None = None) -> int:
        """Append one report; returns its id. `participant` names a leaderboard entrant (None: the
        local user), `drill_id` the drill the attempt belongs to, `gpu_kind` the GPU class it ran on
        (default: the report's GPU name)."""
        try:
            cur = self.db.execute(
                "INSERT INTO results (created_at, problem, solution, source_sha256, mode, status, "
                "geomean_speedup, gpu, report_json, participant, drill_id, gpu_kind) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (report.started_at, report.problem, report.solution, report.source_sha256, report.mode,
                 report.status.value, report.geomean_speedup, report.environment.gpu, report.model_dump_json(),
                 participant, drill_id, gpu_kind or report.environment.gpu))
        except sqlite3.Error as e:
            raise StoreError(f"cannot write to the results store {self.path}: {e}") from e
        return int(cur.lastrowid or 0)

    def reports(self, problem: str | None = None) -> list[Report]:
        sql = "SELECT report_json FROM results"
        args: tuple[str, ...] = ()
        if problem is not None:
            sql, args = sql + " WHERE problem = ?", (problem,)
        return [Report.model_validate_json(r[0]) for r in self.db.execute(sql + " ORDER BY id", args)]

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def progress(self) -> dict[str, Progress]:
        """Per problem, for the local user (not leaderboard entrants): attempts, whether any attempt
        was ACCEPTED, the best timed speedup."""
        rows = self.db.execute(
            "SELECT problem, COUNT(*), SUM(status = ?), MAX(CASE WHEN status = ? THEN geomean_speedup END) "
            "FROM results WHERE participant IS NULL GROUP BY problem", (Status.ACCEPTED.value, Status.ACCEPTED.value))
        return {p: Progress(p, n, bool(ok), best) for p, n, ok, best in rows}

    # drills: interview drills and hints (judge/practice/drill.py). Rows come back as plain dicts.
    def start_drill(self, started_at: str, minutes: float, problems: list[str]) -> int | None:
        """Open a drill; None when one is already active (checked and inserted in one transaction)."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if self.db.execute("SELECT 1 FROM drills WHERE ended_at IS NULL").fetchone():
                    self.db.execute("ROLLBACK")
                    return None
                cur = self.db.execute("INSERT INTO drills (started_at, minutes, problems) VALUES (?, ?, ?)",
                                      (started_at, minutes, json.dumps(problems)))
                self.db.execute("COMMIT")
            except BaseException:
                if self.db.in_transaction:
                    self.db.execute("ROLLBACK")
                raise
        except sqlite3.Error as e:
            raise StoreError(f"cannot write to the results store {self.path}: {e}") from e
        return int(cur.lastrowid or 0)

    def drills(self, active_only: bool = False) -> list[dict]:
        """Drills, oldest first: id, started_at, minutes, problems (list of names), ended_at."""
        sql = "SELECT id, started_at, minutes, problems, ended_at FROM drills"
        rows = self.db.execute(sql + (" WHERE ended_at IS NULL" if active_only else "") + " ORDER BY id")
        return [{"id": i, "started_at": s, "minutes": m, "problems": json.loads(p), "ended_at": e}
                for i, s, m, p, e in rows]

    def end_drill(self, drill_id: int, ended_at: str) -> None:
        self._write("UPDATE drills SET ended_at = ? WHERE id = ? AND ended_at IS NULL", (ended_at, drill_id))

    def drill_attempts(self, drill_id: int | None = None) -> list[dict]:
        """The local user's attempts that belong to a drill (every drill when None), oldest first."""
        sql = ("SELECT drill_id, problem, created_at, mode, status, geomean_speedup FROM results "
               "WHERE participant IS NULL AND drill_id IS NOT NULL")
        rows = self.db.execute(sql + (" AND drill_id = ?" if drill_id is not None else "") + " ORDER BY id",
                               (drill_id,) if drill_id is not None else ())
        return [{"drill_id": d, "problem": p, "created_at": c, "mode": m, "status": s, "speedup": x}
                for d, p, c, m, s, x in rows]

    def record_hint(self, drill_id: int | None, problem: str, hint_index: int, shown_at: str) -> int:
        """`hint_index` is 0-based: the position in the spec's `hints:` list."""
        return self._write("INSERT INTO hints (drill_id, problem, hint_index, shown_at) VALUES (?, ?, ?, ?)",
                           (drill_id, problem, hint_index, shown_at))

    def _write(self, sql: str, args: tuple) -> int:
        try:
            return int(self.db.execute(sql, args).lastrowid or 0)
        except sqlite3.Error as e:
            raise StoreError(f"cannot write to the results store {self.path}: {e}") from e

    def hints(self, drill_id: int | None = None, problem: str | None = None, every_drill: bool = False) -> list[dict]:
        """Hints shown, oldest first: of one drill (drill_id), outside drills (None), or all (every_drill)."""
        where: list[str] = []
        args: list[object] = []
        if not every_drill:
            where.append("drill_id IS ?")
            args.append(drill_id)
        if problem is not None:
            where.append("problem = ?")
            args.append(problem)
        sql = "SELECT drill_id, problem, hint_index, shown_at FROM hints"
        rows = self.db.execute(sql + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id", args)
        return [{"drill_id": d, "problem": p, "hint_index": i, "shown_at": t} for d, p, i, t in rows]


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (sqlite3.complete_statement keeps triggers whole)."""
    out, buf = [], ""
    for line in sql.strip().splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
