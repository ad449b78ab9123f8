"""A Triton candidate's warm-up (judge/worker/triton_gpu.py): solve() once on every workload its
worker will be called on, while Triton may still compile and autotune; then the worker confines
itself (`confine`: compiling locked, the seccomp filter on). The tests' worker tunes quickly (each
autotuner configuration timed by one call: which one a test runs never reaches the timing); the
timed calls' worker tunes as the submission's autotuner asks (judge/worker/triton_watch.py).

Outside every timed window and every check: the inputs are drawn under tags of their own (never
a test's or a timed call's), the outputs are scratch, and the buffers are freed after each
workload. What it took goes into the report (`Report.warm_up`): the wall time, Triton's compile
time, the kernels compiled, the autotuner configurations tried and the time their benchmarking
took, and which configuration each autotuner kept per shape (`tuned`: two runs may time different
ones). Each warm call is bounded by the problem's timeout plus COMPILE_S of compiling and tuning.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

from judge.contract.report import WarmUp
from judge.engine import buffers
from judge.engine.roles import Worker
from judge.engine.session import Session
from judge.problem.spec import Workload
from judge.worker.triton_tuned import clean

COMPILE_S = 60.0  # per workload, on top of the problem's timeout: Triton's compiling and autotuning


def warm_up(s: Session, worker: Worker, workloads: Sequence[tuple[str, Workload]], phase: str) -> None:
    """A Triton candidate's worker, loaded: solve() once per workload (`label`: how a failure names
    it; a hidden shape by its number), then `confine`; the warm-up into the report. Nothing for
    other workers (the native worker confines itself at `init`)."""
    if not getattr(worker, "triton", False):
        return
    t0 = time.perf_counter()
    entry = WarmUp(phase=phase, workloads=0, seconds=0.0, compile_s=0.0, tune_s=0.0, kernels=0, configs=0)
    for i, (label, w) in enumerate(workloads):
        tag = f"warm.{phase}{i}"
        bufs = buffers.alloc(s, tag, w)
        buffers.fill(s, tag, w, bufs)
        s.torch.cuda.synchronize()
        s.ask(worker, "map", 60, "mapping buffers", buffers=[b.wire() for b in bufs.values()])
        s.called = True
        reply = s.ask(worker, "warm", s.problem.spec.timeout_s + COMPILE_S,
                      f"warming up solve() on {label} (Triton compiles here)", args=buffers.call_args(s, bufs, w),
                      tuning="quick" if phase == "tests" else "full")
        s.ask(worker, "unmap", 60, "unmapping buffers")
        s.device_buffers().free(b.id for b in bufs.values())
        entry.workloads += 1
        entry.compile_s += float(reply.get("compile_s", 0.0))
        entry.tune_s += float(reply.get("tune_s", 0.0))
        entry.kernels += int(reply.get("compiled", 0))
        entry.configs += int(reply.get("configs", 0))
        entry.tuned += [f"{label}: {line}" for line in clean(reply.get("tuned", ""))]
    s.ask(worker, "confine", 30, "confining the worker after the warm-up")
    entry.seconds = round(time.perf_counter() - t0, 3)
    entry.compile_s, entry.tune_s = round(entry.compile_s, 3), round(entry.tune_s, 3)
    s.report.warm_up.append(entry)
