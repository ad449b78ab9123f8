"""What a CUDA-event window holds beyond its kernel (issue 17 (a): the judge's medians of short calls
stood 2–4 µs above Nsight Compute's kernel durations on two H200s, 2026-11-29). GPU machine:

    nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC scripts/probes/event_window.cu -o event_window.so
    python3 scripts/probes/event_window.py event_window.so [--calls 200] [--mib 0,64,256]

For each copy size (MiB; 0: one float4) and each way of timing it (`plain`: events around a launch
the host issues after the start event; `held`: behind a hold filling every SM until the host has
queued the call, as the judge times; `graph`: the held call replayed from a CUDA graph), with L2
flushed before each call: the median of the events' window, of the kernel's own span (its first
block's start to its last block's end, by %globaltimer, whose resolution is printed first), and
their difference: what the window adds to the kernel. Run it alone, then beside a load on another
GPU of the host, to see whether the difference moves. Not the judge: a look at the clock it uses.
"""
from __future__ import annotations

import argparse
import ctypes
import statistics
import sys
from pathlib import Path

MODES = ("plain", "held", "graph")


def load(path: Path, prog: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(str(path))
        lib.event_window.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int,
                                     ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
        lib.event_window.restype = ctypes.c_int
        lib.timer_step_ns.restype = ctypes.c_double
    except (OSError, AttributeError) as e:
        print(f"{prog}: {path} is not event_window.cu built: {str(e).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)
    return lib


def sizes(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of MiB: {text!r}") from None
    if not values or any(v < 0 or v > 4096 for v in values):
        raise argparse.ArgumentTypeError(f"sizes are 0..4096 MiB: {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="event_window.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("lib", type=Path, help="scripts/probes/event_window.cu, built (.so)")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per size and way (median), 10..10000")
    ap.add_argument("--mib", type=sizes, default=[0, 64, 256], help="copy sizes in MiB, comma-separated")
    a = ap.parse_args(argv)
    if not 10 <= a.calls <= 10000:
        ap.error("--calls must be 10..10000")
    if not a.lib.is_file():
        ap.error(f"{a.lib} is not a file")
    lib = load(a.lib, "event_window.py")
    step = lib.timer_step_ns()
    if step < 0:
        print("event_window.py: no CUDA device answered", file=sys.stderr)
        return 2
    print(f"%globaltimer's smallest step: {step:.0f} ns", flush=True)
    print("| copy | timed | window µs | kernel span µs | window − span µs |\n|---|---|---|---|---|")
    for mib in a.mib:
        for mode, name in enumerate(MODES):
            window, span = (ctypes.c_double * a.calls)(), (ctypes.c_double * a.calls)()
            err = lib.event_window(mode, mib << 20, a.calls, window, span)
            if err:
                print(f"event_window.py: CUDA error {err} ({name}, {mib} MiB)", file=sys.stderr)
                return 1
            w, s = statistics.median(window), statistics.median(span)
            diff = statistics.median(x - y for x, y in zip(window, span))
            print(f"| {mib} MiB | {name} | {w:.2f} | {s:.2f} | {diff:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
