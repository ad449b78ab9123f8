"""What runs on a cluster node: one Ray task judges one (submission, problem, GPU kind).

The driver (judge/board/cluster.py) ships everything the task needs in a plain dict (the source
bytes and the problem folder's files: nodes share no filesystem with the driver). The task
writes them to a temporary folder and runs the judge in a process of its own, as the local
runner does (`jobs.SubprocessJudge`), so a submission that crashes or hangs its judging
process costs one row, never the Ray worker or the node:

- mode "submit": `python -m cli submit PROBLEM FILE --json --no-record --device N` (plus
  `--runner docker ...` when asked), on the GPU Ray gave this task;
- mode "build" (`judge leaderboard run --build-only`): `python -m judge.board.cluster_task`, the
  judge's GPU-free path (static source policy, nvcc build, static build policy), no timing.
  Its result is a `BuildCheck`, never a `Report`: a successful build is not a verdict.

The GPU: Ray sets CUDA_VISIBLE_DEVICES for the task and `ray.get_gpu_ids()` returns its id in the
node's own namespace: the entries of the CUDA_VISIBLE_DEVICES the node was started with, or
0..n-1 when it had none. The judge's `--device N` is a physical (NVML) index and its worker
sets CUDA_VISIBLE_DEVICES itself, so `physical_index` turns the id into an NVML index (a digit
string is one; a `GPU-...` UUID is looked up in NVML) and the child runs without Ray's
CUDA_VISIBLE_DEVICES.

Test hook (inert unless set): JUDGE_CLUSTER_TEST_FAULT="die:NAME.cu,sleep=S:NAME.cu" makes the
build child kill itself (SIGKILL), or sleep S seconds first, for a source of that file name.
tests/test_cluster.py uses it to crash a judging process and to keep a task running while it
kills the node under it.
"""
from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import ValidationError

from judge import paths
from judge import __version__
from judge.contract.report import BuildInfo, KernelInfo, _M
from judge.contract.verdict import Status

FAULT_ENV = paths.ENV_CLUSTER_TEST_FAULT
BUILT = "BUILT"  # a BuildCheck's outcome when the build and both policies passed


class BuildCheck(_M):
    """The GPU-free path's result for one file: built and policy-clean, or why not."""
    problem: str
    solution: str
    source_sha256: str
    arch: str
    outcome: str  # BUILT, or the verdict the judge would give: COMPILE_ERROR, REJECTED, INTERNAL_ERROR
    message: str = ""
    build: BuildInfo | None = None
    started_at: str = ""
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.outcome == BUILT


def physical_index(gpu_id, nvml_gpus=None) -> int:
    """The NVML index of the GPU Ray gave a task (see the module's doc)."""
    text = str(gpu_id).strip()
    if text.isdigit():
        return int(text)
    if nvml_gpus is None:
        from judge.gpu.device import gpus

        nvml_gpus = gpus()
    for g in nvml_gpus:
        if g.uuid == text:
            return g.index
    raise ValueError(f"Ray gave this task GPU {text!r}, which is neither an index nor the UUID of a GPU "
                     "NVML sees here (MIG instances are not supported)")


def check_build(problem_dir: Path, source: Path, arch: str) -> BuildCheck:
    """Static source policy → nvcc → static build policy: everything the judge does before a GPU."""
    from judge.build import toolchain
    from judge.problem import spec

    t0 = time.perf_counter()
    src = Path(source).read_bytes()
    check = BuildCheck(problem=Path(problem_dir).name, solution=str(source), arch=arch, outcome=BUILT,
                       source_sha256=hashlib.sha256(src).hexdigest(),
                       started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    try:
        problem = spec.load_problem(problem_dir)
        prepared = toolchain.prepare(problem, source, arch)
        check.build = prepared.build
        if prepared.status is not None:
            check.outcome, check.message = prepared.status.value, prepared.message
    except spec.ProblemError as e:
        check.outcome, check.message = Status.INTERNAL_ERROR.value, f"the shipped problem is invalid: {e}"
    except (OSError, ValueError) as e:  # nvcc missing, nm failing, a bad arch
        check.outcome, check.message = Status.INTERNAL_ERROR.value, f"{type(e).__name__}: {e}"
    check.wall_s = round(time.perf_counter() - t0, 3)
    return check


# -- the Ray task -------------------------------------------------------------------------------

def judge_job(job: dict, problem_files: dict[str, bytes], tracker=None) -> dict:
    """Judge one job on this node (the body of the Ray task; judge/board/cluster.py submits it).
    `problem_files`: the problem folder, relative path → bytes."""
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
        tracker.started.remote(job["id"], node, host, device)
    if job.get("judge_version") != __version__:
        error = (f"this node runs kernel-judge {__version__}, the driver {job.get('judge_version')}: "
                 "install the same version on every node")
    if error is None and device is None and job["mode"] == "submit":
        error = "Ray gave this task no GPU (does the node declare --num-gpus?)"
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="judge-cluster-") as tmp:
        problem_dir, source = _unpack(job, problem_files, Path(tmp))
        if error is not None:
            result = _failed(job, source, error)
        elif job["mode"] == "build":
            result = _run_build(job, problem_dir, source, device)
        else:
            result = _run_submit(job, problem_dir, source, device)
    return {"id": job["id"], "node": node, "host": host, "device": device, "mode": job["mode"],
            "result_json": result.model_dump_json(), "seconds": time.monotonic() - t0}


def _unpack(job: dict, problem_files: dict[str, bytes], tmp: Path) -> tuple[Path, Path]:
    problem_dir = tmp / "problems" / job["problem"]
    for rel, data in problem_files.items():
        path = problem_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    source = tmp / "src" / job["name"]
    source.parent.mkdir(parents=True)
    source.write_bytes(job["source"])
    return problem_dir, source


def _failed(job: dict, source: Path, message: str):
    from judge.board.submissions import Submission, error_report

    if job["mode"] == "build":
        return BuildCheck(problem=job["problem"], solution=job["name"], source_sha256=job["sha256"],
                          arch=job.get("arch") or "", outcome=Status.INTERNAL_ERROR.value, message=message,
                          started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    sub = Submission(job["participant"], job["problem"], source, job["sha256"])
    return error_report(sub, Status.INTERNAL_ERROR, message, job["kind"])


def _child(cmd: list[str], timeout_s: float) -> tuple[int, str, str] | None:
    """Run one judging process (its own session, killed whole on timeout, and killed when this Ray
    worker dies: a cancelled or orphaned job must not keep a GPU busy); None on timeout."""
    env = dict(os.environ)
    env.pop("CUDA_VISIBLE_DEVICES", None)  # Ray's; the judge's --device N is a physical index
    root = str(paths.CODE_ROOT)
    env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root, env=env,
                            start_new_session=True, preexec_fn=_die_with_parent if _PRCTL else None)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return proc.returncode, stdout, stderr


def _prctl():
    try:
        import ctypes

        return ctypes.CDLL(None).prctl  # resolved here: between fork and exec, only the call runs
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl() if sys.platform == "linux" else None


def _die_with_parent() -> None:
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: killed when the Ray worker dies


def _run_submit(job: dict, problem_dir: Path, source: Path, device: int):
    from judge.board.jobs import SubprocessJudge, parse
    from judge.board.submissions import Submission

    sub = Submission(job["participant"], job["problem"], source, job["sha256"])
    judge = SubprocessJudge(problem_dir.parent, job["kind"], job.get("budget"), job.get("arch"), job["timeout_s"])
    done = _child(judge.command(sub, device) + list(job.get("runner_args") or []), job["timeout_s"])
    if done is None:
        from judge.board.submissions import error_report

        return error_report(sub, Status.TIMEOUT, f"judging did not finish within {job['timeout_s']:g} s "
                            "(the judging process was killed)", job["kind"])
    return parse(sub, *done, job["kind"])


def _run_build(job: dict, problem_dir: Path, source: Path, device: int | None) -> BuildCheck:
    arch = job.get("arch") or _local_arch(device)
    out = source.parent / "check.json"
    cmd = [sys.executable, "-m", "judge.board.cluster_task", str(problem_dir), str(source), arch, str(out)]
    done = _child(cmd, job["timeout_s"])
    if done is None:
        return _failed(job, source, f"the build check did not finish within {job['timeout_s']:g} s (killed)")
    try:
        return BuildCheck.model_validate_json(out.read_text())
    except (OSError, ValidationError):
        code, stdout, stderr = done
        why = (f"the build-check process died of signal {-code}" if code < 0
               else f"the build-check process exited {code} without a result")
        tail = (stdout + stderr).strip()[-1500:]
        return _failed(job, source, why + (f"\n{tail}" if tail else ""))


def _local_arch(device: int | None) -> str:
    from judge.build.nvcc import arch_for
    from judge.gpu.device import gpus

    gpu = next((g for g in gpus() if g.index == device), None)
    return arch_for(gpu.major, gpu.minor) if gpu else "sm_90a"  # the pipeline's default without a GPU


def _test_fault(name: str) -> None:
    for rule in filter(None, os.environ.get(FAULT_ENV, "").split(",")):
        action, _, target = rule.partition(":")
        if target != name:
            continue
        if action == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if action.startswith("sleep="):
            time.sleep(float(action.split("=", 1)[1]))


if __name__ == "__main__":  # the build-check child: PROBLEM_DIR SOURCE ARCH OUT.json
    _problem, _source, _arch, _out = sys.argv[1:5]
    _test_fault(Path(_source).name)
    Path(_out).write_text(check_build(Path(_problem), Path(_source), _arch).model_dump_json())
