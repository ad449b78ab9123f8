"""What this machine has for judging, what is missing, and how to fix it."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import warnings
from dataclasses import dataclass

from judge import paths
from judge.build import toolkit
from judge.gpu import device
from judge.sandbox import cgroup, pidns, seccomp


@dataclass
class Finding:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # for `submit` on this machine


def diagnose() -> list[Finding]:
    out = []
    gpus = device.gpus()
    if gpus:
        g = gpus[0]
        out.append(Finding("GPU", True, f"{len(gpus)} × {g.name} (sm_{g.major}{g.minor}, "
                           f"{g.memory_bytes / 2**30:.0f} GiB)"))
        out.append(Finding("driver", True, g.driver))
    else:
        out.append(Finding("GPU", False, "NVML sees no NVIDIA GPU",
                           "judge on a machine with an NVIDIA GPU and driver; building still works here"))
    version = toolkit.nvcc_version()
    out.append(Finding("nvcc", bool(version), f"{version} at {toolkit.nvcc_path()}" if version else "not found",
                       "" if version else "install the CUDA toolkit (12.4+) or set CUDA_HOME"))
    out.append(Finding("cudart", bool(toolkit.cudart_dir()), toolkit.cudart_dir() or "libcudart.so not found",
                       "" if toolkit.cudart_dir() else "install the CUDA toolkit's runtime library"))
    torch_spec = importlib.util.find_spec("torch")
    if torch_spec is None:
        out.append(Finding("torch", False, "not installed", "pip install torch"))
    else:
        with warnings.catch_warnings():  # torch without NumPy warns on import; the numpy line says so
            warnings.simplefilter("ignore")
            import torch

        cuda = torch.version.cuda
        out.append(Finding("torch", cuda is not None or not gpus,
                           f"{torch.__version__} ({'CUDA ' + cuda if cuda else 'CPU-only build'})",
                           "" if cuda or not gpus else "install a CUDA build of torch to judge on this GPU"))
    unconfinable = seccomp.supported()
    out.append(Finding("sandbox", unconfinable is None, unconfinable or "seccomp (the candidate's worker is confined)",
                       "" if unconfinable is None else "judge on x86-64 Linux with seccomp, or set JUDGE_CONFINE=0 "
                       "to judge without the sandbox"))
    out.append(_numpy())
    out.append(_ncu())
    out.append(_pid_namespace())
    out.append(_cgroup())
    ninja = shutil.which("ninja") or shutil.which("ninja", path=str(sys.prefix) + "/bin")
    out.append(Finding("ninja", bool(ninja), ninja or "not found", "" if ninja else "pip install ninja"))
    out.append(_docker())
    return out


def _numpy() -> Finding:
    try:
        spec = importlib.util.find_spec("numpy")
    except ImportError:  # a broken install
        spec = None
    if spec is None:
        return Finding("numpy", False, "not installed (torch runs without it; the test suite needs it)",
                       "pip install numpy", False)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return Finding("numpy", True, version("numpy"), required=False)
    except PackageNotFoundError:
        return Finding("numpy", True, "installed", required=False)


def _pid_namespace() -> Finding:
    """The candidate's worker in a pid namespace of its own (judge/sandbox/pidns.py). Required only
    where it is asked for (the default) and the OS gives the namespace but not its /proc: every
    worker would fail to start."""
    name, off = "pid namespace", f"{paths.ENV_PID_NAMESPACE}=0"
    if not pidns.wanted():
        return Finding(name, False, f"none for the candidate's worker: {off} turns it off", required=False)
    found = pidns.probe()
    if found.no_proc:
        return Finding(name, False, f"the OS gives the candidate's worker one but not its /proc ({found.no_proc}): "
                       "the worker would not start (CUDA needs the namespace's own /proc)",
                       f"judge where /proc can be mounted (root, not a container that masks /proc), or set {off}")
    if found.refused:
        return Finding(name, False, f"none for the candidate's worker ({found.refused}): it runs in its process "
                       "group only", "judge as root for a pid namespace per worker", required=False)
    return Finding(name, True, f"the candidate's worker gets one, with its own /proc ({off} turns it off)",
                   required=False)


def _cgroup() -> Finding:
    """Each worker in a cgroup of its own (judge/sandbox/cgroup.py): optional, the memory watch and
    RLIMIT_NPROC stand in where the judge cannot make one."""
    name, off = "cgroup", f"{paths.ENV_CGROUP}=0"
    if not cgroup.wanted():
        return Finding(name, False, f"none for the workers: {off} turns it off", required=False)
    why = cgroup.probe()
    if why:
        return Finding(name, False, f"none for the workers ({why}): host memory is watched by polling and "
                       "tasks are bounded per user (not for root)",
                       "judge as root, or where the judge's cgroup delegates the memory and pids controllers",
                       required=False)
    found = cgroup.home()
    return Finding(name, True, f"each worker gets one (v{found.version}, in {found.folders()[0]}): host memory "
                   f"and {cgroup.TASK_LIMIT} tasks bounded by the kernel ({off} turns it off)", required=False)


def _ncu() -> Finding:
    from judge.runner.profile import ncu_path

    found = ncu_path()
    return Finding("ncu", bool(found), found or "Nsight Compute not found",
                   "" if found else "install Nsight Compute, or put ncu on PATH (only for `judge profile`)", False)


def _docker() -> Finding:
    if importlib.util.find_spec("docker") is None:
        return Finding("docker", False, "the docker Python SDK is not installed", "pip install docker", False)
    try:
        import docker.client

        client = docker.client.from_env(timeout=5)
        version = client.version().get("Version", "?")
        return Finding("docker", True, f"engine {version}", required=False)
    except Exception as e:  # noqa: BLE001 — any failure means "no engine reachable"
        return Finding("docker", False, f"no engine reachable ({type(e).__name__})",
                       "start dockerd (only needed for --runner docker)", False)
