"""`--runner docker`: judge inside a container (docs/security.md, docker/README.md).

The whole pipeline runs in the container (judge/runner/container_entry.py; the worker is still a
process of its own in there): CUDA IPC between a host parent and a contained worker would need
the host's IPC and PID namespaces. The same client code runs in there, so the candidate gets the
native worker and its seccomp filter inside the container's (stacked on docker's own; the
container's user is already nobody with no-new-privileges, so the worker has no root to give up);
the worker is built with the image's nvcc into the container's cache, a tmpfs: once per run
(about 6 s, while the submission builds). This side, the trusted one, copies the solution and the problem
folder to a private folder, starts the container with no network, a read-only root, tmpfs work
dirs, user nobody, no capabilities, no-new-privileges and pids/memory/CPU limits, gives it a fresh
nonce on stdin, and accepts only nonce-tagged lines on its stdout: progress events, then one report
that must validate and name this problem and this source's sha256. Anything else is tampering
(REJECTED); no report is INTERNAL_ERROR (TIMEOUT past the hard wall-clock limit, RUNTIME_ERROR when
the container ran out of memory). The container's exit code decides nothing. It is always removed.

The docker SDK is imported only here, and only when a docker run starts.
"""
from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from judge import paths
from judge.contract.events import Event, Finished
from judge.contract.report import Report
from judge.contract.verdict import Status
from judge.problem.spec import Problem
from judge.runner.container_entry import Reader
from judge.runner.docker_io import DockerUnavailable, Outcome, connect, run_container

IMAGE = paths.docker_image()
CODE_DST = "/opt/kernel-judge"  # the judge's own code, mounted read-only: both sides speak one protocol
JOB_DST = "/job"  # the private copy of the problem folder and the solution
PATH = "/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DRIVER_DIRS = ("/usr/local/nvidia/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib")
STDOUT_CAP_BYTES = 32 << 20
TMPFS_DSTS = ("/work", "/tmp")
GPU_STYLES = ("auto", "toolkit", "devices", "none")


@dataclass
class DockerOptions:
    image: str = IMAGE
    gpus: str = "auto"  # auto | toolkit (NVIDIA container toolkit's --gpus) | devices (nodes + driver mount) | none
    mounts: list[str] = field(default_factory=list)  # extra read-only binds, "SRC:DST"
    host_env: bool = False  # bind this machine's /usr and Python environment (docker/host-image.sh's images)
    driver_dir: str | None = None  # the driver's libraries (devices style); default: found
    # Processes and threads of the judge and its workers together. A worker's own bound is
    # RLIMIT_NPROC, 4096 tasks above what runs when it starts (judge/worker/client.py's
    # EXTRA_TASKS; the container's user is not root, so it binds): the container's must be above
    # that, or a worker's thread flood would take the judge's last task.
    pids_limit: int = 8192
    memory: str = "32g"
    cpus: float = 8.0
    work_size: str = "1g"  # tmpfs /work (HOME, the build cache)
    tmp_size: str = "1g"  # tmpfs /tmp (nvcc's temporaries, the worker's log); exec: nvcc needs it
    shm_size: str = "256m"  # /dev/shm, shared by the judge's processes in the container
    timeout_s: float | None = None  # hard wall clock for the whole container; default from the budget


class MountError(ValueError):
    pass


def parse_mount(text: str) -> tuple[str, str]:
    """`SRC:DST` → (absolute SRC, DST); MountError on anything else."""
    src, sep, dst = text.partition(":")
    if not sep or not src or not dst.startswith("/") or ":" in dst:
        raise MountError(f"--docker-mount {text!r}: expected SRC:DST with an absolute DST")
    if not Path(src).exists():
        raise MountError(f"--docker-mount {text!r}: {src} does not exist")
    return str(Path(src).resolve()), dst


def driver_dir() -> str | None:
    """The folder of the driver's libcuda.so.1 on this machine."""
    for d in DRIVER_DIRS:
        if (Path(d) / "libcuda.so.1").exists():
            return d
    return None


def gpu_config(style: str, device: int, runtimes: list[str], driver: str | None,
               dev: Path = Path("/dev")) -> tuple[dict, dict]:
    """(create() arguments, environment) giving the container GPU `device` and nothing else.
    `auto` is the toolkit where the engine has the nvidia runtime, device nodes where they exist."""
    if style == "auto":
        style = ("toolkit" if "nvidia" in runtimes else
                 "devices" if (dev / "nvidiactl").exists() else "none")
    if style == "none":
        return {}, {}
    if style == "toolkit":
        from docker.types import DeviceRequest

        return {"device_requests": [DeviceRequest(device_ids=[str(device)], capabilities=[["gpu"]])]}, \
            {"NVIDIA_DRIVER_CAPABILITIES": "compute,utility"}
    if style != "devices":
        raise MountError(f"unknown GPU style {style!r} (auto, toolkit, devices or none)")
    nodes = [dev / f"nvidia{device}", dev / "nvidiactl", dev / "nvidia-uvm", dev / "nvidia-uvm-tools"]
    if not nodes[0].exists():
        raise MountError(f"no {nodes[0]}: GPU {device} has no device node here")
    if driver is None:
        raise MountError("the driver's libraries (libcuda.so.1) were not found: pass --docker-driver-dir")
    found = [n for n in nodes if n.exists()]
    groups = sorted({str(n.stat().st_gid) for n in found if n.stat().st_mode & 0o006 != 0o006})
    config = {"devices": [f"{n}:{n}:rwm" for n in found],
              "volumes": {driver: {"bind": driver, "mode": "ro"}}}
    if groups:  # nodes not open to everyone: join their groups
        config["group_add"] = groups
    return config, {"LD_LIBRARY_PATH": driver}


def host_env_mounts(code_root: Path) -> tuple[dict, list[str], dict]:
    """This machine's /usr (the compiler, the CUDA toolkit), real /bin-like folders, the Python
    environment and the library path, read-only at the same paths; (volumes, extra PYTHONPATH,
    environment passed through). Folders holding the judge's repository (reference solutions) are
    left out: the judge's code is mounted on its own."""
    dirs = {"/usr"} | {d for d in ("/bin", "/sbin", "/lib", "/lib64") if Path(d).is_dir() and not Path(d).is_symlink()}
    dirs |= {str(Path(sys.base_prefix).resolve()), str(Path(sys.prefix).resolve())}

    def add(paths: list[str]) -> list[str]:
        kept = []
        for p in paths:
            if not p or not Path(p).is_dir():
                continue
            rp = Path(p).resolve()
            if rp == code_root or rp in code_root.parents or code_root in rp.parents or rp == Path.cwd() \
                    or str(rp) in TMPFS_DSTS or rp == Path("/"):
                continue
            kept.append(str(rp))
            if not any(rp == Path(d) or Path(d) in rp.parents for d in dirs):
                dirs.add(str(rp))
        return kept

    extra = [p for p in add(sys.path) if not any(Path(p) == Path(d) or Path(d) in Path(p).parents
                                                  for d in ("/usr", sys.base_prefix, sys.prefix))]
    env = {k: os.environ[k] for k in ("CUDA_HOME", "CUDA_PATH", paths.ENV_CUDART) if os.environ.get(k)}
    libs = add(os.environ.get("LD_LIBRARY_PATH", "").split(":"))
    if libs:
        env["LD_LIBRARY_PATH"] = ":".join(libs)
    return {d: {"bind": d, "mode": "ro"} for d in sorted(dirs)}, extra, env


def container_config(problem: Problem, job: Path, solution_name: str, mode: str, arch: str | None,
                     budget: float, dopts: DockerOptions, gpu: tuple[dict, dict]) -> dict:
    """The arguments of `containers.create()` for one judging run."""
    code_root = paths.CODE_ROOT
    volumes = {str(code_root / "judge"): {"bind": f"{CODE_DST}/judge", "mode": "ro"},
               str(job): {"bind": JOB_DST, "mode": "ro"}}
    pythonpath, python = [CODE_DST], "python3"  # the image's own PATH finds its python3
    passed: dict[str, str] = {}
    if dopts.host_env:
        env_volumes, extra, passed = host_env_mounts(code_root)
        volumes.update(env_volumes)
        pythonpath += extra
        python = sys.executable
        passed["PATH"] = f"{Path(sys.executable).parent}:{PATH}"
    for m in dopts.mounts:
        src, dst = parse_mount(m)
        volumes[src] = {"bind": dst, "mode": "ro"}
    gpu_args, gpu_env = gpu_config_volumes(gpu, volumes)
    env = {"HOME": "/work", "TMPDIR": "/tmp", "XDG_CACHE_HOME": "/work/.cache", **passed,
           "PYTHONPATH": ":".join(pythonpath), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
           **gpu_env}
    if "LD_LIBRARY_PATH" in gpu_env and passed.get("LD_LIBRARY_PATH"):  # the driver's folder first
        env["LD_LIBRARY_PATH"] = f"{gpu_env['LD_LIBRARY_PATH']}:{passed['LD_LIBRARY_PATH']}"
    command = [python, "-m", "judge.runner.container_entry", f"{JOB_DST}/{problem.name}",
               f"{JOB_DST}/{solution_name}", "--mode", mode, "--budget", str(budget)]
    if (job / "devices").is_dir():
        command += ["--peaks", f"{JOB_DST}/devices"]
    if arch:
        command += ["--arch", arch]
    tmpfs_opts = "exec,nosuid,nodev,mode=1777,uid=65534,gid=65534"
    return {
        "image": dopts.image, "command": command, "user": "65534:65534", "working_dir": "/work",
        "environment": env, "volumes": volumes,
        "network_mode": "none", "read_only": True, "cap_drop": ["ALL"], "security_opt": ["no-new-privileges"],
        "pids_limit": dopts.pids_limit, "mem_limit": dopts.memory, "memswap_limit": dopts.memory,
        "nano_cpus": int(min(dopts.cpus, os.cpu_count() or 1) * 1e9),
        "tmpfs": {"/work": f"size={dopts.work_size},{tmpfs_opts}", "/tmp": f"size={dopts.tmp_size},{tmpfs_opts}"},
        "shm_size": dopts.shm_size, "ulimits": [{"Name": "core", "Soft": 0, "Hard": 0}],
        "stdin_open": True, "tty": False, "detach": True,
        "labels": {"kernel-judge": "run"}, **gpu_args,
    }


def gpu_config_volumes(gpu: tuple[dict, dict], volumes: dict) -> tuple[dict, dict]:
    args, env = dict(gpu[0]), dict(gpu[1])
    volumes.update(args.pop("volumes", {}))
    return args, env


def hard_timeout_s(problem: Problem, mode: str, budget: float) -> float:
    """The container's wall-clock limit: the pipeline's own limits come first; this is the backstop."""
    shapes = len(problem.spec.benchmarks) if mode == "submit" else 0
    return 300.0 + shapes * budget * 8


def stage_job(problem: Problem, source: Path) -> tuple[tempfile.TemporaryDirectory, str]:
    """A private, world-readable copy of the problem folder, the solution and the cached GPU peaks
    (the container's user, nobody, reads them)."""
    tmp = tempfile.TemporaryDirectory(prefix="judge-docker-")
    job = Path(tmp.name)
    shutil.copytree(problem.root, job / problem.name, ignore=shutil.ignore_patterns("__pycache__"))
    name = source.name if source.name not in (problem.name, "devices") else "solution.cu"
    shutil.copyfile(source, job / name)
    peaks = paths.cache_root() / "devices"  # this machine's measured GPU peaks: not re-measured in every container
    if peaks.is_dir():
        shutil.copytree(peaks, job / "devices", ignore=lambda d, names: [n for n in names if not n.endswith(".json")])
    for root, _dirs, files in os.walk(job):
        os.chmod(root, 0o755)
        for f in files:
            os.chmod(os.path.join(root, f), 0o644)
    return tmp, name


def evaluate_in_docker(problem: Problem, source: Path, mode: str = "submit", device: int = 0,
                       arch: str | None = None, budget: float = 2.0,
                       dopts: DockerOptions | None = None) -> Iterator[Event]:
    """Like `pipeline.evaluate`: yields the container's progress events, ends with `Finished`."""
    dopts = dopts or DockerOptions()
    source = Path(source)
    t0 = time.perf_counter()
    tmp, name = stage_job(problem, source)
    sha = hashlib.sha256((Path(tmp.name) / name).read_bytes()).hexdigest()
    base: dict[str, Any] = dict(problem=problem.name, solution=str(source), source_sha256=sha, mode=mode,
                                started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"))

    def finish(status: Status, message: str) -> Finished:
        return Finished(Report(**base, status=status, message=message, wall_s=round(time.perf_counter() - t0, 3)))

    try:
        try:
            client, info = connect(dopts.image)
            gpu = gpu_config(dopts.gpus, device, sorted(info.get("Runtimes") or {}), dopts.driver_dir or driver_dir())
            config = container_config(problem, Path(tmp.name), name, mode, arch, budget, dopts, gpu)
            missing = [k for k in ("PidsLimit", "MemoryLimit") if info.get(k) is False]
            if missing:  # the engine would drop these limits with a warning: refuse instead
                raise DockerUnavailable(f"the Docker engine cannot enforce {' and '.join(missing)} here "
                                        "(its cgroup controller is missing); fix: enable the pids and memory "
                                        "cgroup controllers for dockerd")
            if info.get("CpuCfsQuota") is False:  # a CPU share is fairness, not safety: left out
                config.pop("nano_cpus")
        except (DockerUnavailable, MountError) as e:
            yield finish(Status.INTERNAL_ERROR, str(e))
            return
        nonce = secrets.token_hex(16)
        timeout_s = dopts.timeout_s or hard_timeout_s(problem, mode, budget)
        reader = Reader(nonce, problem.name, sha, mode)
        lines = run_container(client, config, (nonce + "\n").encode(), timeout_s, STDOUT_CAP_BYTES)
        try:
            while True:
                try:
                    line = next(lines)
                except StopIteration as stop:
                    outcome: Outcome = stop.value
                    break
                event = reader.feed(line)
                if event is not None:
                    yield event
                if reader.tampered:  # the finally below kills and removes the container
                    outcome = Outcome(killed=True)
                    break
        except DockerUnavailable as e:
            yield finish(Status.INTERNAL_ERROR, str(e))
            return
        finally:
            lines.close()  # an early stop (Ctrl-C while rendering) removes the container too
        yield verdict(reader, outcome, timeout_s, dopts, source, finish)
    finally:
        tmp.cleanup()


def verdict(reader: Reader, outcome: Outcome, timeout_s: float, dopts: DockerOptions, source: Path,
            finish) -> Finished:
    if reader.tampered:
        return finish(Status.REJECTED, f"tampering: {reader.tampered}")
    if outcome.stdout_capped:
        return finish(Status.REJECTED, f"tampering: over {STDOUT_CAP_BYTES >> 20} MiB on the judge's channel")
    if reader.report is not None:
        report = reader.report.model_copy(update={"solution": str(source)})
        return Finished(report)
    tail = f"\n{outcome.stderr_tail}" if outcome.stderr_tail.strip() else ""
    if outcome.timed_out:
        return finish(Status.TIMEOUT,
                      f"the container ran past its hard limit of {timeout_s:.0f} s and was killed{tail}")
    if outcome.oom_killed:
        return finish(Status.RUNTIME_ERROR, f"the container ran out of memory (limit {dopts.memory}){tail}")
    if reader.error:
        return finish(Status.INTERNAL_ERROR, f"the judge failed inside the container: {reader.error}{tail}")
    return finish(Status.INTERNAL_ERROR, f"the container exited with status {outcome.exit_code} "
                  f"without a report (image {dopts.image}){tail}")
