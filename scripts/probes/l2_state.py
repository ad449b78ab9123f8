"""Does the state the L2 cache is left in before a call change a kernel's time? (issue 17 (a))

    python3 scripts/probes/l2_state.py PROBLEM LIBRARY.so [--calls 30] [--profiled]

fair_timing.py's (a) compares the judge's median with Nsight Compute's kernel duration. The judge
opens every timed call after a read of 256 MiB (docs/timing.md): L2 then holds clean lines of that
buffer. Nsight Compute's default (`--cache-control all`) invalidates the caches before each kernel it
profiles: L2 empty. softmax's `03_row_in_registers.cu` (evict-first loads and stores) measured 2.5-3.5%
over Nsight Compute with CUDA events in the judge and in ipc_mapping.py alike, where other answers of
its length agree within 0.2% (docs/benchmarks.md). This times solve() of a native model answer (built
as `judge` builds it) on every benchmark shape of PROBLEM, in one process on its own buffers (the
problem's generators' inputs), with CUDA events, after each of these, rounds interleaved, the median:
  - read:  a read of 256 MiB (a float32 sum, as the judge's flush: L2 clean, full of another buffer);
  - write: a write of 256 MiB (L2 full of dirty lines of another buffer, written back during the call);
  - none:  nothing (the previous call's lines stay: the inputs, if they fit, and the dirty outputs);
  - idle:  the read, then the GPU idle for IDLE_MS before the call is issued (as under a profiler,
    which serialises every kernel it times; the others follow their prelude at once).
(Before 2026-11-29 13:00 UTC `read` summed the buffer as uint8, which torch does by first writing it
out as int64, 2 GiB: a write, not the judge's flush.) `--profiled` runs each way's calls between
cudaProfilerStart and Stop, one way at a time in the order above, for Nsight Compute, e.g.

    ncu --profile-from-start off --clock-control none --cache-control none --metrics gpu__time_duration.sum \\
        python3 scripts/probes/l2_state.py softmax 03.so --calls 5 --profiled

whose durations, in the order read / write / none / idle per shape, can be set beside these (and beside
`--cache-control all`). Prints a markdown table; on bad input one line and exit 2.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import NoReturn

import probe_args

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

FLUSH_BYTES = 256 << 20
WAYS = ("read", "write", "none", "idle")
IDLE_MS = 5


def fail(msg: str) -> NoReturn:
    probe_args.fail("l2_state.py", msg)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = probe_args.problem_parser(__doc__, 30, "timed calls per way and shape")
    ap.add_argument("library", type=Path, help="a native model answer built as judge builds it (.so)")
    ap.add_argument("--profiled", action="store_true", help="bracket each way's calls for Nsight Compute")
    args = ap.parse_args(argv)
    probe_args.check_problem_and_calls("l2_state.py", args.problem, args.calls)
    if not args.library.is_file():
        fail(f"no such library: {args.library}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    torch = probe_args.cuda_torch("l2_state.py")
    from judge.problem import spec, workloads
    from judge.runner.profile_target import solve_call

    problem = spec.load_problem(ROOT / "problems" / args.problem)
    flush = torch.zeros(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")

    def idle() -> None:
        flush.sum()
        torch.cuda.synchronize()
        time.sleep(IDLE_MS / 1000)
    preludes = {"read": lambda: flush.sum(), "write": lambda: flush.fill_(1), "none": lambda: None, "idle": idle}
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.library.name}; "
          f"median of {args.calls} calls, ms, CUDA events")
    print("| shape | " + " | ".join(f"after {w}" for w in WAYS) + " | " + " | ".join(f"{w} / read" for w in WAYS[1:]) + " |")
    print("|---" * (2 * len(WAYS)) + "|")
    for w in problem.spec.benchmarks:
        w = dict(w)
        tensors = {t.name: torch.empty(problem.shape_of(t.name, w), dtype=getattr(torch, t.ctype.element.dtype),
                                       device="cuda") for t in problem.tensors}
        workloads.fill_inputs(problem, w, tensors, secret=0, phase="probe")
        call = solve_call(problem, "native", str(args.library), tensors, w)
        for _ in range(3):
            call()
        times: dict[str, list[float]] = {k: [] for k in WAYS}
        if args.profiled:  # one way at a time, so that the profile's kernels come in WAYS' order
            torch.cuda.synchronize()
            for k in WAYS:
                torch.cuda.profiler.start()
                for _ in range(args.calls):
                    times[k].append(timed(torch, preludes[k], call))
                torch.cuda.profiler.stop()
        else:
            for _ in range(args.calls):
                for k in WAYS:
                    times[k].append(timed(torch, preludes[k], call))
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"| {spec.workload_id(w)} | " + " | ".join(f"{med[k]:.4f}" for k in WAYS)
              + " | " + " | ".join(f"{med[k] / med['read']:.3f}" for k in WAYS[1:]) + " |", flush=True)
        torch.cuda.synchronize()
        del tensors, call


def timed(torch, prelude, call) -> float:
    prelude()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    call()
    e.record()
    e.synchronize()
    return s.elapsed_time(e)


if __name__ == "__main__":
    main()
