"""What a Triton submission's solve() does, watched from inside its worker (judge/worker/triton_gpu.py).

`Watch.install()` wraps three methods of Triton's runtime, before any of the submission's code
runs (its AST policy, judge/build/pypolicy.py, keeps it from reaching them or this module):

- `JITFunction.run`: every kernel launch is counted, and while one is under way the torch
  operations Triton's launcher makes are not the submission's;
- `JITFunction._do_compile`: every compilation is counted and timed; once `lock()` was called (the
  warm-up is over), a compilation is refused (`Refused`): the kernels must all compile in the
  warm-up, so that a solve() that compiles a new kernel per call (to dodge the warm-up, or to carry
  state in constexprs) is stopped;
- `Autotuner._bench`: every configuration benchmarked is counted and its benchmarking timed (the
  compiling inside it is `compile_s`'s, not `tune_s`'s); after `lock()` re-tuning is
  refused too (the warm-up tuned every benchmark shape, so a new key means solve() varies what
  the key depends on between calls). With `quick_tuning` (the tests' worker: which configuration
  a test runs never reaches the timing) each configuration is timed by one call (`one_call_ms`)
  instead of the autotuner's own benchmark (Triton's default: 25 ms of warm-up, then 100 ms of
  calls, per configuration); the timed calls' worker tunes as the submission asks.

`call(fn)` runs fn() under a TorchDispatchMode that records every torch operation outside a
kernel launch that is not in `ALLOWED_OPS` (allocating, viewing, filling): a solve() whose
outputs come from torch compute (torch.matmul for hgemm, an `add`, a `copy_`) is refused with
the operations named, and so is one that launched no Triton kernel.

Everything here runs in the process the submission owns: what it reports is a claim the judge
trusts only as far as the AST policy keeps the submission's code away from it (docs/security.md).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

# torch operations a solve() may call itself: allocating, viewing and filling (scratch, zeroed
# outputs). Anything else (add, copy_, clone, to, matmul, ...) is compute done outside Triton.
ALLOWED_OPS = frozenset("""
empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros full full_like
new_full ones ones_like new_ones zero_ fill_ view _unsafe_view reshape as_strided alias detach t
transpose permute expand slice select unsqueeze squeeze split unbind narrow view_as unflatten flatten
lift_fresh
""".split())


def one_call_ms(kernel_call: Callable[[], object], quantiles: Any = None, **_: Any) -> Any:
    """The quick tuning's benchmark, in the autotuner's `do_bench` form: one call (its first:
    Triton compiles there), then one more timed by CUDA events; the time once per quantile asked."""
    import torch

    kernel_call()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    kernel_call()
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    return [ms] * len(quantiles) if quantiles else ms


@contextmanager
def benchmarked_by_one_call(tuner: Any) -> Iterator[None]:
    """The autotuner's benchmark is `one_call_ms` inside the block, its own again after it. Triton's
    `do_bench` is a cached property over `_do_bench`: both are set, and both restored."""
    saved = {k: tuner.__dict__[k] for k in ("do_bench", "_do_bench") if k in tuner.__dict__}
    tuner.__dict__.update(do_bench=one_call_ms, _do_bench=one_call_ms)
    try:
        yield
    finally:
        for k in ("do_bench", "_do_bench"):
            tuner.__dict__.pop(k, None)
        tuner.__dict__.update(saved)


class Refused(Exception):
    """What a solve() did that the judge refuses (the worker's error of kind "policy": REJECTED)."""


def op_name(func: Any) -> str:
    """`aten.add.Tensor` -> `add`"""
    return str(getattr(func, "__name__", func)).split(".")[0]


class Watch:
    def __init__(self) -> None:
        self.depth = 0  # launches under way (a launch inside the autotuner's is nested)
        self.launches = 0
        self.ops: list[str] = []
        self.compiled = 0
        self.compile_s = 0.0
        self.configs = 0
        self.tune_s = 0.0  # the autotuner's benchmarking, its compiling left out
        self.quick_tuning = False
        self.locked = False
        self.mode: Any = None

    def install(self) -> None:
        from torch.utils._python_dispatch import TorchDispatchMode
        from triton.runtime import autotuner, jit

        watch = self
        run, compile_, bench = jit.JITFunction.run, jit.JITFunction._do_compile, autotuner.Autotuner._bench

        def counted_run(fn, *args, **kwargs):
            if not kwargs.get("warmup"):
                watch.launches += 1
            watch.depth += 1
            try:
                return run(fn, *args, **kwargs)
            finally:
                watch.depth -= 1

        def timed_compile(fn, *args, **kwargs):
            if watch.locked:
                raise Refused(f"solve() compiled a Triton kernel ({getattr(fn, '__name__', '?')}) after the "
                              "warm-up: every kernel must compile in the warm-up, on the problem's shapes "
                              "(a kernel compiled per call is refused)")
            t0 = time.perf_counter()
            try:
                return compile_(fn, *args, **kwargs)
            finally:
                watch.compiled += 1
                watch.compile_s += time.perf_counter() - t0

        def counted_bench(tuner, *args, **kwargs):
            if watch.locked:
                raise Refused("solve() autotuned after the warm-up: the autotuner met a key it had not tuned "
                              "on the problem's shapes (its key must depend on the shapes only)")
            watch.configs += 1
            t0, compiled_s = time.perf_counter(), watch.compile_s
            try:
                if watch.quick_tuning:
                    with benchmarked_by_one_call(tuner):
                        return bench(tuner, *args, **kwargs)
                return bench(tuner, *args, **kwargs)
            finally:
                watch.tune_s += time.perf_counter() - t0 - (watch.compile_s - compiled_s)

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                if watch.depth == 0:
                    name = op_name(func)
                    if name not in ALLOWED_OPS and name not in watch.ops:
                        watch.ops.append(name)
                return func(*args, **(kwargs or {}))

        jit.JITFunction.run = counted_run
        jit.JITFunction._do_compile = timed_compile
        autotuner.Autotuner._bench = counted_bench
        self.mode = Record

    def lock(self) -> None:
        self.locked = True

    def call(self, fn: Callable[[], object]) -> None:
        """fn() (a solve() call), recorded; Refused if it computed with torch or launched nothing."""
        import torch

        self.launches, self.ops = 0, []
        with self.mode(), torch.no_grad():
            fn()
        if self.ops:
            raise Refused(f"solve() computed with torch outside Triton kernels ({', '.join(self.ops)}): the work "
                          "must be done by kernels it launches; torch may only allocate, view and fill tensors")
        if not self.launches:
            raise Refused("solve() launched no Triton kernel")
