"""Leaderboard runs across GPU hosts on a Ray cluster (the driver side; docs/cluster.md).

One Ray task per (submission, GPU kind). Each task asks for exactly one GPU and one unit of the
kind's custom resource, `gpu_kind:<KIND>` (nodes declare it: `ray start --num-gpus 8
--resources '{"gpu_kind:H100": 8}'`), so Ray routes it to a node of that kind and never puts two
jobs on one GPU. The task (judge/board/cluster_task.py) runs the judge in a process of its own on its
node and returns the result; the driver records it. `run()` yields events like `jobs.run`, so
judge/board/cluster_run.py records results and finds regressions as judge/board/run.py does locally.

Faults: a task whose node dies is retried by Ray on another node of its kind (`max_retries`,
system failures only; an exception in the task is never retried); the driver sees one result
per job either way and records it once. Recording is idempotent across runs by (participant,
problem, source SHA-256, GPU kind): a rerun after the driver died skips what was recorded.

Ray is imported only here and in the task, never by the local path: `pip install
'kernel-judge[ray]'`.
"""
from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from judge import __version__
from judge.board import cluster_task
from judge.board.cluster_task import TaskPayload, TaskResult
from judge.board.submissions import Submission, error_report
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.runner.build_check import BuildCheck, failed_check
from judge.runner.job import LocalRunner, Runner

RESOURCE_PREFIX = "gpu_kind:"
MAX_RETRIES = 3  # per task, for lost nodes and dead Ray workers (not for the judge's verdicts)
# Ray starts a fresh worker process for every GPU task by default (max_calls=1, to free GPU memory);
# the task never touches the GPU itself (its judging child does, and exits), so workers are reused:
# 0 = no limit. Measured in docs/benchmarks.md ("Cluster dispatch").
REUSE_WORKERS = 0
LOST_KIND_S = 60.0  # jobs of a kind no live node declares for this long fail (INTERNAL_ERROR)
KIND_CHECK_S = 5.0  # how often the driver looks for live nodes of its pending jobs' kinds
EXTRA = "pip install 'kernel-judge[ray]'"


class ClusterError(Exception):
    """The cluster cannot be used: Ray missing, nothing listening at the address, no GPU kinds."""


@dataclass(frozen=True)
class Job:
    id: int
    submission: Submission
    kind: str


@dataclass(frozen=True)
class TaskStarted:
    job: Job
    node: str
    host: str
    device: int | None

    @property
    def submission(self) -> Submission:
        return self.job.submission


@dataclass(frozen=True)
class TaskDone:
    job: Job
    report: Report | None  # mode "submit"
    check: BuildCheck | None  # mode "build"
    node: str | None  # None: never reached a node (a bad file, a task the cluster lost)
    host: str | None
    device: int | None
    seconds: float

    @property
    def submission(self) -> Submission:
        return self.job.submission

    @property
    def failed(self) -> bool:
        """The judge or the cluster failed (INTERNAL_ERROR): not a verdict on the submission."""
        if self.report is not None:
            return self.report.status is Status.INTERNAL_ERROR
        return self.check is not None and self.check.outcome == Status.INTERNAL_ERROR.value


# -- connecting ---------------------------------------------------------------------------------

def parse_address(address: str) -> tuple[bool, str, int]:
    """`ray://HOST:PORT` (Ray Client) or `HOST:PORT` (the head's GCS) → (client, host, port)."""
    text = address.strip()
    client = text.startswith("ray://")
    hostport = text[len("ray://"):] if client else text
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in hostport:
        raise ValueError(f"cluster address {address!r}: expected ray://HOST:PORT (Ray Client) or HOST:PORT "
                         "(the head node's GCS address, as `ray start --head` prints it)")
    return client, host.strip("[]"), int(port)


def import_ray():
    try:
        import ray
    except ImportError:
        raise ClusterError(f"Ray is not installed: {EXTRA} (the optional `ray` extra)") from None
    return ray


def connect(address: str, probe_timeout_s: float = 5.0) -> None:
    """Connect this process to the cluster (a ValueError for a malformed address, ClusterError when
    nothing answers). Probing the port first fails fast where ray.init would wait for minutes."""
    client, host, port = parse_address(address)
    ray = import_ray()
    try:
        socket.create_connection((host, port), timeout=probe_timeout_s).close()
    except OSError as e:
        raise ClusterError(f"no Ray cluster answers at {address}: {e.strerror or e}") from None
    import logging

    # Ray Client's per-driver server dies at start now and then (ray-project/ray#63202, ~7% of
    # connections): a second try gets a fresh one.
    for _attempt in range(2 if client else 1):
        if ray.is_initialized():
            ray.shutdown()
        try:
            ray.init(address=address.strip(), logging_level=logging.WARNING, log_to_driver=False,
                     **({} if client else {"configure_logging": False}))
            return
        except Exception as e:  # noqa: BLE001 — Ray raises many kinds; all mean "cannot use it"
            error = e
    raise ClusterError(f"cannot connect to the Ray cluster at {address}: {type(error).__name__}: {error}")


def disconnect() -> None:
    import sys

    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def declared_kinds() -> dict[str, int]:
    """GPU kind → how many GPUs of it the live nodes declare (their `gpu_kind:<KIND>` resources)."""
    ray = import_ray()
    return {k[len(RESOURCE_PREFIX):]: int(v) for k, v in ray.cluster_resources().items()
            if k.startswith(RESOURCE_PREFIX) and v >= 1}


def choose_kinds(declared: dict[str, int], requested: Sequence[str] | None) -> list[str]:
    """The kinds to judge on: every declared one, or the requested ones (a ValueError names any the
    cluster lacks; a ClusterError when it declares none at all)."""
    if not declared:
        raise ClusterError("no node of the cluster declares a GPU kind: start each GPU worker with `ray start "
                           f"--address HEAD:6379 --num-gpus N --resources '{{\"{RESOURCE_PREFIX}KIND\": N}}'`")
    if not requested:
        return sorted(declared)
    missing = [k for k in requested if k not in declared]
    if missing:
        raise ValueError(f"no node declares GPU kind {', '.join(missing)} (the cluster has: "
                         f"{', '.join(f'{k} × {n}' for k, n in sorted(declared.items()))})")
    return list(dict.fromkeys(requested))


# -- running ------------------------------------------------------------------------------------

class _Tracker:
    """A tiny actor the tasks tell when they start (a job retried on another node starts again)."""

    def __init__(self):
        self.events: list[tuple] = []

    def started(self, job_id: int, node: str, host: str, device) -> None:
        self.events.append((job_id, node, host, device))

    def drain(self) -> list[tuple]:
        out, self.events = self.events, []
        return out


def problem_files(problem_dir: Path) -> dict[str, bytes]:
    """The problem folder's files (spec, reference, ...) that a node needs: nodes share no disk."""
    return {str(p.relative_to(problem_dir)): p.read_bytes() for p in sorted(problem_dir.rglob("*"))
            if p.is_file() and not any(part.startswith((".", "__")) for part in p.relative_to(problem_dir).parts)}


def run(jobs: Sequence[Job], problems_root: Path, mode: Literal["submit", "build"] = "submit",
        budget: float | None = None, arch: str | None = None, timeout_s: float = 1800.0,
        runner: Runner | None = None, poll_s: float = 0.25) -> Generator[TaskStarted | TaskDone, None, None]:
    """Submit every job to the connected cluster; yield events as they happen. A job whose submission
    has `error` set is answered at once (REJECTED) without a task. `runner`: how each node judges
    (locally, the default, or in a container). Abandoning the iterator cancels the tasks still
    queued or running."""
    ray = import_ray()
    from ray.exceptions import RayError

    if mode not in ("submit", "build"):
        raise ValueError(f"mode {mode!r}: expected submit or build")
    pending: dict = {}
    by_id = {j.id: j for j in jobs}
    head = "node:__internal_head__"
    tracker = ray.remote(_Tracker).options(num_cpus=0, max_concurrency=1, **(
        {"resources": {head: 0.001}} if head in ray.cluster_resources() else {})).remote()
    task = ray.remote(max_calls=REUSE_WORKERS)(cluster_task.judge_job)
    files: dict = {}  # problem → its files, put in the object store once per run
    try:
        for job in jobs:
            sub = job.submission
            if sub.error:
                yield TaskDone(job, *_answer(job, mode, Status.REJECTED, sub.error), None, None, None, 0.0)
                continue
            if sub.problem not in files:
                files[sub.problem] = ray.put(problem_files(Path(problems_root) / sub.problem))
            payload = TaskPayload(id=job.id, participant=sub.participant, problem=sub.problem, name=sub.path.name,
                                  source=sub.path.read_bytes(), sha256=sub.sha256, kind=job.kind, mode=mode,
                                  budget=budget, arch=arch, timeout_s=timeout_s, runner=runner or LocalRunner(),
                                  judge_version=__version__).model_dump()
            ref = task.options(num_gpus=1, resources={RESOURCE_PREFIX + job.kind: 1}, max_retries=MAX_RETRIES,
                               retry_exceptions=False, name=f"judge {sub.label} on {job.kind}").remote(
                                   payload, files[sub.problem], tracker)
            pending[ref] = job
        absent: dict[str, float] = {}
        checked = time.monotonic()
        while pending:
            ready, rest = ray.wait(list(pending), num_returns=1, timeout=poll_s)
            if ready and rest:
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            running = {j.id for j in pending.values()}
            for job_id, node, host, device in ray.get(tracker.drain.remote()):
                if job_id in running:  # (a fast job's TaskDone may come first: its TaskStarted is dropped)
                    yield TaskStarted(by_id[job_id], node, host, device)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    out = ray.get(ref)
                except RayError as e:  # retries exhausted: every node it ran on was lost, or Ray failed
                    why = f"the cluster lost this task ({MAX_RETRIES} retries): {type(e).__name__}: {_first(e)}"
                    yield TaskDone(job, *_answer(job, mode, Status.INTERNAL_ERROR, why), None, None, None, 0.0)
                    continue
                yield _done(job, mode, out)
            if time.monotonic() - checked > KIND_CHECK_S:  # jobs of a kind no live node has would wait forever
                checked = time.monotonic()
                live = declared_kinds()
                for kind in {j.kind for j in pending.values()}:
                    if kind in live:
                        absent.pop(kind, None)
                    else:
                        absent.setdefault(kind, checked)
                for ref, job in list(pending.items()):
                    if job.kind in absent and checked - absent[job.kind] > LOST_KIND_S:
                        ray.cancel(ref, force=True)
                        del pending[ref]
                        why = f"no node of GPU kind {job.kind} has been in the cluster for {LOST_KIND_S:g} s"
                        yield TaskDone(job, *_answer(job, mode, Status.INTERNAL_ERROR, why), None, None, None, 0.0)
    finally:
        for ref in pending:
            try:
                ray.cancel(ref, force=True)
            except Exception:  # noqa: BLE001 — best effort: the owner's exit cancels them anyway
                pass
        try:
            ray.kill(tracker)
        except Exception:  # noqa: BLE001
            pass


def _first(e: Exception) -> str:
    return next(iter(str(e).strip().splitlines()), "")[:300]


def _answer(job: Job, mode: str, status: Status, message: str) -> tuple[Report | None, BuildCheck | None]:
    sub = job.submission
    if mode == "submit":
        return error_report(sub, status, message, job.kind), None
    return None, failed_check(sub.problem, str(sub.path), sub.sha256, None, status, message)


def _done(job: Job, mode: str, data: dict) -> TaskDone:
    out = TaskResult.model_validate(data)
    path = str(job.submission.path)
    if mode == "submit":
        report = Report.model_validate_json(out.result_json).model_copy(update={"solution": path})
        check = None
    else:
        report = None
        check = BuildCheck.model_validate_json(out.result_json).model_copy(update={"solution": path})
    return TaskDone(job, report, check, out.node, out.host, out.device, out.seconds)


# -- build checks in the store (--build-only) ---------------------------------------------------
# Their own table (migration 3): never ranked, never read by `leaderboard.judged()`, so a build
# check never makes a real run skip a file, and a successful build is never shown as ACCEPTED.

def record_check(store, check: BuildCheck, participant: str, kind: str, node: str | None) -> int:
    from judge.store import StoreError

    try:
        cur = store.db.execute(
            "INSERT INTO build_checks (created_at, participant, problem, source_sha256, gpu_kind, arch, outcome, "
            "message, node, report_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (check.started_at, participant, check.problem, check.source_sha256, kind, check.arch, check.outcome,
             check.message[:2000], node, check.model_dump_json()))
    except sqlite3.Error as e:
        raise StoreError(f"cannot write to the results store {store.path}: {e}") from e
    return int(cur.lastrowid)


def checked(store, kind: str) -> set[tuple[str, str, str]]:
    """(participant, problem, sha256) build-checked on this GPU kind (INTERNAL_ERROR rows excluded)."""
    rows = store.db.execute("SELECT participant, problem, source_sha256 FROM build_checks "
                            "WHERE gpu_kind = ? AND outcome != ?", (kind, Status.INTERNAL_ERROR.value))
    return {tuple(r) for r in rows}
