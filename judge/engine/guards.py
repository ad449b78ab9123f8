"""The parent's runtime guards, mixed into the pipeline's `_Run` (DESIGN.md §5, docs/security.md).

What the parent checks itself, around what the worker claims: completeness counts in a buffer
it owns, input checksums, inputs re-drawn before every timed batch, device memory exhaustion blamed on
the side that caused it, and the GPU health gate before each phase. The checks' building blocks
are judge/gpu/integrity.py and judge/gpu/health.py; the pipeline calls these at the right moments.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from judge.gpu import health
from judge.gpu import integrity
from judge.gpu.cudart import CudaError
from judge.worker.client import KILLED
from judge.problem.spec import Workload, workload_id
from judge.contract.verdict import Status

if TYPE_CHECKING:
    from judge.engine.benchmarks import Slots


class _Verdict(Exception):
    def __init__(self, status: Status, message: str):
        self.status, self.message = status, message


class Guards:
    """Needs from its host class: problem, secret, buffers, torch, gpu, workers, called."""

    @contextmanager
    def _memory(self, what: str):
        """Device memory exhausted in the parent: the submission's fault once solve() has run
        (its worker holds memory it never freed), the judge's before."""
        try:
            yield
        except CudaError as e:
            if e.name != "cudaErrorMemoryAllocation":
                raise
            raise self._oom(what, str(e)) from None
        except self.torch.cuda.OutOfMemoryError as e:
            raise self._oom(what, str(e).splitlines()[0]) from None

    def _oom(self, what: str, detail: str) -> _Verdict:
        if self.called:
            return _Verdict(Status.RUNTIME_ERROR, f"device memory exhausted: the judge could not allocate {what} "
                            f"after solve() had run (does solve() keep or leak device memory?): {detail}")
        return _Verdict(Status.INTERNAL_ERROR, f"device memory exhausted allocating {what}: {detail}")

    def _counter(self, tag: str, n: int):
        """A u64 completeness count per call, in a buffer the parent owns (judge/gpu/integrity.py)."""
        with self._memory("the completeness counts"):
            buf = self.buffers.alloc(f"{tag}#completeness", "int64", (n,))  # type: ignore[union-attr]
        buf.tensor.zero_()
        return buf

    def _gate(self, phase: str) -> None:
        """The GPU health gate (judge/gpu/health.py). Workers this process killed must have released
        their memory; once they have, they are forgotten (their pids may be reused)."""
        live = {w.proc.pid for w in self.workers if getattr(w, "proc", None) and w.proc.poll() is None}
        dead = KILLED - live
        try:
            health.wait_until_fit(self.gpu.index, dead)
        except health.Unhealthy as e:
            raise _Verdict(Status.INTERNAL_ERROR, f"before {phase}: {e}") from None
        KILLED.difference_update(dead | live)

    def _zero(self, counter) -> None:
        counter.tensor.zero_()
        self.torch.cuda.synchronize()

    def _redraw(self, j: int, w: Workload, slots: Slots, ids: list[int], draw: int) -> None:
        """Fresh inputs in the slots `ids` (never drawn by the worker), before each timed batch,
        whose calls use each slot once: an answer cached by pointer or by content from any earlier
        call is now wrong. Then the checksums that the batch's calls must leave unchanged."""
        from judge.problem import workloads

        with self._memory(f"the inputs of {workload_id(w)}"):
            for s in ids:
                slots.tags[s] = f"bench{j}.{s}.draw{draw}"
                inputs = self._slot_inputs(slots.bufs[s])
                workloads.fill_inputs(self.problem, w, inputs, self.secret, slots.tags[s])
                slots.sums[s] = integrity.checksums(inputs)
        self.torch.cuda.synchronize()

    def _slot_inputs(self, bufs: dict) -> dict:
        return {p.name: bufs[p.name].tensor for p in self.problem.tensors if not p.ctype.is_output}

    def _changed(self, inputs: dict, sums: dict, wid: str) -> list[str]:
        with self._memory(f"the input checksums of {wid}"):
            return integrity.changed(inputs, sums)

    def _inputs_changed(self, slots: Slots, ids: list[int]) -> str:
        for s in ids:
            if changed := self._changed(self._slot_inputs(slots.bufs[s]), slots.sums[s], f"input slot {s}"):
                return ", ".join(changed) + f" (input slot {s})"
        return ""


def _incomplete(left: int, where: str) -> str:
    return (f"output not complete when solve() returned on {where}: {left} element(s) still held the "
            "poison pattern, counted on the default stream right after the call: work on another stream? "
            "(solve() must finish on the default stream, or make it wait for the streams it uses)")
