"""`judge compare`: two solutions of one problem, checked, then timed against each other in one run.

Both are built in one ninja run and checked on the test workloads by the pipeline itself
(`evaluate`, test mode); a wrong one ends the comparison with its verdict. Then, on every
benchmark shape, both workers map the same input slots and are timed interleaved: after each
one's warm-up, batches alternate A B, B A, A B, ... (the same L2 flush, poisoning and rest as
`judge submit`, judge/engine/timing.py's `Timer`), until each target's stopping rule says stop. Each
target's outputs are then re-checked (one more batch over every slot, two slots checked).
The verdict per shape is `score.compare_verdict` (docs/timing.md): FASTER / SLOWER / SAME /
AMBIGUOUS, of B against A.
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterator

from pydantic import BaseModel, ConfigDict

from judge.build import nvcc as build
from judge.gpu import device
from judge.contract.events import CaseDone, Event, Finished, Stage, Timing
from judge.engine.benchmarks import RECHECK_SLOTS
from judge.engine.run import Options, _Run, _Verdict, evaluate
from judge.build import toolchain
from judge.build.toolchain import Prepared
from judge.contract.report import Environment, Report, Stats, TestCase
from judge.worker.client import WorkerFailure, WorkerProcess
from judge.engine.score import NOISE_FLOOR, Verdict, compare_verdict, ratio_interval
from judge.problem.spec import Problem, Workload, workload_id
from judge.engine.timing import ImpossibleTime, Timer
from judge.contract.verdict import Status

LABELS = ("A", "B")


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")


class ShapeComparison(_M):
    workload: str
    a: Stats
    b: Stats
    ratio: float  # B median / A median: below 1 means B is faster
    ratio_low: float  # the ratio's interval from the two CIs (B low / A high, B high / A low)
    ratio_high: float
    verdict: Verdict  # B against A


class Comparison(_M):
    problem: str
    a: str
    b: str
    status: Status  # ACCEPTED when both passed and were timed; else the first failure's
    message: str = ""
    failed: str | None = None  # "A" or "B": whose verdict `status` is
    a_test: Report | None = None  # each one's correctness run (test mode)
    b_test: Report | None = None
    shapes: list[ShapeComparison] = []
    evidence: list[TestCase] = []  # a wrong re-checked timed output
    floor: float = NOISE_FLOOR
    environment: Environment = Environment()
    wall_s: float = 0.0

    @property
    def exit_code(self) -> int:
        return self.status.exit_code


@dataclass
class Compared:
    """The last event of `compare()`."""

    result: Comparison


def compare(problem: Problem, a: Path, b: Path, opts: Options | None = None) -> Iterator[Event | Compared]:
    """Yields progress events (Stage, Timing) and ends with `Compared(result)`."""
    opts = opts or Options()
    t0 = time.perf_counter()
    sources = (Path(a), Path(b))
    result = Comparison(problem=problem.name, a=str(a), b=str(b), status=Status.INTERNAL_ERROR)
    yield from _compare(problem, sources, opts, result)
    result.wall_s = round(time.perf_counter() - t0, 3)
    yield Compared(result)


def _compare(problem: Problem, sources: tuple[Path, Path], opts: Options, result: Comparison) -> Iterator[Event]:
    gpu = next((g for g in device.gpus() if g.index == opts.device), None)
    arch = opts.arch or (build.arch_for(gpu.major, gpu.minor) if gpu else "sm_90a")
    yield Stage(f"building {sources[0].name} and {sources[1].name} for {arch}")
    built = toolchain.prepare_many([(problem, s) for s in sources], arch)
    opts = replace(opts, arch=arch, secret=opts.secret if opts.secret is not None else secrets.randbits(63),
                   warm=None)
    for label, src, r in zip(LABELS, sources, built):
        report = yield from _check(problem, label, src, replace(opts, mode="test", prepared=r))
        setattr(result, f"{label.lower()}_test", report)
        if report.status is not Status.ACCEPTED:
            result.status, result.failed = report.status, label
            result.message = f"{label} ({src}): {report.status.value}: {report.message}"
            return
    result.environment = result.a_test.environment.model_copy()  # type: ignore[union-attr]
    if not problem.spec.benchmarks:
        result.status = Status.ACCEPTED
        result.message = "the problem has no benchmark shapes: nothing to time"
        return
    run = _Interleaved(problem, sources, built, opts, result)
    try:
        yield from run.go()
        result.status = Status.ACCEPTED
    except _Verdict as v:
        result.status, result.message = v.status, v.message
        result.evidence = list(run.report.tests)
    finally:
        run.close()


def _check(problem: Problem, label: str, source: Path, opts: Options):
    """One solution's correctness run (the pipeline in test mode); its events relabelled."""
    report = None
    for ev in evaluate(problem, source, opts):
        if isinstance(ev, Finished):
            report = ev.report
        elif isinstance(ev, Stage):
            yield Stage(f"{label}: {ev.text}")
        elif isinstance(ev, CaseDone):
            yield Stage(f"{label}: test {ev.index + 1}/{ev.total} {'passed' if ev.case.passed else 'FAILED'}")
    assert report is not None
    return report


def interleave(timers: list[Timer], step: Callable[[Timer], object]) -> Iterator[int]:
    """Batches of the warmed-up timers in turn, A B, B A, A B, ... (no side always first), each
    until its stopping rule says stop; yields the samples taken so far after every round."""
    rounds = 0
    while any(t.reason is None for t in timers):
        for t in timers if rounds % 2 == 0 else timers[::-1]:
            if t.reason is None:
                step(t)
        rounds += 1
        yield sum(len(t.samples) for t in timers)


class _Interleaved(_Run):
    """The pipeline's run, with two candidates and no baselines: shared slots, interleaved timing."""

    def __init__(self, problem: Problem, sources: tuple[Path, Path], built: list[Prepared],
                 opts: Options, result: Comparison):
        report = Report(problem=problem.name, solution=str(sources[0]), source_sha256="", mode="submit",
                        status=Status.INTERNAL_ERROR)
        super().__init__(problem, sources[0], opts, report)
        self.built, self.result = built, result
        self.labels: dict[int, str] = {}

    def go(self) -> Iterator[Event]:
        self.gpu = next((g for g in device.gpus() if g.index == self.opts.device), None)
        if self.gpu is None:
            raise _Verdict(Status.INTERNAL_ERROR, "the GPU went away between the tests and the timing")
        yield Stage("starting the workers")
        pair = []
        for label in LABELS:
            w = self._spawn("candidate")
            self.labels[id(w)] = label
            pair.append(w)
        self._start_torch()
        for w, r in zip(pair, self.built):
            self._ready(w, "starting the worker")
            self._ask(w, "init", 30, "loading the library", params=self._wire_params(), **r.load)
        for j, w in enumerate(self.problem.spec.benchmarks):
            shape = yield from self._one(j, w, pair)
            self.result.shapes.append(shape)

    def _failure(self, worker: WorkerProcess, f: WorkerFailure) -> _Verdict:
        v = super()._failure(worker, f)
        return self._blame(worker, v)

    def _blame(self, worker: WorkerProcess, v: _Verdict) -> _Verdict:
        label = self.labels.get(id(worker), "?")
        self.result.failed = label
        v.message = f"{label}: {v.message}"
        return v

    def _one(self, j: int, w: Workload, pair: list[WorkerProcess]):
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(self.problem.spec.benchmarks)}: {wid}: preparing inputs")
        slots = self._slots(j, w)
        for wk in pair:
            self._map_slots(wk, slots)
        timers = [Timer(wk, self.opts.policy, self.problem.spec.timeout_s) for wk in pair]
        for t in timers:
            self._guard(t, wid, t.warm_up)
        yield Timing(wid, "A and B, interleaved", 0)
        for n in interleave(timers, lambda t: self._guard(t, wid, t.step)):
            yield Timing(wid, "A and B, interleaved", n)
        stats = [t.stats() for t in timers]
        for t in timers:  # every slot gets this target's output, two are checked
            self._guard(t, wid, lambda t=t: t.batch(len(slots.bufs)))
            try:
                for s in secrets.SystemRandom().sample(range(len(slots.bufs)), min(RECHECK_SLOTS, len(slots.bufs))):
                    self._recheck(j, w, slots, s)
            except _Verdict as v:
                raise self._blame(t.worker, v) from None
        for wk in pair:
            self._ask(wk, "unmap", 60, "unmapping buffers")
        self.buffers.free()  # type: ignore[union-attr]
        ratio, low, high = ratio_interval(stats[1], stats[0])
        return ShapeComparison(workload=wid, a=stats[0], b=stats[1], ratio=ratio, ratio_low=low,
                               ratio_high=high, verdict=compare_verdict(stats[1], stats[0]))

    def _guard(self, timer: Timer, wid: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except WorkerFailure as f:
            raise self._failure(timer.worker, f) from None
        except ImpossibleTime as e:
            raise self._blame(timer.worker, _Verdict(Status.REJECTED, f"impossible time on {wid}: {e}")) from None
