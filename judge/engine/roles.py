"""Whose code a worker runs, and who is to blame when it fails (`blame`).

Every worker carries a `role` ("candidate", or "baseline NAME") and a `label` ("" in a submit run,
"A" / "B" in `judge compare`). A candidate's failure is the submission's verdict: a deadline
missed is TIMEOUT, a reply without the run's nonce (tampering with the result channel) REJECTED,
anything else RUNTIME_ERROR: a crash, a CUDA or Python error, and a malformed reply (the output of
the candidate's own process: over the caps, not JSON, nested too deep, of the wrong shape). A
baseline's is the judge's own (INTERNAL_ERROR). A labelled worker's failure names its side.
"""
from __future__ import annotations

from typing import Protocol

from judge.contract.verdict import Status
from judge.engine.outcome import RunFailure
from judge.worker.client import WorkerFailure
from judge.worker.protocol import Op

CANDIDATE = "candidate"


def baseline_role(name: str) -> str:
    return f"baseline {name}"


class Worker(Protocol):
    """What the engine needs of a worker (judge/worker/client.py's `WorkerProcess`, or a test's fake)."""

    role: str
    label: str

    def request(self, op: Op, timeout_s: float, what: str, **args) -> dict: ...

    def wait_ready(self) -> dict: ...

    def close(self) -> None: ...


def is_candidate(worker: Worker) -> bool:
    return worker.role == CANDIDATE


def blame(worker: Worker, failure: WorkerFailure | RunFailure) -> RunFailure:
    """The verdict for `failure` of (or, for a RunFailure, found in the output of) `worker`."""
    if isinstance(failure, WorkerFailure):
        failure = _worker_failure(worker, failure)
    if not worker.label:
        return failure
    return RunFailure(failure.status, f"{worker.label}: {failure.message}", culprit=worker.label)


def _worker_failure(worker: Worker, f: WorkerFailure) -> RunFailure:
    detail = f.message + (f"\nworker output (tail):\n{f.log_tail.strip()}" if f.log_tail.strip() else "")
    if not is_candidate(worker):
        return RunFailure(Status.INTERNAL_ERROR, f"{worker.role}: {detail}")
    if f.kind == "timeout":
        return RunFailure(Status.TIMEOUT, detail)
    if f.kind == "protocol":
        return RunFailure(Status.REJECTED, f"result channel: {detail}")
    return RunFailure(Status.RUNTIME_ERROR, detail)  # crash, cuda, python, os, malformed


def impossible_time(worker: Worker, where: str, why: object) -> RunFailure:
    """Reported times the parent's wall clock cannot contain: the candidate's tampering, or (in a
    baseline) the judge's problem."""
    status = Status.REJECTED if is_candidate(worker) else Status.INTERNAL_ERROR
    return blame(worker, RunFailure(status, f"impossible time on {where}: {why}"))


def times_disagree(worker: Worker, where: str, why: object) -> RunFailure:
    """Reported times that the judge's GPU timestamps contradict (judge/engine/stamps.py): the
    candidate's tampering, or (in a baseline) the judge's problem."""
    status = Status.REJECTED if is_candidate(worker) else Status.INTERNAL_ERROR
    return blame(worker, RunFailure(status, f"the worker's reported times disagree with the judge's GPU "
                                            f"timestamps on {where}: {why}"))
