"""Start and talk to a worker process on the local GPU (docs/security.md, "Process layout").

A candidate (a submission, `judge compare`'s A and B) runs in the native worker
(judge/worker/native/worker.cu, built and cached by judge/worker/native_build.py), confined by the
seccomp program of judge/sandbox/seccomp.py that it installs at `init`, before loading the library
(`JUDGE_CONFINE=0` sends none); a baseline runs in the Python worker with torch
(`python -m judge.worker.main --torch`).

The parent never trusts the worker: a reply must carry the run's nonce, arrive within the
deadline, stay within the channel's caps and be well-formed; anything else, and a dead worker,
becomes a `WorkerFailure` whose kind the pipeline maps to RUNTIME_ERROR, TIMEOUT or REJECTED
(judge/engine/roles.py), never an exception of another type. The channel, the commands and their
limits are judge/worker/protocol.py's. Its stdout/stderr go to a file whose tail is shown.
"""
from __future__ import annotations

import json
import os
import re
import resource
import secrets
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from judge import paths
from judge.sandbox import cgroup, parent, pidns, seccomp
from judge.sandbox.memwatch import MemoryWatch, default_limit, descendants
from judge.worker import native_build, protocol, triton_seed
from judge.worker.protocol import Op

LOG_LIMIT_BYTES = 16 << 20  # RLIMIT_FSIZE: a flood of output kills the worker, not the disk
LOG_TAIL_BYTES = 4000
CPU_LIMIT_S = 3600  # RLIMIT_CPU: a backstop; every request has its own (much shorter) deadline
NOBODY = 65534  # the user a root judge's candidate runs as (judge/worker/native/confine.h)
EXTRA_TASKS = 4096  # RLIMIT_NPROC: this user's processes and threads now, plus this many
KILLED: set[int] = set()  # pids of workers this process killed, and of what they started: judge/gpu/health.py
#                           waits for their memory (a worker in its own pid namespace holds its context in a child)
MEMORY_ENV = paths.ENV_WORKER_MEMORY_GB  # the worker's host-memory limit (default: judge/sandbox/memwatch.py)
CONFINE_ENV = paths.ENV_CONFINE  # "0": candidates run without the seccomp filter


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


def confine_wanted() -> bool:
    """Whether candidates are to be confined: yes unless JUDGE_CONFINE=0."""
    return os.environ.get(CONFINE_ENV, "1").strip() != "0"


@dataclass
class WorkerFailure(Exception):
    # "crash" | "cuda" | "timeout" | "protocol" | "malformed" | "python" | "os" | "native" (the
    # worker's own kinds, protocol.ERROR_KINDS) | "sandbox" (this machine cannot confine a candidate:
    # the judge's problem, whoever's worker it is)
    kind: str
    message: str
    log_tail: str = ""
    signal: str = ""  # a "crash" by a signal the judge did not send: its name ("SIGKILL"), else ""

    def __str__(self) -> str:
        return self.message


class _Malformed(Exception):
    """What is wrong with a line on the channel (becomes a WorkerFailure of kind "malformed")."""


class WorkerProcess:
    """One worker: `request()` sends a command and returns its reply (dict) or raises WorkerFailure.

    `role` says whose code it runs ("candidate", or "baseline NAME": a baseline's failure is the
    judge's); `label` names it in messages where one run has several candidates (`judge compare`'s
    "A" and "B"). The engine's failure mapping reads both (judge/engine/roles.py).

    The channel (judge/worker/protocol.py): the fd number goes in the environment and the nonce on
    stdin, never in argv. Everything read is bounded (bytes per line and per request, lines per
    request, nesting) and read before the request's deadline; a line that is not a well-formed
    reply is a "malformed" failure (the candidate's RUNTIME_ERROR), a well-formed one without this
    run's nonce a "protocol" one (REJECTED), silence past the deadline a "timeout"."""

    def __init__(self, device: int = 0, role: str = "candidate", torch: bool = False, label: str = "",
                 triton: bool = False):
        """Raises native_build.NativeBuildError when a candidate's worker cannot be built. With
        `triton` a candidate runs in the Triton worker (judge/worker/triton_gpu.py): it compiles its
        kernels in a warm-up (`warm`), then confines itself (`confine`), not at `init`."""
        self.role, self.label, self.triton = role, label, triton and not torch
        limit = host_memory_limit()  # a bad setting fails here, before anything is started
        argv = command(torch, self.triton)
        # Confinement: a candidate's worker installs the filter at init; why it cannot, if it cannot.
        self.confined = not torch and confine_wanted()
        self.learn = os.environ.get(paths.ENV_SECCOMP_LEARN, "") if self.confined else ""
        if not torch:
            parent.hide_memory()  # the run's secret: no /proc/PARENT/mem for the candidate
        self.unconfinable = seccomp.supported() if self.confined else None
        self.nonce = secrets.token_hex(protocol.NONCE_HEX // 2)
        self.workdir = tempfile.TemporaryDirectory(prefix=f"judge-{role}-")
        self.log_path = Path(self.workdir.name) / "worker.log"
        read_fd, write_fd = os.pipe()
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LD_LIBRARY_PATH", "HOME", "LANG",
                                                            paths.ENV_CUDART, "CUDA_HOME")}
        env["CUDA_VISIBLE_DEVICES"] = str(device)
        if torch or self.triton:
            env["PYTHONPATH"] = str(paths.CODE_ROOT)
            env["PYTHONUNBUFFERED"] = "1"
        self.triton_cache = triton_cache(Path(self.workdir.name)) if self.triton else None
        if self.triton_cache:
            env["TRITON_CACHE_DIR"] = env["TRITON_HOME"] = str(self.triton_cache)
        env[protocol.ENV_FD] = str(write_fd)  # the worker removes it at once
        if not torch and not pidns.wanted():  # unset: a pid namespace of its own (judge/worker/native/confine.h)
            env[protocol.ENV_PID_NAMESPACE] = "0"
        # A cgroup of its own (judge/sandbox/cgroup.py), joined between fork and exec; none where
        # the machine gives none (`judge doctor` says why: the memory watch and RLIMIT_NPROC remain).
        self.group: cgroup.Group | None = None
        try:
            self.group = cgroup.make(limit)
        except cgroup.Unavailable:
            pass
        log = open(self.log_path, "wb")
        try:
            self.proc = self._start(argv, log, write_fd, env)
        except BaseException:
            os.close(read_fd)
            if self.group:
                self.group.remove()
            raise
        finally:
            log.close()
            os.close(write_fd)
        self.memory = MemoryWatch(self.proc.pid, limit, self.group)
        self.read_fd = read_fd
        assert self.proc.stdin is not None
        self.stdin_fd = self.proc.stdin.fileno()
        os.set_blocking(self.stdin_fd, False)  # a worker that stops reading cannot hold the parent
        self.buffer = b""  # an incomplete line
        self.lines: deque[bytes] = deque()  # complete lines not yet read
        self.started = time.perf_counter()
        # Whether the native worker runs in a pid namespace of its own, and its pid as it sees it
        # (its filter's "itself"): said by its ready reply, before any of the submission's code runs.
        self.pid_namespace = False
        self.own_pid = self.proc.pid
        self.pids = {self.proc.pid}  # its process tree once it is ready (the context's owner among them)
        try:  # 33 bytes into an empty pipe; a worker gone already fails in wait_ready (no nonce: exit 2)
            os.write(self.stdin_fd, (self.nonce + "\n").encode())
        except OSError:
            pass

    def _start(self, argv: list[str], log, write_fd: int, env: dict[str, str]) -> subprocess.Popen:
        """The worker's process, in its group; without one if it could not join it."""
        def popen(group: cgroup.Group | None) -> subprocess.Popen:
            return subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, pass_fds=(write_fd,),
                cwd=self.workdir.name, env=env, preexec_fn=_limits(_user_tasks(), group), start_new_session=True)
        if self.group is not None:
            try:
                return popen(self.group)
            except subprocess.SubprocessError:  # the child could not join the group
                self.group.remove()
                self.group = None
        return popen(None)

    def wait_ready(self, timeout_s: float = 120.0) -> dict:
        """The ready reply. The native worker's says whether it runs in a pid namespace of its own
        (judge/worker/native/confine.h) and its pid there: the judge's own code wrote it, before the
        submission's library is loaded."""
        msg = self._reply(time.perf_counter() + timeout_s, timeout_s, "starting the worker")
        if self.triton_cache:  # its start-up's cache, before any of the submission's code runs
            triton_seed.keep(self.triton_cache)
        self.pids |= descendants(self.proc.pid)
        if msg.get("pid_namespace") is True and isinstance(msg.get("pid"), int):
            self.pid_namespace, self.own_pid = True, msg["pid"]
        return msg

    def request(self, op: Op, timeout_s: float, what: str, on_progress=None, keys: list[list[int]] | None = None,
                **args) -> dict:
        """Send a command, return its reply. `keys` (a sealed `time_batch`: judge/gpu/seal.py): call i's
        key, sent when the worker asks for it (a line {"unseal": i}, in order, once each, before the
        reply); never part of the command."""
        deadline = time.perf_counter() + timeout_s
        if op == "init" and self.triton_cache and os.geteuid() == 0:
            os.chown(self.triton_cache, NOBODY, NOBODY)  # root's until now: `triton_cache` says why
        if op == "init" and self.confined:
            args = {**args, "seccomp": self._filter(what)}
            if self.learn:  # measuring the allow-list: refusals are logged and run (not confined)
                args["seccomp_learn"] = self.learn
                self.confined = False
        self._nothing_unasked(what, deadline)
        self._send((json.dumps({"op": op, **args}) + "\n").encode(), deadline, timeout_s, what)
        return self._reply(deadline, timeout_s, what, on_progress, keys)

    def _filter(self, what: str) -> str:
        """The candidate's seccomp program (hex), which its worker installs before loading the library."""
        if self.unconfinable:
            self.kill()
            raise WorkerFailure("sandbox", f"{what}: this machine cannot confine the candidate's worker: "
                                f"{self.unconfinable} (set {CONFINE_ENV}=0 to judge without the sandbox)")
        return seccomp.program(self.own_pid, learn=bool(self.learn)).hex()  # its pid as it sees it

    # -- the channel --------------------------------------------------------------------------------
    def _send(self, data: bytes, deadline: float, timeout_s: float, what: str) -> None:
        """Write `data` on the worker's stdin before the deadline (its pipe is non-blocking)."""
        view = memoryview(data)
        while view:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise self._timeout(what, timeout_s)
            try:
                _, ready, _ = select.select([], [self.stdin_fd], [], left)
                if ready:
                    view = view[os.write(self.stdin_fd, view):]
            except BlockingIOError:
                continue
            except OSError:  # BrokenPipeError: the worker is gone
                raise self._died(what, deadline) from None

    def _nothing_unasked(self, what: str, deadline: float) -> None:
        """Between requests the channel is silent: a line no request asked for is malformed."""
        if not (self.lines or self.buffer):
            if not select.select([self.read_fd], [], [], 0)[0]:
                return
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise self._died(what, deadline)
        raise self._malformed(what, "it wrote on the result channel between requests")

    def _line(self, deadline: float, timeout_s: float, what: str, budget: list[int]) -> bytes:
        """The next complete line, read before the deadline; `budget`: [bytes, lines] left."""
        while not self.lines:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise self._timeout(what, timeout_s)
            if not select.select([self.read_fd], [], [], left)[0]:
                continue
            chunk = os.read(self.read_fd, 1 << 16)
            if not chunk:
                raise self._died(what, deadline)
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise self._malformed(what, f"more than {protocol.REQUEST_CAP_BYTES} bytes for one request")
            *complete, self.buffer = (self.buffer + chunk).split(b"\n")
            self.lines.extend(complete)
            if len(self.buffer) >= protocol.REPLY_CAP_BYTES:
                raise self._malformed(what, f"a line over {protocol.REPLY_CAP_BYTES} bytes")
        if time.perf_counter() >= deadline:
            raise self._timeout(what, timeout_s)
        budget[1] -= 1
        if budget[1] < 0:
            raise self._malformed(what, f"more than {protocol.MAX_LINES} lines for one request")
        line = self.lines.popleft()
        if len(line) >= protocol.REPLY_CAP_BYTES:
            raise self._malformed(what, f"a line over {protocol.REPLY_CAP_BYTES} bytes")
        return line

    def _reply(self, deadline: float, timeout_s: float, what: str, on_progress=None,
               keys: list[list[int]] | None = None) -> dict:
        budget = [protocol.REQUEST_CAP_BYTES, protocol.MAX_LINES]
        given = 0  # keys sent so far
        while True:
            line = self._line(deadline, timeout_s, what, budget)
            try:
                msg = decode(line)
            except _Malformed as e:
                raise self._malformed(what, str(e)) from None
            nonce = msg.get("nonce")
            if not isinstance(nonce, str) or not secrets.compare_digest(nonce.encode(), self.nonce.encode()):
                self.kill()
                raise WorkerFailure("protocol", f"{what}: a reply without this run's nonce")
            if "progress" in msg:
                if on_progress:
                    on_progress(msg["progress"])
                continue
            if "unseal" in msg:
                asked = msg["unseal"]
                if keys is None or given >= len(keys) or type(asked) is not int or asked != given:
                    self.kill()
                    raise WorkerFailure("protocol", f"{what}: the worker asked for the key of call {asked!r} out of "
                                        f"turn ({given} of {len(keys or [])} keys given)")
                self._send((json.dumps({"key": keys[given]}) + "\n").encode(), deadline, timeout_s, what)
                given += 1
                continue
            try:
                check_reply(msg)
            except _Malformed as e:
                raise self._malformed(what, str(e)) from None
            if not msg["ok"]:
                err = msg["error"]
                self.kill()
                text = f"{err['text']} ({err['name']})"
                if err.get("where"):
                    text = f"{err['where']}: {text}"
                raise WorkerFailure(err["kind"], text, self.log_tail())
            if keys is not None and given != len(keys):
                self.kill()
                raise WorkerFailure("protocol", f"{what}: the worker replied having asked for {given} of the "
                                    f"{len(keys)} calls' keys")
            return msg

    def _malformed(self, what: str, why: str) -> WorkerFailure:
        self.kill()
        return WorkerFailure("malformed", f"{what}: the worker sent a malformed reply: {why}", self.log_tail())

    def _timeout(self, what: str, timeout_s: float) -> WorkerFailure:
        self.kill()
        return WorkerFailure("timeout", f"{what}: no answer within {timeout_s:.1f} s", self.log_tail())

    def _died(self, what: str, deadline: float) -> WorkerFailure:
        """The worker closed its channel: it is dying. Its exit status, waited for until the deadline
        (at least half a second, at most ten: a process that lingers is killed)."""
        try:
            code = self.proc.wait(timeout=min(10.0, max(0.5, deadline - time.perf_counter())))
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        by = ""
        if code is not None and code < 0:
            name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
            how, by = f"the worker was killed by {name}", name
            if self.memory.exceeded is not None:  # the judge's own kill
                how, by = (f"the worker was killed: it held {self.memory.exceeded / (1 << 30):.1f} GiB of host "
                           f"memory, over the limit of {self.memory.limit / (1 << 30):.1f} GiB"), ""
            elif self.group is not None and (self.memory.oom_killed or self.group.oom_kills()):  # the kernel's
                how, by = ("the worker was killed by the kernel: it reached its host-memory limit of "
                           f"{self.group.memory_bytes / (1 << 30):.1f} GiB (its cgroup)"), ""
            elif name == "SIGXFSZ":
                how += f" (its output passed the {LOG_LIMIT_BYTES >> 20} MiB cap)"
            elif name == "SIGSYS" and (refusal := seccomp.describe_refusal(self.log_tail())):
                how += f": {refusal}"  # the worker's SIGSYS handler logged the call's number
            elif name == "SIGSYS" and self.triton:  # Python has no handler that could name the call
                how += (": the sandbox refused a system call solve() made after the warm-up (compiling, "
                        "starting a process, writing a file, or torch compute whose CUDA code loads on "
                        "first use, are all refused there)")
        else:
            how = f"the worker exited with status {code}"
        if self.group is not None and (refused := self.group.refused_tasks()):
            how += f" ({refused} new process(es) or thread(s) refused at its limit of {self.group.tasks} tasks)"
        return WorkerFailure("crash", f"{what}: {how}", self.log_tail(), signal=by)

    def log_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as f:
                f.seek(max(0, f.seek(0, 2) - LOG_TAIL_BYTES))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def kill(self) -> None:
        """Kill the worker's whole session: it and anything it started, even after it exited. Every
        pid of its tree (as it was when ready, and now) goes into KILLED: the CUDA context of a worker
        in its own pid namespace belongs to the grandchild of the process started here, and NVML
        lists that one."""
        self.memory.stop()
        KILLED.update(self.pids | descendants(self.proc.pid) | set(self.group.pids() if self.group else ()))
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.group is not None:  # whatever left the process group (a new session) is still in it
            self.group.kill()
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
        if self.group is not None:
            self.group.remove()
        self.workdir.cleanup()


def command(torch: bool = False, triton: bool = False) -> list[str]:
    """The worker's argv, with nothing of the channel: the native worker for a candidate (built now
    if the cache lacks it: native_build.NativeBuildError), the Triton one for a `.py` candidate, the
    Python one for a baseline (torch)."""
    if torch:
        return [sys.executable, "-m", "judge.worker.main", "--torch"]
    if triton:
        return [sys.executable, "-m", "judge.worker.triton_gpu"]
    return [str(native_build.worker_binary())]


def triton_cache(workdir: Path) -> Path:
    """A Triton cache of the worker's own, fresh (compile times are the run's, and nothing one
    submission compiled is found by the next), in its working directory, which the parent removes;
    it begins as a copy of the machine's start-up seed where there is one (judge/worker/triton_seed.py).
    A root judge's worker starts as root and loads Triton's C modules from this folder, then compiles
    the submission's kernels as nobody (judge/worker/triton_gpu.py): the folder stays root's until
    the parent sends `init` (`request`), and is nobody's from then on, so no process of nobody's
    (another run's submission) can put a module here that root loads, or that becomes the seed; its
    parent is only passable."""
    cache = workdir / "triton"
    cache.mkdir(mode=0o700)
    triton_seed.seed(cache)
    if os.geteuid() == 0:
        workdir.chmod(0o711)
    return cache


def decode(line: bytes) -> dict:
    """One line of the channel as a JSON object, or _Malformed: not UTF-8, nested deeper than
    MAX_DEPTH (checked before parsing: the parser recurses), not JSON (whatever the decoder
    raises), not an object. Total on any bytes."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise _Malformed("not UTF-8") from None
    if text.count("[") + text.count("{") > protocol.MAX_DEPTH and _depth(text) > protocol.MAX_DEPTH:
        raise _Malformed(f"nested deeper than {protocol.MAX_DEPTH}")
    try:
        msg = json.loads(text)
    except Exception as e:  # noqa: BLE001 — whatever the decoder raises (ValueError, RecursionError, ...)
        raise _Malformed(f"not JSON ({type(e).__name__})") from None
    if not isinstance(msg, dict):
        raise _Malformed(f"a JSON {type(msg).__name__}, not an object")
    return msg


# A JSON string (an unterminated one runs to the end: one pass, no backtracking) or a bracket.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*+(?:"|\\?\Z)|[\[\]{}]')


def _depth(text: str) -> int:
    """How deep `text` nests (brackets inside strings do not count), scanned in one pass, and
    stopping as soon as it passes MAX_DEPTH."""
    depth = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > protocol.MAX_DEPTH:
                break
        elif c in "]}":
            depth -= 1
    return depth


def _number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_reply(msg: dict) -> None:
    """The fields the parent reads have their types (judge/worker/protocol.py), or _Malformed."""
    for field, kind in protocol.FIELD_TYPES.items():
        if field in msg and (not isinstance(msg[field], kind) or (kind is int and isinstance(msg[field], bool))):
            raise _Malformed(f"`{field}`: {kind.__name__} expected, got {type(msg[field]).__name__}")
    if "ok" not in msg:
        raise _Malformed("no `ok`")
    for field in ("times_ms", "host_ms"):
        if field in msg and not (len(msg[field]) <= protocol.MAX_CALLS_PER_BATCH
                                 and all(_number(x) for x in msg[field])):
            raise _Malformed(f"`{field}` is not a list of at most {protocol.MAX_CALLS_PER_BATCH} numbers")
    if not msg["ok"]:
        err = msg.get("error")
        if not (isinstance(err, dict) and err.get("kind") in protocol.ERROR_KINDS
                and isinstance(err.get("name"), str) and isinstance(err.get("text"), str)
                and isinstance(err.get("where", ""), (str, type(None)))):
            raise _Malformed("`ok` is false without an `error` {kind, name, text[, where]} of the worker's")


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


def _limits(tasks: int | None, group: cgroup.Group | None = None):
    """The worker's limits (set in the child before exec). RLIMIT_AS cannot be used: the CUDA
    driver reserves a virtual address range as large as the device's and host memory together.
    RLIMIT_NPROC counts every process and thread of the user (the kernel ignores it for root):
    it is set above what the user runs now, so it stops a fork bomb, never the CUDA runtime's
    own threads; it is never raised above the limit already in force. Last, the child joins its
    cgroup (judge/sandbox/cgroup.py: memory and tasks bounded by the kernel, root or not)."""
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
        if group is not None:
            group.join()
    return apply
