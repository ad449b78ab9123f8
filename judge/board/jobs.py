"""The parallel leaderboard runner: a queue of submissions, one thread per GPU, one job per GPU at a
time (a GPU never times two kernels at once). Each job calls a judging function with the GPU's
index; the real one (`SubprocessJudge`) runs `python3 -m cli submit ... --json --no-record
--device N` in a process of its own, so a crash, a hang or a judge bug costs one row, never the
run. Tests inject a fake judging function.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from pydantic import ValidationError

from judge import paths
from judge.board.submissions import Submission, error_report
from judge.contract.report import Report
from judge.contract.verdict import Status

REPO_ROOT = paths.CODE_ROOT
JudgeFn = Callable[[Submission, int], Report]


@dataclass(frozen=True)
class Started:
    submission: Submission
    device: int


@dataclass(frozen=True)
class Done:
    submission: Submission
    device: int | None  # None: never reached a GPU (unknown problem, unreadable file)
    report: Report
    seconds: float


def run(submissions: Sequence[Submission], devices: Sequence[int], judge: JudgeFn,
        gpu_kind: str | None = None) -> Iterator[Started | Done]:
    """Judge every submission on the given GPUs; yield events in the caller's thread as they happen.
    A submission with `error` set is answered at once (REJECTED) without a GPU. Abandoning the
    iterator (Ctrl-C) stops handing out jobs and cancels running ones when `judge` can cancel."""
    if not devices:
        raise ValueError("no devices to run on")
    todo: queue.Queue[Submission] = queue.Queue()
    for sub in submissions:
        if sub.error:
            yield Done(sub, None, error_report(sub, Status.REJECTED, sub.error, gpu_kind), 0.0)
        else:
            todo.put(sub)
    n = todo.qsize()
    events: queue.Queue[Started | Done] = queue.Queue()
    stop = threading.Event()

    def worker(dev: int) -> None:
        while not stop.is_set():
            try:
                sub = todo.get_nowait()
            except queue.Empty:
                return
            events.put(Started(sub, dev))
            t0 = time.monotonic()
            try:
                report = judge(sub, dev)
            except Exception as e:  # noqa: BLE001 — a judging function's failure is one row
                report = error_report(sub, Status.INTERNAL_ERROR,
                                      f"the judging function failed: {type(e).__name__}: {e}", gpu_kind)
            events.put(Done(sub, dev, report, time.monotonic() - t0))

    threads = [threading.Thread(target=worker, args=(d,), daemon=True, name=f"gpu{d}") for d in devices]
    for t in threads:
        t.start()
    finished = 0
    try:
        while finished < n:
            ev = events.get()
            finished += isinstance(ev, Done)
            yield ev
    finally:
        stop.set()
        if finished < n and hasattr(judge, "cancel"):
            judge.cancel()  # type: ignore[attr-defined]
        for t in threads:
            t.join(timeout=10)


class SubprocessJudge:
    """Judge one submission with `python3 -m cli submit PROBLEM FILE --json --no-record --device N`."""

    def __init__(self, problems_root: Path, gpu_kind: str | None = None, budget_s: float | None = None,
                 arch: str | None = None, timeout_s: float = 1800.0):
        self.problems_root, self.gpu_kind = Path(problems_root), gpu_kind
        self.budget_s, self.arch, self.timeout_s = budget_s, arch, timeout_s
        self._live: set[subprocess.Popen] = set()
        self._lock = threading.Lock()

    def command(self, sub: Submission, dev: int) -> list[str]:
        cmd = [sys.executable, "-m", "cli", "submit", str((self.problems_root / sub.problem).resolve()),
               str(sub.path.resolve()), "--json", "--no-record", "--device", str(dev)]
        if self.budget_s is not None:
            cmd += ["--budget", str(self.budget_s)]
        if self.arch:
            cmd += ["--arch", self.arch]
        return cmd

    def __call__(self, sub: Submission, dev: int) -> Report:
        env = dict(os.environ)
        env.pop("CUDA_VISIBLE_DEVICES", None)  # --device N is a physical (NVML) index, as in the worker
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        proc = subprocess.Popen(self.command(sub, dev), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=REPO_ROOT, env=env, start_new_session=True)  # its own group: killed whole
        with self._lock:
            self._live.add(proc)
        try:
            stdout, stderr = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            _kill(proc)
            proc.communicate()
            return error_report(sub, Status.TIMEOUT, f"judging did not finish within {self.timeout_s:g} s "
                                "(the judging process was killed)", self.gpu_kind)
        finally:
            with self._lock:
                self._live.discard(proc)
        return parse(sub, proc.returncode, stdout, stderr, self.gpu_kind)

    def cancel(self) -> None:
        with self._lock:
            for proc in list(self._live):
                _kill(proc)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def parse(sub: Submission, returncode: int, stdout: str, stderr: str, gpu_kind: str | None = None) -> Report:
    """The report a `submit --json` process printed; a row saying what went wrong when it printed none."""
    start = stdout.rfind("\n{\n")  # the report is printed last, indented; stray prints may precede it
    for text in (stdout, stdout[start + 1:] if start >= 0 else None):
        if text:
            try:
                return Report.model_validate_json(text).model_copy(update={"solution": str(sub.path)})
            except ValidationError:
                pass
    tail = stderr.strip()[-1500:]
    try:
        said = json.loads(stdout).get("error")
    except (ValueError, AttributeError):
        said = None
    if said:
        why = f"the judge refused it (exit {returncode}): {said}"
    elif returncode < 0:
        why = f"the judging process died of signal {-returncode} ({_signame(-returncode)})"
    else:
        why = f"the judging process exited {returncode} without a report"
    return error_report(sub, Status.INTERNAL_ERROR, why + (f"\n{tail}" if tail else ""), gpu_kind)


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return "unknown"


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
