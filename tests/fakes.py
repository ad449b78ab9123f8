"""The tests' stand-ins for a worker, the parent's GPU buffers and torch.cuda: one place for them.

`FakeWorker` answers every request the engine sends (judge/engine/roles.py's `Worker`): timed
batches with scripted times, a `call` or a `time_batch` through a hook, and a `WorkerFailure` when
`fail` says so. `cpu_session` is a judge/engine/session.py `Session` whose buffers are CPU tensors
(with their guard regions), whose view of the device is `CpuWitness` (the reference fingerprint and
a scripted GPU clock, `FakeClock`), and whose peaks and baseline files were read (`preload`).
`CpuSolver` does a worker's part on them: solve(), then the check record the worker's kernels
write (`record_check`, `record_stamps`: judge/worker/protocol.py's CHECK_STRIDE layout).
"""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence

import torch

from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.engine.session import Options, Session
from judge.engine.stats import TimingPolicy
from judge.gpu import guard_regions, integrity, seal
from judge.gpu.device import GpuInfo, Peaks
from judge.worker.client import WorkerFailure
from judge.worker.protocol import CHECK_COUNT, CHECK_END, CHECK_FINGERPRINT, CHECK_START


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
    not_ready: the WorkerFailure `wait_ready` raises; holds(batch, hold): the batch's hold fields
    ({"crowded": n, "late": n, "host_ms": [...]}: judge/worker/native/hold.h), by default every call
    held when asked to, none crowded or late."""

    instances = 0

    def __init__(self, times: float | Times = 0.001, *, name: str = "", role: str = "candidate", label: str = "",
                 log: Log | None = None, count: Callable[[int], int] | None = None, only: set[str] | None = None,
                 fail: Callable[[str, FakeWorker], WorkerFailure | None] | None = None,
                 on: Callable[[str, dict, FakeWorker], None] | None = None,
                 not_ready: WorkerFailure | None = None, realtime: bool = False,
                 holds: Callable[[int, bool], dict] | None = None):
        FakeWorker.instances += 1
        self.holds = holds
        self.hold_asked: list[bool] = []  # the `hold` every timed batch was asked for
        self.id = FakeWorker.instances
        self.times = times if callable(times) else (lambda b, i, ms=times: ms)
        self.name, self.role, self.label, self.log = name, role, label, log
        self.count, self.only, self.fail, self.on, self.not_ready = count, only, fail, on, not_ready
        self.ops: list[str] = []
        self.asked: list[int] = []  # k of every timed batch
        self.rests: list[float] = []  # the rest every timed batch was asked for
        self.sealed: list[bool] = []  # whether every timed batch was sealed (came with keys)
        self.keys: list | None = None
        self.requests: list[tuple[str, float]] = []  # (op, deadline in s) of every request
        self.realtime, self.waited_s = realtime, 0.0
        self.closed = False

    def wait_ready(self) -> dict:
        if self.not_ready:
            raise self.not_ready
        return {}

    def request(self, op, timeout_s, what, keys=None, **args):
        self.keys = keys  # a sealed batch's keys (judge/gpu/seal.py): a CpuSolver opens the inputs with them
        if self.only is not None:
            assert op in self.only, op
        self.ops.append(op)
        self.requests.append((op, timeout_s))
        if op == "time_batch":
            self.sealed.append(keys is not None)
            self.asked.append(args["k"])
            self.rests.append(args.get("rest", 0.0))
            self.hold_asked.append(bool(args.get("hold")))
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
        held = bool(args.get("hold"))
        return {"times_ms": times, "held": held, "crowded": 0, "late": 0, "host_ms": [0.01] * n,
                **(self.holds(len(self.asked), held) if self.holds else {})}

    def close(self):
        self.closed = True


def fails_on(op: str, failure: WorkerFailure, after: int = 0) -> Callable[[str, FakeWorker], WorkerFailure | None]:
    """`fail` for a FakeWorker: `failure` on `op` once it was sent more than `after` times."""
    return lambda o, w: failure if o == op and w.ops.count(op) > after else None


class CpuBuffers:
    """judge/gpu/devmem.py's `DeviceBuffers` on the CPU: ids and tensors, each followed in its
    storage by its guard region (judge/gpu/guard_regions.py), no IPC."""

    def __init__(self):
        self.buffers = {}

    def alloc(self, id, dtype, shape, output=True):
        from judge.gpu.devmem import Buffer

        dt = getattr(torch, dtype)
        numel = math.prod(shape)
        used = numel * torch.empty((), dtype=dt).element_size()
        nbytes = max(1, used)
        raw = torch.zeros(guard_regions.padded(nbytes), dtype=torch.uint8)
        t = raw[:used].view(dt).view(tuple(shape)) if numel else torch.zeros(shape, dtype=dt)
        slack = raw[nbytes:]
        b = Buffer(id, 0, nbytes, dtype, tuple(shape), t, "", slack, guard_regions.fill(slack, dtype, output), output)
        self.buffers[id] = b
        return b

    def free(self, ids=None):
        for id in list(self.buffers) if ids is None else list(ids):
            del self.buffers[id]


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
              bf16_tensor_tflops=900.0, fp8_tensor_tflops=1800.0)


class FakeClock:
    """The GPU's %globaltimer for the fakes: ns, `tick_ns` later at every look."""

    def __init__(self, start_ns: int = 1_763_900_000_000_000_000, tick_ns: int = 1000):
        self.t, self.tick = start_ns, tick_ns

    def now(self) -> int:
        self.t += self.tick
        return self.t


class CpuWitness:
    """judge/gpu/witness.py's `Witness` on the CPU: the reference fingerprint and a `FakeClock`."""

    def __init__(self, clock: FakeClock | None = None):
        self.clock = clock or FakeClock()
        self.asked: list[int] = []  # calls per fingerprints() request

    def fingerprints(self, calls: Sequence[Sequence[tuple]]) -> list[int]:
        self.asked.append(len(calls))
        return [sum(integrity.fingerprint(b.tensor, salt) for b, salt in outputs if integrity.fingerprinted(b.dtype))
                & integrity.MASK64 for outputs in calls]

    def digests(self, tensors: Sequence) -> list[int]:
        return [integrity.digest(t) for t in tensors]

    def seal(self, calls: Sequence[Sequence], keys: Sequence) -> None:
        for inputs, key in zip(calls, keys):
            seal.crypt_call([b.tensor for b in inputs], key)

    def stamp(self) -> int:
        return self.clock.now()

    tick_ns = 0


def _signed(v: int) -> int:
    v &= integrity.MASK64
    return v - (1 << 64) if v >= 1 << 63 else v


def record_check(counts, i: int, outputs: Sequence[tuple]) -> None:
    """What judge_check16/32 add to record `i` of the counter buffer for a call's outputs, each
    (Buffer, poison word or None), output j with salt j."""
    row = counts.tensor[i]
    for j, (b, word) in enumerate(outputs):
        if word is None or not b.tensor.numel():
            continue
        width = integrity.WIDTH[b.dtype]
        w = b.tensor.reshape(-1).view(torch.int16 if width == 2 else torch.int32).to(torch.int64)
        row[CHECK_COUNT] += int(((w & ((1 << (8 * width)) - 1)) == word).sum())
        row[CHECK_FINGERPRINT] = _signed(int(row[CHECK_FINGERPRINT]) + integrity.fingerprint(b.tensor, j))


def record_stamps(counts, i: int, start_ns: int, end_ns: int) -> None:
    counts.tensor[i, CHECK_START], counts.tensor[i, CHECK_END] = start_ns, end_ns


def cpu_session(problem, secret: int = 1, mode: str = "test", **opts) -> Session:
    """A session of `problem` with CPU buffers, a fake torch.cuda, a fake GPU and its peaks, and
    the CPU view of the device (no workers yet); what the parent reads from files, read."""
    from judge.engine.run import preload

    report = Report(problem=problem.name, solution="x", mode=mode, source_sha256="0", status=Status.ACCEPTED)
    s = Session(problem, Options(mode=mode, secret=secret, **opts), report)
    s.torch, s.buffers, s.gpu, s.view, s.peaks = FakeTorch(), CpuBuffers(), GPU, CpuWitness(), PEAKS
    preload(s)
    return s


def with_benchmarks(problem, *shapes: dict):
    """`problem` with these benchmark shapes (small ones, for the CPU fakes)."""
    import dataclasses

    return dataclasses.replace(problem, spec=problem.spec.model_copy(update={"benchmarks": list(shapes)}))


def pair_session(problem, workers, solvers: Sequence[dict] | None = None, **opts) -> Session:
    """A `cpu_session` for `judge compare`'s timing: `spawn` hands out `workers` in turn (A, B),
    with the role and label asked for; torch is not started. A worker without an `on` gets a
    `CpuSolver` of the session (with `solvers[i]` as its arguments)."""
    s = cpu_session(problem, **opts)
    for i, w in enumerate(workers):
        if w.on is None:
            w.on = CpuSolver(s, **(solvers[i] if solvers else {}))
    spawned = iter(workers)

    def spawn(role, torch=False, label="", triton=None):
        w = next(spawned)
        w.role, w.label = role, label
        s.workers.append(w)
        return w

    s.spawn, s.start_torch = spawn, lambda: None
    return s


class CpuSolver:
    """`on` for a FakeWorker that does what a worker does to the session's CPU buffers: `call`
    and the timed calls of `time_batch` (rotating over the prepared slots, outputs poisoned before
    each) write C = A + B (vector_add), or keep answering from a cache per slot (`cache=True`:
    stale once inputs are re-drawn); with a counter buffer, each call's check record follows
    (count and fingerprint right after the call; stamps `gap_ns` wider than the reported time).
    `late(tensors)` runs after a timed call's check (work that finished after its end event), with
    the call's A, B and C, and under "slack" their guard regions.
    `unwritten`: the timed calls leave their outputs as the poison left them."""

    def __init__(self, s: Session, cache: bool = False, gap_ns: int = 2000,
                 late: Callable[[dict], None] | None = None, unwritten: bool = False):
        self.s, self.cache, self.gap_ns, self.late, self.unwritten = s, cache, gap_ns, late, unwritten
        self.slots: list[list[dict]] = []
        self.outputs: list[list[dict]] = []
        self.counter: str | None = None
        self.inputs: list[list[dict]] | None = None
        self.next = 0
        self.answers: dict[int, torch.Tensor] = {}

    def __call__(self, op, args, worker):
        bufs = self.s.buffers.buffers
        if op == "prepare":
            self.slots, self.outputs, self.counter, self.next = args["slots"], args["outputs"], args["counter"], 0
            self.inputs = args.get("inputs")
        elif op == "call":
            self.solve(args["args"], None)
            if args.get("counter"):
                record_check(bufs[args["counter"]], 0, [(bufs[o["buf"]], o.get("word")) for o in args["outputs"]])
        elif op == "time_batch":
            clock = self.s.witness().clock
            for i in range(args["k"]):
                k = self.next % len(self.slots)
                self.next += 1
                words = [self.poison(bufs[o["buf"]]) for o in self.outputs[k]]
                if worker.keys is not None:  # the gate opens the sealed inputs
                    seal.crypt_call([bufs[x["buf"]].tensor for x in self.inputs[k]], seal.Key(*worker.keys[i]))
                start = clock.now()
                if not self.unwritten:
                    self.solve(self.slots[k], k)
                clock.t = end = start + int(worker.times(len(worker.asked), i) * 1e6) + self.gap_ns
                if self.counter:
                    record_stamps(bufs[self.counter], i, start, end)
                    record_check(bufs[self.counter], i, [(bufs[o["buf"]], w) for o, w in zip(self.outputs[k], words)])
                if self.late:
                    used = dict(zip(("A", "B", "C"), (bufs[x["buf"]] for x in self.slots[k])))
                    slack = {n: b.slack for n, b in used.items()}
                    self.late({**{n: b.tensor for n, b in used.items()}, "slack": slack})

    @staticmethod
    def poison(b) -> int | None:
        word = integrity.poison_word(b.dtype, random.Random())
        if word is not None:
            integrity.fill_tensor(b.tensor, b.dtype, word)
        return word

    def solve(self, call_args, slot):
        bufs = self.s.buffers.buffers
        a, b, c = (bufs[x["buf"]].tensor for x in call_args[:3])
        if self.cache and slot in self.answers:
            c.copy_(self.answers[slot])
            return
        c.copy_(a + b)
        if slot is not None:
            self.answers[slot] = c.clone()


QUICK = TimingPolicy(min_samples=5, warmup_ms=0.0, batch_s=0.00001, budget_s=0.05, min_time_s=0.0, rest=0.0)


def drive(gen):
    """Run a generator to its end; its return value (a phase's result)."""
    try:
        while True:
            next(gen)
    except StopIteration as stop:
        return stop.value
