"""Run-to-run spread of `judge submit` medians under a timing policy, and each run's wall time.

    python3 scripts/probes/repeatability.py PROBLEM SOLUTION [--runs 5] [--min-time S] [--min-wall S]
                                            [--warmup-ms MS] [--rest R] [--min-samples N] [--device N]

Prints, per benchmark shape, the candidate's and the first baseline's median of each run and their
spread (max / min - 1), then the runs' wall times (`evaluate()`'s, in this process). The policy
options change the candidate's `TimingPolicy` (each baseline run gets half its windows, as in
`judge submit`): the verdict's time against the medians' spread, for choosing the windows. Needs a
GPU; on bad input one line and exit 2, and exit 1 when a run is not ACCEPTED.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

from judge import paths
from judge.contract.events import Finished
from judge.engine.run import Options, evaluate
from judge.engine.stats import TimingPolicy
from judge.problem.spec import ProblemError, load_problem

KNOBS = {"min_time": "min_time_s", "min_wall": "min_wall_s", "warmup_ms": "warmup_ms", "rest": "rest",
         "min_samples": "min_samples"}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="repeatability.py")
    ap.add_argument("problem")
    ap.add_argument("solution")
    ap.add_argument("--runs", type=int, default=5, help="judge submit runs (at least 2)")
    ap.add_argument("--min-time", type=float, help="the candidate's min_time_s (GPU time of timed calls)")
    ap.add_argument("--min-wall", type=float, help="the candidate's min_wall_s (wall time of timed batches)")
    ap.add_argument("--warmup-ms", type=float, help="warmup_ms (each target's warm-up, GPU time)")
    ap.add_argument("--rest", type=float, help="rest (GPU idle after timed work, as a multiple of it)")
    ap.add_argument("--min-samples", type=int,
                    help="min_samples (timed calls before the noise target may stop; baselines the same)")
    ap.add_argument("--device", type=int, default=0, help="the GPU (nvidia-smi's numbering)")
    a = ap.parse_args(argv)
    if a.runs < 2:
        ap.error("--runs must be at least 2 (a spread needs two medians)")
    if any(v is not None and v < 0 for v in (a.min_time, a.min_wall, a.warmup_ms, a.rest, a.min_samples)) or a.device < 0:
        ap.error("the policy options and --device must be 0 or more")
    return a


def policy_of(a: argparse.Namespace) -> TimingPolicy:
    """The default TimingPolicy with the options given."""
    given = {field: getattr(a, opt) for opt, field in KNOBS.items() if getattr(a, opt) is not None}
    return replace(TimingPolicy(), **given)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    try:
        problem = load_problem(paths.problems_root() / a.problem)
    except ProblemError as e:
        print(f"repeatability.py: {str(e).splitlines()[0]}", file=sys.stderr)
        return 2
    if not Path(a.solution).is_file():
        print(f"repeatability.py: no such file: {a.solution}", file=sys.stderr)
        return 2
    policy = policy_of(a)
    cand: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    walls = []
    for i in range(a.runs):
        t0 = time.perf_counter()
        opts = Options(mode="submit", device=a.device, policy=policy, baseline_policy=policy.for_baseline())
        r = next(ev.report for ev in evaluate(problem, Path(a.solution), opts) if isinstance(ev, Finished))
        walls.append(time.perf_counter() - t0)
        if r.status.value != "ACCEPTED":
            print(f"repeatability.py: run {i + 1}: {r.status.value}: {r.message}", file=sys.stderr)
            return 1
        for b in r.benchmarks:
            cand.setdefault(b.workload, []).append(b.stats.median_ms)
            base.setdefault(b.workload, []).append(b.baselines[0].median_ms if b.baselines else float("nan"))
    print(f"{a.problem} {Path(a.solution).name} min_time_s={policy.min_time_s} min_wall_s={policy.min_wall_s} "
          f"warmup_ms={policy.warmup_ms} rest={policy.rest} min_samples={policy.min_samples} runs={a.runs}")
    for w in cand:
        c, bl = cand[w], base[w]
        print(f"  {w}: candidate spread {100 * (max(c) / min(c) - 1):.2f}% {' '.join(f'{x:.4f}' for x in c)}; "
              f"baseline spread {100 * (max(bl) / min(bl) - 1):.2f}%")
    print("  wall s: " + " ".join(f"{x:.1f}" for x in walls) + f" (median {statistics.median(walls):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
