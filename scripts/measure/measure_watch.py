"""Measure `judge watch`'s time from a save to the verdict, on a GPU machine.

Starts `judge watch --json` on a copy of a solution (default: vector_add's 02_float4.cu) in a
temporary folder, waits for its first run (the session warming up), then N times: pauses (a
person's pace between saves), appends a comment to the file (new bytes: a real rebuild), and
reads the run's JSON line. Per run it prints save → detected, save → verdict (the tests passed:
nvcc included) and save → done (the short timing included); then the median and max of each.

Usage: python3 scripts/measure/measure_watch.py [--runs N] [--pause S] [--no-time] [PROBLEM SOLUTION]
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problem", nargs="?", default="vector_add")
    ap.add_argument("solution", nargs="?", default=str(ROOT / "reference_solutions/vector_add/02_float4.cu"))
    ap.add_argument("--runs", type=int, default=10, help="saves to measure (default 10)")
    ap.add_argument("--pause", type=float, default=1.0, help="seconds between a verdict and the next save")
    ap.add_argument("--no-time", action="store_true", help="tests only (watch --no-time)")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="measure-watch-"))
    target = tmp / Path(args.solution).name
    shutil.copyfile(args.solution, target)
    cmd = [sys.executable, "-m", "cli", "watch", args.problem, str(target), "--json", "--runs", str(args.runs + 1)]
    if args.no_time:
        cmd.append("--no-time")
    t0 = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = read_run(proc)
        print(f"watch started; first run (session warm-up + build): {first['status']}, "
              f"{first['verdict_at'] - t0:.2f} s after the command started")
        env = first["report"]["environment"]
        print(f"{env.get('gpu')}, nvcc {env.get('nvcc')}, torch {env.get('torch')}; "
              f"{args.problem} {Path(args.solution).name}, "
              f"{'tests only' if args.no_time else 'tests + short timing'}\n")
        print("| save | status | save → detected s | save → verdict s | save → done s |\n|---|---|---|---|---|")
        detected, verdict, done = [], [], []
        for i in range(args.runs):
            time.sleep(args.pause)
            with open(target, "a") as f:
                f.write(f"// save {i + 1} at {time.time_ns()}\n")  # bytes never built before: no cache hit
            saved = time.time()
            run = read_run(proc)
            if run["status"] != "ACCEPTED":
                print(f"run {i + 1}: {run['status']}: {run['report']['message'][:2000]}", file=sys.stderr)
                return 1
            at = run["verdict_at"]
            detected.append(at - run["verdict_s"] - saved)
            verdict.append(at - saved)
            done.append(at + run["total_s"] - run["verdict_s"] - saved)
            print(f"| {i + 1} | {run['status']} | {detected[-1]:.3f} | {verdict[-1]:.3f} | {done[-1]:.3f} |")
        print()
        for name, xs in (("save → detected", detected), ("save → verdict", verdict), ("save → done", done)):
            print(f"{name}: median {statistics.median(xs):.3f} s, max {max(xs):.3f} s over {len(xs)} saves")
        return 0
    finally:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def read_run(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if not line:
        proc.wait()
        sys.exit(f"judge watch ended (status {proc.returncode}):\n{proc.stderr.read()[-4000:]}")  # type: ignore[union-attr]
    return json.loads(line)


if __name__ == "__main__":
    sys.exit(main())
