"""The timed phase of a submit run (docs/timing.md): `TimedPhase`.

Three passes over the benchmark shapes, so that nothing of the submission runs while a baseline
is timed (its worker could slow a baseline down from another thread, or leave work queued on the
GPU, and its own speedup would grow): the correctness phase's candidate worker is ended; every
shape's baselines are timed ("before"); a candidate worker that has run nothing yet (the spare
started with the others) loads the library and is timed on every shape; it is ended; every
shape's baselines are timed again ("after"). Each pass draws its own input slots in the parent's
memory and maps them into the workers it times.

The candidate's timed batches get fresh inputs before each (judge/engine/fresh.py), completeness
counts, GPU stamps, fingerprints, guard regions (judge/engine/batch_checks.py), input checksums
and a stashed call after (`batch_guards`), the stashed calls re-checked once its timing on the
shape is over (judge/engine/stash.py); then the roofline floor; telemetry around it. A baseline's
worker killed or stopped from outside is restarted once and its step done again (`on_baseline`).

Each step is a method of `TimedPhase`, so that a later method of timing or of guarding overrides
one step and leaves the rest, and `evaluate()`, alone (judge/engine/run.py's `default_phases`).
"""
from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from judge.contract.events import BenchDone, Event, Stage, Timing
from judge.contract.report import BaselineTiming, BenchResult, Stats
from judge.contract.verdict import Status
from judge.engine import buffers, guards
from judge.engine.batch_checks import BatchChecks
from judge.engine.buffers import Slots
from judge.engine.fresh import FreshBatches, InputsModified
from judge.engine.outcome import RunFailure
from judge.engine.roles import Interference, Worker, blame, impossible_time
from judge.engine.score import drift, drift_flagged, geomean
from judge.engine.session import Session
from judge.engine.stash import Stash
from judge.engine.stats import TimingPolicy
from judge.engine.timing import ImpossibleTime, time_target
from judge.engine.warmup import warm_up
from judge.gpu import device
from judge.gpu.seal import Key
from judge.problem.spec import Impl, Workload, workload_id
from judge.worker.client import WorkerFailure
from judge.worker.protocol import MAX_CALLS_PER_BATCH

if TYPE_CHECKING:
    from judge.contract.report import Telemetry
    from judge.gpu.devmem import Buffer

# A median below this fraction of the roofline floor is REJECTED. Not 1: the floor's peaks are
# the best a copy and cuBLAS were seen to do, and correct kernels come near or past them
# (cross_entropy's model answer reads at 102.5% of the copy bandwidth: read-only streams beat a
# copy). Half the floor is out of reach for any correct kernel, and skipped work is not.
FLOOR_MARGIN = 0.5
T = TypeVar("T")
# A step of a baseline on a shape: (its worker, whether that worker was just restarted) -> events.
Step = Callable[[Worker, bool], Generator[Event, None, T]]


@dataclass
class CandidateTiming:
    """The candidate on one shape: its Stats, how many timed outputs were re-checked, the stamps'
    largest excess, the roofline floor (ms), and the telemetry before and after."""

    stats: Stats
    checked: int
    excess: float | None
    floor_ms: float
    telemetry_before: Telemetry
    telemetry_after: Telemetry


class TimedPhase:
    """The candidate timed against the baselines on every benchmark shape, into the report."""

    def __call__(self, s: Session) -> Iterator[Event]:
        benches = s.problem.spec.benchmarks
        with s.phase("load baselines"):
            yield from self.load_baselines(s)
            peaks = self.peaks(s)
            s.retire_candidate()  # the correctness phase's worker: gone before any baseline is timed
        before, timed = [], []
        with s.phase("baselines before"):
            for j, w in enumerate(benches):
                before.append((yield from self.baselines_pass(s, j, w, "before")))
        yield Stage("loading the library into a fresh worker for the timed calls")
        with s.phase("load (timed)"):
            warm_up(s, s.fresh_candidate(), [(workload_id(w), w) for w in benches], "timed")
        with s.phase("candidate"):
            for j, w in enumerate(benches):
                timed.append((yield from self.candidate_pass(s, j, w, peaks)))
            s.retire_candidate()
        with s.phase("baselines after"):
            for j, w in enumerate(benches):
                after = yield from self.baselines_pass(s, j, w, "after")
                result = self.result(s, w, before[j], timed[j], after)
                s.report.benchmarks.append(result)
                yield BenchDone(j, len(benches), result)
        s.report.geomean_speedup = geomean(r.speedup for r in s.report.benchmarks)
        if s.problem.baselines:
            s.report.baseline_name = s.problem.baselines[0].name

    def peaks(self, s: Session) -> device.Peaks:
        """The device's peaks (read before the candidate's code ran), into the report."""
        if s.peaks is None:
            raise RunFailure(Status.INTERNAL_ERROR, "the device's peaks were not read before the candidate started")
        env, unit = s.report.environment, s.problem.spec.compute
        env.peak_copy_gbps, env.peak_tflops = round(s.peaks.copy_gbps, 1), round(s.peaks.tflops(unit), 1)
        env.peak_unit = unit
        return s.peaks

    def load_baselines(self, s: Session) -> Iterator[Event]:
        """Every baseline loaded: by its rehearsal (judge/engine/rehearsal.py), joined here, or now."""
        for b, _ in s.baselines:
            def load(wk: Worker, fresh: bool, b: Impl = b) -> Generator[Event, None, None]:
                if fresh:  # a restarted worker is loaded already
                    return
                if s.rehearsal is not None and s.rehearsal.started(b):
                    s.rehearsal.join(b)
                else:
                    self.load_baseline(s, b, wk)
                yield from ()

            yield from self.on_baseline(s, b, load)

    def load_baseline(self, s: Session, b: Impl, wk: Worker) -> None:
        s.load_baseline(b, wk)

    def on_baseline(self, s: Session, b: Impl, step: Step[T]) -> Generator[Event, None, T]:
        """`step` with baseline `b`'s worker. If that worker is killed or stopped from outside
        (an `Interference`), `Session.restart` gives a fresh one (the second time in the run it
        raises the candidate's RUNTIME_ERROR instead), loaded here, and `step` runs again on it."""
        fresh = False
        while True:
            wk = next(w for x, w in s.baselines if x is b)
            try:
                if fresh:
                    self.load_baseline(s, b, wk)
                return (yield from step(wk, fresh))
            except Interference as e:
                if e.worker is not wk:
                    raise
                s.restart(e)
                fresh = True

    def shape(self, s: Session, j: int, w: Workload, peaks: device.Peaks) -> Generator[Event, None, BenchResult]:
        """One shape's three passes in a row with the same candidate worker (the CPU tests' unit:
        `__call__` runs each pass over every shape, and ends the candidate's worker around the
        baselines' passes)."""
        before = yield from self.baselines_pass(s, j, w, "before")
        timed = yield from self.candidate_pass(s, j, w, peaks)
        after = yield from self.baselines_pass(s, j, w, "after")
        return self.result(s, w, before, timed, after)

    def baselines_pass(self, s: Session, j: int, w: Workload, when: str) -> Generator[Event, None, dict[str, Stats]]:
        """Every baseline timed on slots of the shape's own, drawn for this pass."""
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(s.problem.spec.benchmarks)}: {wid}: the baselines ({when})")
        guards.gate(s, f"benchmark {wid}")
        slots = buffers.make_slots(s, j, w)
        out = yield from self.time_baselines(s, wid, when, slots)
        yield from self.unmap(s)
        return out

    def candidate_pass(self, s: Session, j: int, w: Workload,
                       peaks: device.Peaks) -> Generator[Event, None, CandidateTiming]:
        """The candidate timed on the shape, its stashed calls re-checked, its median held against
        the roofline floor; telemetry before and after."""
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(s.problem.spec.benchmarks)}: {wid}: preparing inputs")
        guards.gate(s, f"benchmark {wid}")
        slots = buffers.make_slots(s, j, w)
        counts = guards.counter(s, records_tag(j, s.candidate), MAX_CALLS_PER_BATCH)
        buffers.map_slots(s, s.candidate, slots, counts)
        tel_before = device.telemetry(s.require_gpu().index)
        stats, checked, excess = yield from self.time_candidate(s, j, w, slots, counts)
        floor_ms = self.floor(s, w, stats, peaks)
        tel_after = device.telemetry(s.require_gpu().index)
        buffers.unmap(s, [s.candidate])
        return CandidateTiming(stats, checked, excess, floor_ms, tel_before, tel_after)

    def result(self, s: Session, w: Workload, before: dict[str, Stats], c: CandidateTiming,
               after: dict[str, Stats]) -> BenchResult:
        flops, nbytes, med = float(s.problem.flops(w)), float(s.problem.bytes(w)), c.stats.median_ms
        baselines = sandwich(s, before, after, c.stats)
        floor_ms = reported_floor(c.floor_ms, baselines)
        return BenchResult(workload=workload_id(w), stats=c.stats, flops=flops, bytes=nbytes,
                           tflops=flops / med / 1e9, gbps=nbytes / med / 1e6, floor_ms=floor_ms,
                           roofline_pct=100 * floor_ms / med, baselines=baselines,
                           rechecked_slots=c.checked, telemetry_before=c.telemetry_before,
                           telemetry_after=c.telemetry_after,
                           stamp_excess_ms=None if c.excess is None else round(c.excess, 6))

    def time_baselines(self, s: Session, wid: str, when: str, slots: Slots) -> Generator[Event, None, dict[str, Stats]]:
        """Each baseline timed on the pass's slots (mapped into its worker, or into a restarted
        one); no more calls per batch than the candidate gets."""
        out = {}
        for b, _ in s.baselines:
            def run(wk: Worker, fresh: bool, b: Impl = b) -> Generator[Event, None, Stats]:
                buffers.map_slots(s, wk, slots)
                return (yield from self.time(s, wk, wid, f"{b.name} ({when})", s.opts.baseline_policy,
                                             max_k=len(slots.bufs)))

            out[b.name] = yield from self.on_baseline(s, b, run)
        return out

    def unmap(self, s: Session) -> Iterator[Event]:
        """Every baseline's worker lets go of the pass's buffers (a restarted one holds none); the
        parent frees them."""
        for b, _ in s.baselines:
            def unmap(wk: Worker, fresh: bool) -> Generator[Event, None, None]:
                if not fresh:
                    s.ask(wk, "unmap", 60, "unmapping buffers")
                yield from ()

            yield from self.on_baseline(s, b, unmap)
        buffers.unmap(s, [])

    def time_candidate(self, s: Session, j: int, w: Workload, slots: Slots,
                       counts: Buffer) -> Generator[Event, None, tuple[Stats, int, float | None]]:
        """The candidate's timed batches, each on fresh inputs and checked after; its Stats, how
        many timed outputs were re-checked, and the stamps' largest excess (BatchChecks.excess_ms)."""
        wid = workload_id(w)
        checks = BatchChecks(s, s.candidate, w, slots, counts)
        fresh = self.batch_guards(s, j, w, slots, counts, checks)
        try:
            stats = yield from self.time(s, s.candidate, wid, "candidate", s.opts.policy, max_k=len(slots.bufs),
                                         before_batch=fresh.before, after_batch=fresh.after,
                                         after_warmup=fresh.after_warmup)
            return stats, fresh.finish(), checks.excess_ms
        except InputsModified as e:
            raise inputs_modified(e, wid) from None

    def batch_guards(self, s: Session, j: int, w: Workload, slots: Slots, counts: Buffer,
                     checks: BatchChecks | None = None) -> FreshBatches:
        """The parent's guards around each batch of one worker (the candidate's, or `checks.worker`:
        `judge compare` guards each side so) (judge/engine/fresh.py): the records (`counts`, that
        worker's own), stamps, fingerprints and guard regions of `checks`
        (judge/engine/batch_checks.py), and the stash its re-check keeps calls in
        (judge/engine/stash.py)."""
        wid = workload_id(w)
        checks = checks or BatchChecks(s, s.candidate, w, slots, counts)
        tag = records_tag(j, checks.worker)
        return FreshBatches(len(slots.bufs),
                            redraw=lambda ids, d: redraw_slots(s, j, w, slots, ids, d, tag),
                            changed=lambda ids: inputs_changed(s, slots, ids),
                            counts=lambda k: guards.require_complete(counts, k, f"a timed call on {wid}"),
                            zero=checks.start, verify=checks.verify,
                            reservoir=Stash(s, j, w, slots, tag).reservoir(),
                            seal=lambda ids: seal_slots(s, slots, ids))

    def time(self, s: Session, worker: Worker, wid: str, target: str, policy: TimingPolicy,
             **hooks) -> Generator[Event, None, Stats]:
        """One target's timing loop (judge/engine/timing.py); its failures blamed by role."""
        yield Timing(wid, target, 0)
        try:
            return (yield from time_target(worker, policy, s.problem.spec.timeout_s,
                                           lambda n: Timing(wid, target, n), **hooks))
        except WorkerFailure as f:
            raise blame(worker, f, s.candidate_worker) from None
        except ImpossibleTime as e:
            raise impossible_time(worker, wid, e) from None

    def floor(self, s: Session, w: Workload, stats: Stats, peaks: device.Peaks) -> float:
        """The roofline floor (ms); a median under FLOOR_MARGIN of it is work the timer did not see."""
        flops, nbytes = float(s.problem.flops(w)), float(s.problem.bytes(w))
        floor_ms = max(flops / (peaks.tflops(s.problem.spec.compute) * 1e9), nbytes / (peaks.copy_gbps * 1e6))
        med = stats.median_ms
        if med < FLOOR_MARGIN * floor_ms:
            raise RunFailure(Status.REJECTED, f"impossible time on {workload_id(w)}: the median, {med:.4f} ms, is "
                             f"below half the roofline floor ({floor_ms:.4f} ms: {nbytes / 1e6:.1f} MB at the "
                             f"measured {peaks.copy_gbps:.0f} GB/s, or {flops / 1e9:.2f} GFLOP at the measured "
                             "peak): work the timer did not see (another stream?)")
        return floor_ms


def reported_floor(peaks_floor_ms: float, baselines: list[BaselineTiming]) -> float:
    """The shape's roofline floor as reported: the peaks' time for its FLOPs and bytes, or a
    baseline's median on the same shape in the same run where that is lower. A roofline that a
    baseline beats was measured too low for these inputs (the peaks come from normal random data:
    on an H200, cuBLAS's e4m3 GEMM ran 2.8–8% above the measured FP8 peak on fp8_gemm's inputs), and
    "% of roofline" must not pass 100% for a kernel only as fast as cuBLAS. The impossible-time
    check keeps the peaks' floor: it runs before the baselines' second pass."""
    return min([peaks_floor_ms, *(b.median_ms for b in baselines if b.median_ms > 0)])


def sandwich(s: Session, before: dict[str, Stats], after: dict[str, Stats], stats: Stats) -> list[BaselineTiming]:
    """Each baseline's time as the mean of its medians before and after the candidate."""
    out = []
    for b, _ in s.baselines:
        mid = (before[b.name].median_ms + after[b.name].median_ms) / 2
        out.append(BaselineTiming(name=b.name, before=before[b.name], after=after[b.name], median_ms=mid,
                                  drift=drift(before[b.name], after[b.name]),
                                  drift_flagged=drift_flagged(before[b.name], after[b.name]),
                                  speedup=mid / stats.median_ms))
    return out


def redraw_slots(s: Session, j: int, w: Workload, slots: Slots, ids: list[int], draw: int,
                 tag: str | None = None) -> None:
    """Fresh inputs in the slots `ids` before a timed batch whose calls use each slot once, and the
    checksums that the batch's calls must leave unchanged (judge/engine/guards.py), taken for all
    the slots at once. `tag` (`records_tag`: the timed worker's) names the draws, so that two
    workers timed on the same slots (`judge compare`) never get the same inputs."""
    for k in ids:
        slots.tags[k] = f"{tag or f'bench{j}'}.{k}.draw{draw}"
        guards.redraw(s, w, slots.bufs[k], slots.tags[k], workload_id(w))
    sums = guards.checksums_of(s, [guards.inputs_of(s, slots.bufs[k]) for k in ids], workload_id(w))
    for k, digest in zip(ids, sums):
        slots.sums[k] = digest


def seal_slots(s: Session, slots: Slots, ids: list[int]) -> list[Key]:
    """Seal the inputs of the slots `ids` (after their checksums were taken), each slot under a fresh
    key (judge/gpu/seal.py); the keys, in the same order."""
    keys = [Key.fresh() for _ in ids]
    with guards.memory(s, "sealing the inputs"):
        s.witness().seal([buffers.sealed_inputs(s, slots.bufs[k]) for k in ids], keys)
    return keys


def inputs_changed(s: Session, slots: Slots, ids: list[int]) -> str:
    """The first modified input among slots `ids`, named with its slot, or ""."""
    now = guards.checksums_of(s, [guards.inputs_of(s, slots.bufs[k]) for k in ids], "the timed calls")
    for k, sums in zip(ids, now):
        if changed := [name for name, v in sums.items() if v != slots.sums[k][name]]:
            return ", ".join(changed) + f" (input slot {k})"
    return ""


def records_tag(j: int, worker: Worker) -> str:
    """The name under which benchmark `j` keeps `worker`'s check records and stash: one set per
    timed worker (`judge compare`'s sides are labelled; a submit run's candidate is not)."""
    return f"bench{j}" + (f".{worker.label}" if worker.label else "")


def inputs_modified(e: InputsModified, wid: str) -> RunFailure:
    return RunFailure(Status.REJECTED, f"solve() modified its input {e} during the timed calls on {wid}: "
                      "inputs are read-only")
