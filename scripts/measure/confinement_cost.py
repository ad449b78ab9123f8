"""What the candidate's confinement costs (issue 16): `judge submit` medians with the worker
confined (the default: seccomp filter, pid namespace, cgroup) and unconfined (JUDGE_CONFINE=0,
JUDGE_PID_NAMESPACE=0, JUDGE_CGROUP=0), alternated A B A B so that the board's drift falls on both
alike.

    python3 scripts/measure/confinement_cost.py [--rounds 2] [PROBLEM SOLUTION ...]

Default pairs: hgemm 06 and vector_add 02. Prints one row per shape: the mean of each setting's
medians and the difference; `--json` for the raw medians. Feeds docs/security.md "Verified on
the GPU".
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

DEFAULT = ["hgemm", "reference_solutions/hgemm/06_wgmma_tma_persistent.cu",
           "vector_add", "reference_solutions/vector_add/02_float4.cu"]


def submit(problem: str, solution: str, confined: bool) -> dict:
    on = "1" if confined else "0"
    env = dict(os.environ, JUDGE_CONFINE=on, JUDGE_PID_NAMESPACE=on, JUDGE_CGROUP=on)
    out = subprocess.run(["judge", "submit", f"problems/{problem}", solution, "--json"], env=env,
                         capture_output=True, text=True, timeout=900)
    report = json.loads(out.stdout)
    if report.get("status") != "ACCEPTED":
        raise SystemExit(f"{problem} ({'confined' if confined else 'unconfined'}): {report.get('status')}: "
                         f"{report.get('message')}")
    return report


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="*", default=DEFAULT)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    raw: dict = {}
    excess: dict[str, float] = {}  # the largest stamp excess seen per shape (ms per call), for stamps.py
    for problem, solution in zip(a.pairs[::2], a.pairs[1::2]):
        for _ in range(a.rounds):
            for confined in (True, False):
                r = submit(problem, solution, confined)
                env = r["environment"]
                assert env.get("confined") is confined, "the report does not say how it ran"
                if not confined:
                    assert not env.get("pid_namespace") and not env.get("cgroup"), "unconfined, yet namespaced"
                for b in r["benchmarks"]:
                    raw.setdefault(f"{problem} {b['workload']}", {True: [], False: []})[confined].append(
                        b["stats"]["median_ms"])
                    excess[f"{problem} {b['workload']}"] = max(excess.get(f"{problem} {b['workload']}", 0.0),
                                                              b.get("stamp_excess_ms") or 0.0)
    if a.json:
        print(json.dumps({k: {"confined": v[True], "unconfined": v[False], "stamp_excess_ms": excess[k]}
                          for k, v in raw.items()}, indent=1))
        return 0
    print(f"{'shape':44s} {'confined ms':>12s} {'unconfined ms':>14s} {'diff':>7s} {'stamp excess us':>16s}")
    for k, v in raw.items():
        c, u = statistics.mean(v[True]), statistics.mean(v[False])
        print(f"{k:44s} {c:12.4f} {u:14.4f} {100 * (c / u - 1):+6.2f}% {1000 * excess[k]:16.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
