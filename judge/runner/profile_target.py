"""The program `judge profile` runs under Nsight Compute: one workload, a few calls of solve().

    python -m judge.runner.profile_target PROBLEM_DIR LIB WORKLOAD_JSON STATUS_FILE [--calls N]

It draws the workload's inputs with the problem's generators on the GPU (torch), loads the built
library with ctypes, calls solve() once unprofiled (module loading, lazy initialisation), then
`--calls` times between cudaProfilerStart and cudaProfilerStop: ncu runs with
`--profile-from-start off`, so only the kernels solve() launches there are profiled, never the
input generators. The outcome goes to STATUS_FILE as JSON ({"ok": true} or {"ok": false,
"kind": "solve" | "setup", "error": "..."}): ncu's own exit code and output are not a channel
the judge relies on. Profiling gives no verdict, so the outputs are not checked.
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


def _write(path: str, **status) -> None:
    with open(path, "w") as f:
        json.dump(status, f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m judge.runner.profile_target")
    ap.add_argument("problem")
    ap.add_argument("lib")
    ap.add_argument("workload")
    ap.add_argument("status_file")
    ap.add_argument("--calls", type=int, default=1)
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
        so = ctypes.CDLL(args.lib, mode=ctypes.RTLD_LOCAL)
        solve = so.solve
        solve.restype = None
        solve.argtypes = [ctypes.c_void_p if ct.is_tensor else ctypes.c_int if ct.scalar == "int" else ctypes.c_float
                          for _, ct in problem.params]
        call_args = [tensors[name].data_ptr() if ct.is_tensor else
                     int(workload[name]) if ct.scalar == "int" else float(workload[name])
                     for name, ct in problem.params]
        rt.synchronize("preparing the inputs")
    except Exception as e:  # noqa: BLE001 — reported through the status file
        _write(args.status_file, ok=False, kind="setup", error=f"{type(e).__name__}: {e}",
               traceback=traceback.format_exc()[-2000:])
        return 3
    try:
        solve(*call_args)  # warm-up, unprofiled
        rt.last_error("launching solve() (warm-up call)")
        rt.synchronize("solve() on the device (warm-up call)")
    except Exception as e:  # noqa: BLE001 — a CUDA error of the submission
        _write(args.status_file, ok=False, kind="solve", error=f"{type(e).__name__}: {e}")
        return 1
    try:
        torch.cuda.profiler.start()
    except Exception as e:  # noqa: BLE001
        _write(args.status_file, ok=False, kind="setup", error=f"cudaProfilerStart: {type(e).__name__}: {e}")
        return 3
    try:
        for _ in range(max(1, args.calls)):
            solve(*call_args)
        rt.last_error("launching solve()")
        rt.synchronize("solve() on the device")
    except Exception as e:  # noqa: BLE001 — a CUDA error of the submission
        _write(args.status_file, ok=False, kind="solve", error=f"{type(e).__name__}: {e}")
        return 1
    torch.cuda.profiler.stop()
    _write(args.status_file, ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
