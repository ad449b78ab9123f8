"""What runs on a cluster node: one Ray task judges one (submission, problem, GPU kind).

The driver (judge/board/cluster.py) ships everything the task needs in a `TaskPayload` (the
source bytes and the problem folder's files: nodes share no filesystem with the driver). The task
writes them to a temporary folder and judges in a `python -m judge.runner.job` process of its
own (judge/runner/job.py: a typed `JobSpec` in, the result back on a file descriptor of its own),
as the local runner does (`jobs.SubprocessJudge`), so a submission that crashes or hangs its
judging process costs one row, never the Ray worker or the node:

- mode "submit": the whole judgement (a `Report`), locally or in a container (the payload's
  `runner`), on the GPU Ray gave this task;
- mode "build" (`judge leaderboard run --build-only`): the judge's GPU-free path (static source
  policy, nvcc build, static build policy), no timing. Its result is a `BuildCheck`, never a
  `Report`: a successful build is not a verdict.

The GPU: Ray sets CUDA_VISIBLE_DEVICES for the task and `ray.get_gpu_ids()` returns its id in the
node's own namespace: the entries of the CUDA_VISIBLE_DEVICES the node was started with, or
0..n-1 when it had none. The job's `device` is a physical (NVML) index and the judge's worker
sets CUDA_VISIBLE_DEVICES itself, so `physical_index` turns the id into an NVML index (a digit
string is one; a `GPU-...` UUID is looked up in NVML) and the child runs without Ray's
CUDA_VISIBLE_DEVICES.

The job process runs in the task's temporary folder and is killed when this Ray worker dies (a
cancelled or orphaned job must not keep a GPU busy). Its test hook, JUDGE_CLUSTER_TEST_FAULT
(`FAULT_ENV`), is described in judge/runner/job.py.
"""
from __future__ import annotations

import socket
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from judge import __version__, paths
from judge.board.jobs import failed_report
from judge.board.submissions import Submission, error_report
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.runner import job
from judge.runner.build_check import BUILT, BuildCheck, failed_check
from judge.runner.job import LocalRunner, Runner

__all__ = ["BUILT", "FAULT_ENV", "BuildCheck", "TaskPayload", "TaskResult", "judge_job", "physical_index"]

FAULT_ENV = paths.ENV_CLUSTER_TEST_FAULT


class TaskPayload(BaseModel):
    """One job as the driver ships it to a node."""
    model_config = ConfigDict(extra="forbid")

    id: int
    participant: str
    problem: str
    name: str  # the file's name
    source: bytes
    sha256: str
    kind: str  # the GPU kind
    mode: Literal["submit", "build"]
    budget: float | None = None
    arch: str | None = None
    timeout_s: float = 1800.0
    runner: Runner = Field(default_factory=LocalRunner)
    judge_version: str


class TaskResult(BaseModel):
    """What a task returns to the driver: where it ran, and its Report or BuildCheck as JSON."""
    model_config = ConfigDict(extra="forbid")

    id: int
    node: str
    host: str
    device: int | None
    mode: str
    result_json: str
    seconds: float


def physical_index(gpu_id: object, nvml_gpus: list[Any] | None = None) -> int:
    """The NVML index of the GPU Ray gave a task (see the module's doc)."""
    text = str(gpu_id).strip()
    if text.isdigit():
        return int(text)
    if nvml_gpus is None:
        from judge.gpu.device import gpus

        nvml_gpus = gpus()
    for g in nvml_gpus:
        if g.uuid == text:
            return int(g.index)
    raise ValueError(f"Ray gave this task GPU {text!r}, which is neither an index nor the UUID of a GPU "
                     "NVML sees here (MIG instances are not supported)")


# -- the Ray task -------------------------------------------------------------------------------

def judge_job(payload: dict[str, Any], problem_files: dict[str, bytes], tracker: Any = None) -> dict[str, Any]:
    """Judge one job on this node (the body of the Ray task; judge/board/cluster.py submits it).
    `payload`: a TaskPayload's fields; `problem_files`: the problem folder, relative path → bytes.
    Returns a TaskResult's fields."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    host = socket.gethostname()
    ids = ray.get_gpu_ids()
    device = None
    error = None
    try:
        device = physical_index(ids[0]) if ids else None
    except ValueError as e:
        error = str(e)
    if tracker is not None:
        tracker.started.remote(payload["id"], node, host, device)
    if payload.get("judge_version") != __version__:  # before validating: another version's fields may differ
        error = (f"this node runs kernel-judge {__version__}, the driver {payload.get('judge_version')}: "
                 "install the same version on every node")
        task = TaskPayload.model_construct(**{k: v for k, v in payload.items() if k in TaskPayload.model_fields})
    else:
        task = TaskPayload.model_validate(payload)
    if error is None and device is None and task.mode == "submit":
        error = "Ray gave this task no GPU (does the node declare --num-gpus?)"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="judge-cluster-") as tmp:
        problem_dir, source = _unpack(task, problem_files, Path(tmp))
        result: Report | BuildCheck
        if error is not None:
            result = _failed(task, source, error)
        else:
            result = _judge(task, problem_dir, source, device, Path(tmp))
    return TaskResult(id=task.id, node=node, host=host, device=device, mode=task.mode,
                      result_json=result.model_dump_json(), seconds=time.monotonic() - t0).model_dump()


def _unpack(task: TaskPayload, problem_files: dict[str, bytes], tmp: Path) -> tuple[Path, Path]:
    problem_dir = tmp / "problems" / task.problem
    for rel, data in problem_files.items():
        path = problem_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    source = tmp / "src" / task.name
    source.parent.mkdir(parents=True)
    source.write_bytes(task.source)
    return problem_dir, source


def _submission(task: TaskPayload, source: Path) -> Submission:
    return Submission(task.participant, task.problem, source, task.sha256)


def _failed(task: TaskPayload, source: Path, message: str,
            status: Status = Status.INTERNAL_ERROR) -> Report | BuildCheck:
    if task.mode == "build":
        return failed_check(task.problem, task.name, task.sha256, task.arch, status, message)
    return error_report(_submission(task, source), status, message, task.kind)


def _judge(task: TaskPayload, problem_dir: Path, source: Path, device: int | None, tmp: Path) -> Report | BuildCheck:
    """One job process (in the task's folder, killed when this Ray worker dies)."""
    spec = job.JobSpec(problem=problem_dir, solution=source, mode=task.mode, device=device, arch=task.arch,
                       budget_s=task.budget, runner=task.runner)
    try:
        return job.run(spec, task.timeout_s, cwd=tmp, die_with_parent=True)
    except job.JobFailed as e:
        if task.mode == "submit":
            return failed_report(_submission(task, source), e, task.kind)
        if e.kind == "timeout":
            return _failed(task, source, f"the build check did not finish within {task.timeout_s:g} s (killed)")
        return _failed(task, source, e.detail())
