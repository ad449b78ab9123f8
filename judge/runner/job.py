"""One judging job in a process of its own: `python -m judge.runner.job`.

A leaderboard judges each file in a child process (judge/board/jobs.py on the local GPUs,
judge/board/cluster_task.py on a Ray node), so that a crash, a hang or a judge bug costs one row,
never the run. Parent and child speak a typed protocol, never argv or stdout:

- the parent opens a pipe and passes its write end to the child (`pass_fds`), naming its number
  in the environment, `JUDGE_JOB_FD` (the child removes it from its environment at once and
  makes the fd non-inheritable: nothing the judge starts can write on it);
- on stdin the child reads one `Request` (JSON): a fresh nonce and the `JobSpec` (problem folder,
  solution, mode, device, arch, budget, runner and its options), then stdin is /dev/null and its
  stdout is its stderr (a stray print lands in the log, never on the channel);
- the child writes one `Reply` (JSON) on the fd: the nonce and one of a `Report` (modes submit
  and test), a `BuildCheck` (mode build) or a `JobError` (the job was refused, or the judge
  failed), and exits;
- the parent reads at most `REPLY_CAP_BYTES` before the deadline, keeps the tail of the child's
  output (stdout and stderr share one pipe), and turns everything else into a `JobFailed`: a
  timeout (the child's process group is killed), a child that died or exited without a reply, a
  reply over the cap, not JSON, without this run's nonce or of the wrong kind. Its `kind` says
  which, so the caller can make it a verdict (TIMEOUT, INTERNAL_ERROR): never a traceback.

Test hook (inert unless set): JUDGE_CLUSTER_TEST_FAULT="die:NAME.cu,sleep=S:NAME.cu" makes the
child kill itself (SIGKILL), or sleep S seconds first, for a solution of that file name.
tests/board/test_cluster.py uses it to crash a judging process and to keep a job running while it kills
the node under it.
"""
from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judge import paths
from judge.contract.report import Report
from judge.runner.build_check import BuildCheck

if TYPE_CHECKING:
    from judge.runner.docker import DockerOptions

ENV_FD = paths.ENV_JOB_FD  # the number of the child's result fd
REPLY_CAP_BYTES = 32 << 20  # a report with every mismatch is far smaller; more is a broken child
REQUEST_CAP_BYTES = 1 << 20
LOG_TAIL_BYTES = 1500
EXIT_GRACE_S = 10.0  # how long a child that closed its fd may take to exit before it is killed
MODULE = "judge.runner.job"
Mode = Literal["submit", "test", "build"]
FailureKind = Literal["timeout", "died", "protocol", "refused", "internal"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="strings")


class LocalRunner(_Model):
    """Judge in the child itself (the worker is still a process of its own)."""
    kind: Literal["local"] = "local"


class DockerRunner(_Model):
    """Judge inside a container (judge/runner/docker.py). Mount sources are paths on the machine
    that judges (a cluster node), so the child checks them, not the caller."""
    kind: Literal["docker"] = "docker"
    image: str | None = None  # default: $JUDGE_DOCKER_IMAGE or kernel-judge:latest
    mounts: list[str] = []  # SRC:DST, bound read-only
    host_env: bool = False  # bind this machine's /usr and Python read-only (docker/host-image.sh's images)
    gpus: Literal["auto", "toolkit", "devices", "none"] = "auto"  # judge.runner.docker.GPU_STYLES


Runner = Annotated[LocalRunner | DockerRunner, Field(discriminator="kind")]


class JobSpec(_Model):
    """What to judge and how."""
    problem: Path  # the problem folder
    solution: Path  # the file to judge
    mode: Mode = "submit"  # submit: tests + timing; test: tests only; build: the GPU-free path (a BuildCheck)
    device: int | None = 0  # the GPU's NVML (physical) index; None: none (mode build only)
    arch: str | None = None  # default: the GPU's
    budget_s: float | None = None  # seconds of timing per shape (wall, at most); default: `judge submit`'s
    runner: Runner = Field(default_factory=LocalRunner)


DEFAULT_BUDGET_S = 2.0  # `judge submit`'s


class Request(_Model):
    nonce: str
    spec: JobSpec


class JobError(_Model):
    kind: Literal["refused", "internal"]  # refused: a bad problem or request; internal: the judge failed
    message: str


class Reply(_Model):
    nonce: str
    report: Report | None = None
    check: BuildCheck | None = None
    error: JobError | None = None

    @model_validator(mode="after")
    def _one(self) -> Reply:
        if sum(x is not None for x in (self.report, self.check, self.error)) != 1:
            raise ValueError("a reply carries exactly one of report, check and error")
        return self


class JobFailed(Exception):
    """The job gave no result: `kind` says why (timeout, died, protocol, refused, internal)."""

    def __init__(self, kind: FailureKind, message: str, log_tail: str = ""):
        super().__init__(message)
        self.kind, self.message, self.log_tail = kind, message, log_tail

    def detail(self) -> str:
        """The message with the tail of the child's output."""
        return self.message + (f"\n{self.log_tail}" if self.log_tail else "")


class Refused(Exception):
    """In the child: the job cannot be judged as asked (a bad problem, a missing file, a bad mount)."""


# -- the parent side ------------------------------------------------------------------------------

class Child:
    """One started job process. `communicate` waits for its reply; `kill` ends it (any thread)."""

    def __init__(self, spec: JobSpec, *, command: list[str] | None = None, cwd: Path | None = None,
                 die_with_parent: bool = False):
        self.spec = spec
        self.nonce = secrets.token_hex(16)
        read_fd, write_fd = os.pipe()
        log_read, log_write = os.pipe()
        env = dict(os.environ)
        env.pop("CUDA_VISIBLE_DEVICES", None)  # the spec's device is a physical (NVML) index, as in the worker
        root = str(paths.CODE_ROOT)
        env["PYTHONPATH"] = os.pathsep.join([root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        env[ENV_FD] = str(write_fd)
        try:
            self.proc = subprocess.Popen(
                command or [sys.executable, "-m", MODULE], stdin=subprocess.PIPE, stdout=log_write,
                stderr=log_write, pass_fds=(write_fd,), cwd=cwd or root, env=env,
                start_new_session=True,  # its own process group: killed whole
                preexec_fn=_die_with_parent if die_with_parent and _PRCTL is not None else None)
        except BaseException:
            for fd in (read_fd, log_read):
                os.close(fd)
            raise
        finally:
            os.close(write_fd)
            os.close(log_write)
        self.read_fd, self.log_fd = read_fd, log_read
        request = Request(nonce=self.nonce, spec=spec).model_dump_json().encode()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(request)  # small: the pipe's buffer holds it
            self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass  # it died at once: its exit says so

    def communicate(self, timeout_s: float) -> tuple[int, bytes, str]:
        """(exit status, the reply's bytes, the tail of its output) once the reply fd closes and the
        child exits; JobFailed("timeout") past `timeout_s`, JobFailed("protocol") over the cap."""
        deadline = time.monotonic() + timeout_s
        reply, tail = bytearray(), bytearray()
        open_fds = {self.read_fd, self.log_fd}
        try:
            while self.read_fd in open_fds:
                left = deadline - time.monotonic()
                if left <= 0:
                    self.kill()
                    raise JobFailed("timeout", f"judging did not finish within {timeout_s:g} s "
                                    "(the judging process was killed)", _text(tail))
                ready, _, _ = select.select(list(open_fds), [], [], left)
                for fd in ready:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        open_fds.discard(fd)
                    elif fd == self.read_fd:
                        reply += chunk
                        if len(reply) > REPLY_CAP_BYTES:
                            self.kill()
                            raise JobFailed("protocol", f"the judging process sent a reply over the cap of "
                                            f"{REPLY_CAP_BYTES} bytes (killed)", _text(tail))
                    else:
                        tail = (tail + chunk)[-LOG_TAIL_BYTES:]
            try:  # the fd closed: it exits now (a reply it sent counts even if it lingers)
                code = self.proc.wait(timeout=max(1.0, min(EXIT_GRACE_S, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                self.kill()
                code = self.proc.wait()
            while self.log_fd in open_fds and select.select([self.log_fd], [], [], 0)[0]:
                chunk = os.read(self.log_fd, 1 << 16)  # what it wrote last (its children may hold the pipe)
                if not chunk:
                    break
                tail = (tail + chunk)[-LOG_TAIL_BYTES:]
            return code, bytes(reply), _text(tail)
        finally:
            for fd in (self.read_fd, self.log_fd):
                os.close(fd)
            if self.proc.poll() is None:
                self.kill()
            self.proc.wait()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def result(self, timeout_s: float) -> Report | BuildCheck:
        code, data, tail = self.communicate(timeout_s)
        return decode(data, self.nonce, self.spec.mode, code, tail)


def run(spec: JobSpec, timeout_s: float, **child_args: Any) -> Report | BuildCheck:
    """Judge `spec` in a child process: its Report (BuildCheck in mode build), or JobFailed."""
    return Child(spec, **child_args).result(timeout_s)


def decode(data: bytes, nonce: str, mode: str, returncode: int | None, log_tail: str = "") -> Report | BuildCheck:
    """The result a child's reply carries; JobFailed saying what was wrong with it otherwise."""
    if not data:
        if returncode is not None and returncode < 0:
            why = f"the judging process died of signal {-returncode} ({_signame(-returncode)})"
        else:
            why = f"the judging process exited {returncode} without a report"
        raise JobFailed("died", why, log_tail)
    try:
        reply = Reply.model_validate_json(data)
    except ValidationError as e:
        raise JobFailed("protocol", f"the judging process sent a malformed reply ({e.error_count()} error(s): "
                        f"{_first_error(e)})", log_tail) from None
    if not secrets.compare_digest(reply.nonce, nonce):
        raise JobFailed("protocol", "the judging process sent a reply without this run's nonce", log_tail)
    if reply.error is not None:
        raise JobFailed(reply.error.kind, reply.error.message, log_tail)
    if mode == "build":
        if reply.check is None:
            raise JobFailed("protocol", "the judging process sent a report for a build check", log_tail)
        return reply.check
    if reply.report is None or reply.report.mode != mode:
        raise JobFailed("protocol", f"the judging process sent no report of mode {mode}", log_tail)
    return reply.report


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    return f"{'.'.join(map(str, err.get('loc', ()))) or 'reply'}: {err.get('msg', '')}"[:300]


def _text(data: bytes | bytearray) -> str:
    return bytes(data).decode(errors="replace").strip()


def _signame(n: int) -> str:
    try:
        return signal.Signals(n).name
    except ValueError:
        return "unknown"


def _prctl() -> Callable[..., int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None).prctl  # resolved here: between fork and exec, only the call runs
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl() if sys.platform == "linux" else None


def _die_with_parent() -> None:
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: killed when its parent (a Ray worker) dies


# -- the child side -------------------------------------------------------------------------------

def execute(spec: JobSpec) -> Report | BuildCheck:
    """Judge `spec` in this process (the child's work). Refused for a job that cannot be judged."""
    if spec.mode == "build":
        from judge.runner.build_check import check_file, local_arch

        return check_file(spec.problem, spec.solution, spec.arch or local_arch(spec.device))
    from judge.contract.events import Finished
    from judge.gpu.device import NotVisible
    from judge.problem import spec as problem_spec

    try:
        problem = problem_spec.load_problem(spec.problem)
    except problem_spec.ProblemError as e:
        details = "; ".join(f"{loc}: {msg}" for loc, msg in e.errors)
        raise Refused(f"invalid problem {e.file}" + (f": {details}" if details else "")) from None
    if not spec.solution.is_file():
        raise Refused(f"no such file: {spec.solution}")
    budget = spec.budget_s if spec.budget_s is not None else DEFAULT_BUDGET_S
    device = spec.device if spec.device is not None else 0
    if isinstance(spec.runner, DockerRunner):
        from judge.runner.docker import MountError, evaluate_in_docker, parse_mount

        try:
            for m in spec.runner.mounts:
                parse_mount(m)
        except MountError as e:
            raise Refused(str(e)) from None
        events = evaluate_in_docker(problem, spec.solution, spec.mode, device, spec.arch, budget,
                                    docker_options(spec.runner))
    else:
        from judge.engine.run import Options, evaluate
        from judge.engine.stats import TimingPolicy

        opts = Options(mode=spec.mode, device=device, arch=spec.arch, policy=TimingPolicy(budget_s=budget),
                       baseline_policy=TimingPolicy(budget_s=budget).for_baseline())
        events = evaluate(problem, spec.solution, opts)
    try:
        for event in events:
            if isinstance(event, Finished):
                return event.report
    except NotVisible as e:
        raise Refused(str(e)) from None
    raise RuntimeError("the judge ended without a report")


def docker_options(runner: DockerRunner) -> DockerOptions:
    """The docker runner's options (judge/runner/docker.py) for `runner`."""
    from judge.runner.docker import DockerOptions

    dopts = DockerOptions(mounts=list(runner.mounts), host_env=runner.host_env, gpus=runner.gpus)
    if runner.image:
        dopts.image = runner.image
    return dopts


def fault_hook(name: str) -> None:
    """The test hook of the module's doc (inert unless JUDGE_CLUSTER_TEST_FAULT is set)."""
    for rule in filter(None, os.environ.get(paths.ENV_CLUSTER_TEST_FAULT, "").split(",")):
        action, _, target = rule.partition(":")
        if target != name:
            continue
        if action == "die":
            os.kill(os.getpid(), signal.SIGKILL)
        if action.startswith("sleep="):
            time.sleep(float(action.split("=", 1)[1]))


def main() -> int:
    """The child: the request from stdin, the reply on the fd named by JUDGE_JOB_FD."""
    try:
        fd = int(os.environ.pop(ENV_FD, ""))
        os.fstat(fd)
    except (ValueError, OSError):
        print(f"{MODULE}: no result fd in ${ENV_FD}: this is the child of judge/board/jobs.py and "
              "judge/board/cluster_task.py, not a command", file=sys.stderr)
        return 2
    os.set_inheritable(fd, False)  # nothing this process starts can write on the channel
    channel = os.fdopen(fd, "w")
    raw = sys.stdin.buffer.read(REQUEST_CAP_BYTES + 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)  # the request was read; nothing started from here inherits the parent's pipe
    os.close(null)
    os.dup2(2, 1)  # whatever writes to stdout lands on stderr, the parent's log
    try:
        request = Request.model_validate_json(raw)
    except ValidationError as e:
        print(f"{MODULE}: a malformed request on stdin: {_first_error(e)}", file=sys.stderr)
        return 2
    try:
        fault_hook(request.spec.solution.name)
        result = execute(request.spec)
        if isinstance(result, BuildCheck):
            reply = Reply(nonce=request.nonce, check=result)
        else:
            reply = Reply(nonce=request.nonce, report=result)
    except Refused as e:
        reply = Reply(nonce=request.nonce, error=JobError(kind="refused", message=str(e)))
    except Exception as e:  # noqa: BLE001 — the judge's own failure, told to the parent as one
        reply = Reply(nonce=request.nonce, error=JobError(kind="internal", message=f"{type(e).__name__}: {e}"))
    channel.write(reply.model_dump_json())
    channel.close()
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the interpreter's teardown (torch's CUDA context among it)
