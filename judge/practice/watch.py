"""`judge watch`: re-judge a file on every save, with a judge kept warm between runs.

A practice tool, not a trusted verdict: the session draws every input from one secret fixed for
its lifetime, so the reference outputs are computed once per workload (and input slot) and
cached; a submission could in principle learn them across runs. `judge submit` (or `watch
--submit`, which runs it on every save) gives the real verdict.

What stays warm: torch and the parent's CUDA context, the loaded problem, the device peaks, the
cached references, and a spare candidate worker started while the user edits (each run takes it
and ends it, since the submission's library changes; the next spare starts after the run).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from judge.contract.events import CaseDone, Event, Finished
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine import run as pipeline
from judge.engine.stats import TimingPolicy
from judge.gpu import device
from judge.problem.spec import Problem
from judge.worker.client import WorkerProcess
from judge.worker.native_build import NativeBuildError

POLL_S = 0.2
SETTLE_S = 0.05
CACHE_FRACTION = 0.25  # of the free device memory at start: the most the reference cache holds


# -- the change detector --------------------------------------------------------------------------

@dataclass(frozen=True)
class Signature:
    mtime_ns: int
    size: int
    sha256: str


class ChangeDetector:
    """Polls a file's mtime and size; a change counts once its bytes have settled (the same
    signature `settle_s` later: an editor's partial write then final write make one change) and
    its hash differs from the last change's (a bare `touch` is no change)."""

    def __init__(self, path: Path, settle_s: float = SETTLE_S, sleep: Callable[[float], None] = time.sleep):
        self.path, self.settle_s, self.sleep = Path(path), settle_s, sleep
        self.seen = self.signature()
        self.last_hash = self.seen.sha256 if self.seen else None

    def signature(self) -> Signature | None:
        """The file's signature now; None while it is missing or unreadable."""
        try:
            st = os.stat(self.path)
            data = self.path.read_bytes()
        except OSError:
            return None
        return Signature(st.st_mtime_ns, st.st_size, hashlib.sha256(data).hexdigest())

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def poll(self) -> bool:
        """True once per settled change of the content."""
        quick = self._stat()
        if self.seen is not None and quick == (self.seen.mtime_ns, self.seen.size):
            return False
        sig = self.signature()
        while True:  # settle: wait until two looks agree
            self.sleep(self.settle_s)
            again = self.signature()
            if again == sig:
                break
            sig = again
        self.seen = sig
        if sig is None or sig.sha256 == self.last_hash:
            return False
        self.last_hash = sig.sha256
        return True

    def changes(self, poll_s: float = POLL_S) -> Iterator[float]:
        """Forever: the `time.perf_counter()` at which each change was detected."""
        while True:
            if self.poll():
                yield time.perf_counter()
            else:
                self.sleep(poll_s)


# -- the warm session ------------------------------------------------------------------------------

class ReferenceCache:
    """Reference outputs by key, computed at most once while they fit in `limit_bytes` (beyond,
    each is computed when asked). The cache owns copies: a reference may return a view of its
    inputs, whose buffers are freed after each case."""

    def __init__(self, limit_bytes: int):
        self.limit_bytes = limit_bytes
        self.used_bytes = 0
        self.entries: dict[str, dict] = {}
        self.computed = 0
        self.hits = 0

    def get(self, key: str, compute: Callable[[], dict]) -> dict:
        if key in self.entries:
            self.hits += 1
            return self.entries[key]
        out = compute()
        self.computed += 1
        size = sum(t.numel() * t.element_size() for t in out.values())
        if self.used_bytes + size <= self.limit_bytes:
            self.entries[key] = {name: t.clone() for name, t in out.items()}
            self.used_bytes += size
        return out


@dataclass
class Judged:
    """One watch run: the report, and how long after the save its verdict came."""

    report: Report
    verdict_s: float  # save → correctness verdict (tests passed, or the failure)
    total_s: float  # save → end of the run (the short timing included)
    verdict_at: float  # time.time() of the verdict (scripts/measure/measure_watch.py compares it with its writes)


class WatchSession:
    """Judges one problem again and again with everything that can stay warm kept warm.

    `start()` pays the one-time costs; `judge(source)` runs the pipeline with this session as
    its `Warm` state (pipeline.Warm): a spare worker and the reference cache. With `submit=True`
    each run is a plain `judge submit` instead (fresh secret, baselines, nothing reused)."""

    def __init__(self, problem: Problem, opts: pipeline.Options | None = None, timed: bool = True,
                 submit: bool = False, evaluate: Callable[..., Iterator[Event]] | None = None,
                 spawn: Callable[[], WorkerProcess | None] | None = None, cache_bytes: int | None = None,
                 triton: bool = False):
        base = opts or pipeline.Options()
        self.submit = submit
        self.problem = problem if submit else replace(problem, baselines=())  # practice: no baseline
        mode = "submit" if (submit or timed) and problem.spec.benchmarks else "test"
        self.opts = replace(base, mode=mode, warm=None if submit else self, sass=submit,  # the verdict first
                            secret=None if submit else (base.secret if base.secret is not None
                                                        else secrets.randbits(63)))
        self._evaluate = evaluate or pipeline.evaluate
        self._spawn = spawn or (lambda: _spare_worker(self.opts.device, triton))
        self.cache = ReferenceCache(cache_bytes if cache_bytes is not None else 0)
        self._cache_bytes = cache_bytes
        self.spare: WorkerProcess | None = None
        self.started = False

    def start(self) -> None:
        """Import torch, bring the CUDA context up, load the device peaks, start a spare worker."""
        gpu = next((g for g in device.gpus() if g.index == self.opts.device), None)
        if gpu is not None:
            import torch

            torch.cuda.set_device(device.cuda_index(self.opts.device))
            torch.zeros(1, device="cuda")
            if self._cache_bytes is None:
                free, _ = torch.cuda.mem_get_info()
                self.cache.limit_bytes = int(CACHE_FRACTION * free)
            if self.opts.mode == "submit":
                device.peaks(gpu)  # measured once per GPU, cached on disk
            if not self.submit:
                self.spare = self._spawn()
        self.started = True

    # pipeline.Warm
    def worker(self) -> WorkerProcess | None:
        w, self.spare = self.spare, None
        return w

    def reference(self, key: str, compute: Callable[[], dict]) -> dict:
        return self.cache.get(key, compute)

    def judge(self, source: Path, on_event: Callable[[Event], None] | None = None) -> Report:
        """One run of the pipeline on `source`; events (but the last) go to `on_event`."""
        report = None
        events = self._evaluate(self.problem, Path(source), self.opts)
        try:
            for ev in events:
                if isinstance(ev, Finished):
                    report = ev.report
                elif on_event:
                    on_event(ev)
        finally:  # interrupted (Ctrl-C): the pipeline's own `finally` ends its workers now
            close = getattr(events, "close", None)
            if close:
                close()
        if self.started and not self.submit and self.spare is None:
            self.spare = self._spawn()  # boots while the user edits, never while a run is timed
        assert report is not None
        return report

    def run(self, source: Path, saved_at: float, on_event: Callable[[Event], None] | None = None) -> Judged:
        """`judge()`, timed from `saved_at` (a `time.perf_counter()`): to the correctness verdict
        (the last test passed, or the run ended) and to the end."""
        verdict: list[tuple[float, float]] = []

        def seen(ev: Event) -> None:
            if isinstance(ev, CaseDone) and ev.index + 1 == ev.total and ev.case.passed and not verdict:
                verdict.append((time.perf_counter(), time.time()))
            if on_event:
                on_event(ev)

        report = self.judge(source, seen)
        end = (time.perf_counter(), time.time())
        at = verdict[0] if verdict and report.status is Status.ACCEPTED else end  # a failure: at the end
        return Judged(report, round(at[0] - saved_at, 3), round(end[0] - saved_at, 3), at[1])

    def close(self) -> None:
        if self.spare is not None:
            self.spare.close()
            self.spare = None


def practice_policy(budget_s: float) -> TimingPolicy:
    """The short timing of a watch run: `budget_s` of GPU time per shape at most."""
    return TimingPolicy(budget_s=budget_s, min_time_s=min(TimingPolicy().min_time_s, budget_s))


def _spare_worker(device_index: int, triton: bool = False) -> WorkerProcess | None:
    """A spare candidate worker (the Triton worker for a `.py`), or None where the native worker does
    not build: the run then starts its own and ends in INTERNAL_ERROR with the compiler's message
    (judge/engine/session.py's `spawn`)."""
    try:
        return WorkerProcess(device_index, "candidate", triton=triton)
    except NativeBuildError:
        return None
