"""Where things are, decided in one place: the code's own root, the problem set (problems and
their model answers), the build cache, the results store, and every `JUDGE_*` environment
variable the judge reads.

A problem set is a folder holding `problems/NAME/` and `reference_solutions/NAME/` side by side;
the repository is one. Every command finds a problem's model answers the same way
(`solutions_dir`), so `judge verify` and `judge leaderboard run --references` read one tree.
"""
from __future__ import annotations

import os
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parents[1]  # holds judge/ and cli/: child processes' PYTHONPATH

ENV_PROBLEMS = "JUDGE_PROBLEMS"  # the problems folder (default: the repository's problems/)
ENV_DB = "JUDGE_DB"  # the results store's file
ENV_CACHE = "JUDGE_CACHE"  # the build cache's folder
ENV_CUDART = "JUDGE_CUDART"  # the libcudart.so the worker loads (default: the toolkit's)
ENV_DOCKER_IMAGE = "JUDGE_DOCKER_IMAGE"  # the docker runner's image
ENV_WORKER_MEMORY_GB = "JUDGE_WORKER_MEMORY_GB"  # the candidate worker's host-memory limit
ENV_BUILD_MEMORY_GB = "JUDGE_BUILD_MEMORY_GB"  # each compiler process's address-space limit
ENV_CLUSTER_TEST_FAULT = "JUDGE_CLUSTER_TEST_FAULT"  # a test hook of the job child (inert unless set)
ENV_JOB_FD = "JUDGE_JOB_FD"  # a job child's result fd (judge/runner/job.py), set by its parent
ENV_WORKER_FD = "JUDGE_WORKER_FD"  # a worker's result fd (judge/worker/protocol.py), set by its parent
# "0": a candidate's worker runs without the seccomp filter (judge/worker/client.py), to measure what
# confinement costs or on a machine that cannot confine; anything else (the default): confined, and
# a machine that cannot confine fails the run (INTERNAL_ERROR) rather than judge unconfined.
ENV_CONFINE = "JUDGE_CONFINE"
# Measuring the sandbox's allow-list, never judging: JUDGE_SECCOMP_LEARN=FILE installs the filter
# with every refusal turned into a logged notification (judge/worker/native/learn.h); the calls the
# filter would refuse are appended to FILE and run. Such a run reports `confined: false`.
ENV_SECCOMP_LEARN = "JUDGE_SECCOMP_LEARN"
# "0": a candidate's worker does not ask for a pid namespace of its own (judge/worker/native/confine.h);
# anything else (the default): it asks, and carries on without one where the OS refuses.
ENV_PID_NAMESPACE = "JUDGE_PID_NAMESPACE"

DEFAULT_DOCKER_IMAGE = "kernel-judge:latest"
DEFAULT_DB = Path(".judge") / "judge.db"


def problems_root() -> Path:
    env = os.environ.get(ENV_PROBLEMS)
    return Path(env) if env else CODE_ROOT / "problems"


def solutions_root(problems: Path | None = None) -> Path:
    """The model answers of a problem set: `reference_solutions/` beside its problems folder."""
    return (problems or problems_root()).parent / "reference_solutions"


def solutions_dir(problem_root: Path) -> Path:
    """One problem's model answers (`<set>/reference_solutions/NAME` for `<set>/problems/NAME`)."""
    problem_root = Path(problem_root)
    return solutions_root(problem_root.parent) / problem_root.name


def cache_root() -> Path:
    base = os.environ.get(ENV_CACHE) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kernel-judge")
    return Path(base)


def store_path() -> Path:
    env = os.environ.get(ENV_DB)
    return Path(env) if env else DEFAULT_DB


def docker_image() -> str:
    return os.environ.get(ENV_DOCKER_IMAGE, DEFAULT_DOCKER_IMAGE)
