"""Submit files with the exploit suite's quick policy and print each one's verdict, message and, per
shape, the candidate's median, held and host time (diagnosing the hold). Needs a GPU.

    python3 scripts/probes/hold_diag.py PROBLEM FILE...
"""
from __future__ import annotations

import sys
from pathlib import Path

from judge import paths
from judge.contract.events import Finished
from judge.engine.run import Options, evaluate
from judge.engine.stats import TimingPolicy
from judge.problem.spec import load_problem

problem = load_problem(paths.problems_root() / sys.argv[1])
quick = TimingPolicy(budget_s=0.3, min_time_s=0.1)
for f in sys.argv[2:]:
    opts = Options(mode="submit", policy=quick, baseline_policy=quick.for_baseline())
    r = next(ev.report for ev in evaluate(problem, Path(f), opts) if isinstance(ev, Finished))
    print(f"{Path(f).name}: {r.status.value} {r.message[:400]}")
    for b in r.benchmarks:
        s = b.stats
        print(f"  {b.workload}: {s.median_ms:.4f} ms held={s.held} host={s.host_ms} batches={s.batches} "
              f"warm={s.warmup_calls}; baseline " + " ".join(f"{x.median_ms:.4f} held={x.before.held}/{x.after.held}"
                                                               for x in b.baselines))
