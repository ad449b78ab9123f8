"""The benchmark phase of a run, mixed into the pipeline's `_Run` (DESIGN.md §6, docs/timing.md).

Per benchmark shape: input slots in the parent's memory, mapped into every worker; the baselines
timed before and after the candidate, each in its own worker; the candidate's timed batches with
fresh inputs before each (judge/engine/fresh.py), completeness counts, input checksums and re-checks
after; the roofline floor; telemetry around the shape.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator

from judge.gpu import device
from judge.engine.stats import Policy
from judge.contract.events import BenchDone, Event, Stage, Timing
from judge.engine.fresh import FreshBatches, InputsModified
from judge.engine.guards import _Verdict, _incomplete
from judge.contract.report import BaselineTiming, BenchResult
from judge.worker.client import WorkerFailure, WorkerProcess
from judge.engine.score import drift, drift_flagged, geomean
from judge.problem.spec import Workload, workload_id
from judge.engine.timing import ImpossibleTime, time_target
from judge.contract.verdict import Status

RECHECK_SLOTS = 2
MAX_SLOTS = 8  # input sets per shape: timed calls rotate over their (different) memory placements
MAX_EVENTS = 1000  # calls per timed batch (judge/worker/main.py): one completeness count each
# A median below this fraction of the roofline floor is REJECTED. Not 1: the floor's peaks are
# the best a copy and cuBLAS were seen to do, and correct kernels come near or past them
# (cross_entropy's model answer reads at 102.5% of the copy bandwidth: read-only streams beat a
# copy). Half the floor is out of reach for any correct kernel, and skipped work is not.
FLOOR_MARGIN = 0.5


@dataclass
class Slots:
    """A benchmark shape's input sets (slots), filled, and what the workers are told about them."""

    bufs: list[dict]  # per slot: tensor name -> Buffer
    wire: list[dict]
    args: list[list[dict]]
    outputs: list[list[dict]]
    tags: list[str] = field(default_factory=list)  # per slot: the phase its inputs were drawn under
    sums: list[dict] = field(default_factory=list)  # per slot: input checksums (judge/gpu/integrity.py)



class Benchmarks:
    """Needs from its host class (`_Run`): problem, opts, report, candidate, baselines, buffers,
    torch, gpu, and its `_ask`, `_ready`, `_gate`, `_alloc`, `_args`, `_reference`, `_check`,
    `_counter`, `_zero`, `_redraw`, `_inputs_changed`, `_failure` and `_wire_params`."""

    def _benchmarks(self) -> Iterator[Event]:
        for b, w in self.baselines:
            self._ready(w, f"starting baseline {b.name}")
            path, func = self.problem.impl_path(b.impl)
            self._ask(w, "init", 300, f"loading baseline {b.name}", params=self._wire_params(),
                      baseline={"file": str(path), "func": func})
        peaks = device.peaks(self.gpu)
        env = self.report.environment
        unit = self.problem.spec.compute
        env.peak_copy_gbps, env.peak_tflops, env.peak_unit = round(peaks.copy_gbps, 1), round(peaks.tflops(unit), 1), unit
        benches = self.problem.spec.benchmarks
        for j, w in enumerate(benches):
            result = yield from self._bench_one(j, w, peaks)
            self.report.benchmarks.append(result)
            yield BenchDone(j, len(benches), result)
        self.report.geomean_speedup = geomean(r.speedup for r in self.report.benchmarks)
        if self.problem.baselines:
            self.report.baseline_name = self.problem.baselines[0].name

    def _bench_one(self, j: int, w: Workload, peaks: device.Peaks):
        wid = workload_id(w)
        yield Stage(f"benchmark {j + 1}/{len(self.problem.spec.benchmarks)}: {wid}: preparing inputs")
        self._gate(f"benchmark {wid}")
        slots = self._slots(j, w)
        counter = self._counter(f"bench{j}", MAX_EVENTS)
        everyone = [self.candidate] + [wk for _, wk in self.baselines]
        for wk in everyone:
            self._map_slots(wk, slots, counter if wk is self.candidate else None)
        tel_before = device.telemetry(self.gpu.index)
        before = {}
        for b, wk in self.baselines:
            before[b.name] = yield from self._time(wk, wid, f"{b.name} (before)", self.opts.baseline_policy,
                                                   max_k=len(slots.bufs))

        def completeness(k: int) -> None:
            left = int(counter.tensor[:k].sum())
            if left:
                raise _Verdict(Status.REJECTED, _incomplete(left, f"a timed call on {wid}"))

        n = len(slots.bufs)
        fresh = FreshBatches(n, RECHECK_SLOTS, redraw=lambda ids, d: self._redraw(j, w, slots, ids, d),
                             changed=lambda ids: self._inputs_changed(slots, ids),
                             recheck=lambda s: self._recheck(j, w, slots, s), counts=completeness,
                             zero=lambda: self._zero(counter))
        try:
            stats = yield from self._time(self.candidate, wid, "candidate", self.opts.policy, max_k=n,
                                          before_batch=fresh.before, after_batch=fresh.after,
                                          after_warmup=fresh.after_warmup)
            checked = fresh.finish()
        except InputsModified as e:
            raise _Verdict(Status.REJECTED, f"solve() modified its input {e} during the timed calls on {wid}: "
                           "inputs are read-only") from None
        flops, nbytes = float(self.problem.flops(w)), float(self.problem.bytes(w))
        floor_ms = max(flops / (peaks.tflops(self.problem.spec.compute) * 1e9), nbytes / (peaks.copy_gbps * 1e6))
        med = stats.median_ms
        if med < FLOOR_MARGIN * floor_ms:
            raise _Verdict(Status.REJECTED, f"impossible time on {wid}: the median, {med:.4f} ms, is below half the "
                           f"roofline floor ({floor_ms:.4f} ms: {nbytes / 1e6:.1f} MB at the measured "
                           f"{peaks.copy_gbps:.0f} GB/s, or {flops / 1e9:.2f} GFLOP at the measured peak): "
                           "work the timer did not see (another stream?)")
        baselines = []
        for b, wk in self.baselines:
            after = yield from self._time(wk, wid, f"{b.name} (after)", self.opts.baseline_policy, max_k=len(slots.bufs))
            mid = (before[b.name].median_ms + after.median_ms) / 2
            baselines.append(BaselineTiming(name=b.name, before=before[b.name], after=after, median_ms=mid,
                                            drift=drift(before[b.name], after),
                                            drift_flagged=drift_flagged(before[b.name], after),
                                            speedup=mid / stats.median_ms))
        tel_after = device.telemetry(self.gpu.index)
        for wk in everyone:
            self._ask(wk, "unmap", 60, "unmapping buffers")
        self.buffers.free()  # type: ignore[union-attr]
        return BenchResult(workload=wid, stats=stats, flops=flops, bytes=nbytes, tflops=flops / med / 1e9,
                           gbps=nbytes / med / 1e6, floor_ms=floor_ms, roofline_pct=100 * floor_ms / med,
                           baselines=baselines, rechecked_slots=checked,
                           telemetry_before=tel_before, telemetry_after=tel_after)

    def _slots(self, j: int, w: Workload) -> Slots:
        """Benchmark `j`'s input sets: as many as fit in 40% of free memory, up to MAX_SLOTS."""
        from judge.problem import workloads

        slot_bytes = sum(b for b in (self._nbytes(p.name, w) for p in self.problem.tensors))
        free, _ = self.torch.cuda.mem_get_info()
        n_slots = max(1, min(MAX_SLOTS, int(0.4 * free // max(slot_bytes, 1))))
        slots = []
        for s in range(n_slots):
            bufs = self._alloc(f"bench{j}.{s}", w)
            tensors = {n: b.tensor for n, b in bufs.items()}
            with self._memory(f"the inputs of {workload_id(w)}"):
                workloads.fill_inputs(self.problem, w, tensors, self.secret, f"bench{j}.{s}")
            slots.append(bufs)
        self.torch.cuda.synchronize()
        wire = [b.wire() for bufs in slots for b in bufs.values()]
        args = [self._args(bufs, w) for bufs in slots]
        outs = [[{"buf": bufs[p.name].id, "nbytes": bufs[p.name].nbytes, "dtype": bufs[p.name].dtype}
                 for p in self.problem.outputs] for bufs in slots]
        return Slots(slots, wire, args, outs, tags=[f"bench{j}.{s}" for s in range(n_slots)],
                     sums=[{} for _ in range(n_slots)])

    def _map_slots(self, worker: WorkerProcess, slots: Slots, counter=None) -> None:
        """Map the slots into `worker` and set its timed calls; with `counter` (the candidate's),
        each timed call's completeness count goes there."""
        wire = slots.wire + ([counter.wire()] if counter is not None else [])
        self._ask(worker, "map", 120, "mapping buffers", buffers=wire)
        self._ask(worker, "prepare", 60, "preparing the timed calls", slots=slots.args, outputs=slots.outputs,
                  counter=counter.id if counter is not None else None)

    def _recheck(self, j: int, w: Workload, slots: Slots, s: int) -> None:
        """Check slot `s`'s output (of its last timed call) against the reference."""
        wid = workload_id(w)
        tensors = {n: bt.tensor for n, bt in slots.bufs[s].items()}
        with self._memory(f"the reference outputs of {wid}"):
            expected = self._reference(slots.tags[s], w, tensors)
        case = self._check(w, slots.bufs[s], expected)
        del expected
        if not case.passed:
            case.workload += f" (timed call, slot {s})"
            self.report.tests.append(case)
            raise _Verdict(Status.WRONG_ANSWER, f"a timed call's output is wrong on {wid}")

    def _time(self, worker: WorkerProcess, wid: str, target: str, policy: Policy, **hooks):
        yield Timing(wid, target, 0)
        try:
            return (yield from time_target(worker, policy, self.problem.spec.timeout_s,
                                           lambda n: Timing(wid, target, n), **hooks))
        except WorkerFailure as f:
            raise self._failure(worker, f) from None
        except ImpossibleTime as e:
            raise _Verdict(Status.REJECTED if worker.role == "candidate" else Status.INTERNAL_ERROR,
                           f"impossible time on {wid}: {e}") from None

    def _nbytes(self, name: str, w: Workload) -> int:
        ct = dict(self.problem.params)[name]
        return math.prod(self.problem.shape_of(name, w)) * ct.element.itemsize  # type: ignore[union-attr]
