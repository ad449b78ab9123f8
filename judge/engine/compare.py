"""`judge compare`: two solutions of one problem, checked, then timed against each other in one run.

Both are built in one ninja run and checked on the test workloads by the pipeline itself
(`evaluate`, test mode); a wrong one ends the comparison with its verdict. Then, on every
benchmark shape, both workers map the same input slots and are timed interleaved: after each
one's warm-up, batches alternate A B, B A, A B, ... (the same L2 flush, poisoning, rest, per-call
deadline and statistic, one sample per batch, as `judge submit`: judge/engine/timing.py's `Timer`),
until each target's stopping rule says stop. Each side's batches are guarded as the candidate's
are in `judge submit` (judge/engine/benchmarks.py's `batch_guards`: fresh inputs drawn into the
slots its batch will use just before it, completeness counts, GPU stamps, fingerprints after the
end event, guard regions, input checksums, a stashed call after every batch), each with its own
check records and stash; once both are timed, each side's stashed calls are re-checked and its
median held against the roofline floor. A failure is blamed on its side (`failed`: "A" or "B").
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
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from judge.build import nvcc as build
from judge.build import toolchain
from judge.build.toolchain import Prepared
from judge.contract.events import CaseDone, Event, Finished, Stage, Timing
from judge.contract.report import Environment, Report, Stats, TestCase
from judge.contract.verdict import Status
from judge.engine import buffers, guards
from judge.engine.batch_checks import BatchChecks
from judge.engine.benchmarks import TimedPhase, inputs_modified, records_tag
from judge.engine.buffers import Slots
from judge.engine.fresh import FreshBatches, InputsModified
from judge.engine.outcome import RunFailure
from judge.engine.roles import CANDIDATE, Worker, blame, impossible_time
from judge.engine.run import evaluate
from judge.engine.score import NOISE_FLOOR, CompareVerdict, compare_verdict, ratio_interval
from judge.engine.session import Options, Session
from judge.engine.timing import ImpossibleTime, Timer
from judge.engine.warmup import warm_up
from judge.gpu import device
from judge.problem.spec import Problem, Workload, workload_id
from judge.worker.client import WorkerFailure
from judge.worker.protocol import MAX_CALLS_PER_BATCH

LABELS = ("A", "B")
T = TypeVar("T")


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
    a_rechecked: int = 0  # timed calls of each side re-checked against the reference (its stash)
    b_rechecked: int = 0


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
    """A candidate worker per side, labelled A and B, each with its library loaded. The device's
    peaks (the roofline floor) are read before either worker exists, as `judge submit` does
    (judge/engine/run.py's `start_workers` and `preload`), measured only when not cached."""
    s.gpu = next((g for g in device.gpus() if g.index == s.opts.device), None)
    if s.gpu is None:
        raise RunFailure(Status.INTERNAL_ERROR, "the GPU went away between the tests and the timing")
    if s.peaks is None:
        s.peaks = device.cached_peaks(s.gpu)
    pair = [s.spawn(CANDIDATE, label=label, triton=toolchain.for_name(r.language).worker == "triton")
            for label, r in zip(LABELS, built)]
    s.start_torch()
    if s.peaks is None:
        s.peaks = device.peaks(s.gpu)
    for w, r in zip(pair, built):
        s.load(w, r.load)
        warm_up(s, w, [(workload_id(x), x) for x in s.problem.spec.benchmarks], "timed")
    return pair


@dataclass
class Side:
    """One side's timing on a shape: its worker, the guards of its batches (`judge submit`'s, with
    its own check records and stash) and its timer."""

    worker: Worker
    fresh: FreshBatches
    timer: Timer


class Interleaved:
    """compare's timed phase on one shape: shared slots; each side guarded batch by batch as the
    candidate of `judge submit` is (`phase`'s `batch_guards`, judge/engine/benchmarks.py), both timed
    in turn; then each side's stash re-checked and its median held against the roofline floor
    (`phase.floor`). Every failure is blamed on the side whose batch or check it was."""

    def __init__(self, phase: TimedPhase | None = None):
        self.phase = phase or TimedPhase()

    def shape(self, s: Session, j: int, w: Workload, pair: list[Worker]) -> Generator[Event, None, ShapeComparison]:
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(s.problem.spec.benchmarks)}: {wid}: preparing inputs")
        guards.gate(s, f"benchmark {wid}")
        slots = buffers.make_slots(s, j, w, stashes=len(pair))
        sides = [self.side(s, j, w, slots, wk) for wk in pair]
        for x in sides:
            guarded(x.worker, wid, x.timer.warm_up)
            x.fresh.after_warmup()
        yield Timing(wid, "A and B, interleaved", 0)
        for n in interleave([x.timer for x in sides], lambda t: guarded(t.worker, wid, t.step)):
            yield Timing(wid, "A and B, interleaved", n)
        stats = [x.timer.stats() for x in sides]
        checked = [guarded(x.worker, wid, x.fresh.finish) for x in sides]
        if s.peaks is None:
            raise RunFailure(Status.INTERNAL_ERROR, "the device's peaks were not read before the candidates started")
        peaks = s.peaks
        for x, st in zip(sides, stats):
            guarded(x.worker, wid, partial(self.phase.floor, s, w, st, peaks))
        buffers.unmap(s, pair)
        ratio, low, high = ratio_interval(stats[1], stats[0])
        return ShapeComparison(workload=wid, a=stats[0], b=stats[1], ratio=ratio, ratio_low=low,
                               ratio_high=high, verdict=compare_verdict(stats[1], stats[0]),
                               a_rechecked=checked[0], b_rechecked=checked[1])

    def side(self, s: Session, j: int, w: Workload, slots: Slots, worker: Worker) -> Side:
        """`worker` mapped onto the shared slots with check records of its own, and its guarded timer."""
        counts = guards.counter(s, records_tag(j, worker), MAX_CALLS_PER_BATCH)
        buffers.map_slots(s, worker, slots, counts)
        checks = BatchChecks(s, worker, w, slots, counts)
        fresh = self.phase.batch_guards(s, j, w, slots, counts, checks)
        timer = Timer(worker, s.opts.policy, s.problem.spec.timeout_s, before_batch=fresh.before,
                      after_batch=fresh.after, max_k=len(slots.bufs))
        return Side(worker, fresh, timer)


def guarded(worker: Worker, wid: str, fn: Callable[[], T]) -> T:
    """A step of `worker`'s side (a batch and the parent's checks after it, a re-check, the floor);
    a failure blamed on that side. A RunFailure that names its side already is passed on as it is."""
    try:
        return fn()
    except WorkerFailure as f:
        raise blame(worker, f) from None
    except ImpossibleTime as e:
        raise impossible_time(worker, wid, e) from None
    except InputsModified as e:
        raise blame(worker, inputs_modified(e, wid)) from None
    except RunFailure as f:
        if f.culprit is not None:
            raise
        raise blame(worker, f) from None
