"""Where things are, decided in one place: the code's own root, the problem set (problems and
their model answers), the build cache, the results store, and every `JUDGE_*` environment
variable the judge reads. Standard library only at import (platformdirs when the store's default
location is asked for).

A problem set is a folder holding `problems/NAME/` and `reference_solutions/NAME/` side by side;
the repository is one, and a normal install carries a copy of it (setup.py puts it in
`judge/problemset/`). Every command finds a problem's model answers the same way
(`solutions_dir`), so `judge verify` and `judge leaderboard run --references` read one tree.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

CODE_ROOT = Path(__file__).resolve().parents[1]  # holds judge/ and cli/: child processes' PYTHONPATH
# The problem set a normal (not editable) install carries: problems/ and reference_solutions/ (setup.py)
INSTALLED_SET = Path(__file__).resolve().parent / "problemset"

ENV_PROBLEMS = "JUDGE_PROBLEMS"  # the problems folder (default: problems_root's docstring)
ENV_DB = "JUDGE_DB"  # the results store's file (default: one per user, `user_store()`)
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
# "0": a candidate's worker runs without a pid namespace of its own; anything else (the default): it
# asks for one, with a /proc of its own (judge/worker/native/confine.h), and carries on without one
# where the OS refuses (not root); a namespace whose /proc cannot be mounted fails its start-up
# (docs/security.md, "A pid namespace of its own").
ENV_PID_NAMESPACE = "JUDGE_PID_NAMESPACE"
# "0": workers run without a cgroup of their own; anything else (the default): each gets one, with
# the host-memory limit and a task limit, where the machine lets the judge make one
# (judge/sandbox/cgroup.py), and runs without one where it does not.
ENV_CGROUP = "JUDGE_CGROUP"

DEFAULT_DOCKER_IMAGE = "kernel-judge:latest"
APP_NAME = "kernel-judge"  # the folder's name under the platform's data folder
# Where kernel-judge kept its results store before it was one per user: relative to the folder a
# command ran in. The judge never reads one unless told (--db, JUDGE_DB); `store_location` finds it.
FOLDER_DB = Path(".judge") / "judge.db"


def checkout_root() -> Path | None:
    """The repository checkout the code runs from (an editable install, or `python -m` in one), or None."""
    return CODE_ROOT if (CODE_ROOT / "pyproject.toml").is_file() and (CODE_ROOT / "problems").is_dir() else None


def problems_root() -> Path:
    """The problems folder: $JUDGE_PROBLEMS if set, else the checkout's `problems/` when the code runs
    from one, else the copy a normal install carries."""
    env = os.environ.get(ENV_PROBLEMS)
    if env:
        return Path(env).expanduser()
    checkout = checkout_root()
    return checkout / "problems" if checkout else INSTALLED_SET / "problems"


def problems_origin() -> str:
    """Where `problems_root` came from, in words (for a message about an empty or missing set)."""
    if os.environ.get(ENV_PROBLEMS):
        return f"${ENV_PROBLEMS}"
    return "this checkout" if checkout_root() else "the installed package"


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


def user_store() -> Path:
    """The default results store: one file per user in the platform's data folder
    (`~/.local/share/kernel-judge/judge.db` on Linux, or under `$XDG_DATA_HOME`)."""
    import platformdirs  # here, not at import: the baseline worker imports this module and stays light

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)) / "judge.db"


@dataclass(frozen=True)
class StoreLocation:
    """Which results store a command uses, and why."""

    path: Path
    chosen_by: str  # "--db", "JUDGE_DB" or "default" (the user store)
    folder_store: Path | None = None  # a `.judge/judge.db` in the current folder that `path` is not (unread)


def store_location(explicit: Path | None = None) -> StoreLocation:
    """`explicit` (a command's --db), else `$JUDGE_DB`, else the user store. With the default, a
    per-folder store of an older kernel-judge in the current folder is named, never read."""
    if explicit is not None:
        return StoreLocation(Path(explicit), "--db")
    env = os.environ.get(ENV_DB)
    if env:
        return StoreLocation(Path(env), ENV_DB)
    path = user_store()
    here = FOLDER_DB if FOLDER_DB.is_file() and FOLDER_DB.resolve() != path.resolve() else None
    return StoreLocation(path, "default", here)


def store_path() -> Path:
    return store_location().path


def docker_image() -> str:
    return os.environ.get(ENV_DOCKER_IMAGE, DEFAULT_DOCKER_IMAGE)
