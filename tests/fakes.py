"""The tests' stand-ins for a worker, the parent's GPU buffers and torch.cuda: one place for them.

`FakeWorker` answers every request the engine sends (judge/engine/roles.py's `Worker`): timed
batches with scripted times, a `call` or a `time_batch` through a hook, and a `WorkerFailure` when
`fail` says so. `cpu_session` is a judge/engine/session.py `Session` whose buffers are CPU tensors.
"""
from __future__ import annotations

import time
from collections.abc import Callable

import torch

from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine.buffers import Slots
from judge.engine.compare import Interleaved
from judge.engine.session import Options, Session
from judge.gpu.device import GpuInfo, Peaks
from judge.worker.client import WorkerFailure


class Log:
    """Who was asked for a timed batch, in order: (worker name, calls)."""

    def __init__(self):
        self.batches: list[tuple[str, int]] = []


Times = Callable[[int, int], float]  # (timed batches asked so far, call index) -> ms


class FakeWorker:
    """A scripted worker.

    times: ms per timed call, a constant or `times(batch, i)`; count(k): how many times a batch of k
    answers (a malformed reply when not k); only: the ops it may be sent (asserted); log: a shared
    `Log` of timed batches; fail(op, worker): a WorkerFailure to raise instead of answering, or
    None; on(op, args, worker): runs before an op is answered (a `call` that writes outputs);
    not_ready: the WorkerFailure `wait_ready` raises."""

    instances = 0

    def __init__(self, times: float | Times = 0.001, *, name: str = "", role: str = "candidate", label: str = "",
                 log: Log | None = None, count: Callable[[int], int] | None = None, only: set[str] | None = None,
                 fail: Callable[[str, FakeWorker], WorkerFailure | None] | None = None,
                 on: Callable[[str, dict, FakeWorker], None] | None = None,
                 not_ready: WorkerFailure | None = None, realtime: bool = False):
        FakeWorker.instances += 1
        self.id = FakeWorker.instances
        self.times = times if callable(times) else (lambda b, i, ms=times: ms)
        self.name, self.role, self.label, self.log = name, role, label, log
        self.count, self.only, self.fail, self.on, self.not_ready = count, only, fail, on, not_ready
        self.ops: list[str] = []
        self.asked: list[int] = []  # k of every timed batch
        self.rests: list[float] = []  # the rest every timed batch was asked for
        self.requests: list[tuple[str, float]] = []  # (op, deadline in s) of every request
        self.realtime, self.waited_s = realtime, 0.0
        self.closed = False

    def wait_ready(self) -> dict:
        if self.not_ready:
            raise self.not_ready
        return {}

    def request(self, op, timeout_s, what, **args):
        if self.only is not None:
            assert op in self.only, op
        self.ops.append(op)
        self.requests.append((op, timeout_s))
        if op == "time_batch":
            self.asked.append(args["k"])
            self.rests.append(args.get("rest", 0.0))
            if self.log is not None:
                self.log.batches.append((self.name, args["k"]))
        if self.fail and (failure := self.fail(op, self)):
            raise failure
        if self.on:
            self.on(op, args, self)
        if op != "time_batch":
            return {}
        n = self.count(args["k"]) if self.count else args["k"]
        times = [self.times(len(self.asked), i) for i in range(n)]
        if self.realtime:
            busy_s = sum(times) / 1000 * (1 + args.get("rest", 0.0))
            if busy_s > timeout_s:  # the client kills the worker at the deadline
                self.waited_s += timeout_s
                raise WorkerFailure("timeout", f"{what}: no answer within {timeout_s:.1f} s")
            time.sleep(busy_s)
            self.waited_s += busy_s
        return {"times_ms": times}

    def close(self):
        self.closed = True


def fails_on(op: str, failure: WorkerFailure, after: int = 0) -> Callable[[str, FakeWorker], WorkerFailure | None]:
    """`fail` for a FakeWorker: `failure` on `op` once it was sent more than `after` times."""
    return lambda o, w: failure if o == op and w.ops.count(op) > after else None


class CpuBuffers:
    """judge/gpu/devmem.py's `DeviceBuffers` on the CPU: ids and tensors, no IPC."""

    def __init__(self):
        self.buffers = {}

    def alloc(self, id, dtype, shape):
        from judge.gpu.devmem import Buffer

        t = torch.zeros(shape, dtype=getattr(torch, dtype))
        b = Buffer(id, 0, max(1, t.numel() * t.element_size()), dtype, tuple(shape), t, "")
        self.buffers[id] = b
        return b

    def free(self):
        self.buffers.clear()


class FakeCuda:
    OutOfMemoryError = MemoryError

    @staticmethod
    def synchronize():
        pass

    @staticmethod
    def mem_get_info():
        return (1 << 30, 1 << 31)


class FakeTorch:
    cuda = FakeCuda


GPU = GpuInfo(index=0, name="Fake GPU", uuid="GPU-fake", driver="0", major=9, minor=0, memory_bytes=1 << 34)
PEAKS = Peaks(gpu="Fake GPU", uuid="GPU-fake", copy_gbps=3000.0, fp32_tflops=60.0, fp16_tensor_tflops=900.0,
              bf16_tensor_tflops=900.0)


def cpu_session(problem, secret: int = 1, mode: str = "test", **opts) -> Session:
    """A session of `problem` with CPU buffers, a fake torch.cuda and a fake GPU (no workers yet)."""
    report = Report(problem=problem.name, solution="x", mode=mode, source_sha256="0", status=Status.ACCEPTED)
    s = Session(problem, Options(mode=mode, secret=secret, **opts), report)
    s.torch, s.buffers, s.gpu = FakeTorch(), CpuBuffers(), GPU
    return s


def pair_session(problem, workers, **opts) -> Session:
    """A `cpu_session` for `judge compare`'s timing: `spawn` hands out `workers` in turn (A, B),
    with the role and label asked for; torch is not started."""
    s = cpu_session(problem, **opts)
    spawned = iter(workers)

    def spawn(role, torch=False, label=""):
        w = next(spawned)
        w.role, w.label = role, label
        s.workers.append(w)
        return w

    s.spawn, s.start_torch = spawn, lambda: None
    return s


class CpuSolver:
    """`on` for a FakeWorker that does what a worker does to the session's CPU buffers: `call`
    and the timed calls of `time_batch` (rotating over the prepared slots) write C = A + B
    (vector_add), or keep answering from a cache per slot (`cache=True`: stale once inputs are
    re-drawn)."""

    def __init__(self, s: Session, cache: bool = False):
        self.s, self.cache = s, cache
        self.slots: list[list[dict]] = []
        self.next = 0
        self.answers: dict[int, torch.Tensor] = {}

    def __call__(self, op, args, worker):
        if op == "prepare":
            self.slots, self.next = args["slots"], 0
        elif op == "call":
            self.solve(args["args"], None)
        elif op == "time_batch":
            for _ in range(args["k"]):
                k = self.next % len(self.slots)
                self.next += 1
                self.solve(self.slots[k], k)

    def solve(self, call_args, slot):
        bufs = self.s.buffers.buffers
        a, b, c = (bufs[x["buf"]].tensor for x in call_args[:3])
        if self.cache and slot in self.answers:
            c.copy_(self.answers[slot])
            return
        c.copy_(a + b)
        if slot is not None:
            self.answers[slot] = c.clone()


class FakeInterleaved(Interleaved):
    """compare's timed phase with the GPU parts faked: three empty slots, and each re-check
    recorded as (shape, the side that ran the last batch, slot)."""

    def __init__(self, log: Log, rechecked: list | None = None):
        self.log, self.rechecked = log, [] if rechecked is None else rechecked

    def slots(self, s, j, w):
        return Slots([{}, {}, {}], [], [[], [], []], [[], [], []])

    def recheck(self, s, j, w, slots, k):
        self.rechecked.append((j, [n for n, _ in self.log.batches][-1], k))
