"""The program `judge profile` runs under Nsight Compute: one workload, a few calls of solve().

    python -m judge.runner.profile_target PROBLEM_DIR SOLUTION WORKLOAD_JSON STATUS_FILE [--calls N]
        [--worker native|triton] [--tuned KERNEL: CONFIG ...]

It draws the workload's inputs with the problem's generators on the GPU (torch), loads the
solution (`native`: SOLUTION is the built library, loaded with ctypes; `triton`: SOLUTION is the
`.py`, whose text passes the static policy again and is executed as the Triton worker executes it),
calls solve() once unprofiled (module loading, lazy initialisation, Triton's compiling and
autotuning; with `--tuned KERNEL: CONFIG` that autotuner runs that configuration, untuned), then
`--calls` times between cudaProfilerStart and cudaProfilerStop: ncu runs with
`--profile-from-start off`, so only the kernels solve() launches there are profiled, never the
input generators. The outcome goes to STATUS_FILE as JSON ({"ok": true, "tuned": "..."} or
{"ok": false, "kind": "solve" | "setup" | "usage", "error": "..."}; `tuned`: the configuration
each of a Triton file's autotuners ran, judge/worker/triton_tuned.py; "usage": a `--tuned` that
matches nothing in the file): ncu's own exit code and output are
not a channel the judge relies on. Profiling gives no verdict, so the outputs are not checked.
Run by judge/runner/profile.py; the device is the first visible one (the parent sets
CUDA_VISIBLE_DEVICES).

Not the candidate worker, and not confined: ncu injects its own library into this process and
drives the GPU's counters through it, which a seccomp filter made for solve() would refuse, and
profiling gives no verdict (the library was built and policed as `submit` does it; the profile is
the submitter's own tool, run on their machine).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from judge.worker import triton_tuned


def _write(path: str, **status) -> None:
    with open(path, "w") as f:
        json.dump(status, f)


def solve_call(problem, worker: str, solution: str, tensors: dict, workload: dict) -> Callable[[], object]:
    """solve() on these tensors and the workload's scalars, as a call of no arguments."""
    def scalar(name, ct):
        return int(workload[name]) if ct.scalar == "int" else float(workload[name])

    if worker == "triton":
        from judge.build import pypolicy
        from judge.worker.triton_gpu import load

        text = Path(solution).read_text(errors="replace")
        pypolicy.check_source(text, Path(solution).name)  # the text executed is the text checked
        fn = load(text, str(Path(solution).resolve()))
        kwargs = {name: tensors[name] if ct.is_tensor else scalar(name, ct) for name, ct in problem.params}
        return lambda: fn(**kwargs)
    so = ctypes.CDLL(solution, mode=ctypes.RTLD_LOCAL)
    native = so.solve
    native.restype = None
    native.argtypes = [ctypes.c_void_p if ct.is_tensor else ctypes.c_int if ct.scalar == "int" else ctypes.c_float
                       for _, ct in problem.params]
    call_args = [tensors[name].data_ptr() if ct.is_tensor else scalar(name, ct) for name, ct in problem.params]
    return lambda: native(*call_args)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m judge.runner.profile_target")
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("workload")
    ap.add_argument("status_file")
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("--worker", choices=("native", "triton"), default="native")
    ap.add_argument("--tuned", action="append", default=[], help="a Triton file: KERNEL: CONFIG to run untuned")
    args = ap.parse_args(argv)
    try:
        import torch  # first: its libcudart is the one judge.gpu.cudart reuses (by soname)

        from judge.gpu.cudart import Runtime
        from judge.problem import spec, workloads

        problem = spec.load_problem(args.problem)
        workload = json.loads(args.workload)
        torch.cuda.set_device(0)
        rt = Runtime(0)
        dtypes = {p.name: p.ctype.element.dtype for p in problem.tensors if p.ctype.element is not None}
        tensors = {p.name: torch.empty(problem.shape_of(p.name, workload), device="cuda",
                                       dtype=getattr(torch, dtypes[p.name]))
                   for p in problem.tensors}
        workloads.fill_inputs(problem, workload, tensors, secret=0, phase="profile")
        for p in problem.outputs:
            tensors[p.name].zero_()
        rt.synchronize("preparing the inputs")
    except Exception as e:  # noqa: BLE001 — reported through the status file
        _write(args.status_file, ok=False, kind="setup", error=f"{type(e).__name__}: {e}",
               traceback=traceback.format_exc()[-2000:])
        return 3
    try:
        solve = solve_call(problem, args.worker, args.solution, tensors, workload)  # the submission's first code
        why = pinned(args.worker, args.tuned)
        if why:
            _write(args.status_file, ok=False, kind="usage", error=f"--tuned: {why}")
            return 2
        solve()  # warm-up, unprofiled
        rt.last_error("launching solve() (warm-up call)")
        rt.synchronize("solve() on the device (warm-up call)")
    except Exception as e:  # noqa: BLE001 — the submission's error (loading it, a CUDA error, a Python one)
        _write(args.status_file, ok=False, kind="solve", error=f"{type(e).__name__}: {e}")
        return 1
    try:
        torch.cuda.profiler.start()
    except Exception as e:  # noqa: BLE001
        _write(args.status_file, ok=False, kind="setup", error=f"cudaProfilerStart: {type(e).__name__}: {e}")
        return 3
    try:
        for _ in range(max(1, args.calls)):
            solve()
        rt.last_error("launching solve()")
        rt.synchronize("solve() on the device")
    except Exception as e:  # noqa: BLE001 — a CUDA error of the submission
        _write(args.status_file, ok=False, kind="solve", error=f"{type(e).__name__}: {e}")
        return 1
    torch.cuda.profiler.stop()
    # what ran: the configurations pinned by --tuned (an autotuner of one configuration keeps no
    # cache entry), and what the others kept
    _write(args.status_file, ok=True, tuned="\n".join(filter(None, [*args.tuned, tuned(args.worker)])))
    return 0


def pinned(worker: str, lines: list[str]) -> str | None:
    """`--tuned`: each named autotuner of the loaded Triton file narrowed to that configuration
    (judge/worker/triton_tuned.py's pin), so that the warm-up call runs it without tuning."""
    if not lines:
        return None
    if worker != "triton":
        return "only a Triton file has autotuners"
    return triton_tuned.pin(triton_tuned.autotuners(vars(sys.modules["submission"])), lines)


def tuned(worker: str) -> str:
    """The configurations the submission's autotuners kept in the warm-up call (a Triton file's
    module, as judge/worker/triton_gpu.py's load() registered it): what the profiled calls ran."""
    module = sys.modules.get("submission") if worker == "triton" else None
    if module is None:
        return ""
    return triton_tuned.chosen({}, triton_tuned.snapshot(triton_tuned.autotuners(vars(module))))


if __name__ == "__main__":
    sys.exit(main())
