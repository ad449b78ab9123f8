"""Leaderboards without a GPU: discovery, scores and ties, overall ranking, markdown/JSON goldens,
the parallel runner with a fake judging function, resume, bad submissions and --fail-on codes."""
from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
from conftest import PROBLEMS_DIR, nvcc_test
from typer.testing import CliRunner

import cli.leaderboard_cmd as lb_cmd
from cli.app import app
from judge.board import jobs
from judge.board import rank as board_rank
from judge.board import render as board_render
from judge.board import submissions as leaderboard
from judge.contract.report import BaselineTiming, BenchResult, Environment, Report, Stats
from judge.contract.verdict import Status
from judge.gpu.device import GpuInfo
from judge.runner import job
from judge.store import Store

GOLDEN = Path(__file__).parents[1] / "golden"
KIND = "Fake GPU 80GB"


# -- reports built in the test ------------------------------------------------------------------

def stats(median: float, half: float) -> Stats:
    return Stats(median_ms=median, ci_low_ms=median - half, ci_high_ms=median + half, min_ms=median - half,
                 samples=100, warmup_calls=3, stop_reason="noise")


def bench(workload: str, median: float, half: float, base: float, floor: float = 0.0) -> BenchResult:
    floor = floor or base * 0.5
    b = stats(base, base * 0.001)
    return BenchResult(workload=workload, stats=stats(median, half), flops=2e9, bytes=1e8,
                       tflops=2e9 / (median * 1e9), gbps=1e8 / (median * 1e6), floor_ms=floor,
                       roofline_pct=100 * floor / median,
                       baselines=[BaselineTiming(name="cuBLAS", before=b, after=b, median_ms=base, drift=0.0,
                                                 drift_flagged=False, speedup=base / median)])


def report(problem: str, shapes=(), status: Status = Status.ACCEPTED, message: str = "", solution: str = "x.cu",
           sha: str = "0" * 64, when: str = "2026-11-23T00:00:00+00:00") -> Report:
    benches = [bench(f"n={i}", *s) for i, s in enumerate(shapes)]
    return Report(problem=problem, solution=solution, source_sha256=sha, mode="submit", status=status,
                  message=message, benchmarks=benches, baseline_name="cuBLAS" if benches else None,
                  environment=Environment(gpu=KIND), started_at=when)


# -- scores, ties, overall ----------------------------------------------------------------------

def test_score_is_geomean_with_interval_from_the_per_shape_cis():
    r = report("p", [(1.0, 0.1, 2.0), (4.0, 0.4, 2.0)])
    s = board_rank.score(r)
    assert s.point == pytest.approx((2.0 * 0.5) ** 0.5)
    assert s.low == pytest.approx(((2 / 1.1) * (2 / 4.4)) ** 0.5)
    assert s.high == pytest.approx(((2 / 0.9) * (2 / 3.6)) ** 0.5)
    assert s.low < s.point < s.high and s.shapes == 2


def test_no_score_without_acceptance_or_timings():
    assert board_rank.score(report("p", [(1.0, 0.1, 2.0)], status=Status.WRONG_ANSWER)) is None
    assert board_rank.score(report("p", [])) is None


def S(point: float, half: float) -> board_rank.Score:
    return board_rank.Score(point, point - half, point + half)


def test_ranks_ties_share_the_leaders_rank():
    # 3.0 and 2.9 overlap (tie for 1); 2.0 does not overlap 3.0 → rank 3; 1.95 overlaps 2.0 → =3;
    # 1.0 alone → 5
    got = board_rank.ranks([S(3.0, 0.1), S(2.9, 0.1), S(2.0, 0.02), S(1.95, 0.04), S(1.0, 0.01)])
    assert got == [(1, True), (1, True), (3, True), (3, True), (5, False)]
    assert [board_rank.rank_text(*g) for g in got] == ["=1", "=1", "=3", "=3", "5"]


def test_ranks_chain_does_not_stretch_a_tie():
    # b overlaps a, c overlaps b but not a: c starts its own rank
    got = board_rank.ranks([S(3.0, 0.3), S(2.6, 0.2), S(2.3, 0.15)])
    assert got == [(1, True), (1, True), (3, False)]


class R:  # a store row
    def __init__(self, id, participant, rep, kind=KIND):
        self.id, self.participant, self.gpu_kind, self.report = id, participant, kind, rep


def test_problem_board_ranking_and_unranked():
    rows = [R(1, "alice", report("hgemm", [(1.0, 0.005, 1.0)])),
            R(2, "bob", report("hgemm", [(1.002, 0.005, 1.0)])),
            R(3, "carol", report("hgemm", [(2.0, 0.01, 1.0)])),
            R(4, "dave", report("hgemm", status=Status.COMPILE_ERROR, message="nvcc failed\nline 2"))]
    pb = board_rank.problem_board("hgemm", KIND, rows)
    assert [(r.rank_text, r.participant) for r in pb.ranking] == [("=1", "alice"), ("=1", "bob"), ("3", "carol")]
    assert [(u.participant, u.report.status) for u in pb.unranked] == [("dave", Status.COMPILE_ERROR)]


def test_overall_counts_solved_first_then_geomean():
    rows = [R(1, "alice", report("a", [(0.5, 0.001, 1.0)])),      # 2×, one problem only
            R(2, "bob", report("a", [(1.0, 0.001, 1.0)])),        # 1× and 1× on two problems
            R(3, "bob", report("b", [(1.0, 0.001, 1.0)])),
            R(4, "carol", report("a", [(1.0, 0.001, 1.0)])),      # 1× and 1.0005× tie with bob
            R(5, "carol", report("b", [(0.9995, 0.002, 1.0)])),
            R(6, "dave", report("b", status=Status.WRONG_ANSWER))]
    (kb,) = board_rank.boards(rows)
    got = [(e.rank_text, e.participant, e.solved, e.attempted) for e in kb.overall]
    assert got == [("=1", "carol", 2, 2), ("=1", "bob", 2, 2), ("3", "alice", 1, 1)]
    assert "dave" not in [e.participant for e in kb.overall]


def test_boards_per_gpu_kind_and_latest_result_wins(tmp_path):
    with Store(tmp_path / "db") as st:
        st.record(report("hgemm", [(1.0, 0.01, 1.0)]), participant="alice", gpu_kind="A100")
        st.record(report("hgemm", [(0.5, 0.01, 1.0)]), participant="alice", gpu_kind="H100")
        st.record(report("hgemm", status=Status.WRONG_ANSWER), participant="alice", gpu_kind="H100")
        st.record(report("hgemm", [(0.1, 0.01, 1.0)]))  # the local user: not on any leaderboard
        boards = board_rank.boards(leaderboard.latest(leaderboard.rows(st)).values())
    assert [kb.gpu_kind for kb in boards] == ["A100", "H100"]
    assert [r.participant for r in boards[0].problems[0].ranking] == ["alice"]
    second = boards[1].problems[0]
    assert second.ranking == [] and second.unranked[0].report.status is Status.WRONG_ANSWER


def test_regression_needs_intervals_apart():
    prev = report("p", [(1.0, 0.01, 1.0)])
    assert leaderboard.regression("a", "p", KIND, prev, report("p", [(1.2, 0.01, 1.0)])) is not None
    assert leaderboard.regression("a", "p", KIND, prev, report("p", [(1.015, 0.01, 1.0)])) is None  # overlap
    # intervals apart, but 1.5% slower: within the judge's run-to-run repeatability
    assert leaderboard.regression("a", "p", KIND, prev, report("p", [(1.015, 0.001, 1.0)])) is None
    assert leaderboard.regression("a", "p", KIND, prev, report("p", [(1.03, 0.001, 1.0)])) is not None
    assert leaderboard.regression("a", "p", KIND, prev, report("p", [(0.8, 0.01, 1.0)])) is None  # faster
    assert leaderboard.regression("a", "p", KIND, None, report("p", [(9.0, 0.01, 1.0)])) is None


# -- goldens ------------------------------------------------------------------------------------

def golden_boards():
    rows = [R(1, "reference", report("hgemm", [(0.30, 0.001, 0.1), (2.4, 0.005, 0.8)], solution="03_wmma.cu")),
            R(2, "alice", report("hgemm", [(0.301, 0.002, 0.1), (2.41, 0.01, 0.8)], solution="hgemm.cu")),
            R(3, "bob", report("hgemm", [(3.0, 0.01, 0.1), (30.0, 0.1, 0.8)], solution="01_naive.cu")),
            R(4, "carol", report("hgemm", status=Status.WRONG_ANSWER, solution="no_tail.cu",
                                 message="C: 12 of 16641 elements differ | worst abs err 3.5\nmore")),
            R(5, "reference", report("vector_add", [(0.02, 0.0001, 0.021)], solution="02_float4.cu")),
            R(6, "bob", report("vector_add", [(0.03, 0.0001, 0.021)], solution="01_naive.cu")),
            R(7, "dave", report("vector_add", status=Status.COMPILE_ERROR, solution="v.cu", message="nvcc: error")),
            R(8, "erin", report("vector_add", [(0.025, 0.0001, 0.021)], solution="vector_add.py")),
            R(9, "frank", report("vector_add", status=Status.REJECTED, solution="vector_add.py",
                                 message="solve() computed with torch outside Triton kernels (add)"))]
    return board_rank.boards(rows)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"{path} missing: run with UPDATE_GOLDEN=1 once and review it"
    assert text == path.read_text(), f"{name} differs from the golden file (UPDATE_GOLDEN=1 to accept)"


def test_markdown_golden():
    text = board_render.markdown(golden_boards())
    check_golden("leaderboard.md", text)
    assert "| =1 | reference | cuda |" in text and "| =1 | alice | cuda |" in text and "| 3 | bob | cuda |" in text
    assert "| 2 | erin | triton |" in text and "| frank | triton | REJECTED |" in text  # both languages, one board
    assert "\\|" in text  # the message's pipe is escaped, the table stays a table


def test_json_golden():
    data = board_render.to_json(golden_boards())
    check_golden("leaderboard.json", json.dumps(data, indent=2) + "\n")
    (kb,) = data["boards"]
    hgemm = next(p for p in kb["problems"] if p["problem"] == "hgemm")
    assert [r["rank_text"] for r in hgemm["ranking"]] == ["=1", "=1", "3"]
    assert hgemm["unranked"][0]["status"] == "WRONG_ANSWER"
    add = next(p for p in kb["problems"] if p["problem"] == "vector_add")
    assert [(r["participant"], r["language"]) for r in add["ranking"]] == \
        [("reference", "cuda"), ("erin", "triton"), ("bob", "cuda")]
    assert {u["participant"]: u["language"] for u in add["unranked"]} == {"dave": "cuda", "frank": "triton"}


def test_the_language_comes_from_the_files_suffix():
    assert board_render.language(report("p", solution="a/x.cu")) == "cuda"
    assert board_render.language(report("p", solution="a/x.py")) == "triton"
    folder = report("p", status=Status.REJECTED, solution="alice/relu")  # a problem folder with no file in it
    assert board_render.language(folder) is None and board_render.language_text(folder) == "–"


# -- discovery ----------------------------------------------------------------------------------

KNOWN = ["vector_add", "hgemm", "relu"]


def test_discover(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "vector_add.cu").write_text("a")
    (tmp_path / "alice" / "notes.txt").write_text("ignored")
    (tmp_path / "alice" / "hgemm").mkdir()
    (tmp_path / "alice" / "hgemm" / "v1.cu").write_text("old")
    (tmp_path / "alice" / "hgemm" / "v2.cu").write_text("new")
    (tmp_path / "bob").mkdir()
    (tmp_path / "bob" / "no_such_problem.cu").write_text("b")
    (tmp_path / "bob" / "relu").mkdir()
    (tmp_path / ".git").mkdir()
    subs = leaderboard.discover(tmp_path, KNOWN)
    got = [(s.participant, s.problem, s.path.name, s.error is None) for s in subs]
    assert got == [("alice", "hgemm", "v2.cu", True), ("alice", "vector_add", "vector_add.cu", True),
                   ("bob", "no_such_problem", "no_such_problem.cu", False), ("bob", "relu", "relu", False)]
    assert "unknown problem 'no_such_problem'" in subs[2].error and "vector_add" in subs[2].error
    assert "<problem>.cu or <problem>.py" in subs[2].error
    assert "no solution file (.cu, .py)" in subs[3].error


def test_discover_takes_triton_files_and_refuses_two_languages_for_one_problem(tmp_path):
    files = {"alice/vector_add.py": "a", "alice/hgemm/v1.cu": "old", "alice/hgemm/v2.py": "new",
             "bob/relu.cu": "b", "bob/relu.py": "b", "carol/relu.py": "c", "carol/relu/v1.cu": "c"}
    subs = leaderboard.discover(write_subs(tmp_path, files), KNOWN)
    got = [(s.participant, s.problem, s.path.name, s.error) for s in subs]
    assert got[:2] == [("alice", "hgemm", "v2.py", None), ("alice", "vector_add", "vector_add.py", None)]
    (bob,), (carol,) = [s for s in subs if s.participant == "bob"], [s for s in subs if s.participant == "carol"]
    assert bob.error == "ambiguous: both relu.cu and relu.py exist; keep one"
    assert carol.error == "ambiguous: both relu.py and relu/ exist; keep one"


def test_discover_reserved_name_and_missing_folder(tmp_path):
    with pytest.raises(leaderboard.LeaderboardError, match="no submissions folder"):
        leaderboard.discover(tmp_path / "nope", KNOWN)
    for name in ("reference", "reference-triton"):
        (tmp_path / name).mkdir()
        with pytest.raises(leaderboard.LeaderboardError, match=f"'{name}' is reserved"):
            leaderboard.discover(tmp_path, KNOWN)
        (tmp_path / name).rmdir()


def test_discover_unreadable(tmp_path):
    (tmp_path / "alice").mkdir()
    (tmp_path / "alice" / "relu.cu").symlink_to(tmp_path / "gone.cu")  # dangling: unreadable, even for root
    (s,) = leaderboard.discover(tmp_path, KNOWN)
    assert s.error and "cannot read" in s.error and s.sha256 == ""
    (done,) = [e for e in jobs.run([s], [0], FakeJudge(), KIND) if isinstance(e, jobs.JobDone)]
    assert done.report.status is Status.REJECTED and "cannot read" in done.report.message


def test_references_take_the_last_model_answer_of_each_language():
    root = Path(__file__).resolve().parents[2] / "reference_solutions"
    subs = leaderboard.references(root, ["hgemm", "vector_add", "nope"], ["hgemm", "vector_add"])
    assert [(s.participant, s.problem, s.path.name) for s in subs] == \
        [(name, problem, sorted((root / problem).glob(f"*.{ext}"))[-1].name)
         for problem in ("hgemm", "vector_add") for name, ext in (("reference", "cu"), ("reference-triton", "py"))]
    assert leaderboard.reference_name("cuda") == "reference" and leaderboard.RESERVED == {"reference",
                                                                                         "reference-triton"}


# -- the parallel runner ------------------------------------------------------------------------

class FakeJudge:
    """Reads a directive from the file: `ok SPEEDUP`, `wrong`, `raise`, `sleep S ...`. Records which
    device ran what and when, so the tests can see the parallelism."""

    def __init__(self, sleep_s: float = 0.0):
        self.sleep_s, self.calls, self.lock = sleep_s, [], threading.Lock()
        self.active: dict[int, int] = {}
        self.max_active = 0
        self.overlap_on_one_gpu = False

    def __call__(self, sub, dev):
        with self.lock:
            self.active[dev] = self.active.get(dev, 0) + 1
            self.overlap_on_one_gpu |= self.active[dev] > 1
            self.max_active = max(self.max_active, sum(self.active.values()))
        try:
            time.sleep(self.sleep_s)
            words = sub.path.read_text().split() or ["ok", "1"]
            with self.lock:
                self.calls.append((sub.participant, sub.problem, dev, threading.current_thread().name))
            if words[0] == "raise":
                raise RuntimeError("the fake judge fell over")
            if words[0] == "wrong":
                return report(sub.problem, status=Status.WRONG_ANSWER, message="wrong", solution=str(sub.path),
                              sha=sub.sha256)
            speed = float(words[1]) if words[0] == "ok" and len(words) > 1 else 1.0
            return report(sub.problem, [(1.0 / speed, 0.001 / speed, 1.0)], solution=str(sub.path), sha=sub.sha256)
        finally:
            with self.lock:
                self.active[dev] -= 1


def write_subs(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_runner_one_job_per_gpu_in_parallel(tmp_path):
    root = write_subs(tmp_path, {f"p{i}/vector_add.cu": f"ok {i + 1}" for i in range(6)})
    subs = leaderboard.discover(root, KNOWN)
    fake = FakeJudge(sleep_s=0.15)
    t0 = time.monotonic()
    events = list(jobs.run(subs, [0, 1], fake, KIND))
    elapsed = time.monotonic() - t0
    done = [e for e in events if isinstance(e, jobs.JobDone)]
    assert sorted(e.submission.participant for e in done) == [f"p{i}" for i in range(6)]
    assert all(e.report.status is Status.ACCEPTED for e in done)
    assert {d for _, _, d, _ in fake.calls} == {0, 1}
    assert fake.max_active == 2 and not fake.overlap_on_one_gpu
    assert elapsed < 6 * 0.15  # two lanes: about 3 × 0.15 s, not 6 ×
    started = [e for e in events if isinstance(e, jobs.JobStarted)]
    assert len(started) == 6


def test_runner_bad_submissions_become_rows(tmp_path):
    root = write_subs(tmp_path, {"a/vector_add.cu": "raise", "a/relu.cu": "ok 2", "b/nope.cu": "ok 1"})
    subs = leaderboard.discover(root, KNOWN)
    done = {e.submission.label: e for e in jobs.run(subs, [0], FakeJudge(), KIND) if isinstance(e, jobs.JobDone)}
    assert done["a/vector_add"].report.status is Status.INTERNAL_ERROR
    assert "fell over" in done["a/vector_add"].report.message
    assert done["a/relu"].report.status is Status.ACCEPTED
    assert done["b/nope"].report.status is Status.REJECTED and done["b/nope"].device is None


NONCE = "ab" * 16


def reply(**result) -> bytes:
    """A job process's reply (judge/runner/job.py) carrying `result`."""
    return job.Reply(nonce=NONCE, **result).model_dump_json().encode()


def test_parse_job_reply():
    sub = leaderboard.Submission("a", "relu", Path("a/relu.cu"), "f" * 64)
    good = report("relu", [(1.0, 0.01, 1.0)], solution="/abs/a/relu.cu")
    r = jobs.parse(sub, 0, reply(report=good), "", NONCE)
    assert r.status is Status.ACCEPTED and r.solution == "a/relu.cu"
    noisy = "a stray line on stdout"  # stray output goes to the log, never on the reply's fd
    assert jobs.parse(sub, 0, reply(report=good), noisy, NONCE).status is Status.ACCEPTED
    assert jobs.parse(sub, -11, b"", "boom", NONCE).status is Status.INTERNAL_ERROR
    assert "SIGSEGV" in jobs.parse(sub, -11, b"", "boom", NONCE).message
    r = jobs.parse(sub, 0, reply(error=job.JobError(kind="refused", message="invalid problem p.yaml")), "", NONCE)
    assert r.status is Status.INTERNAL_ERROR and "invalid problem" in r.message


def test_subprocess_judge_spec_and_timeout(tmp_path):
    f = tmp_path / "relu.cu"
    f.write_text("x")
    sub = leaderboard.Submission("a", "relu", f, "0" * 64)
    judge = jobs.SubprocessJudge(tmp_path, KIND, budget_s=0.5, arch="sm_90a", timeout_s=0.5)
    spec = judge.spec(sub, 3)
    assert (spec.mode, spec.device, spec.budget_s, spec.arch) == ("submit", 3, 0.5, "sm_90a")
    assert spec.problem == (tmp_path / "relu").resolve() and spec.solution == f.resolve()
    judge.command = ["sleep", "30"]  # a hang: killed at the timeout, one TIMEOUT row
    t0 = time.monotonic()
    r = judge(sub, 0)
    assert r.status is Status.TIMEOUT and time.monotonic() - t0 < 10


# -- the CLI with fake GPUs and a fake judge ----------------------------------------------------

runner = CliRunner()


@pytest.fixture
def fake_gpus(monkeypatch):
    fake = FakeJudge(sleep_s=0.05)
    gpus = [GpuInfo(i, KIND, f"GPU-{i}", "580", 9, 0, 80 << 30) for i in range(2)]
    monkeypatch.setattr(lb_cmd, "local_gpus", lambda: gpus)
    monkeypatch.setattr(lb_cmd, "make_judge", lambda *a, **k: fake)
    return fake


def lb(*args: str):
    r = runner.invoke(app, ["leaderboard", *args])
    assert "Traceback" not in r.output, r.output
    return r


def test_cli_run_resume_and_show(tmp_path, fake_gpus):
    db = str(tmp_path / "j.db")
    subs = write_subs(tmp_path / "subs", {"alice/vector_add.cu": "ok 1.5", "bob/vector_add.cu": "wrong",
                                          "carol/vector_add/v1.cu": "ok 0.5", "dave/nope.cu": "ok 1"})
    r = lb("run", str(subs), "--db", db, "--json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    got = {(j["participant"], j["problem"]): j["status"] for j in data["judged"]}
    assert got == {("alice", "vector_add"): "ACCEPTED", ("bob", "vector_add"): "WRONG_ANSWER",
                   ("carol", "vector_add"): "ACCEPTED", ("dave", "nope"): "REJECTED",
                   ("reference", "vector_add"): "ACCEPTED", ("reference-triton", "vector_add"): "ACCEPTED"}
    assert data["skipped"] == [] and set(data["devices"]) == {0, 1} and data["store"] == db
    assert {d for _, _, d, _ in fake_gpus.calls} == {0, 1} and not fake_gpus.overlap_on_one_gpu

    # resume: nothing changed → nothing judged; one file changed → only it
    r = lb("run", str(subs), "--db", db, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["judged"] == [] and len(json.loads(r.stdout)["skipped"]) == 6
    (subs / "bob" / "vector_add.cu").write_text("ok 3")
    r = lb("run", str(subs), "--db", db, "--json")
    assert [(j["participant"], j["status"]) for j in json.loads(r.stdout)["judged"]] == [("bob", "ACCEPTED")]

    r = lb("show", "--db", db, "--format", "markdown")
    assert r.exit_code == 0, r.output
    section = r.stdout.split("## vector_add")[1].split("##")[0]
    rows = [ln for ln in section.splitlines() if re.match(r"^\| =?\d+ \|", ln)]
    assert [ln.split("|")[2].strip() for ln in rows] == ["bob", "alice", "reference", "reference-triton", "carol"]
    assert [ln.split("|")[3].strip() for ln in rows] == ["cuda", "cuda", "cuda", "triton", "cuda"]
    assert "## vector_add · Fake GPU 80GB" in r.stdout and "| dave | cuda | REJECTED |" in r.stdout
    r = lb("show", "--db", db, "--json", "--problem", "nope")
    assert r.exit_code == 0, r.output
    (kb,) = json.loads(r.stdout)["boards"]
    assert [p["problem"] for p in kb["problems"]] == ["nope"]
    r = lb("show", "--db", db)
    assert r.exit_code == 0 and "overall" in r.stdout, r.output
    out = tmp_path / "board.html"
    r = lb("show", "--db", db, "--format", "html", "-o", str(out))
    assert r.exit_code == 0 and out.read_text().startswith("<!DOCTYPE html>"), r.output


def test_cli_run_no_references_and_progress_text(tmp_path, fake_gpus):
    subs = write_subs(tmp_path / "subs", {"alice/relu.cu": "ok 2", "bob/relu.cu": "raise"})
    r = lb("run", str(subs), "--db", str(tmp_path / "j.db"), "--no-references")
    assert r.exit_code == 3, r.output  # the fake judge's own failure is INTERNAL_ERROR: exit 3
    assert "alice/relu" in r.output and "INTERNAL_ERROR" in r.output and "reference/relu" not in r.output
    assert "judged 2: 1 ACCEPTED" in r.output
    r = lb("run", str(subs), "--db", str(tmp_path / "j.db"), "--no-references", "--json")
    assert [j["participant"] for j in json.loads(r.stdout)["judged"]] == ["bob"]  # INTERNAL_ERROR: judged again


def test_cli_fail_on_wrong(tmp_path, fake_gpus):
    subs = write_subs(tmp_path / "subs", {"alice/relu.cu": "ok 2", "bob/relu.cu": "wrong"})
    db = str(tmp_path / "j.db")
    assert lb("run", str(subs), "--db", db, "--no-references", "--fail-on", "wrong").exit_code == 1
    # of this run only: unchanged wrong files were judged before
    assert lb("run", str(subs), "--db", db, "--no-references", "--fail-on", "wrong").exit_code == 0
    subs2 = write_subs(tmp_path / "subs2", {"alice/relu.cu": "ok 2"})
    assert lb("run", str(subs2), "--db", str(tmp_path / "k.db"), "--no-references", "--fail-on", "wrong").exit_code == 0


def test_cli_fail_on_regression(tmp_path, fake_gpus):
    db = str(tmp_path / "j.db")
    subs = write_subs(tmp_path / "subs", {"alice/relu.cu": "ok 2"})
    args = ("--db", db, "--no-references", "--fail-on", "regression", "--fail-on", "wrong")
    assert lb("run", str(subs), *args).exit_code == 0
    (subs / "alice" / "relu.cu").write_text("ok 2.001")  # within noise: no regression
    assert lb("run", str(subs), *args).exit_code == 0
    (subs / "alice" / "relu.cu").write_text("ok 1")  # twice as slow
    r = lb("run", str(subs), *args, "--json")
    assert r.exit_code == 1, r.output
    (reg,) = json.loads(r.stdout)["regressions"]
    assert reg["participant"] == "alice" and reg["after"]["point"] < reg["before"]["point"]
    (subs / "alice" / "relu.cu").write_text("ok 0.5")
    assert lb("run", str(subs), "--db", db, "--no-references").exit_code == 0  # no --fail-on: 0


def test_cli_a_triton_model_answer_is_a_participant_of_its_own(tmp_path, fake_gpus, monkeypatch):
    """The CUDA model answer judged alone first, then a slower Triton one added: two rows ranked side
    by side, and the Triton one is no regression of the CUDA one's."""
    answers = write_subs(tmp_path / "answers", {"relu/01_fast.cu": "ok 2"})
    monkeypatch.setattr(lb_cmd, "SOLUTIONS_DIR", answers)
    db = str(tmp_path / "j.db")
    subs = write_subs(tmp_path / "subs", {"alice/relu.py": "ok 1.5"})
    args = ("--db", db, "--fail-on", "regression", "--json")
    assert lb("run", str(subs), *args).exit_code == 0
    (answers / "relu" / "triton_01.py").write_text("ok 1")  # half the CUDA answer's speed
    r = lb("run", str(subs), *args)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [(j["participant"], j["file"], j["language"]) for j in data["judged"]] == \
        [("reference-triton", str(answers / "relu" / "triton_01.py"), "triton")]
    assert [(j["participant"], j["language"]) for j in data["skipped"]] == [("alice", "triton"), ("reference", "cuda")]
    assert data["regressions"] == []
    (board,) = json.loads(lb("show", "--db", db, "--json").stdout)["boards"]
    (relu,) = board["problems"]
    assert [(x["participant"], x["language"]) for x in relu["ranking"]] == \
        [("reference", "cuda"), ("alice", "triton"), ("reference-triton", "triton")]
    table = lb("show", "--db", db).stdout
    assert "language" in table and "triton" in table


def test_cli_usage_errors(tmp_path, fake_gpus):
    assert lb("run", str(tmp_path / "missing"), "--db", str(tmp_path / "d")).exit_code == 2
    assert lb("run", str(tmp_path), "--devices", "0,7", "--db", str(tmp_path / "d")).exit_code == 2
    assert lb("run", str(tmp_path), "--devices", "x", "--db", str(tmp_path / "d")).exit_code == 2
    assert lb("run", str(tmp_path), "--gpus", "3", "--db", str(tmp_path / "d")).exit_code == 2
    assert lb("run", str(tmp_path), "--fail-on", "slow", "--db", str(tmp_path / "d")).exit_code == 2
    r = lb("show", "--db", str(tmp_path / "none.db"))
    assert r.exit_code == 2 and "no results store" in r.output


def test_cli_devices_pick_gpus(tmp_path, fake_gpus):
    subs = write_subs(tmp_path / "subs", {f"p{i}/relu.cu": "ok 1" for i in range(4)})
    r = lb("run", str(subs), "--db", str(tmp_path / "j.db"), "--devices", "1", "--no-references", "--json")
    assert r.exit_code == 0, r.output
    assert {j["device"] for j in json.loads(r.stdout)["judged"]} == {1}


def test_cli_device_is_the_spelling_and_the_old_names_still_work(tmp_path, fake_gpus):
    subs = write_subs(tmp_path / "subs", {f"p{i}/relu.cu": "ok 1" for i in range(2)})
    for i, args in enumerate((["--device", "1"], ["--devices", "1"])):
        r = lb("run", str(subs), "--db", str(tmp_path / f"j{i}.db"), *args, "--no-references", "--json")
        assert r.exit_code == 0, r.output
        assert {j["device"] for j in json.loads(r.stdout)["judged"]} == {1}
    r = lb("run", str(subs), "--db", str(tmp_path / "k.db"), "--device", "0", "--devices", "1")
    assert r.exit_code == 2 and "--devices is the old name of --device" in r.output
    lines = [ln.strip("│ ") for ln in lb("run", "--help").output.splitlines()]
    shown = [ln.split()[0] for ln in lines if ln.startswith("--")]
    assert "--device" in shown and "--devices" not in shown and "--gpus" not in shown


def test_cli_no_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(lb_cmd, "local_gpus", list)
    r = lb("run", str(tmp_path), "--db", str(tmp_path / "d"), "--json")
    assert r.exit_code == 3 and "no CUDA device" in json.loads(r.stdout)["error"]


def test_cli_missing_folder_is_a_usage_error_even_without_a_gpu(tmp_path, monkeypatch):
    monkeypatch.setattr(lb_cmd, "local_gpus", list)
    r = lb("run", str(tmp_path / "nope"), "--db", str(tmp_path / "d"), "--json")
    assert r.exit_code == 2 and "no submissions folder" in json.loads(r.stdout)["error"]


@nvcc_test
def test_subprocess_judge_real_process(tmp_path):
    """The real judging function end to end, in a `python -m judge.runner.job` process: a file that does not
    compile is a COMPILE_ERROR row, a policy breach a REJECTED row (neither needs a GPU)."""
    root = write_subs(tmp_path, {
        "a/vector_add.cu": (PROBLEMS_DIR / "vector_add" / "wrong" / "double_types.cu").read_text(),
        "b/vector_add.cu": (Path(__file__).parents[1] / "exploits" / "include_fstream.cu").read_text()})
    subs = leaderboard.discover(root, KNOWN)
    assert jobs.prebuild(subs, PROBLEMS_DIR, "sm_90a") == 1  # the policy breach is left to its job
    judge = jobs.SubprocessJudge(PROBLEMS_DIR, KIND, timeout_s=300)
    got = {e.submission.participant: e.report for e in jobs.run(subs, [0], judge, KIND) if isinstance(e, jobs.JobDone)}
    assert got["a"].status is Status.COMPILE_ERROR and got["a"].build and got["a"].build.cached, got["a"].message
    assert got["b"].status is Status.REJECTED and "fstream" in got["b"].message
    assert got["a"].solution == str(subs[0].path) and got["a"].source_sha256 == subs[0].sha256


def test_workflow_example_matches_the_doc():
    import yaml

    root = Path(__file__).resolve().parents[2]
    example = (root / "examples" / "leaderboard.yml").read_text()
    flow = yaml.safe_load(example)
    steps = flow["jobs"]["leaderboard"]["steps"]
    runs = " ".join(s.get("run", "") for s in steps)
    assert "judge leaderboard run submissions/" in runs and '>> "$GITHUB_STEP_SUMMARY"' in runs
    assert "self-hosted" in flow["jobs"]["leaderboard"]["runs-on"]
    doc = (root / "docs" / "ci.md").read_text()
    block = doc.split("```yaml\n")[1].split("```")[0]
    body = example[example.index("name: leaderboard"):]
    assert block == body, "docs/ci.md's workflow differs from examples/leaderboard.yml"
