"""spec → build → check → time → verdict. `evaluate()` yields events and ends with `Finished(report)`.

The parent (this process) owns the inputs, the reference outputs, the secret and the verdict.
Submitted code runs only in a worker process; baselines run in workers of their own. The build
and the workers' start-up overlap with torch's import, so a cold `judge submit` costs little
more than torch's own start.

The benchmark phase is judge/engine/benchmarks.py, the parent's guards judge/engine/guards.py.
`judge compare` (judge/engine/compare.py) extends `_Run` to time two candidates on shared slots;
`judge watch` (judge/practice/watch.py) passes a `Warm` state: a started worker and cached references.

Runtime defences (docs/security.md): poisoned outputs counted on the worker's stream right after
each call (judge/gpu/integrity.py), input checksums, hidden test shapes (judge/problem/hidden.py), inputs
drawn anew for every timed call (judge/engine/fresh.py), timed outputs re-checked, times bounded by the wall clock and the
roofline, and a GPU health gate before each phase (judge/gpu/health.py).
"""
from __future__ import annotations

import hashlib
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator, Protocol

from judge import __version__
from judge.build import nvcc as build
from judge.gpu import device
from judge.gpu import integrity
from judge.build import toolchain
from judge.build.toolchain import Prepared
from judge.build import toolkit
from judge.engine.stats import Policy
from judge.contract.events import Built, CaseDone, Event, Finished, Stage
from judge.contract.report import Report, TestCase
from judge.engine.benchmarks import Benchmarks
from judge.engine.guards import Guards, _Verdict, _incomplete
from judge.worker.client import WorkerFailure, WorkerProcess
from judge.problem.spec import Problem, Workload, workload_id
from judge.contract.verdict import Status



class Warm(Protocol):
    """State a run may reuse from earlier runs (`judge watch`, judge/practice/watch.py)."""

    def worker(self) -> WorkerProcess | None:
        """A started candidate worker (fresh: it never ran anything), or None to spawn one."""

    def reference(self, key: str, compute: Callable[[], dict]) -> dict:
        """The reference outputs for `key` (inputs drawn under a fixed secret), computed at most once."""


@dataclass
class Options:
    mode: str = "submit"  # "submit": tests + timing; "test": tests only
    device: int = 0
    arch: str | None = None  # default: the local GPU's (sm_90a when there is none)
    policy: Policy = field(default_factory=Policy)
    baseline_policy: Policy = field(default_factory=lambda: Policy().for_baseline())
    prepared: Prepared | None = None  # from toolchain.prepare_many (verify, compare, leaderboards)
    secret: int | None = None  # default: fresh per run
    warm: Warm | None = None  # a warm session's worker and cached references (judge watch)
    hidden: int = 2  # hidden test cases drawn per run (judge/problem/hidden.py)
    sass: bool = True  # count each kernel's SASS opcodes after the build (cuobjdump: ~0.6 s)


def evaluate(problem: Problem, source: Path, opts: Options | None = None) -> Iterator[Event]:
    opts = opts or Options()
    source = Path(source)
    t0 = time.perf_counter()
    report = Report(problem=problem.name, solution=str(source), mode=opts.mode,
                    source_sha256=hashlib.sha256(source.read_bytes()).hexdigest(),
                    status=Status.INTERNAL_ERROR,
                    started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    run = _Run(problem, source, opts, report)
    try:
        yield from run.go()
        report.status = Status.ACCEPTED
    except _Verdict as v:
        report.status, report.message = v.status, v.message
    finally:
        run.close()
    report.wall_s = round(time.perf_counter() - t0, 3)
    yield Finished(report)


class _Run(Guards, Benchmarks):
    def __init__(self, problem: Problem, source: Path, opts: Options, report: Report):
        self.problem, self.source, self.opts, self.report = problem, source, opts, report
        self.secret = opts.secret if opts.secret is not None else secrets.randbits(63)
        self.workers: list[WorkerProcess] = []
        self.buffers = None
        self.called = False  # has the candidate run solve() yet (who is to blame for an OOM)

    def close(self) -> None:
        if self.buffers is not None:
            self.buffers.free()
        for w in self.workers:
            w.close()

    # -- stages ---------------------------------------------------------------------------------
    def go(self) -> Iterator[Event]:
        gpus = device.gpus()
        gpu = next((g for g in gpus if g.index == self.opts.device), None)
        arch = self.opts.arch or (build.arch_for(gpu.major, gpu.minor) if gpu else "sm_90a")
        env = self.report.environment
        env.judge, env.nvcc, env.arch = __version__, toolkit.nvcc_version(), arch
        env.flags = " ".join(build.FLAGS + tuple(build.gencode(arch)))
        if gpu:
            env.gpu, env.gpu_uuid, env.driver = gpu.name, gpu.uuid, gpu.driver
        try:
            lang = toolchain.for_source(self.source)
            refused = lang.check_source(self.problem, self.source)
        except (toolchain.UnknownLanguage, OSError) as e:
            raise _Verdict(Status.INTERNAL_ERROR, str(e)) from None
        if refused:
            raise _Verdict(Status.REJECTED, refused)
        yield Stage(f"building {self.source.name} for {arch}")
        with ThreadPoolExecutor(1) as pool:
            pending = None if self.opts.prepared else pool.submit(  # + SASS summary (not for verify's builds)
                toolchain.prepare, self.problem, self.source, arch, sass=self.opts.sass)
            if gpu:  # start the workers and torch while nvcc runs
                self.gpu = gpu
                self._gate("starting")  # a killed worker of an earlier run may still hold memory
                self.candidate = self._spawn("candidate")
                self.baselines = [(b, self._spawn(f"baseline {b.name}", torch=True)) for b in self.problem.baselines
                                  ] if self.opts.mode == "submit" else []
                self._start_torch()
            prepared = self.opts.prepared or pending.result()  # type: ignore[union-attr]
        if prepared.build is not None:
            self.report.build = prepared.build
            yield Built(self.report.build)
        if prepared.status is not None:
            raise _Verdict(prepared.status, prepared.message)
        if not gpu:
            raise _Verdict(Status.INTERNAL_ERROR, "no CUDA device is available: the build succeeded, "
                           "but judging needs an NVIDIA GPU (run `judge doctor`)")
        self.gpu = gpu
        yield Stage("starting the worker")
        self._ready(self.candidate, "starting the worker")
        self._ask(self.candidate, "init", 30, "loading the library", params=self._wire_params(),
                  **prepared.load)
        yield from self._tests()
        if self.opts.mode == "submit" and self.problem.spec.benchmarks:
            yield from self._benchmarks()

    def _spawn(self, role: str, torch: bool = False) -> WorkerProcess:
        warm = self.opts.warm.worker() if self.opts.warm and role == "candidate" else None
        w = warm or WorkerProcess(self.opts.device, role, torch)
        self.workers.append(w)
        return w

    def _start_torch(self) -> None:
        import torch

        from judge.gpu.cudart import Runtime
        from judge.gpu.devmem import DeviceBuffers

        try:
            index = device.cuda_index(self.opts.device)
        except device.NotVisible as e:
            raise _Verdict(Status.INTERNAL_ERROR, str(e)) from None
        torch.cuda.set_device(index)
        _first_allocation(torch)
        self.torch = torch
        self.rt = Runtime(index)
        self.buffers = DeviceBuffers(self.rt)
        env = self.report.environment
        env.torch = torch.__version__
        env.cuda_runtime = torch.version.cuda

    def _wire_params(self) -> list[dict]:
        return [{"name": n, "kind": "tensor" if ct.is_tensor else ct.scalar} for n, ct in self.problem.params]

    def _ask(self, worker: WorkerProcess, op: str, timeout_s: float, what: str, **args) -> dict:
        """A request whose failure is the submitter's (candidate) or the judge's (baseline)."""
        try:
            return worker.request(op, timeout_s, what, **args)
        except WorkerFailure as f:
            raise self._failure(worker, f) from None

    def _ready(self, worker: WorkerProcess, what: str) -> None:
        try:
            worker.wait_ready()
        except WorkerFailure as f:
            raise _Verdict(Status.INTERNAL_ERROR, f"{what}: {f.message}\n{f.log_tail}") from None

    def _failure(self, worker: WorkerProcess, f: WorkerFailure) -> _Verdict:
        detail = f.message + (f"\nworker output (tail):\n{f.log_tail.strip()}" if f.log_tail.strip() else "")
        if worker.role != "candidate":
            return _Verdict(Status.INTERNAL_ERROR, f"baseline {worker.role}: {detail}")
        if f.kind == "timeout":
            return _Verdict(Status.TIMEOUT, detail)
        if f.kind == "protocol":
            return _Verdict(Status.REJECTED, f"result channel: {detail}")
        return _Verdict(Status.RUNTIME_ERROR, detail)

    # -- correctness ----------------------------------------------------------------------------
    def _alloc(self, tag: str, workload: Workload) -> dict:
        bufs = {}
        with self._memory(f"the buffers of {workload_id(workload)}"):
            for p in self.problem.tensors:
                dtype = p.ctype.element.dtype  # type: ignore[union-attr]
                bufs[p.name] = self.buffers.alloc(f"{tag}:{p.name}", dtype,  # type: ignore[union-attr]
                                                  self.problem.shape_of(p.name, workload))
        return bufs

    def _args(self, bufs: dict, workload: Workload) -> list[dict]:
        out = []
        for name, ct in self.problem.params:
            if ct.is_tensor:
                out.append({"buf": bufs[name].id})
            elif ct.scalar == "int":
                out.append({"int": int(workload[name])})
            else:
                out.append({"float": float(workload[name])})
        return out

    def _inputs(self, tag: str, workload: Workload, bufs: dict):
        from judge.problem import workloads

        tensors = {n: b.tensor for n, b in bufs.items()}
        with self._memory(f"the inputs of {workload_id(workload)}"):
            workloads.fill_inputs(self.problem, workload, tensors, self.secret, tag)
        try:
            with self._memory(f"the reference outputs of {workload_id(workload)}"):
                expected = self._reference(tag, workload, tensors)
        except _Verdict:
            raise
        except Exception as e:  # noqa: BLE001 — the problem's reference is the judge's code
            raise _Verdict(Status.INTERNAL_ERROR, f"the reference failed on {workload_id(workload)}: "
                           f"{type(e).__name__}: {e}") from None
        return expected

    def _reference(self, tag: str, workload: Workload, tensors: dict) -> dict:
        """The reference outputs for the inputs drawn under `tag` (a warm session caches them)."""
        from judge.problem import workloads

        def compute() -> dict:
            return workloads.reference_outputs(self.problem, workload, tensors)

        return self.opts.warm.reference(f"{tag}:{workload_id(workload)}", compute) if self.opts.warm else compute()

    def _check(self, workload: Workload, bufs: dict, expected: dict) -> TestCase:
        from judge.problem.checks import run_check

        with self._memory(f"the check of {workload_id(workload)}"):
            checks = [run_check(self.problem.spec.check, name, bufs[name].tensor, expected[name])
                      for name in expected]
        return TestCase(workload=workload_id(workload), passed=all(c.passed for c in checks), checks=checks)

    def _tests(self) -> Iterator[Event]:
        from judge.problem.hidden import draw

        cases = [(w, workload_id(w), f"test{i}", False) for i, w in enumerate(self.problem.spec.tests)]
        cases += [(w, f"hidden {k + 1}", f"hidden{k + 1}", True)  # shapes shown only after the verdict
                  for k, w in enumerate(draw(self.problem, self.secret, self.opts.hidden))]
        self._gate("the tests")
        for i, (w, label, tag, hidden) in enumerate(cases):
            yield Stage(f"test {i + 1}/{len(cases)}: {label}")
            case, verdict = self._test_one(w, label, tag, hidden)
            self.report.tests.append(case)
            yield CaseDone(i, len(cases), case)
            if verdict:
                raise verdict

    def _test_one(self, w: Workload, label: str, tag: str, hidden: bool) -> tuple[TestCase, _Verdict | None]:
        """One test call: poisoned outputs, input checksums, the completeness count, the check."""
        from judge.problem.workloads import POISON_BYTES, poison

        wid = workload_id(w)
        where = f"{label} ({wid})" if hidden else wid
        bufs = self._alloc(tag, w)
        expected = self._inputs(tag, w, bufs)
        counter = self._counter(tag, 1)
        rng = secrets.SystemRandom()
        outs = []
        for p in self.problem.outputs:
            b = bufs[p.name]
            word = integrity.poison_word(b.dtype, rng)
            if word is None:
                poison(b.tensor, rng.choice(POISON_BYTES))
            else:
                integrity.fill_tensor(b.tensor, b.dtype, word)
            outs.append({"buf": b.id, "nbytes": b.nbytes, "dtype": b.dtype, "word": word})
        inputs = self._slot_inputs(bufs)
        with self._memory(f"the input checksums of {wid}"):
            sums = integrity.checksums(inputs)
        self.torch.cuda.synchronize()
        wire = [b.wire() for b in bufs.values()] + [counter.wire()]
        self._ask(self.candidate, "map", 60, "mapping buffers", buffers=wire)
        try:
            self.called = True
            self._ask(self.candidate, "call", self.problem.spec.timeout_s + 1, "solve()",
                      args=self._args(bufs, w), outputs=outs, counter=counter.id)
        except _Verdict as v:
            return (TestCase(workload=label, passed=False, error=v.message, hidden=hidden),
                    _Verdict(v.status, f"on {where}: {v.message}"))
        case = self._check(w, bufs, expected)
        case.workload, case.hidden = label, hidden
        verdict = None
        if not case.passed:
            verdict = _Verdict(Status.WRONG_ANSWER, f"wrong output on {where}")
        elif changed := self._changed(inputs, sums, wid):
            verdict = _Verdict(Status.REJECTED, f"solve() modified its input {', '.join(changed)} on {where}: "
                               "inputs are read-only")
        elif (left := int(counter.tensor[0])) > 0:
            verdict = _Verdict(Status.REJECTED, _incomplete(left, where))
        if verdict and case.passed:
            case.passed, case.error = False, verdict.message
        self._ask(self.candidate, "unmap", 60, "unmapping buffers")
        del expected
        self.buffers.free()  # type: ignore[union-attr]
        return case, verdict

def _first_allocation(torch, wait_s: float = 60.0) -> None:
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
                    raise _Verdict(Status.INTERNAL_ERROR, f"the GPU's memory stayed full for {wait_s:.0f} s "
                                   "(another process holds it): not your code") from None
                raise
            torch.cuda.empty_cache()
            time.sleep(0.25)

