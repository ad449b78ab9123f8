"""The baselines' first calls, made while the candidate is built and tested (docs/timing.md,
"The baselines' rehearsal").

A library's first call on a shape does what later calls reuse: cuDNN builds and caches its plan,
a kernel of a large library is loaded on its first launch. Made inside the "before" pass, those
costs lengthened flash_attn's verdict by ~4.6 s (docs/benchmarks.md) and were paid again by
nothing timed. Here each baseline's worker, started with the others, is loaded and calls its
baseline once on every benchmark shape, on zeros it allocates itself (`rehearse`:
judge/worker/main.py), in a thread of the parent per baseline, while the parent builds, loads
and tests the candidate. The timed phase joins the thread before it times anything
(`Rehearsal.join`); the rehearsal's outputs are never read, and nothing is timed before the join.

Why it is fair: a baseline is timed only after the join, as before, with its warm-up and its
timed calls on the parent's inputs; only its one-off set-up left the window. Nothing of the
candidate runs in a baseline's process. A Triton candidate's tests' worker warms up beside it: its
autotuner's choice there only decides which configuration the tests run, never what is timed
(judge/engine/warmup.py); the timed calls' worker tunes after the join, with the GPU to itself.

A failure in the thread (the worker did not start, load or run) is kept and raised by `join`, in
the main thread, as the same RunFailure (or `Interference`, which the timed phase answers by
restarting the worker) a load there would have raised.
"""
from __future__ import annotations

import threading

from judge.engine.buffers import scalar_arg
from judge.engine.session import Session
from judge.problem.spec import Impl

REHEARSAL_SLACK_S = 30.0  # per shape, on top of the problem's timeout: a first call's set-up (cuDNN's plan)


class Rehearsal:
    """One thread per baseline: start, load, rehearse."""

    def __init__(self, s: Session):
        self.s = s
        self.threads: dict[str, threading.Thread] = {}
        self.failures: dict[str, BaseException] = {}
        self.seconds: dict[str, float] = {}

    def start(self) -> None:
        for b, wk in self.s.baselines:
            t = threading.Thread(target=self._run, args=(b, wk), name=f"rehearsal {b.name}", daemon=True)
            self.threads[b.name] = t
            t.start()

    def _run(self, b: Impl, wk) -> None:
        s = self.s
        try:
            s.load_baseline(b, wk)
            shapes = s.problem.spec.benchmarks
            reply = s.ask(wk, "rehearse", len(shapes) * (s.problem.spec.timeout_s + REHEARSAL_SLACK_S),
                          f"the first call of baseline {b.name} on each benchmark shape",
                          workloads=[workload_args(s, w) for w in shapes])
            self.seconds[b.name] = float(reply.get("seconds", 0.0))
        except BaseException as e:  # noqa: BLE001 — raised again by join(), in the main thread
            self.failures[b.name] = e

    def started(self, b: Impl) -> bool:
        return b.name in self.threads

    def join(self, b: Impl) -> None:
        """Wait for baseline `b`'s thread; raise what failed in it. Once: a restarted worker is loaded
        by the timed phase itself."""
        t = self.threads.pop(b.name)
        t.join()
        if (failure := self.failures.pop(b.name, None)) is not None:
            raise failure
        self.s.report.rehearsal_s[b.name] = self.seconds[b.name]

    def wait(self) -> None:
        """Wait for every thread; what failed stays for `join` to raise."""
        for t in self.threads.values():
            t.join()


def workload_args(s: Session, w: dict) -> list[dict]:
    """solve()'s arguments on workload `w` as `rehearse` takes them: each tensor as the dtype and
    shape the worker allocates (zeros), each scalar as its value."""
    return [{"alloc": {"dtype": ct.element.dtype, "shape": list(s.problem.shape_of(name, w))}}  # type: ignore[union-attr]
            if ct.is_tensor else scalar_arg(ct, w[name]) for name, ct in s.problem.params]
