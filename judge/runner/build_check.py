"""The judge's GPU-free path for one file (`judge leaderboard run --cluster ... --build-only`):
static source policy, the build, static build policy; no timing. Its result is a `BuildCheck`,
never a `Report`: a successful build is not a verdict."""
from __future__ import annotations

import hashlib
import time
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from judge.contract.report import BuildInfo
from judge.contract.verdict import Status

BUILT = "BUILT"  # a BuildCheck's outcome when the build and both policies passed
DEFAULT_ARCH = "sm_90a"  # the pipeline's default without a GPU


class BuildCheck(BaseModel):
    """The GPU-free path's result for one file: built and policy-clean, or why not."""
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")

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


def now_stamp() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def failed_check(problem: str, solution: str, sha256: str, arch: str | None, status: Status,
                 message: str) -> BuildCheck:
    """A check that never ran (or whose process failed): `status` as its outcome."""
    return BuildCheck(problem=problem, solution=solution, source_sha256=sha256, arch=arch or "",
                      outcome=status.value, message=message, started_at=now_stamp())


def local_arch(device: int | None) -> str:
    """The arch of GPU `device` here (NVML index), the pipeline's default without one."""
    from judge.build.nvcc import arch_for
    from judge.gpu.device import gpus

    gpu = next((g for g in gpus() if g.index == device), None)
    return arch_for(gpu.major, gpu.minor) if gpu else DEFAULT_ARCH


def check_file(problem_dir: Path, source: Path, arch: str) -> BuildCheck:
    """Static source policy → build → static build policy: everything the judge does before a GPU."""
    from judge.build import toolchain
    from judge.problem import spec

    t0 = time.perf_counter()
    src = Path(source).read_bytes()
    check = BuildCheck(problem=Path(problem_dir).name, solution=str(source), arch=arch, outcome=BUILT,
                       source_sha256=hashlib.sha256(src).hexdigest(), started_at=now_stamp())
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
