#!/usr/bin/env python3
"""Dispatch overhead of `judge leaderboard run --cluster` per task, on a local Ray cluster (CPU only).

Starts a head (no GPU) and one worker node declaring one fake GPU of kind `BENCH`, so the tasks
run one at a time, then times three things over N files:

  noop      a Ray task with the judge's resource shape (1 GPU + gpu_kind:BENCH) that does nothing:
            Ray's own round trip per task, sequentially (with the workers reused, as judge.board.cluster
            asks, and with Ray's default for GPU tasks, a fresh worker process per task);
  local     the task's work done here, in-process, one file after another: the build-check child
            process (`python -m judge.board.cluster_task`) on each file;
  cluster   the same files through `judge.board.cluster.run(..., "build")`: payload, Ray scheduling, the
            task, the child, the tracker actor, the driver's polling.

overhead per task = (cluster - local) / N. The files are REJECTED by the static source policy
(an include the policy refuses), so nvcc is not timed: the number is the dispatch cost alone.

    python3 scripts/measure/cluster_overhead.py [--tasks 20] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    import ray
    from ray.cluster_utils import Cluster

    from judge.board import cluster, cluster_task
    from judge.board import submissions as leaderboard

    tmp = Path(tempfile.mkdtemp(prefix="cluster-overhead-"))
    for i in range(args.tasks):
        (tmp / "subs" / f"p{i:03d}").mkdir(parents=True)
        (tmp / "subs" / f"p{i:03d}" / "vector_add.cu").write_text(f"// {i}\n#include <fstream>\n")
    subs = leaderboard.discover(tmp / "subs", ["vector_add"])
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    os.environ["JUDGE_CACHE"] = str(tmp / "cache")

    t = time.perf_counter()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "num_gpus": 0, "include_dashboard": False})
    c.add_node(num_cpus=1, num_gpus=1, resources={"gpu_kind:BENCH": 1})
    c.wait_for_nodes()
    start_s = time.perf_counter() - t
    try:
        cluster.connect(c.address)

        @ray.remote(num_gpus=1, resources={"gpu_kind:BENCH": 1})
        def noop(i):
            return i

        def sequential(fn) -> float:
            ray.get(fn.remote(-1))  # a worker process started
            t = time.perf_counter()
            for i in range(args.tasks):
                ray.get(fn.remote(i))
            return time.perf_counter() - t

        fresh_s = sequential(noop)  # Ray's default for GPU tasks: a new worker process per task
        noop_s = sequential(ray.remote(num_gpus=1, resources={"gpu_kind:BENCH": 1},  # what judge.board.cluster asks
                                       max_calls=cluster.REUSE_WORKERS)(lambda i: i))

        jobs = [cluster.Job(i, s, "BENCH") for i, s in enumerate(subs)]
        list(cluster.run(jobs[:1], ROOT / "problems", "build"))  # warm: a worker with judge imported
        t = time.perf_counter()
        done = [e for e in cluster.run(jobs, ROOT / "problems", "build") if isinstance(e, cluster.Done)]
        cluster_s = time.perf_counter() - t
        assert len(done) == args.tasks and all(e.check.outcome == "REJECTED" for e in done), done
    finally:
        cluster.disconnect()
        c.shutdown()

    files = cluster.problem_files(ROOT / "problems" / "vector_add")
    t = time.perf_counter()
    for s in subs:
        job = {"id": 0, "participant": s.participant, "problem": s.problem, "name": s.path.name,
               "source": s.path.read_bytes(), "sha256": s.sha256, "kind": "BENCH",
               "mode": "build", "arch": "sm_90a", "timeout_s": 600}
        with tempfile.TemporaryDirectory() as d:
            problem_dir, source = cluster_task._unpack(job, files, Path(d))
            assert cluster_task._run_build(job, problem_dir, source, None).outcome == "REJECTED"
    local_s = time.perf_counter() - t

    n = args.tasks
    result = {"tasks": n, "cluster_start_s": round(start_s, 2), "noop_ms_per_task": round(1000 * noop_s / n, 1),
              "noop_fresh_worker_ms_per_task": round(1000 * fresh_s / n, 1),
              "local_ms_per_task": round(1000 * local_s / n, 1), "cluster_ms_per_task": round(1000 * cluster_s / n, 1),
              "overhead_ms_per_task": round(1000 * (cluster_s - local_s) / n, 1), "ray": ray.__version__,
              "python": platform.python_version(), "cpus": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{n} tasks, ray {ray.__version__}, {os.cpu_count()} CPUs; local cluster started in {start_s:.1f} s")
        print(f"noop Ray task (1 GPU + kind), sequential: {result['noop_ms_per_task']} ms per task "
              f"({result['noop_fresh_worker_ms_per_task']} ms with Ray's default max_calls=1 for GPU tasks)")
        print(f"build-check child in-process:             {result['local_ms_per_task']} ms per file")
        print(f"same files through judge.board.cluster.run:     {result['cluster_ms_per_task']} ms per file")
        print(f"dispatch overhead:                        {result['overhead_ms_per_task']} ms per task")
    return 0


if __name__ == "__main__":
    sys.exit(main())
