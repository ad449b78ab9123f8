"""`judge compare`: two solutions of one problem, checked, then timed against each other in one run.

Both are built in one ninja run and checked on the test workloads by the pipeline itself
(`evaluate`, test mode); a wrong one ends the comparison with its verdict. Then, on every
benchmark shape, both workers map the same input slots and are timed interleaved: after each
one's warm-up, batches alternate A B, B A, A B, ... (the same L2 flush, poisoning, rest, per-call
deadline and statistic, one sample per batch, as `judge submit`: judge/engine/timing.py's `Timer`),
until each target's stopping rule says stop. Each
target's outputs are then re-checked (one more batch over every slot, two slots checked).
The verdict per shape is `score.compare_verdict` (docs/timing.md): FASTER / SLOWER / SAME /
AMBIGUOUS, of B against A.

The timing runs on a `Session` of its own (judge/engine/session.py) with the engine's parts: the
workers are candidates labelled "A" and "B", so that `roles.blame` names the side that failed.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from judge.build import nvcc as build
from judge.build import toolchain
from judge.build.toolchain import Prepared
from judge.contract.events import CaseDone, Event, Finished, Stage, Timing
from judge.contract.report import Environment, Report, Stats, TestCase
from judge.contract.verdict import Status
from judge.engine import benchmarks, buffers
from judge.engine.buffers import Slots
from judge.engine.outcome import RunFailure
from judge.engine.roles import CANDIDATE, Worker, blame, impossible_time
from judge.engine.run import evaluate
from judge.engine.score import NOISE_FLOOR, CompareVerdict, compare_verdict, ratio_interval
from judge.engine.session import Options, Session
from judge.engine.timing import ImpossibleTime, Timer
from judge.gpu import device
from judge.problem.spec import Problem, Workload, workload_id
from judge.worker.client import WorkerFailure

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
    verdict: CompareVerdict  # B against A


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
    report = Report(problem=problem.name, solution=str(sources[0]), source_sha256="", mode="submit",
                    status=Status.INTERNAL_ERROR)
    yield from time_pair(Session(problem, opts, report), built, result)


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
    until its stopping rule says stop; yields the timed calls so far after every round."""
    rounds = 0
    while any(t.reason is None for t in timers):
        for t in timers if rounds % 2 == 0 else timers[::-1]:
            if t.reason is None:
                step(t)
        rounds += 1
        yield sum(len(t.calls) for t in timers)


def time_pair(s: Session, built: list[Prepared], result: Comparison,
              timed: Interleaved | None = None) -> Iterator[Event]:
    """Both libraries loaded, then timed interleaved on every shape, into `result` (its shapes,
    status, message, the failing side and the evidence of a wrong timed output). Closes `s`."""
    timed = timed or Interleaved()
    try:
        pair = start_pair(s, built)
        for j, w in enumerate(s.problem.spec.benchmarks):
            shape = yield from timed.shape(s, j, w, pair)
            result.shapes.append(shape)
        result.status = Status.ACCEPTED
    except RunFailure as f:
        result.status, result.message, result.failed = f.status, f.message, f.culprit or result.failed
        result.evidence = list(s.report.tests)
    finally:
        s.close()


def start_pair(s: Session, built: list[Prepared]) -> list[Worker]:
    """A candidate worker per side, labelled A and B, each with its library loaded."""
    s.gpu = next((g for g in device.gpus() if g.index == s.opts.device), None)
    if s.gpu is None:
        raise RunFailure(Status.INTERNAL_ERROR, "the GPU went away between the tests and the timing")
    pair = [s.spawn(CANDIDATE, label=label) for label in LABELS]
    s.start_torch()
    for w, r in zip(pair, built):
        s.load(w, r.load)
    return pair


class Interleaved:
    """compare's timed phase on one shape: shared slots, both sides timed in turn, then re-checked.
    `slots` and `recheck` are the engine's parts (judge/engine/buffers.py, benchmarks.py)."""

    def shape(self, s: Session, j: int, w: Workload, pair: list[Worker]) -> Generator[Event, None, ShapeComparison]:
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(s.problem.spec.benchmarks)}: {wid}: preparing inputs")
        slots = self.slots(s, j, w)
        for wk in pair:
            buffers.map_slots(s, wk, slots)
        timers = [Timer(wk, s.opts.policy, s.problem.spec.timeout_s) for wk in pair]
        for t in timers:
            guarded(t, wid, t.warm_up)
        yield Timing(wid, "A and B, interleaved", 0)
        for n in interleave(timers, lambda t: guarded(t, wid, t.step)):
            yield Timing(wid, "A and B, interleaved", n)
        stats = [t.stats() for t in timers]
        for t in timers:
            self.check_outputs(s, j, w, slots, t)
        buffers.unmap(s, pair)
        ratio, low, high = ratio_interval(stats[1], stats[0])
        return ShapeComparison(workload=wid, a=stats[0], b=stats[1], ratio=ratio, ratio_low=low,
                               ratio_high=high, verdict=compare_verdict(stats[1], stats[0]))

    def check_outputs(self, s: Session, j: int, w: Workload, slots: Slots, timer: Timer) -> None:
        """Every slot gets this target's output (one more batch, split as the deadline needs: `fit`),
        two are checked."""
        left = len(slots.bufs)
        while left:
            k = timer.fit(left)
            guarded(timer, workload_id(w), partial(timer.batch, k))
            left -= k
        try:
            for k in benchmarks.recheck_sample(len(slots.bufs)):
                self.recheck(s, j, w, slots, k)
        except RunFailure as f:
            raise blame(timer.worker, f) from None

    def slots(self, s: Session, j: int, w: Workload) -> Slots:
        return buffers.make_slots(s, j, w)

    def recheck(self, s: Session, j: int, w: Workload, slots: Slots, k: int) -> None:
        benchmarks.recheck(s, w, slots, k)


def guarded(timer: Timer, wid: str, fn: Callable[[], object]) -> None:
    """A step of `timer`; a failure blamed on its worker's side."""
    try:
        fn()
    except WorkerFailure as f:
        raise blame(timer.worker, f) from None
    except ImpossibleTime as e:
        raise impossible_time(timer.worker, wid, e) from None
