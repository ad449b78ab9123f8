"""Start and talk to a worker process on the local GPU (DESIGN.md §5, §7 `local`).

The parent never trusts the worker: a reply must carry the run's nonce, arrive within the
deadline and be well-formed; a dead worker becomes a `WorkerFailure` whose kind the pipeline
maps to RUNTIME_ERROR, TIMEOUT or REJECTED (judge/engine/roles.py). Commands and their limits are
judge/worker/protocol.py's. Its stdout/stderr go to a file whose tail is shown.
"""
from __future__ import annotations

import json
import os
import resource
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from judge import paths
from judge.sandbox.memwatch import MemoryWatch, default_limit
from judge.worker.protocol import Op

LOG_LIMIT_BYTES = 16 << 20  # RLIMIT_FSIZE: a flood of output kills the worker, not the disk
LOG_TAIL_BYTES = 4000
CPU_LIMIT_S = 3600  # RLIMIT_CPU: a backstop; every request has its own (much shorter) deadline
EXTRA_TASKS = 4096  # RLIMIT_NPROC: this user's processes and threads now, plus this many
KILLED: set[int] = set()  # pids of workers this process killed: judge/gpu/health.py waits for their memory
MEMORY_ENV = paths.ENV_WORKER_MEMORY_GB  # the worker's host-memory limit (default: judge/sandbox/memwatch.py)


def host_memory_limit() -> int:
    value = os.environ.get(MEMORY_ENV)
    if not value:
        return default_limit()
    try:
        gib = float(value)
    except ValueError:
        gib = 0.0
    if not gib > 0:
        raise ValueError(f"{MEMORY_ENV}={value!r}: expected a positive number of GiB (the worker's host-memory limit)")
    return int(gib * (1 << 30))


@dataclass
class WorkerFailure(Exception):
    kind: str  # "crash" | "cuda" | "timeout" | "protocol" | "python" | "os"
    message: str
    log_tail: str = ""

    def __str__(self) -> str:
        return self.message


class WorkerProcess:
    """One worker: `request()` sends a command and returns its reply (dict) or raises WorkerFailure.

    `role` says whose code it runs ("candidate", or "baseline NAME": a baseline's failure is the
    judge's); `label` names it in messages where one run has several candidates (`judge compare`'s
    "A" and "B"). The engine's failure mapping reads both (judge/engine/roles.py)."""

    def __init__(self, device: int = 0, role: str = "candidate", torch: bool = False, label: str = ""):
        self.role, self.label = role, label
        limit = host_memory_limit()  # a bad setting fails here, before anything is started
        self.nonce = secrets.token_hex(16)
        self.workdir = tempfile.TemporaryDirectory(prefix=f"judge-{role}-")
        self.log_path = Path(self.workdir.name) / "worker.log"
        read_fd, write_fd = os.pipe()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "HOME", "LANG",
                                                            paths.ENV_CUDART, "CUDA_HOME")}
        env["CUDA_VISIBLE_DEVICES"] = str(device)
        env["PYTHONPATH"] = str(paths.CODE_ROOT)
        env["PYTHONUNBUFFERED"] = "1"
        log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "judge.worker.main", str(write_fd), self.nonce] + (["--torch"] if torch else []),
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
            cwd=self.workdir.name, env=env, preexec_fn=_limits(_user_tasks()), start_new_session=True)
        log.close()
        os.close(write_fd)
        self.memory = MemoryWatch(self.proc.pid, limit)
        self.read_fd = read_fd
        self.buffer = b""
        self.started = time.perf_counter()

    def wait_ready(self, timeout_s: float = 120.0) -> dict:
        return self._reply(timeout_s, "starting the worker")

    def request(self, op: Op, timeout_s: float, what: str, on_progress=None, **args) -> dict:
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(what) from None
        return self._reply(timeout_s, what, on_progress)

    def _reply(self, timeout_s: float, what: str, on_progress=None) -> dict:
        deadline = time.perf_counter() + timeout_s
        while True:
            while b"\n" not in self.buffer:
                left = deadline - time.perf_counter()
                if left <= 0:
                    self.kill()
                    raise WorkerFailure("timeout", f"{what}: no answer within {timeout_s:.1f} s",
                                        self.log_tail())
                ready, _, _ = select.select([self.read_fd], [], [], left)
                if not ready:
                    continue
                chunk = os.read(self.read_fd, 1 << 16)
                if not chunk:
                    raise self._died(what)
                self.buffer += chunk
            line, self.buffer = self.buffer.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                self.kill()
                raise WorkerFailure("protocol", f"{what}: the worker sent a malformed reply") from None
            if not isinstance(msg, dict) or msg.get("nonce") != self.nonce:
                self.kill()
                raise WorkerFailure("protocol", f"{what}: a reply without this run's nonce")
            if "progress" in msg:
                if on_progress:
                    on_progress(msg["progress"])
                continue
            if not msg.get("ok"):
                err = msg.get("error") or {}
                self.kill()
                kind = err.get("kind", "protocol")
                text = f"{err.get('text', 'unknown error')} ({err.get('name', '?')})"
                if err.get("where"):
                    text = f"{err['where']}: {text}"
                raise WorkerFailure(kind, text, self.log_tail())
            return msg

    def _died(self, what: str) -> WorkerFailure:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            how = f"the worker was killed by {name}"
            if self.memory.exceeded is not None:
                how = (f"the worker was killed: it held {self.memory.exceeded / (1 << 30):.1f} GiB of host memory, "
                       f"over the limit of {self.memory.limit / (1 << 30):.1f} GiB")
            elif name == "SIGXFSZ":
                how += f" (its output passed the {LOG_LIMIT_BYTES >> 20} MiB cap)"
        else:
            how = f"the worker exited with status {code}"
        return WorkerFailure("crash", f"{what}: {how}", self.log_tail())

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - LOG_TAIL_BYTES))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the worker's whole session: it and anything it started, even after it exited."""
        self.memory.stop()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        KILLED.add(self.proc.pid)
        self.proc.wait()
        if self.proc.stdin:
            self.proc.stdin.close()

    def close(self) -> None:
        """End the worker now: it holds nothing the parent needs, and the driver frees its context."""
        self.kill()
        try:
            os.close(self.read_fd)
        except OSError:
            pass
        self.workdir.cleanup()


def _user_tasks() -> int | None:
    """How many processes and threads this user runs now (None when /proc cannot tell)."""
    uid, n = os.getuid(), 0
    try:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    if os.stat(f"/proc/{pid}").st_uid == uid:
                        n += len(os.listdir(f"/proc/{pid}/task"))
                except OSError:
                    continue
    except OSError:
        return None
    return n


def _limits(tasks: int | None):
    """The worker's limits (set in the child before exec). RLIMIT_AS cannot be used: the CUDA
    driver reserves a virtual address range as large as the device's and host memory together.
    RLIMIT_NPROC counts every process and thread of the user (the kernel ignores it for root):
    it is set above what the user runs now, so it stops a fork bomb, never the CUDA runtime's
    own threads; it is never raised above the limit already in force."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (LOG_LIMIT_BYTES, LOG_LIMIT_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _, hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)
        hard_cpu = CPU_LIMIT_S + 10 if hard_cpu == resource.RLIM_INFINITY else hard_cpu
        resource.setrlimit(resource.RLIMIT_CPU, (min(CPU_LIMIT_S, hard_cpu), hard_cpu))
        if tasks is not None:
            soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            n = tasks + EXTRA_TASKS
            for limit in (soft, hard):
                if limit != resource.RLIM_INFINITY:
                    n = min(n, limit)
            try:
                resource.setrlimit(resource.RLIMIT_NPROC, (n, hard))
            except (ValueError, OSError):
                pass
    return apply
