"""The parent's stash of timed calls for the re-check (judge/engine/reservoir.py decides which):
copies of calls' outputs, in device memory the parent owns, and their check once the target's
timing is over.

A stashed call is its outputs, copied device to device right after its batch, and the tag of the
draw its inputs came from. The check draws those inputs again from the run's secret and the tag
(the same generator, seed and device: the same values; the batch's checksums proved the call left
them unchanged) into the slot's buffers, runs the reference on them and checks the copied outputs
against it: the reference the call had to match, computed only after the timing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from judge.contract.verdict import Status
from judge.engine import buffers, guards
from judge.engine.buffers import Slots
from judge.engine.outcome import RunFailure
from judge.engine.reservoir import Reservoir
from judge.engine.session import Session
from judge.problem.spec import Workload, workload_id

if TYPE_CHECKING:
    from judge.gpu.devmem import Buffer


class Stash:
    """`slots.stash` kept entries and a scratch one, each a set of the shape's outputs; `copy` and
    `check` are a `Reservoir`'s callbacks (`reservoir()`)."""

    def __init__(self, s: Session, j: int, w: Workload, slots: Slots, tag: str | None = None):
        """`tag` names the entries' buffers (default `bench{j}`; one stash per timed worker:
        judge/engine/benchmarks.py's `records_tag`)."""
        self.s, self.w, self.slots = s, w, slots
        self.wid = workload_id(w)
        tag = tag or f"bench{j}"
        with guards.memory(s, f"the re-check's stash of {self.wid}"):
            self.entries: list[dict[str, Buffer]] = [
                {p.name: s.device_buffers().alloc(f"{tag}#stash{e}:{p.name}", p.ctype.element.dtype,  # type: ignore[union-attr]
                                                  s.problem.shape_of(p.name, w)) for p in s.problem.outputs}
                for e in range(slots.stash + 1)]

    def reservoir(self) -> Reservoir[tuple[int, str]]:
        return Reservoir(self.slots.stash, self.copy, self.check)

    def copy(self, slot: int, entry: int) -> tuple[int, str]:
        """Slot `slot`'s outputs into entry `entry`, finished before the next batch; the slot and
        the tag of its inputs' draw."""
        for name, b in self.entries[entry].items():
            b.tensor.copy_(self.slots.bufs[slot][name].tensor)
        self.s.torch.cuda.synchronize()
        return slot, self.slots.tags[slot]

    def check(self, what: tuple[int, str], entry: int) -> None:
        """The kept call `what` (slot, tag) against the reference on its inputs, drawn again; a wrong
        one goes into the report's tests as evidence."""
        slot, tag = what
        bufs = self.slots.bufs[slot]
        guards.redraw(self.s, self.w, bufs, tag, self.wid)
        self.slots.tags[slot], self.slots.sums[slot] = tag, guards.checksums(self.s, guards.inputs_of(self.s, bufs),
                                                                             self.wid)
        with guards.memory(self.s, f"the reference outputs of {self.wid}"):
            expected = buffers.reference(self.s, tag, self.w, bufs)
        kept = {**bufs, **self.entries[entry]}
        if buffers.passes(self.s, self.w, kept, expected):
            return
        case = buffers.check(self.s, self.w, kept, expected)  # the evidence, for a wrong call only
        del expected
        if not case.passed:
            case.workload += f" (timed call, slot {slot})"
            self.s.report.tests.append(case)
            raise RunFailure(Status.WRONG_ANSWER, f"a timed call's output is wrong on {self.wid}")
