"""Whose code a worker runs, and who is to blame when it fails (`blame`).

Every worker carries a `role` ("candidate", or "baseline NAME") and a `label` ("" in a submit run,
"A" / "B" in `judge compare`). A candidate's failure is the submission's verdict: a deadline
missed is TIMEOUT, a reply without the run's nonce (tampering with the result channel) REJECTED,
anything else RUNTIME_ERROR: a crash (a system call the sandbox refused among them), an error the
worker reports, and a malformed reply (the output of the candidate's own process: over the caps,
not JSON, nested too deep, of the wrong shape). A baseline's is the judge's own (INTERNAL_ERROR),
and so is a machine that cannot confine a candidate (kind "sandbox", found by the parent); but for
what may come from outside its process while the run's candidate worker exists (`from_outside`:
killed by a signal the judge did not send, or silent past its deadline, which a SIGSTOP does).
The sandbox refuses the candidate signals to other processes, so this is the second line: such a
failure is an `Interference`: the judge restarts that baseline's worker once and times it again
(judge/engine/benchmarks.py, `Session.restart`); a second one in the run is the candidate's
RUNTIME_ERROR (`interfered`). A labelled worker's failure names its side.
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


class Interference(RunFailure):
    """A baseline's failure that may be the candidate's doing (`from_outside`). Its status and
    message are the judge's INTERNAL_ERROR, as before; `worker` is the baseline's, `how` says what
    happened to it ("was killed by SIGKILL")."""

    def __init__(self, worker: Worker, how: str, failure: RunFailure):
        super().__init__(failure.status, failure.message, failure.culprit)
        self.worker, self.how = worker, how




def from_outside(f: WorkerFailure) -> str | None:
    """What happened to a worker, when another process could have done it: killed by a signal
    (the judge's own kills end in other kinds, "timeout" or "malformed", and the memory watch's
    names its limit, not a signal) or no answer before the deadline (stopped); None for what a
    worker reports or does itself (a Python or CUDA error, an exit status, a malformed reply)."""
    if f.kind == "timeout":
        return "stopped answering (no reply before its deadline)"
    if f.kind == "crash" and f.signal:
        return f"was killed by {f.signal}"
    return None


def blame(worker: Worker, failure: WorkerFailure | RunFailure, rival: Worker | None = None) -> RunFailure:
    """The verdict for `failure` of (or, for a RunFailure, found in the output of) `worker`.
    `rival`: the run's candidate worker, if it has one; a baseline's failure that it may have
    caused is then an `Interference`."""
    if isinstance(failure, WorkerFailure):
        verdict = _worker_failure(worker, failure)
        if rival is not None and not is_candidate(worker) and (how := from_outside(failure)):
            return Interference(worker, how, verdict)
        failure = verdict
    if not worker.label:
        return failure
    return RunFailure(failure.status, f"{worker.label}: {failure.message}", culprit=worker.label)


def _worker_failure(worker: Worker, f: WorkerFailure) -> RunFailure:
    detail = f.message + (f"\nworker output (tail):\n{f.log_tail.strip()}" if f.log_tail.strip() else "")
    if f.kind == "sandbox":  # the machine cannot confine the worker: said by the parent, not the worker
        return RunFailure(Status.INTERNAL_ERROR, detail)
    if not is_candidate(worker):
        return RunFailure(Status.INTERNAL_ERROR, f"{worker.role}: {detail}")
    if f.kind == "timeout":
        return RunFailure(Status.TIMEOUT, detail)
    if f.kind == "protocol":
        return RunFailure(Status.REJECTED, f"result channel: {detail}")
    if f.kind == "policy":  # what solve() did, refused by the Triton worker (judge/worker/triton_gpu.py)
        return RunFailure(Status.REJECTED, detail)
    return RunFailure(Status.RUNTIME_ERROR, detail)  # crash, cuda, python, os, malformed


def interfered(e: Interference) -> RunFailure:
    """The candidate's verdict for a baseline worker that ended from outside a second time."""
    return RunFailure(Status.RUNTIME_ERROR, f"the {e.worker.role} worker {e.how} while the candidate's worker was "
                      f"running, again after the judge restarted it: {e.message}")


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
