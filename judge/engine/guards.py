"""The parent's runtime guards (docs/security.md): what the parent checks itself,
around what the worker claims.

- memory blame: device memory exhausted in the parent is the submission's fault once solve() has
  run (its worker holds memory it never freed), the judge's before (`memory`);
- check records, in a buffer the parent owns (`counter`, `zero`, `records`): completeness counts
  (`require_complete`) and the worker's fingerprints of the outputs right after each call, against
  the parent's own of the final outputs (`require_unchanged`); the GPU stamps are
  judge/engine/stamps.py's;
- guard regions after every buffer (`overrun`, judge/gpu/guard_regions.py);
- the GPU health gate before each phase (`gate`, judge/gpu/health.py);
- input digests (`checksums`), and inputs re-drawn before every timed batch (`redraw`, `changed`).

Building blocks: judge/gpu/integrity.py and judge/gpu/health.py. Each guard is a function of the
session and explicit inputs; the phases (judge/engine/correctness.py, benchmarks.py) call them at
the right moments.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from judge.contract.verdict import Status
from judge.engine.outcome import RunFailure, changed_after, incomplete, wrote_past_end
from judge.engine.session import Session
from judge.gpu import health, integrity
from judge.gpu.cudart import CudaError
from judge.problem.spec import Workload
from judge.worker.client import KILLED
from judge.worker.protocol import CHECK_COUNT, CHECK_FINGERPRINT, CHECK_STRIDE

if TYPE_CHECKING:
    from judge.gpu.devmem import Buffer


@contextmanager
def memory(s: Session, what: str) -> Iterator[None]:
    """Device memory exhausted in the parent while doing `what`: blamed by `oom`."""
    try:
        yield
    except CudaError as e:
        if e.name != "cudaErrorMemoryAllocation":
            raise
        raise oom(s, what, str(e)) from None
    except s.torch.cuda.OutOfMemoryError as e:
        raise oom(s, what, str(e).splitlines()[0]) from None


def oom(s: Session, what: str, detail: str) -> RunFailure:
    if s.called:
        return RunFailure(Status.RUNTIME_ERROR, f"device memory exhausted: the judge could not allocate {what} "
                          f"after solve() had run (does solve() keep or leak device memory?): {detail}")
    return RunFailure(Status.INTERNAL_ERROR, f"device memory exhausted allocating {what}: {detail}")


# -- check records (judge/worker/protocol.py's CHECK_STRIDE layout) --------------------------------
def counter(s: Session, tag: str, n: int) -> Buffer:
    """A check record per call (count, fingerprint, two GPU stamps: CHECK_STRIDE bytes), in a
    buffer the parent owns; as a tensor, n rows of CHECK_STRIDE // 8 int64."""
    with memory(s, "the completeness counts"):
        buf = s.device_buffers().alloc(f"{tag}#completeness", "int64", (n, CHECK_STRIDE // 8))
    buf.tensor.zero_()
    return buf


def zero(s: Session, counts: Buffer) -> None:
    counts.tensor.zero_()
    s.torch.cuda.synchronize()


def records(counts: Buffer, k: int) -> list[list[int]]:
    """The first `k` records, each [count, fingerprint, start stamp, end stamp] as unsigned ints."""
    return [[v & integrity.MASK64 for v in row] for row in counts.tensor[:k].tolist()]


def require_complete(counts: Buffer, k: int, where: str) -> None:
    """The first `k` calls' counts must all be zero: no output word still held the poison."""
    left = int(counts.tensor[:k, CHECK_COUNT].sum())
    if left:
        raise RunFailure(Status.REJECTED, incomplete(left, where))


def require_unchanged(s: Session, counts: Buffer, calls: list[tuple[int, list[tuple[Buffer, int]]]],
                      where: str, test_call: bool = False) -> None:
    """Each (record index, [(output buffer, salt)]) of `calls`: the fingerprint the worker took right
    after the call must be the parent's own of the outputs now. Only calls whose outputs no later
    call of the request overwrote can be compared (a batch uses each slot at most once)."""
    if not calls:
        return
    with memory(s, f"the fingerprints of {where}"):
        now = s.witness().fingerprints([outputs for _, outputs in calls])
    recorded = counts.tensor[:, CHECK_FINGERPRINT].tolist()
    for (i, _), mine in zip(calls, now):
        if recorded[i] & integrity.MASK64 != mine:
            raise RunFailure(Status.REJECTED, changed_after(where, test_call))


def outputs_of(s: Session, bufs: dict[str, Buffer]) -> list[tuple[Buffer, int]]:
    """A call's outputs with their salts: output j (the order the worker is told them) has salt j."""
    return [(bufs[p.name], j) for j, p in enumerate(s.problem.outputs)]


# -- guard regions (judge/gpu/guard_regions.py) -----------------------------------------------------
def overrun(s: Session, bufs: dict[str, Buffer], where: str) -> RunFailure | None:
    """REJECTED when solve() wrote into the guard region after one of `bufs` (outputs first)."""
    return overruns(s, [(bufs, where)])


def overruns(s: Session, calls: list[tuple[dict[str, Buffer], str]]) -> RunFailure | None:
    """`overrun` of several calls' buffers (each with where it was), with one wait for all."""
    from judge.gpu import guard_regions

    named = [(name, b, where) for bufs, where in calls
             for name, b in sorted(bufs.items(), key=lambda nb: not nb[1].output) if b.slack is not None]
    with memory(s, f"the guard regions of {calls[0][1] if calls else ''}"):
        reach = guard_regions.overruns([(b.slack, b.expected) for _, b, _ in named])
    for (name, b, where), r in zip(named, reach):
        if r:
            return RunFailure(Status.REJECTED, wrote_past_end(name, b.output, r, where))
    return None


# -- the health gate ------------------------------------------------------------------------------
def gate(s: Session, phase: str) -> None:
    """The GPU health gate (judge/gpu/health.py). Workers this process killed must have released
    their memory; once they have, they are forgotten (their pids may be reused)."""
    live = {p.pid for w in s.workers if (p := getattr(w, "proc", None)) is not None and p.poll() is None}
    dead = KILLED - live
    try:
        health.wait_until_fit(s.require_gpu().index, dead)
    except health.Unhealthy as e:
        raise RunFailure(Status.INTERNAL_ERROR, f"before {phase}: {e}") from None
    KILLED.difference_update(dead | live)


# -- inputs: fresh draws and checksums ------------------------------------------------------------
def inputs_of(s: Session, bufs: dict[str, Buffer]) -> dict[str, Any]:
    """The input tensors among a call's buffers."""
    return {p.name: bufs[p.name].tensor for p in s.problem.tensors if not p.ctype.is_output}


def checksums(s: Session, inputs: dict[str, Any], where: str) -> dict[str, int]:
    """The digest of every input (integrity.digest), in one pass and one wait."""
    return checksums_of(s, [inputs], where)[0]


def checksums_of(s: Session, calls: list[dict[str, Any]], where: str) -> list[dict[str, int]]:
    """`checksums` of several calls' inputs, all in one pass and one wait."""
    tensors = [t for inputs in calls for t in inputs.values()]
    with memory(s, f"the input checksums of {where}"):
        flat = iter(s.witness().digests(tensors))
    return [{name: next(flat) for name in inputs} for inputs in calls]


def changed(s: Session, inputs: dict[str, Any], sums: dict[str, int], where: str) -> list[str]:
    """The inputs whose digest is no longer `sums`' (solve() wrote to them)."""
    return [name for name, now in checksums(s, inputs, where).items() if now != sums[name]]


def redraw(s: Session, w: Workload, bufs: dict[str, Buffer], tag: str, where: str) -> None:
    """Fresh inputs in `bufs` under `tag` (the worker never draws): an answer cached by pointer or
    by content from any earlier call is now wrong. The caller takes their checksums (`checksums_of`,
    for every slot it re-drew at once)."""
    from judge.problem import workloads

    with memory(s, f"the inputs of {where}"):
        workloads.fill_inputs(s.problem, w, inputs_of(s, bufs), s.secret, tag)
