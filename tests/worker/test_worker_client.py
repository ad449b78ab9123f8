"""The worker protocol without a GPU: failures are WorkerFailure with the right kind, quickly, never a hang.

The fake workers below replace the worker's command (judge.worker.client's `command`: the native
worker's binary for a candidate) with a tiny script; the script gets the same argv (the program
alone), environment (the channel's fd in $JUDGE_WORKER_FD) and stdin (the nonce first) a real
worker would, and opens its channel with the Python worker's code (judge/worker/protocol.py's
`worker_channel`). The real native worker is tested in test_native_worker.py.
"""
from __future__ import annotations

import re
import stat
import sys
import textwrap
import time

import pytest

from judge import paths
from judge.contract.verdict import Status
from judge.sandbox import cgroup
from judge.worker import client as local
from judge.worker.client import WorkerFailure, WorkerProcess

HEADER = f"#!{sys.executable}\n"
PRELUDE = f"""\
import json, os, sys
sys.path.insert(0, {str(paths.CODE_ROOT)!r})  # a candidate's worker gets no PYTHONPATH
from judge.worker.protocol import worker_channel
out, nonce = worker_channel()
def send(**msg):
    out.write(json.dumps(msg) + "\\n"); out.flush()
"""


@pytest.fixture
def fake_worker(tmp_path):
    """fake_worker(body) → a WorkerProcess whose process runs `body` (after PRELUDE) instead of the worker."""
    made = []

    def make(body: str, role: str = "candidate", torch: bool = False, triton: bool = False) -> WorkerProcess:
        script = tmp_path / f"fake_worker_{len(made)}.py"
        script.write_text(HEADER + PRELUDE + textwrap.dedent(body))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(local, "command", lambda torch=False, triton=False: [str(script)])
            w = WorkerProcess(device=0, role=role, torch=torch, triton=triton)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def test_fake_worker_round_trip(fake_worker):
    w = fake_worker("""
        assert sys.argv[1:] == []
        send(nonce=nonce, ok=True, ready=True, pid=os.getpid())
        for line in sys.stdin:
            cmd = json.loads(line)
            if cmd["op"] == "exit":
                break
            send(nonce=nonce, progress=1)
            send(nonce=nonce, progress=2)
            send(nonce=nonce, ok=True, echo=cmd)
    """)
    ready = w.wait_ready(timeout_s=20)
    assert ready["ready"] is True and ready["pid"] == w.proc.pid
    seen = []
    reply = w.request("ping", 20, "pinging", on_progress=seen.append, x=[1, 2])
    assert reply["echo"] == {"op": "ping", "x": [1, 2]} and seen == [1, 2]
    w.close()
    assert w.proc.poll() is not None  # close() ends the worker (it is killed: it holds nothing we need)


def test_wrong_nonce_is_protocol_failure(fake_worker):
    w = fake_worker("""
        send(nonce="0" * 32, ok=True, ready=True)
        import time; time.sleep(60)
    """)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "protocol" and "nonce" in info.value.message
    assert time.perf_counter() - t0 < 10
    assert w.proc.poll() is not None  # killed, not left running


def test_missing_nonce_on_a_later_reply(fake_worker):
    w = fake_worker("""
        send(nonce=nonce, ok=True, ready=True)
        sys.stdin.readline()
        send(ok=True, times_ms=[0.0])
        import time; time.sleep(60)
    """)
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("time_batch", 20, "timing", k=1)
    assert info.value.kind == "protocol"


def test_malformed_reply_is_a_malformed_failure(fake_worker):
    """Not JSON: the worker's own malformed output (the candidate's RUNTIME_ERROR), not tampering."""
    w = fake_worker("""
        out.write("this is not json\\n"); out.flush()
        import time; time.sleep(60)
    """)
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "malformed" and "malformed" in info.value.message


def test_silent_worker_is_timeout_within_deadline(fake_worker):
    w = fake_worker("""
        import time
        while True:
            time.sleep(1000)
    """)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=1.0)
    elapsed = time.perf_counter() - t0
    assert info.value.kind == "timeout" and "1.0 s" in info.value.message
    assert 0.9 <= elapsed < 5, elapsed
    assert w.proc.poll() is not None


def test_partial_line_then_silence_is_timeout(fake_worker):
    w = fake_worker("""
        out.write('{"nonce": "' + nonce + '", "ok": tr'); out.flush()
        import time; time.sleep(1000)
    """)
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=1.0)
    assert info.value.kind == "timeout"


def test_sigsegv_is_crash_naming_the_signal(fake_worker):
    w = fake_worker("""
        print("about to crash", flush=True)
        import signal
        os.kill(os.getpid(), signal.SIGSEGV)
    """)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "crash" and "SIGSEGV" in info.value.message
    assert info.value.signal == "SIGSEGV"  # what judge/engine/roles.py's from_outside reads
    assert "about to crash" in info.value.log_tail
    assert time.perf_counter() - t0 < 10


def test_crash_during_a_request(fake_worker):
    w = fake_worker("""
        send(nonce=nonce, ok=True, ready=True)
        sys.stdin.readline()
        import signal
        os.kill(os.getpid(), signal.SIGABRT)
    """)
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 20, "solve() on n=7", args=[])
    assert info.value.kind == "crash" and "SIGABRT" in info.value.message
    assert info.value.message.startswith("solve() on n=7")


def test_exit_status_is_crash(fake_worker):
    w = fake_worker("""
        sys.exit(7)
    """)
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "crash" and "status 7" in info.value.message


def test_worker_error_reply_keeps_its_kind(fake_worker):
    w = fake_worker("""
        send(nonce=nonce, ok=True, ready=True)
        sys.stdin.readline()
        send(nonce=nonce, ok=False, error={"kind": "cuda", "name": "cudaErrorIllegalAddress",
             "text": "an illegal memory access was encountered", "where": "solve() on the device"})
        import time; time.sleep(60)
    """)
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 20, "calling", args=[])
    f = info.value
    assert f.kind == "cuda"
    assert "cudaErrorIllegalAddress" in f.message and f.message.startswith("solve() on the device")
    assert w.proc.poll() is not None


def test_output_flood_is_capped(fake_worker, monkeypatch):
    """RLIMIT_FSIZE on the log: a worker that floods its output fails, and the log stays capped.
    (Python ignores SIGXFSZ, so the flood ends with EFBIG → exit status 1 rather than the signal.)"""
    monkeypatch.setattr(local, "LOG_LIMIT_BYTES", 1 << 20)
    w = fake_worker("""
        chunk = "x" * 65536
        while True:
            sys.stdout.write(chunk)
    """)
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "crash"
    assert 0 < w.log_path.stat().st_size <= 1 << 20
    assert len(info.value.log_tail) <= local.LOG_TAIL_BYTES


def _gone(pid: int, timeout_s: float = 5.0) -> bool:
    """The process is dead (or a zombie waiting for init to reap it)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


SPAWNS_CHILD = """
    import subprocess, time
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
    send(nonce=nonce, ok=True, ready=True, child=child.pid)
    for line in sys.stdin:
        if json.loads(line)["op"] == "exit":
            break
"""


def test_kill_ends_the_process_group(fake_worker):
    w = fake_worker(SPAWNS_CHILD)
    child = w.wait_ready(timeout_s=20)["child"]
    w.kill()
    assert w.proc.poll() is not None
    if not _gone(child):
        import os
        import signal
        os.kill(child, signal.SIGKILL)
        pytest.fail(f"the worker's child {child} survived kill()")


def test_close_ends_children_of_a_worker_that_exited(fake_worker):
    w = fake_worker(SPAWNS_CHILD)
    child = w.wait_ready(timeout_s=20)["child"]
    try:
        w.proc.stdin.write(b'{"op": "exit"}\n')
        w.proc.stdin.flush()
        assert w.proc.wait(timeout=20) == 0  # the worker itself exited cleanly first
        w.close()
        assert _gone(child, 2.0), f"the worker's child {child} survived close()"
    finally:
        import os
        import signal
        try:
            os.kill(child, signal.SIGKILL)
        except ProcessLookupError:
            pass


def hog_in_a_child(fake_worker) -> tuple[pytest.ExceptionInfo[WorkerFailure], WorkerProcess]:
    """A worker whose forked child touches 400 MiB at its first request: the request's failure,
    which must come within 10 s, and the worker."""
    w = fake_worker("""
        import time
        send(nonce=nonce, ok=True, ready=True)
        sys.stdin.readline()
        if os.fork() == 0:  # the child holds the memory: the watch sums the whole tree
            hog = b"x" * (400 << 20)
            time.sleep(60)
        time.sleep(60)
    """)
    w.wait_ready(timeout_s=20)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 30, "solve()")
    assert time.perf_counter() - t0 < 10
    return info, w


def test_host_memory_hog_is_killed_and_named(fake_worker, monkeypatch):
    """The parent's memory watch (judge/sandbox/memwatch.py) kills a worker whose resident memory
    passes the limit (here 0.2 GiB), including memory held by a process the worker forked, and the
    failure says so."""
    monkeypatch.setenv(local.MEMORY_ENV, "0.2")
    info, _ = hog_in_a_child(fake_worker)
    assert info.value.kind == "crash"
    # The watch's kill, or the kernel's where the worker has a cgroup (whichever comes first)
    assert re.search(r"GiB of host memory, over the limit of 0\.2 GiB|its host-memory limit of 0\.2 GiB \(its cgroup\)",
                     info.value.message), info.value.message
    assert info.value.signal == ""  # the judge's own kill: not from outside


@pytest.mark.skipif(cgroup.probe() is not None, reason="no cgroup here")
def test_the_kernels_kill_at_the_cgroups_limit_ends_the_whole_worker_and_is_named(fake_worker, monkeypatch):
    """A process of the worker killed by the kernel at its group's limit (judge/sandbox/cgroup.py;
    cgroup v1 kills only the largest process, here the forked child) ends the whole worker, with
    the limit named. The group's limit is set below the memory watch's so that the kernel acts first."""
    make = cgroup.make
    monkeypatch.setattr(cgroup, "make", lambda memory_bytes, tasks=cgroup.TASK_LIMIT: make(96 << 20, tasks))
    monkeypatch.setenv(local.MEMORY_ENV, "4")
    info, w = hog_in_a_child(fake_worker)
    assert info.value.kind == "crash" and info.value.signal == ""
    assert "killed by the kernel: it reached its host-memory limit of 0.1 GiB (its cgroup)" in info.value.message
    assert w.memory.exceeded is None


def test_memory_watch_leaves_a_small_worker_alone(fake_worker, monkeypatch):
    monkeypatch.setenv(local.MEMORY_ENV, "0.5")
    w = fake_worker("""
        send(nonce=nonce, ok=True, ready=True)
        small = bytearray(50 << 20)
        for line in sys.stdin:
            send(nonce=nonce, ok=True)
    """)
    w.wait_ready(timeout_s=20)
    time.sleep(0.6)  # three looks of the watch
    assert w.request("call", 10, "solve()") == {"nonce": w.nonce, "ok": True}
    assert w.memory.exceeded is None


def test_a_bad_memory_limit_is_a_clear_error(monkeypatch):
    for bad in ("lots", "-1", "0"):
        monkeypatch.setenv(local.MEMORY_ENV, bad)
        with pytest.raises(ValueError, match="expected a positive number of GiB"):
            local.host_memory_limit()
    monkeypatch.setenv(local.MEMORY_ENV, "1.5")
    assert local.host_memory_limit() == 3 << 29
    monkeypatch.delenv(local.MEMORY_ENV)
    assert local.host_memory_limit() > 0


# -- the channel: fd and nonce outside argv -----------------------------------------------------------

def test_the_fd_and_nonce_reach_the_worker_outside_argv(fake_worker):
    """What the worker sees: argv without fd or nonce, the fd variable gone from its environment once
    read, the fd not inherited by a process it starts; the nonce came on stdin."""
    w = fake_worker("""
        import subprocess
        with open("/proc/self/cmdline", "rb") as f:
            cmdline = f.read().decode().split("\\0")
        child = subprocess.run([sys.executable, "-c", "import os, sys; os.fstat(int(sys.argv[1]))",
                                str(out.fileno())], capture_output=True)
        send(nonce=nonce, ok=True, ready=True, argv=sys.argv[1:], cmdline=cmdline,
             env=[k for k in os.environ if k.startswith("JUDGE_")], fd=out.fileno(),
             inheritable=os.get_inheritable(out.fileno()), child_has_fd=child.returncode == 0)
        import time; time.sleep(60)
    """)
    ready = w.wait_ready(timeout_s=20)
    assert ready["argv"] == []
    assert not any(w.nonce in a or a == str(ready["fd"]) for a in ready["cmdline"]), ready["cmdline"]
    assert w.nonce not in " ".join(w.proc.args) and str(ready["fd"]) not in w.proc.args[1:]
    assert ready["env"] == [] and ready["inheritable"] is False and ready["child_has_fd"] is False


def test_a_worker_without_its_channel_exits(tmp_path):
    """`python -m judge.worker.main --torch` started by hand (no fd variable, no nonce) says so and exits 2."""
    import subprocess

    r = subprocess.run([sys.executable, "-m", "judge.worker.main", "--torch"], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL, cwd=tmp_path, env={"PYTHONPATH": str(paths.CODE_ROOT)})
    assert r.returncode == 2 and "no result fd" in r.stderr


def test_the_python_worker_runs_baselines_only(tmp_path):
    """Without --torch the Python worker refuses: a candidate's library runs in the native worker."""
    import os
    import subprocess

    read_fd, write_fd = os.pipe()
    try:
        r = subprocess.run([sys.executable, "-m", "judge.worker.main"], capture_output=True, text=True, timeout=60,
                           input="0" * 32 + "\n", cwd=tmp_path, pass_fds=(write_fd,),
                           env={"PYTHONPATH": str(paths.CODE_ROOT), paths.ENV_WORKER_FD: str(write_fd)})
    finally:
        os.close(read_fd)
        os.close(write_fd)
    assert r.returncode == 2 and "baselines only" in r.stderr
    assert local.command(torch=True) == [sys.executable, "-m", "judge.worker.main", "--torch"]


# -- the channel: malformed replies -----------------------------------------------------------------------

CAP = 1 << 20  # judge.worker.protocol.REPLY_CAP_BYTES, asserted below
SLEEP = "import time; time.sleep(60)"


def after_ready(*parts: str) -> str:
    """A fake worker's body: ready, then it reads one request and runs `parts` (each dedented)."""
    return "\n".join(["send(nonce=nonce, ok=True, ready=True)", "sys.stdin.readline()"]
                     + [textwrap.dedent(p).strip("\n") for p in parts]) + "\n"
MALFORMED = {  # name: (what the worker writes on its channel for the request, the reason given)
    "oversized_line": ('out.write(json.dumps({"nonce": nonce, "ok": True, "pad": "x" * (2 << 20)}) + "\\n")',
                       f"a line over {CAP} bytes"),
    "200000_brackets": ('out.write("[" * 200000 + "\\n")', "nested deeper than"),
    "deep_in_an_object": ('out.write(json.dumps({"nonce": nonce, "ok": True, "x": [[[[[[[[[[[[1]]]]]]]]]]]]}) + "\\n")',
                          "nested deeper than"),
    "invalid_utf8": ('out.buffer.write(b\'{"nonce": "\' + nonce.encode() + b\'", "ok": true, "x": "\\xff"}\\n\')',
                     "not UTF-8"),
    "json_array": ('out.write(json.dumps([nonce, True]) + "\\n")', "a JSON list, not an object"),
    "ok_a_string": ('send(nonce=nonce, ok="yes")', "`ok`: bool expected, got str"),
    "no_ok": ('send(nonce=nonce, times_ms=[0.1])', "no `ok`"),
    "times_not_numbers": ('send(nonce=nonce, ok=True, times_ms="0.1")', "`times_ms`: list expected, got str"),
    "times_with_a_string": ('send(nonce=nonce, ok=True, times_ms=[0.1, "0.2"])', "`times_ms` is not a list"),
    "pid_a_bool": ('send(nonce=nonce, ok=True, pid=True)', "`pid`: int expected, got bool"),
    "tuned_a_list": ('send(nonce=nonce, ok=True, tuned=["k: BLOCK: 64"])', "`tuned`: str expected, got list"),
    "error_of_a_forged_kind": ('send(nonce=nonce, ok=False, error={"kind": "timeout", "name": "x", "text": "y"})',
                               "`ok` is false without an `error`"),
    "error_not_an_object": ('send(nonce=nonce, ok=False, error="boom")', "`error`: dict expected, got str"),
    "huge_integer": ('out.write(\'{"nonce": "\' + nonce + \'", "ok": true, "calls": \' + "9" * 5000 + "}\\n")',
                     "not JSON (ValueError)"),
    "nul_bytes": ('out.write("\\0" * 100 + "\\n")', "not JSON"),
    "endless_lines": ("while True: send(nonce=nonce, progress=1)", "more than 1000 lines for one request"),
    "endless_bytes": ('while True: out.write("x" * 65536)', f"a line over {CAP} bytes"),
    "endless_garbage_lines": ('while True: out.write("[[[[\\n" * 10000)', "not JSON"),
}


def test_the_caps_are_the_protocols():
    from judge.worker import protocol

    assert protocol.REPLY_CAP_BYTES == CAP and protocol.MAX_DEPTH < 12 and protocol.MAX_LINES == 1000


def test_decoding_is_total(monkeypatch):
    """`decode` raises nothing but its own _Malformed, on any bytes: with the depth check out of the
    way the parser's RecursionError is caught too; a depth scan of a 1 MiB line stays quick."""
    import random

    from judge.worker import protocol

    rng = random.Random(7)
    alphabet = b'[]{}",:\\ 0123456789.eE-+truefalsn\xff\xc3\x00'
    for _ in range(3000):
        line = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 60)))
        try:
            assert isinstance(local.decode(line), dict)
        except local._Malformed:
            pass
    for line in (b"[]" * (CAP // 4), b'"\\' * (CAP // 4), b'{"a": ["\\"[", 1]}' * 40000):
        t0 = time.perf_counter()
        with pytest.raises(local._Malformed):
            local.decode(line)
        assert time.perf_counter() - t0 < 2
    assert local.decode(b'{"s": "[[[[[[[[[[[[[[[[[[[[\\"{{{{{{{{{{{{{"}') == {"s": "[" * 20 + '"' + "{" * 13}
    monkeypatch.setattr(protocol, "MAX_DEPTH", 10**7)
    with pytest.raises(local._Malformed, match="not JSON \\(RecursionError\\)"):
        local.decode(b"[" * 200000)


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_a_malformed_reply_is_the_candidates_runtime_error(fake_worker, name):
    """Every malformed reply is a WorkerFailure of kind "malformed", quickly (within the request's
    deadline), the worker killed: RUNTIME_ERROR for the candidate, INTERNAL_ERROR for a baseline."""
    from judge.contract.verdict import Status
    from judge.engine.roles import baseline_role, blame

    code, reason = MALFORMED[name]
    body = after_ready(code, "out.flush()", SLEEP)
    for role, status in (("candidate", Status.RUNTIME_ERROR), (baseline_role("torch"), Status.INTERNAL_ERROR)):
        w = fake_worker(body, role=role)
        w.wait_ready(timeout_s=20)
        t0 = time.perf_counter()
        with pytest.raises(WorkerFailure) as info:
            w.request("call", 8, "solve() on n=7", args=[])
        assert time.perf_counter() - t0 < 8
        f = info.value
        assert f.kind == "malformed", f
        assert f.message.startswith(f"solve() on n=7: the worker sent a malformed reply: {reason}"), f.message
        assert w.proc.poll() is not None
        verdict = blame(w, f)
        assert verdict.status == status, verdict
        assert ("baseline torch: " in verdict.message) == (status == Status.INTERNAL_ERROR)


def test_the_engine_gives_a_malformed_candidate_runtime_error(fake_worker):
    """Through the session's request (judge/engine/session.py `ask`), as the correctness phase asks."""
    from conftest import PROBLEMS_DIR
    from fakes import cpu_session

    from judge.contract.verdict import Status
    from judge.engine.outcome import RunFailure
    from judge.problem import spec

    s = cpu_session(spec.load_problem(PROBLEMS_DIR / "vector_add"))
    w = fake_worker(after_ready(MALFORMED["200000_brackets"][0], "out.flush()", SLEEP))
    w.wait_ready(timeout_s=20)
    with pytest.raises(RunFailure) as info:
        s.ask(w, "call", 8, "solve() on n=7", args=[])
    assert info.value.status == Status.RUNTIME_ERROR and "malformed reply: nested deeper" in info.value.message


def test_brackets_inside_strings_are_not_nesting(fake_worker):
    w = fake_worker(after_ready('send(nonce=nonce, ok=True, note="[{" * 1000 + "\\\\\\"]")', SLEEP))
    w.wait_ready(timeout_s=20)
    assert w.request("call", 8, "solve()", args=[])["note"] == "[{" * 1000 + '\\"]'


def test_a_reply_after_the_deadline_is_a_timeout(fake_worker):
    w = fake_worker(after_ready("""
        import time; time.sleep(2.5)
        send(nonce=nonce, ok=True)
    """, SLEEP))
    w.wait_ready(timeout_s=20)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 1.0, "solve()", args=[])
    assert info.value.kind == "timeout" and 0.9 <= time.perf_counter() - t0 < 2.0
    assert w.proc.poll() is not None


def test_a_slow_endless_stream_of_lines_ends_at_the_deadline(fake_worker):
    """Well-formed progress lines, too slowly to pass the line cap: the deadline still holds."""
    w = fake_worker(after_ready("""
        import time
        while True:
            send(nonce=nonce, progress=1); time.sleep(0.01)
    """))
    w.wait_ready(timeout_s=20)
    seen = []
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 1.0, "solve()", on_progress=seen.append, args=[])
    assert info.value.kind == "timeout" and 0.9 <= time.perf_counter() - t0 < 2.0 and seen


def test_a_worker_that_stops_reading_cannot_hold_the_parent(fake_worker):
    """Requests go out before the deadline too: a worker that never reads stdin (its pipe full) times out."""
    w = fake_worker("""
        send(nonce=nonce, ok=True, ready=True)
        import time; time.sleep(60)
    """)
    w.wait_ready(timeout_s=20)
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 1.0, "solve()", args=["x" * (1 << 20)])
    assert info.value.kind == "timeout" and time.perf_counter() - t0 < 2.0


def test_a_reply_nobody_asked_for_is_malformed(fake_worker):
    """One reply per request: a second one (waiting for the next request to take it) is refused."""
    w = fake_worker(after_ready("""
        send(nonce=nonce, ok=True, times_ms=[1.0])
        send(nonce=nonce, ok=True, times_ms=[0.001])
    """, SLEEP))
    w.wait_ready(timeout_s=20)
    assert w.request("call", 8, "solve()", args=[])["times_ms"] == [1.0]
    time.sleep(0.2)
    with pytest.raises(WorkerFailure) as info:
        w.request("time_batch", 8, "timing", k=1)
    assert info.value.kind == "malformed" and "between requests" in info.value.message


# -- confinement: what the parent sends, and what it says --------------------------------------------------

ECHOES = """
    send(nonce=nonce, ok=True, ready=True)
    for line in sys.stdin:
        send(nonce=nonce, ok=True, got=json.loads(line))
"""


def test_a_candidates_init_carries_the_seccomp_program(fake_worker, monkeypatch):
    """A candidate's `init` carries judge.sandbox.seccomp's program for its own pid (hex: 8 bytes per
    instruction); JUDGE_CONFINE=0 sends none, and a baseline's worker (the judge's own code) never gets one."""
    from judge.sandbox import seccomp

    monkeypatch.delenv(paths.ENV_CONFINE, raising=False)
    w = fake_worker(ECHOES)
    w.wait_ready(timeout_s=20)
    assert w.confined
    got = w.request("init", 10, "loading the library", params=[], lib="/x.so")["got"]
    assert got["seccomp"] == seccomp.program(w.proc.pid).hex() and len(bytes.fromhex(got["seccomp"])) % 8 == 0
    assert got["lib"] == "/x.so"
    assert "seccomp" not in w.request("call", 10, "solve()", args=[])["got"]  # init only

    monkeypatch.setenv(paths.ENV_CONFINE, "0")
    w = fake_worker(ECHOES)
    w.wait_ready(timeout_s=20)
    assert not w.confined and "seccomp" not in w.request("init", 10, "loading", params=[], lib="/x.so")["got"]

    monkeypatch.delenv(paths.ENV_CONFINE)
    w = fake_worker(ECHOES, role="baseline torch", torch=True)
    w.wait_ready(timeout_s=20)
    assert not w.confined and "seccomp" not in w.request("init", 10, "loading", params=[], baseline={})["got"]


def test_a_machine_that_cannot_confine_is_the_judges_error(fake_worker, monkeypatch):
    """supported() gives a reason: the candidate's init fails before anything is sent, as the judge's
    INTERNAL_ERROR naming JUDGE_CONFINE=0, never as the candidate's verdict."""
    from judge.contract.verdict import Status
    from judge.engine.roles import blame
    from judge.sandbox import seccomp

    monkeypatch.delenv(paths.ENV_CONFINE, raising=False)
    monkeypatch.setattr(seccomp, "supported", lambda: "no seccomp in this kernel")
    w = fake_worker(ECHOES)
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("init", 10, "loading the library", params=[], lib="/x.so")
    assert info.value.kind == "sandbox" and w.proc.poll() is not None
    verdict = blame(w, info.value)
    assert verdict.status == Status.INTERNAL_ERROR
    assert "no seccomp in this kernel" in verdict.message and "JUDGE_CONFINE=0" in verdict.message


def test_a_refused_system_call_is_named_and_blamed_on_the_candidate(fake_worker):
    """A worker killed by SIGSYS after its handler logged the call: the failure names the call
    (judge.sandbox.seccomp.describe_refusal), and it is the candidate's RUNTIME_ERROR."""
    from judge.contract.verdict import Status
    from judge.engine.roles import blame
    from judge.sandbox import seccomp

    w = fake_worker(after_ready("""
        sys.stdout.write("judge-worker: the sandbox refused system call 62\\n"); sys.stdout.flush()
        import signal
        os.kill(os.getpid(), signal.SIGSYS)
    """))
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 10, "solve() on n=7", args=[])
    f = info.value
    assert f.kind == "crash"
    assert f.message == f"solve() on n=7: the worker was killed by SIGSYS: {seccomp.describe_refusal(f.log_tail)}"
    assert "system call 62" in f.message
    assert blame(w, f).status == Status.RUNTIME_ERROR


KEY_EXCHANGE = """
    send(nonce=nonce, ok=True, ready=True, pid=os.getpid())
    cmd = json.loads(sys.stdin.readline())
    got = []
    for i in ASKS:
        send(nonce=nonce, unseal=i)
        got.append(json.loads(sys.stdin.readline())["key"])
    send(nonce=nonce, ok=True, times_ms=[1.0, 1.0], got=got, cmd=cmd)
    time.sleep(60)
"""


def test_a_sealed_batch_gives_each_key_when_asked(fake_worker):
    """The parent's side of a sealed batch (judge/gpu/seal.py): call i's key goes on the worker's
    stdin when the worker asks for it, in order; the keys are never part of the command."""
    w = fake_worker("import time\n" + textwrap.dedent(KEY_EXCHANGE).replace("ASKS", "[0, 1]"))
    w.wait_ready(timeout_s=20)
    reply = w.request("time_batch", 20, "timing", k=2, sealed=True, keys=[[1, 2, 3], [4, 5, 6]])
    assert reply["got"] == [[1, 2, 3], [4, 5, 6]]
    assert reply["cmd"] == {"op": "time_batch", "k": 2, "sealed": True}


@pytest.mark.parametrize("asks, keys", [([0, 0], True), ([1], True), ([0], True), ([0], False)],
                         ids=["twice", "skipped_one", "one_unasked", "not_sealed"])
def test_a_key_asked_for_out_of_turn_is_tampering(fake_worker, asks, keys):
    """A key asked for twice, or ahead of its turn, or a batch replied to with a key never asked
    for, or a key asked for in a batch that is not sealed: a "protocol" failure (REJECTED), and the
    worker is killed. A worker that got a key early could open a later call's inputs between the
    timed windows."""
    from judge.engine.roles import blame

    w = fake_worker("import time\n" + textwrap.dedent(KEY_EXCHANGE).replace("ASKS", repr(asks)))
    w.wait_ready(timeout_s=20)
    with pytest.raises(WorkerFailure) as info:
        w.request("time_batch", 20, "timing", k=2, keys=[[1, 2, 3], [4, 5, 6]] if keys else None)
    assert info.value.kind == "protocol", info.value
    assert blame(w, info.value).status == Status.REJECTED
    assert w.proc.poll() is not None
