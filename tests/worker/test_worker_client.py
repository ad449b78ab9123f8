"""The worker protocol without a GPU: failures are WorkerFailure with the right kind, quickly, never a hang.

WorkerProcess hard-codes its command (`sys.executable -m judge.worker.main FD NONCE`), so the fake
workers below replace `sys.executable` as seen by judge.worker.client with a tiny script; the script gets
the same argv (`-m judge.worker.main FD NONCE`) and environment a real worker would.
"""
from __future__ import annotations

import stat
import sys
import textwrap
import time
import types

import pytest

from judge.gpu import device
from judge.worker import client as local
from judge.worker.client import WorkerFailure, WorkerProcess


@pytest.mark.skipif(bool(device.gpus()), reason="checks the failure to start CUDA on a machine without a GPU")
def test_real_worker_fails_to_start_cuda_quickly():
    w = WorkerProcess(device=0)
    try:
        t0 = time.perf_counter()
        with pytest.raises(WorkerFailure) as info:
            w.wait_ready(timeout_s=60)
        assert time.perf_counter() - t0 < 30
        assert info.value.kind in ("cuda", "os", "crash"), info.value
        assert info.value.message
    finally:
        w.close()
    assert w.proc.poll() is not None


HEADER = f"#!{sys.executable}\n"
PRELUDE = """\
import json, os, sys
fd, nonce = int(sys.argv[3]), sys.argv[4]
out = os.fdopen(fd, "w")
def send(**msg):
    out.write(json.dumps(msg) + "\\n"); out.flush()
"""


@pytest.fixture
def fake_worker(tmp_path):
    """fake_worker(body) → a WorkerProcess whose process runs `body` (after PRELUDE) instead of the worker."""
    made = []

    def make(body: str) -> WorkerProcess:
        script = tmp_path / f"fake_worker_{len(made)}.py"
        script.write_text(HEADER + PRELUDE + textwrap.dedent(body))
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(local, "sys", types.SimpleNamespace(executable=str(script)))
            w = WorkerProcess(device=0, role="candidate")
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def test_fake_worker_round_trip(fake_worker):
    w = fake_worker("""
        assert sys.argv[1:3] == ["-m", "judge.worker.main"]
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


def test_malformed_reply_is_protocol_failure(fake_worker):
    w = fake_worker("""
        out.write("this is not json\\n"); out.flush()
        import time; time.sleep(60)
    """)
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=20)
    assert info.value.kind == "protocol" and "malformed" in info.value.message


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


def test_host_memory_hog_is_killed_and_named(fake_worker, monkeypatch):
    """The parent's memory watch (judge/sandbox/memwatch.py) kills a worker whose resident memory
    passes the limit (here 0.2 GiB), including memory held by a process the worker forked, and the
    failure says so."""
    monkeypatch.setenv(local.MEMORY_ENV, "0.2")
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
    assert info.value.kind == "crash"
    assert "GiB of host memory, over the limit of 0.2 GiB" in info.value.message


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
