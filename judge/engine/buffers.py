"""The parent's device buffers for one workload: allocated, described to the workers, filled with
inputs drawn under the run's secret, and the reference outputs and output checks computed on them.

A test call uses one set of buffers; a benchmark shape uses several (`Slots`: input sets whose
memory placements the timed calls rotate over), mapped into every worker that is timed on it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judge.contract.report import TestCase
from judge.contract.verdict import Status
from judge.engine.guards import memory
from judge.engine.outcome import RunFailure
from judge.engine.reservoir import fit
from judge.engine.roles import Worker
from judge.engine.session import Session
from judge.problem.abi import CType
from judge.problem.spec import Workload, workload_id

if TYPE_CHECKING:
    from judge.gpu.devmem import Buffer

MAX_SLOTS = 8  # input sets per shape: timed calls rotate over their (different) memory placements
SLOTS_MEMORY_FRACTION = 0.4  # of the free device memory, at most, for a shape's slots


def alloc(s: Session, tag: str, w: Workload) -> dict[str, Buffer]:
    """One buffer per tensor parameter, named `tag:NAME`, each with its guard region (an input's or
    an output's: judge/gpu/guard_regions.py)."""
    bufs = {}
    with memory(s, f"the buffers of {workload_id(w)}"):
        for p in s.problem.tensors:
            dtype = p.ctype.element.dtype  # type: ignore[union-attr]
            bufs[p.name] = s.device_buffers().alloc(f"{tag}:{p.name}", dtype, s.problem.shape_of(p.name, w),
                                                    output=p.ctype.is_output)
    return bufs


def call_args(s: Session, bufs: dict[str, Buffer], w: Workload) -> list[dict]:
    """solve()'s arguments as the worker is told them: buffer ids and the workload's scalars."""
    return [{"buf": bufs[name].id} if ct.is_tensor else scalar_arg(ct, w[name]) for name, ct in s.problem.params]


def scalar_arg(ct: CType, value: float) -> dict:
    """A scalar argument of solve() as the workers are told it."""
    return {"int": int(value)} if ct.scalar == "int" else {"float": float(value)}


def nbytes(s: Session, w: Workload, outputs: bool = False) -> int:
    """The bytes of one set of `w`'s tensors (of its outputs only, with `outputs`)."""
    total = 0
    for p in s.problem.outputs if outputs else s.problem.tensors:
        itemsize: int = p.ctype.element.itemsize  # type: ignore[union-attr]
        total += math.prod(s.problem.shape_of(p.name, w)) * itemsize
    return total


def fill(s: Session, tag: str, w: Workload, bufs: dict[str, Buffer]) -> None:
    """Inputs drawn under the run's secret and `tag` (the outputs are left alone)."""
    from judge.problem import workloads

    with memory(s, f"the inputs of {workload_id(w)}"):
        workloads.fill_inputs(s.problem, w, {n: b.tensor for n, b in bufs.items()}, s.secret, tag)


def draw(s: Session, tag: str, w: Workload, bufs: dict[str, Buffer]) -> dict[str, Any]:
    """Fill the inputs, then the reference outputs for them (the reference failing is the judge's)."""
    fill(s, tag, w, bufs)
    try:
        with memory(s, f"the reference outputs of {workload_id(w)}"):
            return reference(s, tag, w, bufs)
    except RunFailure:
        raise
    except Exception as e:  # noqa: BLE001 — the problem's reference is the judge's code
        raise RunFailure(Status.INTERNAL_ERROR, f"the reference failed on {workload_id(w)}: "
                         f"{type(e).__name__}: {e}") from None


def reference(s: Session, tag: str, w: Workload, bufs: dict[str, Buffer]) -> dict[str, Any]:
    """The reference outputs for the inputs drawn under `tag` (a warm session caches them)."""
    from judge.problem import workloads

    tensors = {n: b.tensor for n, b in bufs.items()}

    def compute() -> dict:
        return workloads.reference_outputs(s.problem, w, tensors)

    return s.opts.warm.reference(f"{tag}:{workload_id(w)}", compute) if s.opts.warm else compute()


def check(s: Session, w: Workload, bufs: dict[str, Buffer], expected: dict[str, Any]) -> TestCase:
    """The problem's output check of every output against the reference's."""
    from judge.problem.checks import run_check

    with memory(s, f"the check of {workload_id(w)}"):
        checks = [run_check(s.problem.spec.check, name, bufs[name].tensor, expected[name]) for name in expected]
    return TestCase(workload=workload_id(w), passed=all(c.passed for c in checks), checks=checks)


def passes(s: Session, w: Workload, bufs: dict[str, Buffer], expected: dict[str, Any]) -> bool:
    """Whether `check` would pass, without its evidence (judge/problem/checks' `passes`)."""
    from judge.problem.checks import passes

    with memory(s, f"the check of {workload_id(w)}"):
        return all(passes(s.problem.spec.check, bufs[name].tensor, expected[name]) for name in expected)


@dataclass
class Slots:
    """A benchmark shape's input sets (slots), filled, and what the workers are told about them."""

    bufs: list[dict]  # per slot: tensor name -> Buffer
    wire: list[dict]
    args: list[list[dict]]
    outputs: list[list[dict]]
    inputs: list[list[dict]] = field(default_factory=list)  # per slot: the inputs its gate opens or reads, in job order
    tags: list[str] = field(default_factory=list)  # per slot: the phase its inputs were drawn under
    sums: list[dict] = field(default_factory=list)  # per slot: input checksums (judge/gpu/integrity.py)
    stash: int = 1  # timed calls the re-check keeps (judge/engine/reservoir.py); its memory is left free


def make_slots(s: Session, j: int, w: Workload, stashes: int = 1) -> Slots:
    """Benchmark `j`'s input sets: up to MAX_SLOTS, as many as fit in 40% of free memory beside the
    re-check's stashes (each its kept calls' outputs and a scratch set, `reservoir.fit`; one per
    worker timed on the slots: `judge compare` times two)."""
    free, _ = s.torch.cuda.mem_get_info()
    n_slots, stash = fit(SLOTS_MEMORY_FRACTION * free, nbytes(s, w), stashes * nbytes(s, w, outputs=True), MAX_SLOTS)
    tags = [f"bench{j}.{k}" for k in range(n_slots)]
    slots = []
    for tag in tags:
        bufs = alloc(s, tag, w)
        fill(s, tag, w, bufs)
        slots.append(bufs)
    s.torch.cuda.synchronize()
    wire = [b.wire() for bufs in slots for b in bufs.values()]
    args = [call_args(s, bufs, w) for bufs in slots]
    outs = [[{"buf": bufs[p.name].id, "nbytes": bufs[p.name].nbytes, "dtype": bufs[p.name].dtype}
             for p in s.problem.outputs] for bufs in slots]
    ins = [[{"buf": b.id, "nbytes": b.nbytes} for b in sealed_inputs(s, bufs)] for bufs in slots]
    return Slots(slots, wire, args, outs, inputs=ins, tags=tags, sums=[{} for _ in range(n_slots)], stash=stash)


def sealed_inputs(s: Session, bufs: dict[str, Buffer]) -> list[Buffer]:
    """A call's inputs in the order of their keystreams (judge/gpu/seal.py: input j is job j)."""
    return [bufs[p.name] for p in s.problem.tensors if not p.ctype.is_output]


def map_slots(s: Session, worker: Worker, slots: Slots, counts: Buffer | None = None) -> None:
    """Map the slots into `worker` and set its timed calls, with the inputs each call's gate opens
    (a candidate's sealed batches: judge/gpu/seal.py) or reads (a baseline's); with `counts` (the
    candidate's), each timed call's completeness count goes there."""
    wire = slots.wire + ([counts.wire()] if counts is not None else [])
    s.ask(worker, "map", 120, "mapping buffers", buffers=wire)
    s.ask(worker, "prepare", 60, "preparing the timed calls", slots=slots.args, outputs=slots.outputs,
          counter=counts.id if counts is not None else None, inputs=slots.inputs)


def unmap(s: Session, workers: list[Worker]) -> None:
    """Every worker lets go of the shape's buffers; the parent frees them."""
    for wk in workers:
        s.ask(wk, "unmap", 60, "unmapping buffers")
    s.device_buffers().free()
