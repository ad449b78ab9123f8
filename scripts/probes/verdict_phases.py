"""Where a `judge submit` verdict's wall time goes: the engine's events, timestamped.

    python3 scripts/probes/verdict_phases.py PROBLEM SOLUTION [--budget S]

Prints one line per phase (start-up and build, each test, and on each shape each target's warm-up
with its first timed batch, its other timed batches, and what follows its last batch: re-checks,
the floor, unmapping) with its seconds, then the total. Needs a GPU.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from judge import paths
from judge.contract.events import BenchDone, Built, CaseDone, Finished, Stage, Timing
from judge.engine.run import Options, evaluate
from judge.engine.stats import TimingPolicy
from judge.problem.spec import ProblemError, load_problem


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--budget", type=float, default=None)
    ap.add_argument("--profile", help="also write cProfile's top functions (cumulative) to this file")
    a = ap.parse_args()
    if a.profile:
        import cProfile
        import pstats

        prof = cProfile.Profile()
        prof.runcall(run, a)
        with open(a.profile, "w") as f:
            pstats.Stats(prof, stream=f).sort_stats("cumulative").print_stats(70)
            pstats.Stats(prof, stream=f).sort_stats("tottime").print_stats(40)
    else:
        run(a)


def run(a: argparse.Namespace) -> None:
    try:
        problem = load_problem(paths.problems_root() / a.problem)
    except ProblemError as e:
        print(f"verdict_phases.py: {str(e).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)
    if not Path(a.solution).is_file():
        print(f"verdict_phases.py: no such file: {a.solution}", file=sys.stderr)
        sys.exit(2)
    opts = Options(mode="submit")
    if a.budget is not None:
        opts.policy = TimingPolicy(budget_s=a.budget)
        opts.baseline_policy = opts.policy.for_baseline()
    t0 = last = time.perf_counter()
    label = "start"
    rows: list[tuple[str, float]] = []

    def mark(next_label: str) -> None:
        nonlocal last, label
        now = time.perf_counter()
        rows.append((label, now - last))
        last, label = now, next_label

    current = None  # the (workload, target) being timed, and when its batches ended so far
    batches, last_batch = 0, 0.0

    def close_timing() -> None:
        """Split the open target's time at its last batch: what follows it (the stashed calls'
        re-check, the floor, unmapping) is not its batches'."""
        nonlocal current, last, label
        if current is not None and batches >= 1:
            rows.append((label, last_batch - last))
            last, label = last_batch, f"  after the last batch of {current[0]} {current[1]}"
        current = None

    for ev in evaluate(problem, Path(a.solution), opts):
        if isinstance(ev, Timing):
            key = (ev.workload, ev.target)
            if key != current:
                close_timing()
                current, batches = key, 0
                mark(f"timing {ev.workload} {ev.target}: warm-up and first batch")
                continue
            batches += 1
            last_batch = time.perf_counter()
            if batches == 1:
                mark(f"  timed batches of {ev.workload} {ev.target} after the first")
            continue
        close_timing()
        if isinstance(ev, Stage):
            mark(ev.text)
        elif isinstance(ev, Built):
            mark("after build")
        elif isinstance(ev, CaseDone):
            mark(f"after test {ev.index + 1}/{ev.total}")
        elif isinstance(ev, BenchDone):
            mark(f"after bench {ev.index + 1}")
        elif isinstance(ev, Finished):
            mark("end")
            r = ev.report
            for name, s in rows:
                print(f"{s:8.3f}  {name}")
            print(f"{time.perf_counter() - t0:8.3f}  total ({r.status.value}, report wall {r.wall_s} s) {r.message}")
            for b in r.benchmarks:
                print(f"  {b.workload}: cand {b.stats.median_ms:.4f} ms n={b.stats.samples} "
                      f"b={b.stats.batches} w={b.stats.warmup_calls} {b.stats.stop_reason}; "
                      + "; ".join(f"{x.name} {x.before.median_ms:.4f}/{x.after.median_ms:.4f} "
                                  f"n={x.before.samples}/{x.after.samples}" for x in b.baselines))


if __name__ == "__main__":
    main()
