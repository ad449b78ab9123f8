"""The correctness phase: the problem's tests, then hidden tests drawn from the run's secret.

Each test is one call of solve() in the candidate worker, with the parent's guards around it:
outputs poisoned before the call, their completeness counted and fingerprinted right after it,
input checksums, then the problem's check against the reference (judge/engine/buffers.py), the
guard regions after every buffer, and the parent's own fingerprint of the outputs. The first
failure ends the run with its verdict; hidden shapes are named only by their number
(judge/problem/hidden.py).
"""
from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judge.contract.events import CaseDone, Event, Stage
from judge.contract.report import TestCase
from judge.contract.verdict import Status
from judge.engine import buffers, guards
from judge.engine.outcome import RunFailure, incomplete
from judge.engine.session import Session
from judge.gpu import integrity
from judge.problem.spec import Workload, workload_id
from judge.worker.protocol import CHECK_COUNT, POISON_BYTES

if TYPE_CHECKING:
    from judge.gpu.devmem import Buffer


@dataclass(frozen=True)
class Case:
    workload: Workload
    label: str  # as reported: the workload's id, or "hidden K"
    tag: str  # the phase its inputs are drawn under
    hidden: bool

    @property
    def where(self) -> str:
        """Where a failure happened, as the message says it (a hidden shape is shown after the verdict)."""
        return f"{self.label} ({workload_id(self.workload)})" if self.hidden else workload_id(self.workload)


def cases(s: Session) -> list[Case]:
    from judge.problem.hidden import draw

    shown = [Case(w, workload_id(w), f"test{i}", False) for i, w in enumerate(s.problem.spec.tests)]
    return shown + [Case(w, f"hidden {k + 1}", f"hidden{k + 1}", True)
                    for k, w in enumerate(draw(s.problem, s.secret, s.opts.hidden))]


def run_tests(s: Session) -> Iterator[Event]:
    """The correctness phase: every case in turn, into the report; the first failure raises."""
    todo = cases(s)
    guards.gate(s, "the tests")
    for i, case in enumerate(todo):
        yield Stage(f"test {i + 1}/{len(todo)}: {case.label}")
        result, failure = test_one(s, case)
        s.report.tests.append(result)
        yield CaseDone(i, len(todo), result)
        if failure:
            raise failure


def test_one(s: Session, case: Case) -> tuple[TestCase, RunFailure | None]:
    """One test call: poisoned outputs, input checksums, the completeness count, the check."""
    bufs = buffers.alloc(s, case.tag, case.workload)
    expected = buffers.draw(s, case.tag, case.workload, bufs)
    counts = guards.counter(s, case.tag, 1)
    outs = poison_outputs(s, bufs)
    inputs = guards.inputs_of(s, bufs)
    sums = guards.checksums(s, inputs, workload_id(case.workload))
    s.torch.cuda.synchronize()
    s.ask(s.candidate, "map", 60, "mapping buffers", buffers=[b.wire() for b in bufs.values()] + [counts.wire()])
    try:
        s.called = True
        s.ask(s.candidate, "call", s.problem.spec.timeout_s + 1, "solve()",
              args=buffers.call_args(s, bufs, case.workload), outputs=outs, counter=counts.id)
    except RunFailure as f:
        return (TestCase(workload=case.label, passed=False, error=f.message, hidden=case.hidden),
                RunFailure(f.status, f"on {case.where}: {f.message}"))
    result = buffers.check(s, case.workload, bufs, expected)
    result.workload, result.hidden = case.label, case.hidden
    failure = judge_call(s, case, result, inputs, sums, counts, bufs)
    if failure and result.passed:
        result.passed, result.error = False, failure.message
    s.ask(s.candidate, "unmap", 60, "unmapping buffers")
    del expected
    s.device_buffers().free()
    return result, failure


def judge_call(s: Session, case: Case, result: TestCase, inputs: dict[str, Any],
               sums: dict[str, int], counts: Buffer, bufs: dict[str, Buffer]) -> RunFailure | None:
    """The call's verdict, in order: a wrong output, a modified input, a write past the end of a
    buffer, an incomplete output, outputs that changed after the worker's check."""
    if not result.passed:
        return RunFailure(Status.WRONG_ANSWER, f"wrong output on {case.where}")
    if changed := guards.changed(s, inputs, sums, workload_id(case.workload)):
        return RunFailure(Status.REJECTED, f"solve() modified its input {', '.join(changed)} on {case.where}: "
                          "inputs are read-only")
    if failure := guards.overrun(s, bufs, case.where):
        return failure
    if (left := int(counts.tensor[0, CHECK_COUNT])) > 0:
        return RunFailure(Status.REJECTED, incomplete(left, case.where))
    try:
        guards.require_unchanged(s, counts, [(0, guards.outputs_of(s, bufs))], case.where, test_call=True)
    except RunFailure as f:
        return f
    return None


def poison_outputs(s: Session, bufs: dict[str, Buffer]) -> list[dict]:
    """Fill every output with a fresh poison pattern; what the worker is told to count."""
    from judge.problem.workloads import poison

    rng = secrets.SystemRandom()
    outs = []
    for p in s.problem.outputs:
        b = bufs[p.name]
        word = integrity.poison_word(b.dtype, rng)
        if word is None:
            poison(b.tensor, rng.choice(POISON_BYTES))
        else:
            integrity.fill_tensor(b.tensor, b.dtype, word)
        outs.append({"buf": b.id, "nbytes": b.nbytes, "dtype": b.dtype, "word": word})
    return outs
