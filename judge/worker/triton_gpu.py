"""The Triton candidate's worker: a `.py` submission's solve() on the GPU, timed and checked as a
native one is (`python -m judge.worker.triton_gpu`, started by judge/worker/client.py).

A Python submission needs an interpreter in the process it owns, so this worker is the Python
worker of baselines (judge/worker/main.py: the same protocol, gate, checks, stamps and sealed
inputs as the native worker) with a submission loaded instead of a baseline, and two more
commands, because Triton compiles each kernel (running ptxas and a C compiler, writing its cache)
the first time it is launched with a new specialisation, which the sandbox forbids:

  start-up  torch, Triton, the CUDA context, the judge's kernels; Triton's runtime wrapped
            (judge/worker/triton_watch.py) and one kernel of the judge's compiled and launched,
            so that Triton's driver and launcher work before any of the submission's code runs;
  init      the policy on the source text again (judge/build/pypolicy.py: the parent's text, never
            the file), then root given up for nobody and the process made non-dumpable, then the
            module executed (its top level is the submission's first code) and solve() found;
  warm      solve() once on one workload's buffers (the parent sends every shape the worker will
            be called on): Triton compiles and autotunes here, timed and counted, never in a timed
            window; the reply says how long it took, how many kernels compiled, how many
            autotuner configurations were tried (and their benchmarking's time) and which one
            each autotuner kept (judge/worker/triton_tuned.py);
  confine   compilation and autotuning locked (a later one is refused), then the seccomp filter
            (judge/sandbox/seccomp.py, as the native worker's): no process, no write-open, no
            socket, no signal to another process;
  call, prepare, time_batch  as the native worker's, confined; every call recorded: torch compute
            outside a Triton kernel, or no kernel at all, is refused (error kind "policy": REJECTED).

Between init and confine the process is not under the seccomp filter: there the wall is the AST
policy (no import but triton, triton.language, math and torch's allocating and viewing names; no
dunders, no getattr, no open), nobody's rights, the cgroup and rlimits of every worker, and the
parent's hidden memory (docs/security.md, "Python (Triton) submissions").
"""
from __future__ import annotations

import ctypes
import linecache
import os
import signal
import sys
import time
import traceback
import types

from judge.build import pypolicy
from judge.build.policy import PolicyError
from judge.gpu.cudart import CudaError
from judge.sandbox import seccomp
from judge.worker import triton_tuned
from judge.worker.main import Worker, send_error, serve
from judge.worker.protocol import ERROR_TEXT_CHARS, worker_channel
from judge.worker.triton_watch import Refused, Watch

NOBODY = 65534
PR_SET_DUMPABLE = 4


class TritonWorker(Worker):
    rehearse = None  # type: ignore[assignment]  # a baseline's command (protocol.BASELINE_OPS): refused here

    def __init__(self, out, nonce: str):
        super().__init__(out, nonce)
        self.watch = Watch()
        self.watch.install()
        self.program = b""
        self.confined = False
        self.loaded = False
        _judge_kernel()  # Triton's driver, compiler and launcher, tried on the judge's own kernel
        self.watch.compiled, self.watch.compile_s = 0, 0.0

    def init(self, params: list[dict], baseline: dict | None = None, module: str = "", source: str = "",
             seccomp: str = "", seccomp_learn: str = "") -> dict:
        if baseline or self.loaded or not module:
            raise ValueError("the Triton worker loads one submission, once")
        if seccomp_learn:
            raise ValueError("learning the seccomp list is the native worker's mode")
        pypolicy.check_source(source, os.path.basename(module))
        self.program = bytes.fromhex(seccomp)
        give_up_root()
        solve = load(source, module)
        names = [p["name"] for p in params]
        self.call_target = lambda args: self.watch.call(lambda: solve(**dict(zip(names, args))))
        self.tuners = triton_tuned.autotuners(getattr(solve, "__globals__", {}))  # its module's autotuners
        self.loaded = True
        return {}

    def warm(self, args: list, tuning: str = "full") -> dict:
        """solve() once on these buffers while Triton may compile: its time, compilations and
        autotuner configurations (the outputs are not checked: the parent sends scratch buffers).
        `tuning` "quick": each configuration timed by one call (the tests' worker, Watch)."""
        if self.confined or not self.loaded:
            raise ValueError("warm comes after init and before confine")
        if tuning not in ("full", "quick"):
            raise ValueError(f"tuning is 'full' or 'quick', not {tuning!r}")
        w = self.watch
        w.quick_tuning = tuning == "quick"
        compiled, compile_s, tune_s, configs = w.compiled, w.compile_s, w.tune_s, w.configs
        before = triton_tuned.snapshot(self.tuners)
        t0 = time.perf_counter()
        self.call_target(self._args(args))
        self.rt.last_error("launching solve()")
        self.rt.synchronize("solve() on the device")
        seconds = time.perf_counter() - t0
        tuned = triton_tuned.chosen(before, triton_tuned.snapshot(self.tuners))
        return {"seconds": float(round(seconds, 4)),
                "compile_s": float(round(w.compile_s - compile_s, 4)), "tune_s": float(round(w.tune_s - tune_s, 4)),
                "compiled": w.compiled - compiled, "configs": w.configs - configs, "tuned": tuned}

    def confine(self) -> dict:
        """The warm-up is over: no more compiling or tuning, then the filter, for good."""
        if not self.loaded:
            raise ValueError("confine comes after init")
        self.watch.lock()
        if self.program:
            seccomp.install(self.program)
        self.confined = True
        return {}

    def call(self, args: list, outputs: list[dict] | None = None, counter: str | None = None) -> dict:
        self._require_confined()
        return super().call(args, outputs, counter)

    def time_batch(self, k: int, rest: float = 0.0, per_call: bool = False, hold: bool = False,
                   sealed: bool = False) -> dict:
        self._require_confined()
        return super().time_batch(k, rest, per_call, hold, sealed)

    def _require_confined(self) -> None:
        if not self.confined:
            raise ValueError("solve() is called only after the warm-up and `confine`")


def load(source: str, path: str):
    """The submission's module from the parent's text (registered with linecache under its path,
    where Triton's `inspect.getsource` reads each kernel's source), and its solve()."""
    linecache.cache[path] = (len(source), None, source.splitlines(keepends=True), path)
    module = types.ModuleType("submission")
    module.__file__ = path
    sys.modules["submission"] = module
    exec(compile(source, path, "exec"), module.__dict__)
    solve = module.__dict__.get("solve")
    if not callable(solve):
        raise ValueError(f"{os.path.basename(path)} defines no solve()")
    return solve


def give_up_root() -> None:
    """As the native worker before it loads a library (judge/worker/native/confine.h): root gives
    up root for nobody with every group dropped (glibc applies it to every thread), and the
    process becomes non-dumpable (no ptrace, no /proc/PID/mem from other workers running as nobody)."""
    if 0 in os.getresuid():
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
        if set(os.getresuid()) != {NOBODY} or set(os.getresgid()) != {NOBODY} or os.getgroups():
            raise OSError("root was not given up: the ids or groups did not change")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def _judge_kernel() -> None:
    """A copy kernel of the judge's, compiled and launched: a Triton that cannot compile or launch
    here fails now, as the judge's problem, before any of the submission's code."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def judge_copy(src, dst, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(dst + i, tl.load(src + i, mask=i < n), mask=i < n)

    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    judge_copy[(4,)](x, y, 1000, BLOCK=256)
    torch.cuda.synchronize()
    if not torch.equal(x, y):
        raise RuntimeError("Triton does not work here: a copy kernel of the judge's gave a wrong answer")


def error_of(e: Exception) -> dict:
    """A failure as the parent reads it: a refusal of the policy's (REJECTED), else the exception
    with the end of its traceback (the submission's lines are in it)."""
    if isinstance(e, (Refused, PolicyError)):
        return {"kind": "policy", "name": type(e).__name__, "text": str(e)[:ERROR_TEXT_CHARS]}
    text = "".join(traceback.format_exception(e))
    if len(text) > ERROR_TEXT_CHARS:
        text = "...\n" + text[-ERROR_TEXT_CHARS + 4:]
    return {"kind": "python", "name": type(e).__name__, "text": text}


def main() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # judge/worker/main.py says why
    out, nonce = worker_channel()
    try:
        import torch

        torch.zeros(1, device="cuda")
        worker = TritonWorker(out, nonce)
    except (CudaError, OSError) as e:
        send_error(out, nonce, e)
        return
    except Exception as e:  # noqa: BLE001 — Triton not working here is the judge's problem
        send_error(out, nonce, OSError(f"starting Triton: {type(e).__name__}: {e}"))
        return
    serve(worker, error_of)


if __name__ == "__main__":
    main()
