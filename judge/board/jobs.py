"""The parallel leaderboard runner: a queue of submissions, one thread per GPU, one job per GPU at a
time (a GPU never times two kernels at once). Each job calls a judging function with the GPU's
index; the real one (`SubprocessJudge`) runs a `python -m judge.runner.job` process per job
(judge/runner/job.py), so a crash, a hang or a judge bug costs one row, never the run. Tests
inject a fake judging function.
"""
from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from judge.board.submissions import Submission, error_report
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.runner import job
from judge.runner.job import LocalRunner, Runner

JudgeFn = Callable[[Submission, int], Report]


@dataclass(frozen=True)
class JobStarted:
    submission: Submission
    device: int


@dataclass(frozen=True)
class JobDone:
    submission: Submission
    device: int | None  # None: never reached a GPU (unknown problem, unreadable file)
    report: Report
    seconds: float


def run(submissions: Sequence[Submission], devices: Sequence[int], judge: JudgeFn,
        gpu_kind: str | None = None) -> Iterator[JobStarted | JobDone]:
    """Judge every submission on the given GPUs; yield events in the caller's thread as they happen.
    A submission with `error` set is answered at once (REJECTED) without a GPU. Abandoning the
    iterator (Ctrl-C) stops handing out jobs and cancels running ones when `judge` can cancel."""
    if not devices:
        raise ValueError("no devices to run on")
    todo: queue.Queue[Submission] = queue.Queue()
    for sub in submissions:
        if sub.error:
            yield JobDone(sub, None, error_report(sub, Status.REJECTED, sub.error, gpu_kind), 0.0)
        else:
            todo.put(sub)
    n = todo.qsize()
    events: queue.Queue[JobStarted | JobDone] = queue.Queue()
    stop = threading.Event()

    def worker(dev: int) -> None:
        while not stop.is_set():
            try:
                sub = todo.get_nowait()
            except queue.Empty:
                return
            events.put(JobStarted(sub, dev))
            t0 = time.monotonic()
            try:
                report = judge(sub, dev)
            except Exception as e:  # noqa: BLE001 — a judging function's failure is one row
                report = error_report(sub, Status.INTERNAL_ERROR,
                                      f"the judging function failed: {type(e).__name__}: {e}", gpu_kind)
            events.put(JobDone(sub, dev, report, time.monotonic() - t0))

    threads = [threading.Thread(target=worker, args=(d,), daemon=True, name=f"gpu{d}") for d in devices]
    for t in threads:
        t.start()
    finished = 0
    try:
        while finished < n:
            ev = events.get()
            finished += isinstance(ev, JobDone)
            yield ev
    finally:
        stop.set()
        cancel = getattr(judge, "cancel", None)
        if finished < n and callable(cancel):
            cancel()
        for t in threads:
            t.join(timeout=10)


class SubprocessJudge:
    """Judge one submission in a `python -m judge.runner.job` process of its own (judge/runner/job.py:
    a typed job spec in, a Report back on a file descriptor of its own)."""

    def __init__(self, problems_root: Path, gpu_kind: str | None = None, budget_s: float | None = None,
                 arch: str | None = None, timeout_s: float = 1800.0, runner: Runner | None = None):
        self.problems_root, self.gpu_kind = Path(problems_root), gpu_kind
        self.budget_s, self.arch, self.timeout_s = budget_s, arch, timeout_s
        self.runner: Runner = runner or LocalRunner()
        self.command: list[str] | None = None  # the child's command line (tests replace it); default: the job module
        self._live: set[job.Child] = set()
        self._lock = threading.Lock()

    def spec(self, sub: Submission, dev: int) -> job.JobSpec:
        return job.JobSpec(problem=(self.problems_root / sub.problem).resolve(), solution=sub.path.resolve(),
                           mode="submit", device=dev, arch=self.arch, budget_s=self.budget_s, runner=self.runner)

    def __call__(self, sub: Submission, dev: int) -> Report:
        child = job.Child(self.spec(sub, dev), command=self.command)
        with self._lock:
            self._live.add(child)
        try:
            code, reply, tail = child.communicate(self.timeout_s)
        except job.JobFailed as e:
            return failed_report(sub, e, self.gpu_kind)
        finally:
            with self._lock:
                self._live.discard(child)
        return parse(sub, code, reply, tail, child.nonce, self.gpu_kind)

    def cancel(self) -> None:
        with self._lock:
            for child in list(self._live):
                child.kill()


def parse(sub: Submission, returncode: int | None, reply: bytes, log_tail: str, nonce: str,
          gpu_kind: str | None = None) -> Report:
    """The report a job process sent; a row saying what went wrong when it sent none."""
    try:
        result = job.decode(reply, nonce, "submit", returncode, log_tail)
    except job.JobFailed as e:
        return failed_report(sub, e, gpu_kind)
    assert isinstance(result, Report)  # decode checked the kind for mode submit
    return result.model_copy(update={"solution": str(sub.path)})


def failed_report(sub: Submission, failure: job.JobFailed, gpu_kind: str | None = None) -> Report:
    """The row of a job that gave no report: TIMEOUT when it ran out of time, INTERNAL_ERROR else
    (the judge's or the machine's fault, never a verdict on the file)."""
    if failure.kind == "timeout":
        return error_report(sub, Status.TIMEOUT, failure.message, gpu_kind)
    if failure.kind == "refused":
        return error_report(sub, Status.INTERNAL_ERROR, f"the judge refused it: {failure.detail()}", gpu_kind)
    if failure.kind == "internal":
        return error_report(sub, Status.INTERNAL_ERROR, f"the judge failed: {failure.detail()}", gpu_kind)
    return error_report(sub, Status.INTERNAL_ERROR, failure.detail(), gpu_kind)


def prebuild(submissions: Sequence[Submission], problems_root: Path, arch: str) -> int:
    """Build every judgeable submission once, in parallel (ninja), before the jobs start: the jobs
    then find their builds in the cache, and two jobs never compile the same bytes at once. Files the
    static source policy refuses are left to their job (which REJECTS them). Returns the count."""
    from judge.build import toolchain
    from judge.problem import spec

    todo, seen = [], set()
    for sub in submissions:
        if sub.error:
            continue
        try:
            src = sub.path.read_bytes()
            problem = spec.load_problem(problems_root / sub.problem)
            if toolchain.check_source(problem, sub.path):
                continue
        except (OSError, toolchain.UnknownLanguage, spec.ProblemError):
            continue
        key = (src, problem.name, sub.path.suffix)
        if key not in seen:
            seen.add(key)
            todo.append((problem, sub.path))
    if todo:
        toolchain.prepare_many(todo, arch)
    return len(todo)
