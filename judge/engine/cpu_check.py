"""`judge test PROBLEM FILE.py --cpu`: a Python (Triton) submission's correctness on CPU, through
Triton's interpreter (`TRITON_INTERPRET=1`), on the problem's test workloads small enough for it.

A practice check: nothing is timed, nothing is recorded, and passing is not ACCEPTED (`status`
None). The judge's rules still apply where they mean something on CPU:
- the static policy and the ABI first (judge/build/triton.py): REJECTED or COMPILE_ERROR;
- inputs drawn as the judge draws its test inputs, from a fresh secret; outputs poisoned, so an
  element never written shows; the expected outputs computed here, never in the child;
- the submission runs in a child process of its own (judge/worker/triton_cpu.py: limits on its CPU
  time, address space and file sizes (its prints go to a file, not into this process's memory),
  its own session, the worker's seccomp filter where there is one), never in this one; its
  records come back in a file of their own, which its prints cannot forge;
- the work must be done by Triton kernels: a solve() that computes with torch outside a kernel
  launch (`torch.add`, `C.copy_(...)`, `A @ B`) or launches no kernel is REJECTED, naming the ops;
- each output is checked with the problem's own check (WRONG_ANSWER shows the evidence).

Workloads above `MAX_NUMEL` elements or `MAX_FLOPS` are skipped (the interpreter runs every
program of the grid in Python: about half a second a million elements) and listed as skipped.
"""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from judge.build.triton import TRITON
from judge.contract.report import CheckResult
from judge.contract.verdict import Status
from judge.problem import cpu_rules, spec
from judge.problem.checks import run_check
from judge.problem.workloads import poison
from judge.worker.protocol import POISON_BYTES

MAX_NUMEL = 1 << 22  # elements over all tensors of a workload
MAX_FLOPS = 1e9
TIMEOUT_S = 300.0  # the whole child: interpreting is slow, a stall is still a stall
MEMORY_BYTES = 16 << 30  # the child's address space (torch and Triton take ~1 GiB of it)
FILE_LIMIT_BYTES = 256 << 20  # RLIMIT_FSIZE: its outputs' file, its records, its prints (each; a
# write past it fails with EFBIG, "File too large": Python ignores SIGXFSZ)
STDERR_TAIL = 4000


@dataclass
class CaseResult:
    index: int  # 1-based, as `judge show` and `judge test --workload` count the tests
    workload: str
    passed: bool
    launches: int = 0
    ops: list[str] = field(default_factory=list)  # torch ops solve() ran outside kernel launches
    error: str | None = None
    checks: list[CheckResult] = field(default_factory=list)


@dataclass
class CpuCheck:
    problem: str
    solution: str
    status: Status | None = None  # None: every checked workload passed (a practice pass, not ACCEPTED)
    message: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # workloads too large for the interpreter
    sandboxed: bool = False  # the child ran under the seccomp filter
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        return 0 if self.status is None else self.status.exit_code

    def to_dict(self) -> dict:
        d = asdict(self)
        d["status"] = "PASSED" if self.status is None else self.status.value
        d["practice"] = True  # not timed, not recorded, not ACCEPTED
        d["cases"] = [{**asdict(c), "checks": [ch.model_dump() for ch in c.checks]} for c in self.cases]
        return d


def checked_workloads(problem: spec.Problem) -> tuple[list[int], list[str]]:
    """(indexes of the test workloads the interpreter takes, ids of those it skips)."""
    take, skip = [], []
    for i, w in enumerate(problem.spec.tests):
        if problem.numel(w) <= MAX_NUMEL and float(problem.flops(w)) <= MAX_FLOPS:
            take.append(i)
        else:
            skip.append(spec.workload_id(w))
    return take, skip


def run(problem: spec.Problem, source: Path, on_case: Callable[[CaseResult], None] | None = None,
        timeout_s: float = TIMEOUT_S) -> CpuCheck:
    t0 = time.perf_counter()
    result = CpuCheck(problem.name, str(source))
    try:
        return _run(problem, Path(source), result, on_case, timeout_s)
    finally:
        result.seconds = round(time.perf_counter() - t0, 3)


def _run(problem: spec.Problem, source: Path, result: CpuCheck, on_case, timeout_s: float) -> CpuCheck:
    prepared = TRITON.prepare_checks(problem, source)
    if not prepared.ok:
        result.status, result.message = prepared.status, prepared.message
        return result
    if importlib.util.find_spec("triton") is None:
        result.status = Status.INTERNAL_ERROR
        result.message = "Triton is not installed here: pip install triton (the CPU check runs its interpreter)"
        return result
    take, result.skipped = checked_workloads(problem)
    if not take:
        result.status = Status.INTERNAL_ERROR
        result.message = f"no test workload of {problem.name} is small enough for Triton's interpreter"
        return result
    secret = secrets.randbits(63)
    cases, expected = [], []
    for i in take:
        inputs, want = cpu_rules.draw(problem, i, secret)
        w = problem.spec.tests[i]
        args: dict = dict(inputs)
        for o in problem.outputs:
            args[o.name] = _poisoned(problem, o, w, secrets.choice(POISON_BYTES))
        args.update({p.name: w[p.name] for p in problem.scalars})
        cases.append({"args": args, "outputs": [o.name for o in problem.outputs]})
        expected.append(want)
    with tempfile.TemporaryDirectory(prefix="judge-cpu-") as tmp:
        job = Path(tmp)
        torch.save({"module": str(source.resolve()), "cases": cases}, job / "job.pt")
        lines, failure = _child(job, timeout_s, result)
        got = _outputs(job / "out.pt", cases) if failure is None else None
    if failure is not None:
        result.status, result.message = failure
        return result
    return _verdict(problem, take, lines, got, expected, result, on_case)


def _outputs(path: Path, cases: list[dict]) -> list[dict] | None:
    """The child's outputs, one dict of tensors per case as sent; None when they did not come back
    in that shape (the child is the submission's: its file is read as data, never trusted)."""
    try:
        got = torch.load(path, weights_only=True)
    except Exception:  # noqa: BLE001 — missing, cut short or not a tensor file: no outputs
        return None
    ok = isinstance(got, list) and len(got) == len(cases) and all(
        isinstance(g, dict) and all(isinstance(g.get(name), torch.Tensor) for name in c["outputs"])
        for g, c in zip(got, cases))
    return got if ok else None


def _poisoned(problem: spec.Problem, param: spec.Param, w: spec.Workload, byte: int):
    t = torch.empty(problem.shape_of(param.name, w), dtype=cpu_rules.dtype_of(param))
    poison(t, byte)
    return t


def _child(job: Path, timeout_s: float, result: CpuCheck) -> tuple[list[dict], tuple[Status, str] | None]:
    """Run the child; (its case lines, the failure that ends the check or None)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(job / "stdout.txt", "wb") as out, open(job / "stderr.txt", "wb") as err:
        p = subprocess.Popen([sys.executable, "-m", "judge.worker.triton_cpu", str(job)], cwd=job, env=env,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err, preexec_fn=_limits(timeout_s),
                             start_new_session=True)
        try:
            p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            return [], (Status.TIMEOUT, f"the CPU check did not finish within {timeout_s:g} s")
    lines = []
    for line in _head(job / "records.jsonl", FILE_LIMIT_BYTES).splitlines():
        try:
            lines.append(json.loads(line))
        except ValueError:
            break  # a record cut short (the child was killed while writing it)
    result.sandboxed = any(x.get("filter") is True for x in lines)
    tail = _tail(job / "stderr.txt", STDERR_TAIL).strip()
    more = f"\n{tail}" if tail else ""
    if p.returncode < 0:
        sig = signal.Signals(-p.returncode).name
        if sig == "SIGSYS":
            return lines, (Status.REJECTED, f"the sandbox refused a system call the submission made (SIGSYS){more}")
        return lines, (Status.RUNTIME_ERROR, f"the submission's process was killed by {sig}{more}")
    if p.returncode != 0:
        return lines, (Status.RUNTIME_ERROR, f"the submission's process exited with status {p.returncode}{more}")
    load = next((x for x in lines if x.get("case") == -1), None)
    if load is not None:
        return lines, (Status.RUNTIME_ERROR, f"importing the file failed:\n{load['error']}")
    return lines, None


def _limits(timeout_s: float):
    def apply() -> None:
        cpu = int(timeout_s) + 10
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT_BYTES, FILE_LIMIT_BYTES))
    return apply


def _head(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode(errors="replace")
    except OSError:
        return ""


def _tail(path: Path, limit: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - limit))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def _verdict(problem: spec.Problem, take: list[int], lines: list[dict], got, expected, result: CpuCheck,
             on_case) -> CpuCheck:
    by_case = {x["case"]: x for x in lines if isinstance(x.get("case"), int)}
    for k, i in enumerate(take):
        w = problem.spec.tests[i]
        line = by_case.get(k)
        case = CaseResult(i + 1, spec.workload_id(w), False)
        if line is None or got is None:
            case.error = "no result came back for this workload"
        else:
            case.launches, case.ops, case.error = line["launches"], line["ops"], line["error"]
        if case.error is None and not case.ops and case.launches:
            case.checks = [run_check(problem.spec.check, o.name, got[k][o.name], expected[k][o.name])
                           for o in problem.outputs]
            case.passed = all(c.passed for c in case.checks)
        result.cases.append(case)
        if on_case:
            on_case(case)
        if not case.passed:
            result.status, result.message = _failure(case)
            return result
    return result


def _failure(case: CaseResult) -> tuple[Status, str]:
    where = f"test {case.index} {{{case.workload}}}"
    if case.error:
        return Status.RUNTIME_ERROR, f"{where}: solve() raised\n{case.error}"
    if case.ops:
        return Status.REJECTED, (f"{where}: solve() computed with torch outside Triton kernels "
                                 f"({', '.join(case.ops)}): the work must be done by kernels it launches")
    if not case.launches:
        return Status.REJECTED, f"{where}: solve() launched no Triton kernel"
    bad = next(c for c in case.checks if not c.passed)
    return Status.WRONG_ANSWER, f"{where}: {bad.output}: {bad.message or f'{bad.n_bad} of {bad.numel} elements wrong'}"
