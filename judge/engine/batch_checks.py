"""The parent's checks of a worker's timed batches on one benchmark shape, beyond its inputs
(docs/security.md, classes 3, 5 and 9): `BatchChecks.start()` before each request, `verify(ids,
times)` after the reply (judge/engine/fresh.py calls both; judge/engine/benchmarks.py wires them).

- **Stamps.** The parent stamps the GPU's clock itself before the request and after the reply;
  the worker's stamps and reported times must agree with them (judge/engine/stamps.py).
- **Correct at the end event.** The parent fingerprints each call's outputs as they are now; the
  worker's fingerprint, taken right after the call's end event, must be the same: outputs that
  changed after it were written by work the timer did not see. Only the last call on each slot
  can be compared (a timed batch has one call per slot; a warm-up batch may reuse slots).
- **Guard regions.** The slack after every buffer of the batch's slots is intact.

The completeness counts stay judge/engine/guards.py's `require_complete` (FreshBatches' `counts`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from judge.engine import guards, stamps
from judge.engine.outcome import RunFailure
from judge.engine.roles import Worker, blame, times_disagree
from judge.engine.session import Session
from judge.problem.spec import Workload, workload_id
from judge.worker.protocol import CHECK_END, CHECK_START

if TYPE_CHECKING:
    from judge.engine.buffers import Slots
    from judge.gpu.devmem import Buffer


class BatchChecks:
    """One worker's batches on one shape. `excess_ms`: the largest per-batch mean excess of the GPU
    stamps over the reported times (ms per call), the diagnostic of stamps.SLACK_*."""

    def __init__(self, s: Session, worker: Worker, w: Workload, slots: Slots, counts: Buffer):
        self.s, self.worker, self.w, self.slots, self.counts = s, worker, w, slots, counts
        self.where = workload_id(w)
        self.before_ns = 0
        self.excess_ms: float | None = None

    def start(self) -> None:
        """Before the request: the records zeroed, then (last) the parent's own stamp."""
        guards.zero(self.s, self.counts)
        self.before_ns = self.s.witness().stamp()

    def verify(self, ids: list[int], times: list[float]) -> None:
        """After the reply of a batch whose call i used slot ids[i] and reported times[i]."""
        after_ns = self.s.witness().stamp()
        self.stamps(ids, times, after_ns)
        last = {slot: i for i, slot in enumerate(ids)}  # the call whose outputs are still in place
        calls = [(i, guards.outputs_of(self.s, self.slots.bufs[slot])) for slot, i in sorted(last.items())]
        try:
            guards.require_unchanged(self.s, self.counts, calls, self.where)
            if failure := guards.overruns(self.s, [(self.slots.bufs[slot], f"{self.where} (input slot {slot})")
                                                   for slot in sorted(last)]):
                raise failure
        except RunFailure as f:
            raise blame(self.worker, f) from None

    def stamps(self, ids: list[int], times: list[float], after_ns: int) -> None:
        rows = guards.records(self.counts, len(ids))
        try:
            excess = stamps.check(self.before_ns, after_ns, [(r[CHECK_START], r[CHECK_END]) for r in rows], times,
                                  self.s.witness().tick_ns)
        except stamps.Disagreement as e:
            raise times_disagree(self.worker, self.where, e) from None
        self.excess_ms = excess if self.excess_ms is None else max(self.excess_ms, excess)
