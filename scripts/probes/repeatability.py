"""Run-to-run spread of `judge submit` medians under a timing policy, and each run's wall time.

    python3 scripts/probes/repeatability.py PROBLEM SOLUTION [--runs 5] [--min-time S] [--rest R]

Prints, per benchmark shape, the candidate's and the first baseline's median of each run and their
spread (max / min - 1), then the runs' wall times. Needs a GPU.
"""
from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from judge import paths
from judge.contract.events import Finished
from judge.engine.run import Options, evaluate
from judge.engine.stats import TimingPolicy
from judge.problem.spec import load_problem


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=None)
    ap.add_argument("--rest", type=float, default=None)
    a = ap.parse_args()
    policy = TimingPolicy()
    if a.min_time is not None:
        policy = replace(policy, min_time_s=a.min_time)
    if a.rest is not None:
        policy = replace(policy, rest=a.rest)
    problem = load_problem(paths.problems_root() / a.problem)
    cand: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    walls = []
    for _ in range(a.runs):
        t0 = time.perf_counter()
        opts = Options(mode="submit", policy=policy, baseline_policy=policy.for_baseline())
        r = next(ev.report for ev in evaluate(problem, Path(a.solution), opts) if isinstance(ev, Finished))
        walls.append(time.perf_counter() - t0)
        assert r.status.value == "ACCEPTED", r.message
        for b in r.benchmarks:
            cand.setdefault(b.workload, []).append(b.stats.median_ms)
            base.setdefault(b.workload, []).append(b.baselines[0].median_ms if b.baselines else float("nan"))
    print(f"{a.problem} {Path(a.solution).name} min_time_s={policy.min_time_s} rest={policy.rest} runs={a.runs}")
    for w in cand:
        c, bl = cand[w], base[w]
        print(f"  {w}: candidate spread {100 * (max(c) / min(c) - 1):.2f}% {' '.join(f'{x:.4f}' for x in c)}; "
              f"baseline spread {100 * (max(bl) / min(bl) - 1):.2f}%")
    print("  wall s: " + " ".join(f"{x:.1f}" for x in walls))


if __name__ == "__main__":
    main()
