"""`judge watch`: the change detector, the warm session's reuse (GPU parts faked), the CLI."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from conftest import PROBLEMS_DIR
from fakes import FakeWorker
from typer.testing import CliRunner

import cli.tools_cmd  # noqa: F401  (registers `judge watch`)
from cli.app import app
from judge.contract.events import CaseDone, Finished, Stage
from judge.contract.report import Report, WarmUp
from judge.contract.report import TestCase as Case
from judge.contract.verdict import Status
from judge.engine.run import Options
from judge.practice import watch as watching
from judge.practice.watch import ChangeDetector, Judged, ReferenceCache, WatchSession
from judge.problem import spec

runner = CliRunner()


# -- the change detector -----------------------------------------------------------------------------

def write(path: Path, text: str, mtime_ns: int) -> None:
    path.write_text(text)
    os.utime(path, ns=(mtime_ns, mtime_ns))  # explicit: the file system's clock may be coarse


@pytest.fixture
def src(tmp_path):
    f = tmp_path / "sol.cu"
    write(f, "// v1\n", 1_000_000_000)
    return f


def test_no_change_no_run(src):
    d = ChangeDetector(src, sleep=lambda s: None)
    assert not d.poll() and not d.poll()


def test_a_save_is_one_run(src):
    d = ChangeDetector(src, sleep=lambda s: None)
    write(src, "// v2\n", 2_000_000_000)
    assert d.poll()
    assert not d.poll()  # seen: no second run for the same save
    write(src, "// v3\n", 3_000_000_000)
    assert d.poll()


def test_touch_without_a_content_change_is_no_run(src):
    d = ChangeDetector(src, sleep=lambda s: None)
    os.utime(src, ns=(5_000_000_000, 5_000_000_000))
    assert not d.poll()
    write(src, "// v1\n", 6_000_000_000)  # rewritten with the same bytes
    assert not d.poll()


def test_partial_then_final_write_is_one_run_of_the_final_text(src):
    """An editor truncates, then writes: the poll sees the partial file, the settle sees the end."""
    writes = iter([lambda: write(src, "// v2 complete\n", 3_000_000_000)])

    def sleep(_):
        next(writes, lambda: None)()

    d = ChangeDetector(src, sleep=sleep)
    write(src, "", 2_000_000_000)  # the partial write
    assert d.poll()
    assert d.last_hash == d.signature().sha256 and src.read_text() == "// v2 complete\n"
    assert not d.poll()


def test_a_missing_file_waits_for_it_to_come_back(src):
    d = ChangeDetector(src, sleep=lambda s: None)
    src.unlink()
    assert not d.poll()
    write(src, "// v2\n", 2_000_000_000)
    assert d.poll()
    src.unlink()
    assert not d.poll()
    write(src, "// v2\n", 4_000_000_000)  # back with the judged bytes: nothing to do
    assert not d.poll()


def test_changes_yields_once_per_save(src):
    saves = iter([lambda: None, lambda: write(src, "// v2\n", 2_000_000_000), lambda: None, lambda: None,
                  lambda: write(src, "// v3\n", 3_000_000_000), lambda: None])
    d = ChangeDetector(src, sleep=lambda s: next(saves, lambda: None)())
    gen = d.changes(poll_s=0.0)
    first, second = next(gen), next(gen)
    assert second >= first and src.read_text() == "// v3\n"


# -- the reference cache and the warm session ---------------------------------------------------------

def test_cache_computes_once_and_owns_a_copy():
    cache = ReferenceCache(limit_bytes=1 << 20)
    calls = []
    out = torch.arange(4.0)

    def compute():
        calls.append(1)
        return {"C": out}

    first = cache.get("test0:n=4", compute)
    out.fill_(-1)  # the reference's tensor may be a view of input buffers that are then reused
    again = cache.get("test0:n=4", compute)
    assert len(calls) == 1 and cache.hits == 1 and cache.computed == 1
    assert first["C"] is out and torch.equal(again["C"], torch.arange(4.0))
    cache.get("test1:n=4", compute)
    assert len(calls) == 2 and cache.used_bytes == 2 * 16


def test_cache_beyond_its_limit_computes_every_time():
    cache = ReferenceCache(limit_bytes=16)
    big = {"C": torch.zeros(8)}  # 32 bytes
    calls = []
    for _ in range(3):
        cache.get("k", lambda: calls.append(1) or big)
    assert len(calls) == 3 and cache.used_bytes == 0 and not cache.entries


class FakePipeline:
    """Stands for pipeline.evaluate: takes the warm worker, asks for two references, records options."""

    def __init__(self, status=Status.ACCEPTED):
        self.status, self.computed, self.seen = status, 0, []

    def __call__(self, problem, source, opts):
        w = opts.warm.worker() if opts.warm else None
        self.seen.append((problem, opts, w))

        def compute():
            self.computed += 1
            return {"C": torch.zeros(4)}

        for i, wid in enumerate(("n=1", "n=7")):
            if opts.warm:
                opts.warm.reference(f"test{i}:{wid}", compute)
            yield Stage(f"test {i + 1}/2")
            yield CaseDone(i, 2, Case(workload=wid, passed=self.status is Status.ACCEPTED))
        yield Finished(Report(problem=problem.name, solution=str(source), source_sha256="x", mode=opts.mode,
                              status=self.status))


@pytest.fixture
def vector_add():
    return spec.load_problem(PROBLEMS_DIR / "vector_add")


def session(problem, fake, **kw) -> WatchSession:
    s = WatchSession(problem, Options(), evaluate=fake, spawn=FakeWorker, cache_bytes=1 << 20, **kw)
    s.started = True  # what start() does beside the GPU: the spare worker
    s.spare = FakeWorker()
    return s


def test_reference_computed_once_across_runs_with_a_fixed_secret(vector_add, tmp_path):
    fake = FakePipeline()
    s = session(vector_add, fake)
    r1 = s.judge(tmp_path / "a.cu")
    r2 = s.judge(tmp_path / "a.cu")
    assert r1.status == r2.status == Status.ACCEPTED
    assert fake.computed == 2  # two workloads, each once, over two runs
    (_, o1, _), (_, o2, _) = fake.seen
    assert o1.secret is not None and o1.secret == o2.secret and o1.warm is s


def test_each_run_takes_the_spare_worker_and_a_new_one_starts_after(vector_add, tmp_path):
    fake = FakePipeline()
    s = session(vector_add, fake)
    first_spare = s.spare
    s.judge(tmp_path / "a.cu")
    assert fake.seen[0][2] is first_spare and s.spare is not None and s.spare is not first_spare
    second = s.spare
    s.judge(tmp_path / "a.cu")
    assert fake.seen[1][2] is second
    s.close()
    assert s.spare is None


def test_practice_runs_have_no_baseline_and_test_mode_without_timing(vector_add):
    s = WatchSession(vector_add, Options(), timed=False, evaluate=FakePipeline(), spawn=FakeWorker)
    assert s.problem.baselines == () and vector_add.baselines and s.opts.mode == "test"
    assert WatchSession(vector_add, Options(), evaluate=FakePipeline()).opts.mode == "submit"


def test_submit_mode_reuses_nothing(vector_add, tmp_path):
    fake = FakePipeline()
    s = WatchSession(vector_add, Options(secret=5), submit=True, evaluate=fake, spawn=FakeWorker)
    s.started = True
    s.judge(tmp_path / "a.cu")
    _, opts, worker = fake.seen[0]
    assert opts.warm is None and opts.secret is None and worker is None and s.spare is None
    assert s.problem.baselines == vector_add.baselines and opts.mode == "submit"


def test_run_times_the_verdict_from_the_save(vector_add, tmp_path):
    import time

    s = session(vector_add, FakePipeline())
    saved = time.perf_counter()
    j = s.run(tmp_path / "a.cu", saved)
    assert 0 <= j.verdict_s <= j.total_s and j.report.status == Status.ACCEPTED
    failed = session(vector_add, FakePipeline(Status.WRONG_ANSWER)).run(tmp_path / "a.cu", time.perf_counter())
    assert failed.verdict_s == failed.total_s  # a failure's verdict is the run's end


# -- the CLI ----------------------------------------------------------------------------------------

class FakeSession:
    """Stands for WatchSession in the CLI: no GPU; each run's status comes from a list."""

    statuses: list[Status] = []
    made: list[FakeSession] = []
    warm_up: list[WarmUp] = []  # a Triton file's, in every run's report

    def __init__(self, problem, opts, timed=True, submit=False, triton=False):
        self.problem, self.opts, self.timed, self.submit, self.triton = problem, opts, timed, submit, triton
        self.runs, self.closed = 0, False
        FakeSession.made.append(self)

    def start(self):
        pass

    def run(self, source, saved_at, on_event=None):
        status = FakeSession.statuses[self.runs]
        self.runs += 1
        report = Report(problem=self.problem.name, solution=str(source), source_sha256="x", mode="submit",
                        status=status, message="" if status is Status.ACCEPTED else "wrong output on n=7",
                        warm_up=FakeSession.warm_up)
        return Judged(report, 1.25, 2.5, 1.7e9)

    def close(self):
        self.closed = True


@pytest.fixture
def fake_session(monkeypatch):
    FakeSession.made, FakeSession.warm_up = [], []
    monkeypatch.setattr(watching, "WatchSession", FakeSession)
    return FakeSession


def test_cli_json_lines(fake_session, src):
    fake_session.statuses = [Status.ACCEPTED]
    r = runner.invoke(app, ["watch", "vector_add", str(src), "--json", "--runs", "1", "--budget", "0.25"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(lines) == 1
    assert set(lines[0]) == {"run", "status", "exit_code", "verdict_s", "total_s", "verdict_at", "report"}
    assert lines[0]["run"] == 1 and lines[0]["status"] == "ACCEPTED" and lines[0]["verdict_s"] == 1.25
    assert Report.model_validate(lines[0]["report"]).status == Status.ACCEPTED
    made = fake_session.made[0]
    assert made.closed and made.opts.policy.budget_s == 0.25 and made.timed and not made.submit


def test_cli_once_exits_with_the_verdict(fake_session, src):
    fake_session.statuses = [Status.WRONG_ANSWER]
    r = runner.invoke(app, ["watch", "vector_add", str(src), "--once", "--no-time"])
    assert r.exit_code == 1, r.output
    assert "WRONG_ANSWER" in r.output and "verdict in 1.25 s" in r.output and "wrong output on n=7" in r.output
    assert fake_session.made[0].closed and not fake_session.made[0].timed


def test_cli_watches_a_triton_file_with_its_warm_up_shown(fake_session, tmp_path):
    src = tmp_path / "add.py"
    src.write_text("# judge: vector_add\n")
    fake_session.statuses = [Status.ACCEPTED]
    fake_session.warm_up = [WarmUp(phase="tests", workloads=6, seconds=2.5, compile_s=1.9, kernels=1, configs=0),
                            WarmUp(phase="timed", workloads=3, seconds=4.0, compile_s=1.0, tune_s=2.5, kernels=3,
                                   configs=9)]
    r = runner.invoke(app, ["watch", str(src), "--once", "--no-time"])
    assert r.exit_code == 0, r.output
    assert fake_session.made[0].triton  # the Triton worker is the spare one
    assert "warm-up (the tests' worker, not timed): 6 shapes in 2.5 s, 1 kernel compiled in 1.9 s" in r.output
    assert ("warm-up (the timed calls' worker, not timed): 3 shapes in 4.0 s, 3 kernels compiled in 1.0 s, "
            "9 autotuner configurations tried in 2.5 s") in r.output
    fake_session.made = []
    (tmp_path / "x.cu").write_text("// v1\n")
    assert runner.invoke(app, ["watch", "vector_add", str(tmp_path / "x.cu"), "--once"]).exit_code == 0
    assert not fake_session.made[0].triton


def test_cli_keeps_watching_after_a_failure(fake_session, src, monkeypatch):
    fake_session.statuses = [Status.COMPILE_ERROR, Status.ACCEPTED]
    monkeypatch.setattr(ChangeDetector, "changes", lambda self, poll_s=0.2: iter([1.0]))
    r = runner.invoke(app, ["watch", "vector_add", str(src), "--runs", "2"])
    assert r.exit_code == 0, r.output
    assert "run 1" in r.output and "COMPILE_ERROR" in r.output and "run 2" in r.output and "ACCEPTED" in r.output


@pytest.mark.parametrize("statuses, code", [([Status.WRONG_ANSWER], 1), ([Status.ACCEPTED], 0),
                                           ([Status.ACCEPTED, Status.COMPILE_ERROR], 1),
                                           ([Status.COMPILE_ERROR, Status.ACCEPTED], 0)])
def test_cli_runs_exits_with_the_last_verdicts_code(fake_session, src, monkeypatch, statuses, code):
    fake_session.statuses = statuses
    monkeypatch.setattr(ChangeDetector, "changes", lambda self, poll_s=0.2: iter([1.0] * len(statuses)))
    r = runner.invoke(app, ["watch", "vector_add", str(src), "--runs", str(len(statuses))])
    assert r.exit_code == code, r.output


def test_cli_ctrl_c_exits_cleanly(fake_session, src, monkeypatch):
    fake_session.statuses = [Status.ACCEPTED]

    def interrupted(self, poll_s=0.2):
        raise KeyboardInterrupt
        yield  # unreachable: makes this a generator

    monkeypatch.setattr(ChangeDetector, "changes", interrupted)
    r = runner.invoke(app, ["watch", "vector_add", str(src)])
    assert r.exit_code == 0, r.output
    assert fake_session.made[0].closed


@pytest.mark.parametrize("args, text", [(["vector_add", "missing.cu"], "no such file"),
                                        (["vector_add", "{src}", "--budget", "-1"], "--budget"),
                                        (["no_such_problem", "{src}"], "no problem")])
def test_cli_usage_errors(fake_session, src, args, text):
    r = runner.invoke(app, ["watch", *[a.format(src=src) for a in args]])
    assert r.exit_code == 2, r.output
    assert text in r.output and "Traceback" not in r.output and not fake_session.made


# -- on a GPU (`pytest -m gpu`) -------------------------------------------------------------------

def _gpu(f):
    from judge.gpu import device

    return pytest.mark.gpu(pytest.mark.skipif(not device.gpus(), reason="needs an NVIDIA GPU")(f))


@_gpu
def test_gpu_warm_session_reuses_and_survives_failures(vector_add, tmp_path):
    from conftest import SOLUTIONS_DIR

    good = tmp_path / "sol.cu"
    good.write_text((SOLUTIONS_DIR / "vector_add" / "02_float4.cu").read_text())
    s = WatchSession(vector_add, Options(policy=watching.practice_policy(0.2)))
    s.start()
    try:
        first = s.judge(good)
        assert first.status == Status.ACCEPTED, first.message
        assert len(first.benchmarks) == 2 and all(b.speedup is None for b in first.benchmarks)
        computed = s.cache.computed
        good.write_text(good.read_text() + "// saved again\n")
        second = s.judge(good)
        assert second.status == Status.ACCEPTED, second.message
        n_tests = len(vector_add.spec.tests)
        assert s.cache.hits >= n_tests  # every test's reference came from the cache
        from judge.engine.reservoir import MAX_STASH

        # only the timed calls re-checked after the timing (at most MAX_STASH per shape) are new
        assert s.cache.computed - computed <= MAX_STASH * len(vector_add.spec.benchmarks)
        broken = tmp_path / "broken.cu"
        broken.write_text("this is not C++\n")
        assert s.judge(broken).status == Status.COMPILE_ERROR
        assert s.judge(PROBLEMS_DIR / "vector_add" / "wrong" / "no_tail.cu").status == Status.WRONG_ANSWER
        assert s.judge(good).status == Status.ACCEPTED
    finally:
        s.close()
