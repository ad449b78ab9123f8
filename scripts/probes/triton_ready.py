"""Seconds from spawning a Triton candidate worker to its ready reply: its start-up (torch, Triton,
the CUDA context, the judge's kernel compiled and launched), with and without the machine's
start-up seed (judge/worker/triton_seed.py).

    python3 scripts/probes/triton_ready.py [--runs 3] [--device 0]

Alternates, `--runs` times: the seed removed before the spawn (the worker starts from an empty
cache and keeps a new seed when ready), then the seed in place. Prints each time and the medians.
On bad input one line (argparse's usage error) and exit 2.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time


def ready_s(device: int) -> float:
    from judge.worker.client import WorkerProcess

    t0 = time.perf_counter()
    w = WorkerProcess(device, triton=True)
    try:
        w.wait_ready()
        return time.perf_counter() - t0
    finally:
        w.close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="triton_ready.py", description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="spawns of each kind (default 3)")
    ap.add_argument("--device", type=int, default=0, help="the GPU, as nvidia-smi numbers it (default 0)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.device < 0:
        ap.error("--runs must be at least 1 and --device 0 or more")
    from judge.worker import triton_seed

    times: dict[str, list[float]] = {"no seed": [], "seed": []}
    for i in range(args.runs):
        for kind in times:
            if kind == "no seed":
                shutil.rmtree(triton_seed.seed_dir(), ignore_errors=True)
            times[kind].append(ready_s(args.device))
            print(f"run {i + 1} {kind}: ready in {times[kind][-1]:.3f} s", flush=True)
    for kind, ts in times.items():
        print(f"{kind}: median {statistics.median(ts):.3f} s ({min(ts):.3f}-{max(ts):.3f}, {len(ts)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
