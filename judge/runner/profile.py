"""`judge profile`: Nsight Compute (ncu) on one workload, the few numbers that matter per kernel.

The submission (a `.cu`, whose build the profiled program loads, or a Triton `.py`, whose text it
executes as the Triton worker does) is built and policed exactly as `submit` does it
(COMPILE_ERROR and REJECTED stop here), then `python -m judge.runner.profile_target` runs under

    ncu --target-processes all --profile-from-start off --clock-control none
        --csv --page raw --print-units base --metrics <METRICS> python -m judge.runner.profile_target ...

which profiles only the kernels of the solve() calls between cudaProfilerStart/Stop (never the
input generators, nor Triton's compiling and autotuning, which happen in the unprofiled warm-up
call), leaves the GPU's clocks alone (the GPU may be shared) and prints one CSV row
per kernel launch: a header row of column and metric names, a row of units, then the launches.
A metric this ncu or GPU does not know reads `n/a` and becomes None; a metric ncu refuses by
name is dropped and the run retried once without it.
"""
from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from judge import paths
from judge.build import toolchain, toolkit
from judge.build.toolchain import Prepared
from judge.contract.verdict import Status
from judge.problem.spec import Problem, Workload, workload_id
from judge.worker import triton_tuned

NCU_MISSING = "ncu not found; install Nsight Compute or put ncu on PATH"
TIMEOUT_S = 600

# field of KernelProfile → ncu metric (Hopper names; the hmma pipe counts mma.sync, gmma wgmma)
METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "tensor_hmma_pct": "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "tensor_gmma_pct": "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "smem_conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "smem_conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "registers": "launch__registers_per_thread",
    "local_ld_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum",
    "local_st_bytes": "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum",
}
# Units ncu may print (base units with --print-units base; scaled ones are converted too).
_TIME_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
_BYTES = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12,
          "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3}


class NcuMissing(Exception):
    """Nsight Compute is not installed (or not on PATH): INTERNAL_ERROR, exit 3."""

    def __init__(self) -> None:
        super().__init__(NCU_MISSING)


class ProfileError(Exception):
    """The profile could not be taken. `status` says whose fault: RUNTIME_ERROR (the submission's
    CUDA error), COMPILE_ERROR or REJECTED (as submit would say), or INTERNAL_ERROR (ncu, no GPU)."""

    def __init__(self, status: Status, message: str):
        super().__init__(message)
        self.status = status


class ShapeError(ValueError):
    """A --shape that names no workload of the problem (a bad command line)."""


class TunedError(ValueError):
    """A --tuned that names no autotuned kernel, or no configuration of its autotuner, of the file
    (a bad command line; known only once the profiled program has loaded the file)."""


class Unsupported(ValueError):
    """A file of a language whose worker the profiled program cannot load (it loads the native and
    the Triton ones'): a bad command line, said before ncu is looked for."""


@dataclass
class KernelProfile:
    id: int
    kernel: str
    grid: str = ""
    block: str = ""
    duration_ns: float | None = None
    dram_pct: float | None = None
    sm_pct: float | None = None
    tensor_hmma_pct: float | None = None
    tensor_gmma_pct: float | None = None
    occupancy_pct: float | None = None
    smem_conflicts_ld: float | None = None
    smem_conflicts_st: float | None = None
    registers: float | None = None
    local_ld_bytes: float | None = None
    local_st_bytes: float | None = None

    @property
    def duration_us(self) -> float | None:
        return None if self.duration_ns is None else self.duration_ns / 1e3

    @property
    def tensor_pct(self) -> float | None:
        """The busier tensor pipe (mma.sync's or wgmma's), None where ncu gave neither."""
        vals = [v for v in (self.tensor_hmma_pct, self.tensor_gmma_pct) if v is not None]
        return max(vals) if vals else None


@dataclass
class Profile:
    problem: str
    solution: str
    workload: str
    arch: str
    command: list[str]
    kernels: list[KernelProfile] = field(default_factory=list)
    sass: dict[str, dict[str, int]] = field(default_factory=dict)  # demangled kernel → opcode counts
    dropped_metrics: list[str] = field(default_factory=list)  # refused by this ncu
    tuned: list[str] = field(default_factory=list)  # a Triton file's autotuners' choices (triton_tuned)

    def to_json(self) -> dict:
        d = asdict(self)
        for k, kd in zip(self.kernels, d["kernels"]):
            kd["duration_us"], kd["tensor_pct"] = k.duration_us, k.tensor_pct
        return d


# -- finding things ------------------------------------------------------------------------------
def ncu_path() -> str | None:
    """ncu on PATH, else in the CUDA toolkit, else Nsight Compute's default install folder."""
    found = shutil.which("ncu")
    if found:
        return found
    home = toolkit.cuda_home()
    candidates = [str(Path(home) / "bin" / "ncu")] if home else []
    candidates += sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)
    return next((c for c in candidates if os.access(c, os.X_OK)), None)


def pick_workload(problem: Problem, shape: str | None) -> Workload:
    """None → the first benchmark workload; a number → that benchmark (0-based); otherwise a
    workload id (`M=4096,N=4096,K=4096`) of a benchmark or test workload."""
    benches = list(problem.spec.benchmarks)
    every = benches + list(problem.spec.tests)
    if not every:
        raise ShapeError(f"{problem.name} has no workloads")
    if shape is None:
        return (benches or every)[0]
    text = shape.strip()
    if text.isdigit():
        i = int(text)
        if i < len(benches):
            return benches[i]
        raise ShapeError(f"--shape {text}: {problem.name} has {len(benches)} benchmark workloads "
                         f"(0..{len(benches) - 1}): " + "; ".join(workload_id(w) for w in benches))
    wanted = text.replace(" ", "")
    for w in every:
        if workload_id(w) == wanted:
            return w
    raise ShapeError(f"--shape {text!r} is no workload of {problem.name}; benchmarks: "
                     + "; ".join(f"{i}: {workload_id(w)}" for i, w in enumerate(benches)))


# -- building, as submit does --------------------------------------------------------------------
def build_checked(problem: Problem, source: Path, arch: str) -> Prepared:
    """Built and policed exactly as submit does it (toolchain.prepare, with SASS summaries):
    ProfileError where submit would answer COMPILE_ERROR, REJECTED or INTERNAL_ERROR."""
    prepared = toolchain.prepare(problem, Path(source), arch, sass=True)
    if prepared.status is not None:
        raise ProfileError(prepared.status, prepared.message)
    return prepared


# -- ncu -----------------------------------------------------------------------------------------
def ncu_command(ncu: str, metrics: list[str], target: list[str], kernel_regex: str | None = None) -> list[str]:
    cmd = [ncu, "--target-processes", "all", "--profile-from-start", "off", "--clock-control", "none",
           "--csv", "--page", "raw", "--print-units", "base", "--metrics", ",".join(metrics)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd + target


PROFILED_WORKERS = {"native": "lib", "triton": "module"}  # worker → the key of Prepared.load it loads


def target_command(problem: Problem, solution: Path, workload: Workload, status_file: Path, calls: int,
                   worker: str = "native", tuned: Sequence[str] = ()) -> list[str]:
    """The profiled program: SOLUTION is the built library (native) or the `.py` (triton)."""
    return [sys.executable, "-m", "judge.runner.profile_target", str(problem.root.resolve()),
            str(Path(solution).resolve()), json.dumps(workload), str(status_file), "--calls", str(calls),
            "--worker", worker, *(arg for line in tuned for arg in ("--tuned", line))]


def run(problem: Problem, source: Path, shape: str | None = None, arch: str = "sm_90a", device: int = 0,
        calls: int = 1, kernel_regex: str | None = None, timeout_s: float = TIMEOUT_S,
        tuned: Sequence[str] = ()) -> Profile:
    """Build (as submit), then profile `calls` calls of solve() on one workload under ncu. `tuned`
    (a Triton file): "KERNEL: CONFIG" lines, as `judge submit` prints what its autotuner kept; each
    such autotuner runs that configuration, untuned."""
    language = toolchain.for_source(Path(source))
    if language.worker not in PROFILED_WORKERS:
        raise Unsupported(f"{Path(source).name}: judge profile loads CUDA (.cu) and Triton (.py) solutions; "
                          f"profiling a {language.name} file is not built yet (judge submit times it)")
    if tuned and language.worker != "triton":
        raise TunedError(f"--tuned names an autotuner's configuration: {Path(source).name} is not a Triton file")
    workload = pick_workload(problem, shape)
    ncu = ncu_path()
    if not ncu:
        raise NcuMissing()
    result = build_checked(problem, source, arch)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(device), PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(paths.CODE_ROOT),
                                                      env.get("PYTHONPATH")]))
    metrics = list(METRICS.values())
    dropped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="judge-profile-") as tmp:
        status_file = Path(tmp) / "status.json"
        target = target_command(problem, Path(result.load[PROFILED_WORKERS[language.worker]]), workload,
                                status_file, calls, language.worker, tuned)
        for attempt in range(2):
            cmd = ncu_command(ncu, metrics, target, kernel_regex)
            status_file.unlink(missing_ok=True)
            returncode, stdout, output = _run(cmd, env, tmp, timeout_s)
            refused = refused_metrics(metrics, output)
            if attempt == 0 and refused and len(refused) < len(metrics):
                dropped += refused
                metrics = [m for m in metrics if m not in refused]
                continue
            break
        status = _status(status_file)
    if status.get("kind") == "usage":
        raise TunedError(str(status.get("error")))
    if status.get("kind") == "solve":
        raise ProfileError(Status.RUNTIME_ERROR, f"{status.get('error')}\n{_tail(output)}")
    if not status.get("ok"):
        why = status.get("error") or f"the profiled program did not finish (ncu exit status {returncode})"
        raise ProfileError(Status.INTERNAL_ERROR, f"{why}\n{_tail(output)}")
    kernels = parse_csv(stdout)
    if not kernels:
        raise ProfileError(Status.INTERNAL_ERROR, "ncu profiled no kernel of solve() (no launch, a --kernel "
                           f"filter that matches none, or no access to the GPU's counters)\n{_tail(output)}")
    sass_by_kernel = {k.kernel: k.sass for k in (result.build.kernels if result.build else []) if k.sass}
    return Profile(problem=problem.name, solution=str(source), workload=workload_id(workload), arch=arch,
                   command=cmd, kernels=kernels, sass=sass_by_kernel, dropped_metrics=dropped,
                   tuned=triton_tuned.clean(status.get("tuned", "")))


def _run(cmd: list[str], env: dict, cwd: str, timeout_s: float) -> tuple[int, str, str]:
    """Run ncu in a session of its own: on a timeout (or an interrupt) the profiled program, ncu's
    child, is killed with it rather than left holding the GPU. → (exit status, stdout, both)."""
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                cwd=cwd, start_new_session=True)
    except OSError as e:
        raise ProfileError(Status.INTERNAL_ERROR, f"ncu could not start: {e}") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ProfileError(Status.INTERNAL_ERROR, f"ncu did not finish within {timeout_s:.0f} s") from None
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.communicate()
    return proc.returncode, stdout, stdout + stderr


def refused_metrics(metrics: list[str], output: str) -> list[str]:
    """The metrics ncu's error lines name, e.g. `==ERROR== Failed to find metric
    regex:^sm__foo\\.(sum|avg|...)$`: matched by base name (the part before the first dot)."""
    errors = "\n".join(ln for ln in output.splitlines() if ln.startswith("==ERROR==")).replace("\\", "")
    return [m for m in metrics
            if re.search(rf"(?<![A-Za-z0-9_]){re.escape(m.split('.')[0])}(?![A-Za-z0-9_])", errors)]


def _tail(output: str, n: int = 15) -> str:
    lines = [ln for ln in output.splitlines() if not ln.startswith('"')]  # ncu's messages, not the CSV
    return "ncu output (tail):\n" + "\n".join(lines[-n:]) if lines else ""


def _status(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


# -- parsing -------------------------------------------------------------------------------------
def parse_csv(text: str) -> list[KernelProfile]:
    """ncu's `--csv --page raw` output → one KernelProfile per profiled launch.

    ncu's own lines (`==PROF== ...`, `==WARNING== ...`) and the program's output are skipped: the
    table starts at the row whose first cell is `ID`. The row after it holds the units (its ID
    cell is empty). Values may carry thousands separators (`1,234.5`) and read `n/a`."""
    lines = text.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"ID"')), None)
    if start is None:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[start:] if ln.startswith('"')))))
    header, body = rows[0], rows[1:]
    units = body.pop(0) if body and body[0] and body[0][0] == "" else [""] * len(header)
    out = []
    for row in body:
        cell = dict(zip(header, row))
        unit = dict(zip(header, units))
        if not cell.get("ID", "").strip().isdigit():
            continue
        k = KernelProfile(id=int(cell["ID"]), kernel=cell.get("Kernel Name", ""),
                          grid=cell.get("Grid Size", ""), block=cell.get("Block Size", ""))
        for name, metric in METRICS.items():
            if metric in cell:
                setattr(k, name, number(cell[metric], unit.get(metric, "")))
        out.append(k)
    return out


def number(value: str, unit: str = "") -> float | None:
    """`"1,234.5"` with unit `usecond` → 1234500.0 (times in ns, sizes in bytes); `n/a` → None."""
    text = value.strip().replace(",", "")
    if not text or text.lower() in ("n/a", "nan", "-"):
        return None
    try:
        v = float(text)
    except ValueError:
        return None
    unit = unit.strip()
    return v * _TIME_NS.get(unit, _BYTES.get(unit, 1.0))

