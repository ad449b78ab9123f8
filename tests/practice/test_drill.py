"""Interview drills (no GPU): pick, start, attempts attributed through the CLI's own record step, hints,
status, end, history, the spoiler guard of `judge solution`, and the errors."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, SOLUTIONS_DIR
from typer.testing import CliRunner

import cli.drill_cmd as drill_cmd  # registers `judge drill`, `hint`, `stats`, `solution`
from cli.app import app
from cli.common import record as _record
from judge.build import toolchain
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.practice import drill, solutions
from judge.practice import results_table as table
from judge.problem import spec
from judge.store import Store

runner = CliRunner()
T0 = datetime(2026, 11, 23, 10, 0, 0, tzinfo=timezone.utc)


class Env:
    def __init__(self, tmp_path):
        self.dir, self.db, self.now = tmp_path, tmp_path / "j.db", T0

    def at(self, minutes: float) -> None:
        self.now = T0 + timedelta(minutes=minutes)

    def run(self, *args: str, code: int = 0):
        r = runner.invoke(app, list(args))
        assert r.exit_code == code, r.output
        assert "Traceback" not in r.output, r.output
        return r

    def json(self, *args: str, code: int = 0):
        return json.loads(self.run(*args, "--json", code=code).stdout)

    def attempt(self, problem: str, status: Status, speedup: float | None = None, mode: str = "submit") -> None:
        """A finished evaluation, stored the way `judge submit` / `judge test` store it."""
        _record(Report(problem=problem, solution=f"{problem}.cu", source_sha256="0" * 64, mode=mode,
                       status=status, geomean_speedup=speedup, started_at=drill.stamp(self.now)), None)

    def drill_ids(self) -> list[tuple[str, int | None]]:
        with Store(self.db) as s:
            return list(s.db.execute("SELECT problem, drill_id FROM results ORDER BY id"))


@pytest.fixture
def env(tmp_path, monkeypatch):
    e = Env(tmp_path)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_DB", str(e.db))
    monkeypatch.setattr(drill_cmd, "now", lambda: e.now)
    return e


def all_problems() -> list[spec.Problem]:
    return [spec.load_problem(p) for p in spec.find_problems(PROBLEMS_DIR)]


def test_whole_drill(env):
    started = env.json("drill", "--level", "medium", "--seed", "7")
    d, (p,) = started["drill"], started["problems"]
    name = p["name"]
    assert p["level"] == "medium" and d["minutes"] == drill.MINUTES_BY_LEVEL["medium"] and d["problems"] == [name]
    assert d["started_at"] == drill.stamp(T0) and d["deadline"] == drill.stamp(T0 + timedelta(minutes=30))
    starter = env.dir / f"{name}.cu"
    assert p["starter_written"] and p["prototype"] in starter.read_text()
    assert p["statement"] == (PROBLEMS_DIR / name / "README.md").read_text()

    env.at(5)
    env.attempt(name, Status.WRONG_ANSWER)
    env.attempt("vector_add", Status.ACCEPTED, 1.0)  # not in the drill: not attributed to it
    env.at(6)
    h1 = env.json("hint")  # defaults to the drill's unsolved problem
    assert h1["hint"]["index"] == 1 and h1["hint"]["drill_id"] == d["id"] and h1["problem"] == name
    env.at(7)
    h2 = env.json("hint", name)
    assert h2["hint"]["index"] == 2 and [x["index"] for x in h2["shown"]] == [1, 2]
    env.at(12)
    env.attempt(name, Status.ACCEPTED, 1.25)
    env.at(14)
    env.attempt(name, Status.ACCEPTED, 1.75)
    env.attempt(name, Status.ACCEPTED, None, mode="test")  # correctness only: no speedup
    assert env.drill_ids() == [(name, d["id"]), ("vector_add", None)] + [(name, d["id"])] * 3

    env.at(20)
    s = env.json("drill", "status")
    (row,) = s["problems"]
    assert (row["attempts"], row["late_attempts"], row["first_accepted_s"], row["best_speedup"]) == (4, 0, 720, 1.75)
    assert row["hints_used"] == 2 and row["solved"] and not row["first_accepted_late"]
    assert (s["elapsed_s"], s["left_s"], s["over_s"]) == (1200, 600, 0)
    assert "10:00 left" in env.run("drill", "status").stdout

    env.at(35)  # past the 30 minutes: still counted, marked late
    env.attempt(name, Status.WRONG_ANSWER)
    s = env.json("drill", "status")
    assert s["problems"][0]["late_attempts"] == 1 and s["problems"][0]["attempts"] == 5
    assert (s["left_s"], s["over_s"]) == (0, 300)
    assert "5:00 over" in env.run("drill", "status").stdout

    env.at(40)
    ended = env.json("drill", "end")
    assert ended["drill"]["ended_at"] == drill.stamp(env.now) and ended["over_s"] == 600
    assert ended["history"]["drills"] == 0  # the history it is compared with excludes this drill
    env.run("drill", "status", code=2)
    env.attempt(name, Status.ACCEPTED, 2.0)  # after the drill: no longer attributed
    assert env.drill_ids()[-1] == (name, None)

    st = env.json("stats")
    assert st["drills"] == 1 and st["solved_in_drills"] == 1 and st["hints_per_drill"] == 2.0
    assert st["median_first_accepted_s"] == {"medium": 720}
    assert st["solved_per_level"]["medium"]["solved"] == 1 and st["solved_per_level"]["easy"]["solved"] == 1
    assert {"problem": name, "speedup": 2.0} in st["best_speedups"]
    assert "1 drill(s) ended" in env.run("stats").stdout

    # A second drill at the same level never picks the solved problem, and compares with the first.
    env.at(60)
    second = env.json("drill", "--level", "medium", "--seed", "7")
    other = second["problems"][0]["name"]
    assert other != name and second["drill"]["id"] == d["id"] + 1
    env.at(80)
    env.attempt(other, Status.ACCEPTED, 0.5)
    s2 = env.json("drill", "status")
    assert s2["problems"][0]["first_accepted_s"] == 1200
    assert s2["problems"][0]["past_median_first_accepted_s"] == 720 and s2["history"]["drills"] == 1
    assert s2["hints_used"] == 0 and s2["problems"][0]["best_ever_speedup"] == 0.5
    env.run("drill", "end")
    assert env.json("stats")["median_first_accepted_s"] == {"medium": 960}


def test_pick_is_deterministic_and_follows_filters():
    probs = all_problems()
    picks = {drill.pick(probs, set(), level="medium", seed=s)[0].name for s in range(20)}
    assert len(picks) > 1  # the seed matters ...
    assert all(drill.pick(probs, set(), level="medium", seed=s) == drill.pick(probs, set(), level="medium", seed=s)
               for s in range(5))  # ... and fixes the pick
    easy = {p.name for p in probs if p.spec.level == "easy"}
    assert drill.pick(probs, set(), seed=1)[0].name in easy  # default: the lowest level with something left
    first = drill.pick(probs, easy, seed=1)[0]
    assert first.spec.level == "medium"  # every easy one solved: the next level
    assert all("gemm" in drill.pick(probs, set(), tag="gemm", seed=s)[0].spec.tags for s in range(5))
    levels = [p.spec.level for p in drill.pick(probs, set(), set_spec="easy, medium,hard", seed=3)]
    assert levels == ["easy", "medium", "hard"]
    two = drill.pick(probs, set(), set_spec="easy,easy", seed=3)
    assert two[0].name != two[1].name


def test_set_keeps_existing_files_and_uses_set_minutes(env):
    (env.dir / "vector_add.cu").write_text("// mine\n")
    started = env.json("drill", "--set", "vector_add,hard", "--seed", "1", "--dir", ".")
    d, probs = started["drill"], started["problems"]
    assert d["minutes"] == drill.SET_MINUTES and [p["level"] for p in probs] == ["easy", "hard"]
    assert probs[0]["name"] == "vector_add" and not probs[0]["starter_written"] and probs[1]["starter_written"]
    assert (env.dir / "vector_add.cu").read_text() == "// mine\n"
    out = env.run("drill", "status").stdout
    assert "vector_add" in out and probs[1]["name"] in out


def test_lang_writes_the_starters_in_that_language(env):
    started = env.json("drill", "--set", "vector_add", "--lang", "triton")
    (p,) = started["problems"]
    starter = env.dir / "vector_add.py"
    assert started["language"] == "triton" and p["starter_written"] and Path(p["starter"]).name == "vector_add.py"
    assert p["prototype"] == "def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, n: int) -> None"
    assert starter.read_text().startswith("# judge: vector_add\n") and p["prototype"] in starter.read_text()
    assert toolchain.check_source(spec.load_problem(PROBLEMS_DIR / "vector_add"), starter) is None
    assert not (env.dir / "vector_add.cu").exists()
    env.run("drill", "end")
    out = env.run("drill", "--set", "relu", "--lang", "triton").stdout
    assert "def solve(X: torch.Tensor" in out and "judge test relu.py --cpu" in out


def test_unknown_lang_starts_no_drill(env):
    r = env.json("drill", "--lang", "fortran", code=2)
    assert "unknown language 'fortran'" in r["error"] and "triton" in r["error"]
    assert not list(env.dir.glob("*.cu")) and not env.db.exists()


def test_minutes_and_dir(env):
    started = env.json("drill", "--level", "hard", "--minutes", "7.5", "--dir", "work/sub")
    assert started["drill"]["minutes"] == 7.5
    assert (env.dir / "work" / "sub" / f"{started['problems'][0]['name']}.cu").is_file()


def test_second_drill_while_one_is_running(env):
    env.run("drill", "--level", "easy", "--seed", "1")
    before = sorted(env.dir.glob("*.cu"))
    r = env.json("drill", "--level", "hard", code=2)
    assert "still running" in r["error"] and "judge drill end" in r["error"]
    assert sorted(env.dir.glob("*.cu")) == before  # nothing written for the refused drill
    env.at(100)  # an expired drill is still the running one until it is ended
    env.run("drill", "--level", "hard", code=2)
    env.run("drill", "end")
    env.run("drill", "--level", "hard")


@pytest.mark.parametrize("args, words", [
    (("--level", "impossible"), ["unknown level", "hard++"]),
    (("--tag", "nope"), ["unknown tag", "gemm"]),
    (("--set", "easy,nope"), ["neither a level", "nope"]),
    (("--set", "vector_add,vector_add"), ["twice"]),
    (("--level", "easy", "--set", "hard"), ["exclude"]),
    (("--minutes", "0"), ["positive"]),
])
def test_bad_drill_arguments(env, args, words):
    r = env.json("drill", *args, code=2)
    assert all(w in r["error"] for w in words), r
    with Store(env.db) as s:
        assert s.drills() == []


def test_nothing_unsolved_left(env):
    for p in all_problems():
        if p.spec.level == "easy":
            env.attempt(p.name, Status.ACCEPTED, 1.0)
    r = env.json("drill", "--level", "easy", code=2)
    assert "nothing unsolved left at level easy" in r["error"]
    r = env.json("drill", "--set", "medium,easy", code=2)
    assert "nothing unsolved left at level easy" in r["error"]
    assert env.json("drill", "--seed", "2")["problems"][0]["level"] == "medium"


@pytest.mark.parametrize("cmd", [("drill", "status"), ("drill", "end"), ("hint",)])
def test_no_active_drill(env, cmd):
    r = env.json(*cmd, code=2)
    assert "no active drill" in r["error"]
    assert "no active drill" in env.run(*cmd, code=2).output


def test_hints_outside_a_drill_and_none_left(env):
    n = len(spec.load_problem(PROBLEMS_DIR / "vector_add").spec.hints)
    assert n >= 1
    for i in range(1, n + 1):
        h = env.json("hint", "vector_add")["hint"]
        assert (h["index"], h["total"], h["drill_id"]) == (i, n, None)
    last = env.json("hint", "vector_add")
    assert last["hint"] is None and len(last["shown"]) == n
    assert "no hints left" in env.run("hint", "vector_add").stdout
    # A drill on the problem counts its own hints from the first again.
    env.run("drill", "--set", "vector_add")
    assert env.json("hint")["hint"]["index"] == 1
    env.run("hint", "nope", code=2)


def test_solution_spoiler_guard(env):
    env.run("drill", "--set", "vector_add")
    r = env.json("solution", "vector_add", code=2)
    assert "spoil" in r["error"] and "--force" in r["error"]
    env.run("solution", "vector_add", "--show-code", "1", code=2)
    assert env.json("solution", "vector_add", "--force")["problem"] == "vector_add"
    env.run("solution", "relu")  # not in the drill
    env.run("drill", "end")
    listed = env.json("solution", "vector_add")["solutions"]
    files = toolchain.solutions_in(SOLUTIONS_DIR / "vector_add")  # every language's, .cu and .py
    assert {f.suffix for f in files} == {".cu", ".py"}
    assert [s["name"] for s in listed] == [f.name for f in files] and [s["index"] for s in listed] == \
        list(range(1, len(files) + 1))
    rows = {(r.problem, r.solution): r.model_dump() for r in table.load(SOLUTIONS_DIR / "results.json")}
    for s in listed:
        assert s["measured"] == rows.get(("vector_add", s["name"]))
        assert s["title"].startswith("vector_add, step")
    code = env.json("solution", "vector_add", "--show-code", "2")
    assert code["code"] == files[1].read_text()
    assert env.run("solution", "vector_add", "--show-code", "1").stdout == files[0].read_text()
    assert "1 to" in env.json("solution", "vector_add", "--show-code", "99", code=2)["error"]
    text = env.run("solution", "vector_add").stdout
    assert files[0].name in text and "buys:" in text


def test_solution_header_parsing(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "01_a.cu").write_text("// x, step 1: the idea\n// in two lines.\n//\n// Technique: do it.\n"
                                    "// What it buys: speed\n// and more speed.\n// Cost: none.\n#include <x>\n")
    (folder / "02_b.cu").write_text("#include <x>\n")
    a, b = solutions.solutions(tmp_path, "x")
    assert (a.index, a.title, a.buys, a.numbers) == (1, "x, step 1: the idea in two lines.", "speed and more speed.",
                                                     None)
    assert a.technique.startswith("Technique: do it.") and (b.title, b.buys, b.technique) == ("02_b", None, "")


def test_stats_without_a_store_creates_none(env):
    st = env.json("stats")
    assert st["drills"] == 0 and st["hints_per_drill"] is None and st["best_speedups"] == []
    assert st["solved_per_level"]["easy"] == {"solved": 0, "problems": sum(
        p.spec.level == "easy" for p in all_problems())}
    assert not env.db.exists()
    env.run("solution", "vector_add")  # the spoiler check does not create one either
    assert not env.db.exists()
