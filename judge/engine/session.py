"""One run's state, shared by the engine's parts: `Session`, and the caller's `Options` and `Warm`.

A session holds what a run owns: the problem, the options, the report being filled, the secret
every input is drawn under, the GPU, the workers it started (each with its role, judge/engine/roles.py),
and the parent's CUDA handles (torch, the runtime, the device buffers it shares with the workers).
The parts (judge/engine/guards.py, buffers.py, correctness.py, benchmarks.py) take a session and
read or fill it; `close()` frees the buffers and ends every worker.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from judge.build.toolchain import Prepared
from judge.contract.events import Event
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine.outcome import RunFailure
from judge.engine.roles import CANDIDATE, Interference, Worker, blame, from_outside, interfered
from judge.engine.stats import TimingPolicy
from judge.gpu import device
from judge.problem.spec import Impl, Problem
from judge.worker.client import WorkerFailure, WorkerProcess
from judge.worker.native_build import NativeBuildError
from judge.worker.protocol import Op

if TYPE_CHECKING:
    from judge.gpu.cudart import Runtime
    from judge.gpu.devmem import DeviceBuffers
    from judge.gpu.witness import Witness


class Warm(Protocol):
    """State a run may reuse from earlier runs (`judge watch`, judge/practice/watch.py)."""

    def worker(self) -> WorkerProcess | None:
        """A started candidate worker (fresh: it never ran anything), or None to spawn one."""

    def reference(self, key: str, compute: Callable[[], dict]) -> dict:
        """The reference outputs for `key` (inputs drawn under a fixed secret), computed at most once."""


Phase = Callable[["Session"], Iterator[Event]]


class Rehearsing(Protocol):
    """The baselines' first calls under way beside the run (judge/engine/rehearsal.py's `Rehearsal`)."""

    def started(self, b: Impl) -> bool: ...

    def join(self, b: Impl) -> None: ...

    def wait(self) -> None: ...


@dataclass
class Phases:
    """The run's phases after the candidate is loaded (judge/engine/run.py's defaults: the tests,
    then the timed phase in submit mode). A later method of timing or of guarding swaps one in."""

    correctness: Phase
    timed: Phase


@dataclass
class Options:
    mode: str = "submit"  # "submit": tests + timing; "test": tests only
    device: int = field(default_factory=lambda: device.default_index())  # NVML's; default: CUDA_VISIBLE_DEVICES's first
    arch: str | None = None  # default: the local GPU's (sm_90a when there is none)
    policy: TimingPolicy = field(default_factory=TimingPolicy)
    baseline_policy: TimingPolicy = field(default_factory=lambda: TimingPolicy().for_baseline())
    prepared: Prepared | None = None  # from toolchain.prepare_many (verify, compare, leaderboards)
    secret: int | None = None  # default: fresh per run
    warm: Warm | None = None  # a warm session's worker and cached references (judge watch)
    hidden: int = 2  # hidden test cases drawn per run (judge/problem/hidden.py)
    rehearse: bool = True  # the baselines' first calls while the candidate builds (judge/engine/rehearsal.py)
    sass: bool = True  # count each kernel's SASS opcodes after the build (cuobjdump: ~0.6 s)
    phases: Phases | None = None  # default: judge/engine/run.py's `default_phases()`


class Session:
    """A run's state; the engine's parts take it as their first argument."""

    def __init__(self, problem: Problem, opts: Options, report: Report):
        self.problem, self.opts, self.report = problem, opts, report
        self.secret = opts.secret if opts.secret is not None else secrets.randbits(63)
        self.gpu: device.GpuInfo | None = None
        self.workers: list[Worker] = []
        self.candidate_worker: Worker | None = None
        self.spare: Worker | None = None  # a started candidate worker for the timed calls (`fresh_candidate`)
        self.library: dict | None = None  # what a candidate's worker loads at `init` (`load`'s `load`)
        self.baselines: list[tuple[Impl, Worker]] = []
        self.torch: Any = None  # the torch module, once `start_torch()` ran (imported late: a cold start)
        self.rt: Runtime | None = None
        self.buffers: DeviceBuffers | None = None
        self.view: Witness | None = None  # the parent's own fingerprints and GPU stamps (judge/gpu/witness.py)
        self.called = False  # has a candidate run solve() yet (who is to blame for an OOM)
        self.triton = False  # the candidate is a Triton (.py) submission: its worker is judge/worker/triton_gpu.py
        self.restarted: set[str] = set()  # roles of the baselines whose worker was restarted (`restart`)
        # Read before any of the candidate's code runs (judge/engine/run.py's `preload`): the device's
        # measured peaks, and the text of every baseline's file (what its worker executes).
        self.peaks: device.Peaks | None = None
        self.baseline_sources: dict[str, str] = {}
        self.rehearsal: Rehearsing | None = None  # the baselines' first calls, in threads (judge/engine/rehearsal.py)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """The block's wall time into `report.phases_s[name]` when it ends, by failure too."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            spent = self.report.phases_s.get(name, 0.0) + time.perf_counter() - t0
            self.report.phases_s[name] = round(spent, 3)

    # -- what the parts read ----------------------------------------------------------------------
    @property
    def candidate(self) -> Worker:
        if self.candidate_worker is None:
            raise RuntimeError("the session has no candidate worker")
        return self.candidate_worker

    @candidate.setter
    def candidate(self, worker: Worker) -> None:
        self.candidate_worker = worker

    def device_buffers(self) -> DeviceBuffers:
        if self.buffers is None:
            raise RuntimeError("the session's device buffers are not set up (start_torch)")
        return self.buffers

    def witness(self) -> Witness:
        if self.view is None:
            raise RuntimeError("the session has no view of the device (start_torch)")
        return self.view

    def require_gpu(self) -> device.GpuInfo:
        if self.gpu is None:
            raise RunFailure(Status.INTERNAL_ERROR, "no CUDA device is available")
        return self.gpu

    def wire_params(self) -> list[dict]:
        return [{"name": n, "kind": "tensor" if ct.is_tensor else ct.scalar} for n, ct in self.problem.params]

    # -- workers ----------------------------------------------------------------------------------
    def spawn(self, role: str, torch: bool = False, label: str = "", triton: bool | None = None) -> Worker:
        """A worker for `role` (a warm session's spare for the candidate of `judge watch`); a
        candidate's is the Triton worker when `triton` (default: the run's language's, `self.triton`)."""
        warm = self.opts.warm.worker() if self.opts.warm and role == CANDIDATE else None
        triton = self.triton if triton is None else triton
        try:
            w: Worker = warm or WorkerProcess(self.opts.device, role, torch, label,
                                              triton=triton and role == CANDIDATE)
        except NativeBuildError as e:  # the judge's own code did not build
            raise RunFailure(Status.INTERNAL_ERROR, f"starting the worker: {e}") from None
        self.workers.append(w)
        return w

    def ask(self, worker: Worker, op: Op, timeout_s: float, what: str, **args) -> dict:
        """A request whose failure is blamed by the worker's role (judge/engine/roles.py)."""
        try:
            return worker.request(op, timeout_s, what, **args)
        except WorkerFailure as f:
            raise blame(worker, f, self.candidate_worker) from None

    def ready(self, worker: Worker, what: str) -> None:
        """A worker that does not start is the judge's problem, whoever's code it was to run; but a
        baseline's killed or stopped beside a candidate's worker is an `Interference`."""
        try:
            worker.wait_ready()
        except WorkerFailure as f:
            failure = RunFailure(Status.INTERNAL_ERROR, f"{what}: {f.message}\n{f.log_tail}")
            how = from_outside(f) if self.candidate_worker is not None and worker.role != CANDIDATE else None
            raise (Interference(worker, how, failure) if how else failure) from None

    def restart(self, e: Interference) -> Worker:
        """A fresh worker (started, not loaded) for the baseline whose worker `e` ended from outside,
        in its place in `baselines`; once per baseline and run: the second time, the candidate's
        RUNTIME_ERROR (roles.py's `interfered`)."""
        old = e.worker
        if old.role in self.restarted:
            raise interfered(e) from None
        self.restarted.add(old.role)
        old.close()
        new = self.spawn(old.role, torch=True, label=old.label)
        self.baselines = [(b, new if w is old else w) for b, w in self.baselines]
        return new

    def load(self, worker: Worker, load: dict, what: str = "loading the library", timeout_s: float = 30) -> None:
        """Start-up, then `init` with the problem's parameters and the library (or baseline) to load.
        A candidate's worker confines itself at `init` (judge/worker/client.py), in a pid namespace
        of its own where the OS gave it one at start-up and in a cgroup of its own where the judge
        could make one; the report says which. A Triton candidate's worker confines itself after
        its warm-up, which the caller runs next (judge/engine/warmup.py)."""
        self.ready(worker, "starting the worker" if worker.role == CANDIDATE else f"starting {worker.role}")
        self.ask(worker, "init", timeout_s, what, params=self.wire_params(), **load)
        if worker.role == CANDIDATE:
            self.library = load
            self.report.environment.confined = bool(getattr(worker, "confined", False))
            self.report.environment.pid_namespace = getattr(worker, "pid_namespace", False) is True
            self.report.environment.cgroup = getattr(worker, "group", None) is not None

    def load_baseline(self, b: Impl, worker: Worker) -> None:
        """Baseline `b` into its worker: the text of its file as `preload` read it."""
        path, func = self.problem.impl_path(b.impl)
        self.load(worker, {"baseline": {"file": str(path), "func": func, "source": self.baseline_sources[b.impl]}},
                  f"loading baseline {b.name}", timeout_s=300)

    def retire_candidate(self) -> None:
        """End the candidate's worker, its whole process tree with it (judge/worker/client.py's
        `kill`), so that nothing of the submission runs while a baseline is timed; the health gate
        before the next shape waits until the driver has freed its context (guards.gate)."""
        if self.candidate_worker is not None:
            self.candidate_worker.close()

    def fresh_candidate(self) -> Worker:
        """The candidate's worker for the timed calls: one that has run nothing of the submission
        yet (the spare started with the others, or a new one), loaded with the library now."""
        if self.library is None:
            raise RuntimeError("no library to load: the candidate was never loaded")
        worker, self.spare = self.spare or self.spawn(CANDIDATE), None
        self.candidate = worker
        self.load(worker, self.library)
        return worker

    # -- the parent's CUDA ------------------------------------------------------------------------
    def start_torch(self) -> None:
        """torch, the parent's CUDA context, the runtime and the device buffers on the run's GPU."""
        import torch

        from judge.gpu.cudart import Runtime
        from judge.gpu.devmem import DeviceBuffers
        from judge.gpu.witness import witness

        try:
            index = device.cuda_index(self.opts.device)
        except device.NotVisible as e:
            raise RunFailure(Status.INTERNAL_ERROR, str(e)) from None
        torch.cuda.set_device(index)
        first_allocation(torch)
        self.torch = torch
        self.rt = Runtime(index)
        self.buffers = DeviceBuffers(self.rt)
        self.view = witness(torch)
        env = self.report.environment
        env.torch = torch.__version__
        env.cuda_runtime = torch.version.cuda

    def close(self) -> None:
        if self.buffers is not None:
            self.buffers.free()
        for w in self.workers:
            w.close()


def first_allocation(torch: Any, wait_s: float = 60.0) -> None:
    """Bring the parent's CUDA context up. A worker killed a moment ago (a memory hog, a crash)
    may still hold the device's memory while the driver tears its context down, after its pid has
    left NVML's list: wait for the memory, then call it the judge's problem, never the next
    submission's."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            torch.zeros(1, device="cuda")
            return
        except RuntimeError as e:  # torch.OutOfMemoryError and AcceleratorError are RuntimeErrors
            if "out of memory" not in str(e) or time.monotonic() > deadline:
                if "out of memory" in str(e):
                    raise RunFailure(Status.INTERNAL_ERROR, f"the GPU's memory stayed full for {wait_s:.0f} s "
                                     "(another process holds it): not your code") from None
                raise
            torch.cuda.empty_cache()
            time.sleep(0.25)
