"""Where a `judge submit` verdict's wall time goes: the engine's events, timestamped.

    python3 scripts/probes/verdict_phases.py PROBLEM SOLUTION [--budget S]

Prints one line per phase (start-up and build, each test, each target's warm-up and timed batches
on each shape) with its seconds, then the total. Needs a GPU.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from judge import paths
from judge.contract.events import BenchDone, Built, CaseDone, Finished, Stage, Timing
from judge.engine.run import Options, evaluate
from judge.engine.stats import TimingPolicy
from judge.problem.spec import load_problem


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
    problem = load_problem(paths.problems_root() / a.problem)
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

    current = None
    for ev in evaluate(problem, Path(a.solution), opts):
        if isinstance(ev, Stage):
            mark(ev.text)
        elif isinstance(ev, Built):
            mark("after build")
        elif isinstance(ev, CaseDone):
            mark(f"after test {ev.index + 1}/{ev.total}")
        elif isinstance(ev, Timing):
            key = (ev.workload, ev.target)
            if key != current:
                current = key
                mark(f"timing {ev.workload} {ev.target}")
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
