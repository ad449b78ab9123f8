"""The native candidate worker (judge/worker/native/) without a GPU.

- its build: cached, keyed by its sources, the protocol and nvcc, one build for parallel judges,
  hardened, and a clear error when it cannot be built (nvcc);
- the host-only parts, built with g++: the trampoline that calls solve() by the x86-64 ABI, the
  JSON reader and writer, the poison patterns (tests/worker/native/host_test.cc);
- the real binary without a GPU: a well-formed error with the nonce (nvcc);
- the real binary on a CPU stand-in of the CUDA runtime (tests/worker/native/fake_cudart.c,
  preloaded): the whole protocol, the seccomp filter and the privilege drop of `init`, the order of
  the timed call's steps and the check records' layout (nvcc and gcc);
- the confinement's self-test mode: a refused system call kills by SIGSYS, naming it, and a thread
  started before the filter has it too (TSYNC);
- the pid namespace of its own (the default, where this machine allows one): pid 2 under a waiting
  pid 1, with a /proc of its own (what the CUDA driver needs) that the host's never sees, killed
  with its top process, its end passed up unchanged; without one where the OS refuses or
  JUDGE_PID_NAMESPACE=0; a clear start-up failure where its /proc cannot be mounted.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, nvcc_test

from judge import paths
from judge.contract.verdict import Status
from judge.gpu import device
from judge.worker import client as local
from judge.worker import native_build, protocol
from judge.worker.client import WorkerFailure, WorkerProcess

HERE = Path(__file__).resolve().parent / "native"
NATIVE = ROOT / "judge" / "worker" / "native"
HAVE_GCC = bool(shutil.which("gcc") and shutil.which("g++"))
gcc_test = pytest.mark.skipif(not HAVE_GCC, reason="needs gcc and g++")
IS_ROOT = os.geteuid() == 0


@pytest.fixture(scope="module")
def worker_bin(judge_cache) -> Path:
    """The native worker, built once for this run's cache."""
    return native_build.worker_binary()


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The C helpers, built with gcc into a folder only the judge's user can enter (as a root judge's
    cache is: the worker must still load a library from there once it runs as nobody)."""
    if not HAVE_GCC:
        pytest.skip("needs gcc and g++")
    out = tmp_path_factory.mktemp("native")
    out.chmod(0o700)
    for src, name in (("fake_cudart.c", "fake_cudart.so"), ("cpu_solve.c", "cpu_solve.so"), ("abi.c", "abi.so"),
                      ("fake_mount.c", "fake_mount.so")):
        subprocess.run(["gcc", "-shared", "-fPIC", "-O2", "-o", str(out / name), str(HERE / src)], check=True)
    subprocess.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(NATIVE), "-o",
                    str(out / "host_test"), str(HERE / "host_test.cc"), "-ldl"], check=True)
    return out


# -- the build -----------------------------------------------------------------------------------------------
@nvcc_test
def test_the_worker_is_built_once_and_hardened(worker_bin):
    assert worker_bin.is_file() and os.access(worker_bin, os.X_OK)
    assert worker_bin.parent.parent == native_build.cache_dir()
    assert (worker_bin.parent / native_build.HEADER).read_text() == native_build.header()

    def no_compiler(*a, **kw):
        raise AssertionError("rebuilt a cached worker")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(native_build.subprocess, "run", no_compiler)
        assert native_build.worker_binary() == worker_bin  # cached: no nvcc
        assert local.command() == [str(worker_bin)]  # a candidate's argv: the program alone
    if shutil.which("readelf"):
        dyn = subprocess.run(["readelf", "-d", "-l", str(worker_bin)], capture_output=True, text=True).stdout
        assert "BIND_NOW" in dyn and "PIE" in dyn and "GNU_RELRO" in dyn  # full RELRO, position-independent
        assert "libcudart.so" in dyn  # -cudart shared: the submissions' runtime


def test_the_cache_key_follows_sources_protocol_and_nvcc(tmp_path, monkeypatch):
    base = native_build.key("nvcc", "13.0.88")
    assert native_build.key("nvcc", "13.0.88") == base
    assert native_build.key("nvcc", "13.0.99") != base
    assert NATIVE / "worker.cu" in native_build.sources() and native_build.KERNELS in native_build.sources()
    copy = tmp_path / "native"
    shutil.copytree(NATIVE, copy)
    monkeypatch.setattr(native_build, "SOURCES", copy)
    monkeypatch.setattr(native_build, "MAIN", copy / "worker.cu")
    moved = native_build.key("nvcc", "13.0.88")  # the main file's path is in the command
    (copy / "json.h").write_text((copy / "json.h").read_text() + "\n// a change\n")
    assert native_build.key("nvcc", "13.0.88") != moved
    monkeypatch.setattr(protocol, "MAX_CALLS_PER_BATCH", protocol.MAX_CALLS_PER_BATCH + 1)
    assert native_build.key("nvcc", "13.0.88") != moved


def test_the_header_carries_the_protocols_constants():
    h = native_build.header()
    for name, value in (("MAX_CALLS_PER_BATCH", protocol.MAX_CALLS_PER_BATCH), ("CHECK_STRIDE", protocol.CHECK_STRIDE),
                        ("NONCE_HEX", protocol.NONCE_HEX), ("ERROR_TEXT_CHARS", protocol.ERROR_TEXT_CHARS),
                        ("COMMAND_CAP_BYTES", protocol.REQUEST_CAP_BYTES)):
        assert re.search(rf"#define JUDGE_{name} {value}\b", h), name
    assert f'#define JUDGE_ENV_FD "{paths.ENV_WORKER_FD}"' in h
    assert f'#define JUDGE_ENV_PID_NAMESPACE "{paths.ENV_PID_NAMESPACE}"' in h
    assert f"#define JUDGE_FLUSH_MIN_BYTES {protocol.FLUSH_MIN_BYTES}ull" in h
    poison = re.search(r"JUDGE_POISON_BYTES\[\] = \{([^}]*)\}", h)
    assert poison and [int(x, 16) for x in poison.group(1).split(",")] == list(protocol.POISON_BYTES)
    assert protocol.CHECK_STRIDE == 8 * protocol.CHECK_WORDS == 32


@nvcc_test
def test_parallel_judges_build_it_once(tmp_path, monkeypatch):
    """Two judges that need the worker at once: one nvcc, the other waits on the lock and takes it."""
    monkeypatch.setenv(paths.ENV_CACHE, str(tmp_path / "cache"))
    real = subprocess.run
    compiles = []

    def counting(cmd, *a, **kw):
        compiles.append(cmd)
        return real(cmd, *a, **kw)

    monkeypatch.setattr(native_build.subprocess, "run", counting)
    got: list[Path] = []
    threads = [threading.Thread(target=lambda: got.append(native_build.worker_binary())) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(compiles) == 1 and len(got) == 2 and got[0] == got[1] and got[0].is_file()
    assert [p.name for p in got[0].parent.parent.iterdir() if ".tmp-" in p.name] == []  # no leftovers


@nvcc_test
def test_a_worker_that_does_not_build_is_the_judges_error(tmp_path, monkeypatch):
    from fakes import cpu_session

    from judge.engine.outcome import RunFailure
    from judge.engine.roles import CANDIDATE
    from judge.problem import spec

    monkeypatch.setenv(paths.ENV_CACHE, str(tmp_path / "cache"))
    broken = tmp_path / "native"
    broken.mkdir()
    (broken / "worker.cu").write_text('#error "broken on purpose"\n')
    monkeypatch.setattr(native_build, "SOURCES", broken)
    monkeypatch.setattr(native_build, "MAIN", broken / "worker.cu")
    with pytest.raises(native_build.NativeBuildError, match="broken on purpose"):
        native_build.worker_binary()
    assert not list((tmp_path / "cache" / "worker").glob("*/judge-worker"))
    s = cpu_session(spec.load_problem(ROOT / "problems" / "vector_add"))
    with pytest.raises(RunFailure) as info:
        s.spawn(CANDIDATE)
    assert info.value.status == Status.INTERNAL_ERROR and "broken on purpose" in info.value.message
    monkeypatch.setattr(native_build.toolkit, "nvcc_path", lambda: None)
    with pytest.raises(native_build.NativeBuildError, match="nvcc not found"):
        native_build.worker_binary()


# -- host-only parts (g++) -----------------------------------------------------------------------------------
@gcc_test
def test_the_trampoline_calls_every_signature_by_the_abi(built):
    r = subprocess.run([str(built / "host_test"), "abi", str(built / "abi.so")], capture_output=True, text=True)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("ok abi") == 5


@gcc_test
def test_the_json_reader_and_writer(built):
    r = subprocess.run([str(built / "host_test"), "json"], capture_output=True, text=True)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    assert "ok json reader" in r.stdout and "ok json writer" in r.stdout


def _is_poison(dtype: str, word: int) -> bool:
    """judge/gpu/integrity.py's rules: a NaN with a non-canonical payload, or INT32_MIN + 16 bits."""
    if dtype in ("int32", "uint32"):
        return 0x80000000 <= word <= 0x8000FFFF
    sign, exponent, mask, canonical = {"float32": (31, 0x7F800000, 0x7FFFFF, (0x400000, 0x7FFFFF)),
                                       "float16": (15, 0x7C00, 0x3FF, (0x200, 0x3FF)),
                                       "bfloat16": (15, 0x7F80, 0x7F, (0x40, 0x7F))}[dtype]
    payload = word & mask
    return word >> (sign + 1) == 0 and word & exponent == exponent and payload != 0 and payload not in canonical


@gcc_test
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "uint32"])
def test_the_native_poison_words_follow_the_parents_rules(built, dtype):
    import random

    from judge.gpu import integrity

    out = subprocess.run([str(built / "host_test"), "poison", dtype, "4000"], capture_output=True, text=True,
                         check=True).stdout.split()
    words = [int(w, 16) for w in out]
    assert len(words) == 4000 and all(_is_poison(dtype, w) for w in words)
    assert len(set(words)) > 1000 or dtype in ("bfloat16",) and len(set(words)) > 200  # bf16: 250 patterns
    if dtype.startswith(("float", "bfloat")):
        sign = 31 if dtype == "float32" else 15
        assert {w >> sign for w in words} == {0, 1}
    rng = random.Random(5)  # the parent's own rule, read through the same predicate
    assert all(_is_poison(dtype, integrity.poison_word(dtype, rng)) for _ in range(4000))
    for other in ("int64", "uint8"):
        none = subprocess.run([str(built / "host_test"), "poison", other, "1"], capture_output=True, text=True)
        assert none.stdout.strip() == "none" and integrity.poison_word(other) is None


# -- the real binary -------------------------------------------------------------------------------------------
def _start(binary: Path, nonce: str = "ab" * 16, fd_env: bool = True, args: tuple[str, ...] = ()):
    read_fd, write_fd = os.pipe()
    env = {"PATH": os.environ.get("PATH", "")}
    if fd_env:
        env[paths.ENV_WORKER_FD] = str(write_fd)
    p = subprocess.Popen([str(binary), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         pass_fds=(write_fd,), env=env)
    os.close(write_fd)
    out, err = p.communicate(nonce.encode() + b"\n", timeout=60)
    reply = b""
    while chunk := os.read(read_fd, 1 << 16):
        reply += chunk
    os.close(read_fd)
    return p.returncode, reply.decode(), err.decode()


@nvcc_test
def test_a_worker_without_its_channel_or_nonce_exits(worker_bin):
    code, reply, err = _start(worker_bin, fd_env=False)
    assert code == 2 and reply == "" and "no result fd" in err
    code, reply, err = _start(worker_bin, nonce="not a nonce")
    assert code == 2 and reply == "" and "no nonce" in err
    code, reply, err = _start(worker_bin, nonce="AB" * 16)  # lowercase hex only, as protocol.NONCE
    assert code == 2 and "no nonce" in err
    code, _, err = _start(worker_bin, args=("--torch",))
    assert code == 2 and "no arguments" in err


@nvcc_test
@pytest.mark.skipif(bool(device.gpus()), reason="reads the error of a worker that cannot start CUDA")
def test_without_a_gpu_the_worker_answers_an_error_with_the_nonce(worker_bin):
    """Through the real client: a well-formed error reply with the nonce, quickly (not a hang, not a
    crash); the argv is the program alone, the nonce in none of it."""
    w = WorkerProcess(device=0)
    try:
        assert w.proc.args == [str(worker_bin)]
        t0 = time.perf_counter()
        with pytest.raises(WorkerFailure) as info:
            w.wait_ready(timeout_s=60)
        assert time.perf_counter() - t0 < 30
        assert info.value.kind == "cuda", info.value  # a reply: a crash would be kind "crash"
        assert info.value.message.startswith(("cudaSetDevice: ", "creating the CUDA context: "))
        assert w.nonce not in " ".join(w.proc.args)
    finally:
        w.close()
    assert w.proc.poll() is not None


# -- the real binary on a CPU stand-in of the CUDA runtime --------------------------------------------------
VECTOR = [{"name": "a", "kind": "tensor"}, {"name": "out", "kind": "tensor"}, {"name": "n", "kind": "int"},
          {"name": "scale", "kind": "float"}]


def _handle(byte: int) -> str:
    return (bytes([byte]) * 64).hex()


BUFFERS = [{"id": name, "handle": _handle(i + 1), "nbytes": 4096, "dtype": "float32", "shape": [1024]}
           for i, name in enumerate(("a", "out", "counter"))]


def _args(n: int = 16, scale: float = 2.5) -> list[dict]:
    return [{"buf": "a"}, {"buf": "out"}, {"int": n}, {"float": scale}]


@pytest.fixture
def fake_worker(worker_bin, built, monkeypatch):
    """fake_worker(fail=None, no_mount=None) → a started WorkerProcess of the real native worker whose
    CUDA runtime calls are fake_cudart.c's (FAKE_CUDART_FAIL=fail makes one of them fail); with
    `no_mount` ("proc" or "private") fake_mount.c refuses that mount."""
    made = []
    monkeypatch.delenv(paths.ENV_CONFINE, raising=False)

    def make(fail: str | None = None, no_mount: str | None = None) -> WorkerProcess:
        preload = ":".join(str(built / f) for f in ("fake_cudart.so", *(["fake_mount.so"] if no_mount else [])))
        env = [f"LD_PRELOAD={preload}"] + ([f"FAKE_CUDART_FAIL={fail}"] if fail else [])
        env += [f"FAKE_MOUNT_FAIL={no_mount}"] if no_mount else []
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(local, "command", lambda torch=False, triton=False: ["env", *env, str(worker_bin)])
            w = WorkerProcess(device=0)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def _log(w: WorkerProcess) -> list[str]:
    return w.log_path.read_text(errors="replace").splitlines()


def _pointers(w: WorkerProcess) -> dict[str, int]:
    """The host address each buffer was mapped at (fake_cudart's `ipc HANDLE -> PTR`)."""
    found = dict(re.findall(r"^fake: ipc (\w{4}) -> (0x[0-9a-f]+)$", "\n".join(_log(w)), re.M))
    return {b["id"]: int(found[b["handle"][:4]], 16) for b in BUFFERS}


@nvcc_test
def test_the_whole_protocol_on_a_fake_runtime(fake_worker, built):
    w = fake_worker()
    ready = w.wait_ready(timeout_s=30)
    assert ready["ready"] is True and ready["pid"] == w.own_pid  # 2 in a pid namespace of its own
    # before CUDA: the channel's variable is gone and no fd is inheritable
    assert "fake: cudaSetDevice 0 env=unset inheritable=[]" in _log(w)
    assert f"fake: proc_self={w.own_pid} pid={w.own_pid}" in _log(w)  # the driver's /proc/self: itself
    assert "fake: stream flags=0 priority=-5" in _log(w)  # the checks' stream: blocking, highest priority
    assert w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so")) == \
        {"nonce": w.nonce, "ok": True}
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    ptr = _pointers(w)
    word = 0x7FC00123
    w.request("call", 30, "solve()", args=_args(), counter="counter",
              outputs=[{"buf": "out", "nbytes": 4096, "dtype": "float32", "word": word},
                       {"buf": "a", "nbytes": 4096, "dtype": "uint8", "word": None}])
    solve = [ln for ln in _log(w) if ln.startswith("solve:")]
    uid = 65534 if IS_ROOT else os.getuid()  # confined, and (as root) nobody, with the library in a 0700 folder
    assert solve == [f"solve: a={ptr['a']:#x} out={ptr['out']:#x} n=16 scale=2.5 uid={uid} "
                     "dumpable=0 no_new_privs=1 seccomp=2"]
    log = _log(w)
    i = log.index(solve[0])
    assert log[i - 1] == "fake: sync" and log[i + 2] == "fake: sync"  # synchronised before and after
    assert log[i + 1] == (f"fake: check {ptr['out']:#x} {word:#010x} 1024 salt=0 out={ptr['counter']:#x} "
                          "grid=4 block=256")

    outputs = [{"buf": "a", "nbytes": 100, "dtype": "uint8"}, {"buf": "out", "nbytes": 4096, "dtype": "float32"}]
    w.request("prepare", 30, "preparing", slots=[_args(), _args(8, 0.5)], outputs=[outputs, outputs],
              counter="counter")
    for batch, (k, calls) in enumerate(((3, 3), (2, 5))):
        before = len(_log(w))
        reply = w.request("time_batch", 30, "timing", k=k)
        assert reply["times_ms"] == [1.25] * k and reply["calls"] == calls
        _check_timed_calls(_log(w)[before:], ptr, k, first_slot=3 * batch)


def _check_timed_calls(log: list[str], ptr: dict[str, int], k: int, first_slot: int) -> None:
    """Per timed call i: poison (a pattern fill, a byte memset), the L2 reset, the gate's words
    zeroed and the gate (no sealed inputs; the flush, a read of the flush buffer, which nothing
    writes after the worker set it once; the start stamp at record + 16; not held), the start
    event right after it, solve(), the end event, a stamp at record + 24, the check of the output
    that has a pattern (salt: its index among the slot's outputs) at record + 0."""
    steps = [ln for ln in log if not ln.startswith("fake: sync")]
    per_call = len(steps) // k
    assert per_call == 11 and len(steps) == 11 * k, "\n".join(log)
    flush = max(2 * (50 << 20), protocol.FLUSH_MIN_BYTES) // 16
    for i in range(k):
        record = ptr["counter"] + protocol.CHECK_STRIDE * i
        s = steps[per_call * i: per_call * (i + 1)]
        m = re.fullmatch(rf"fake: memset {ptr['a']:#x} 0x([0-9a-f]{{2}}) 100", s[0])
        assert m and int(m.group(1), 16) in protocol.POISON_BYTES, s[0]
        fill = re.fullmatch(rf"fake: fill {ptr['out']:#x} (0x[0-9a-f]{{8}}) 1024 grid=4 block=256 stream=\(nil\)", s[1])
        assert fill and _is_poison("float32", int(fill.group(1), 16)), s[1]
        assert s[2:4] == ["fake: l2 reset", "fake: window stream=(nil) attr=1"]
        assert re.fullmatch(r"fake: memset 0x[0-9a-f]+ 0x00 12", s[4]), s[4]
        assert re.fullmatch(rf"fake: hold \d+ grid=128 smem=\d+ jobs=0 flush=0x10000000 {flush} "
                            rf"stamp={record + 16:#x} wait=0", s[5]), s[5]
        assert s[6] == f"fake: record {2 * i + 1} stream=(nil)"
        n = 16 if (first_slot + i) % 2 == 0 else 8  # the slots rotate
        assert s[7].startswith(f"solve: a={ptr['a']:#x} out={ptr['out']:#x} n={n} ")
        assert s[8] == f"fake: record {2 * i + 2} stream=(nil)"
        assert s[9] == f"fake: stamp {record + 24:#x}"
        assert s[10] == f"fake: check {ptr['out']:#x} {fill.group(1)} 1024 salt=1 out={record:#x} grid=4 block=256"


@nvcc_test
def test_a_sealed_batch_asks_for_each_key_once_its_gate_is_resident(fake_worker, built):
    """A sealed batch (judge/gpu/seal.py): each call's gate carries the slot's inputs; once it is
    resident the worker asks for that call's key on the channel, in order, and gives it to the gate,
    which opens the inputs with it (the fake opens them on the host with the same keystream, at the
    call's end event: zeroed memory becomes the keystream itself); a hold waits for the host to let go."""
    from judge.gpu import seal

    w = fake_worker()
    w.wait_ready(timeout_s=30)
    w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so"))
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    ptr = _pointers(w)
    outputs = [{"buf": "out", "nbytes": 4096, "dtype": "float32"}]
    inputs = [{"buf": "a", "nbytes": 40}]
    w.request("prepare", 30, "preparing", slots=[_args(), _args(8, 0.5)], outputs=[outputs, outputs],
              counter="counter", inputs=[inputs, inputs])
    keys = [seal.Key(1, 2, 3), seal.Key(0xFFFFFFFF, 7, 9)]
    before = len(_log(w))
    reply = w.request("time_batch", 30, "timing", k=2, hold=True, sealed=True, keys=[k.wire() for k in keys])
    assert reply["times_ms"] == [1.25, 1.25] and reply["held"] is True
    log = _log(w)[before:]
    gates = [ln for ln in log if ln.startswith("fake: hold")]
    assert len(gates) == 2 and all(" jobs=1 " in g and g.endswith("wait=1") for g in gates), gates
    opened = [ln for ln in log if ln.startswith("fake: open")]
    stream = [seal.keystream(1, 0, key)[0].tolist() for key in keys]
    expected = [bytes(b for word in s for b in int(word).to_bytes(4, "little"))[:8].hex() for s in stream]
    # call 2 opens what call 1 opened: zeroes XOR key 1, then XOR key 2
    second = bytes(x ^ y for x, y in zip(bytes.fromhex(expected[0]), bytes.fromhex(expected[1]))).hex()
    assert opened == [f"fake: open 0 {ptr['a']:#x} 40 key=1,2,3 first={expected[0]}",
                      f"fake: open 0 {ptr['a']:#x} 40 key={0xFFFFFFFF},7,9 first={second}"], log
    assert log.index(gates[0]) < log.index(opened[0]) < log.index(gates[1]) < log.index(opened[1])


@nvcc_test
def test_a_refused_system_call_kills_the_worker_by_sigsys(fake_worker, built):
    from judge.engine.roles import blame

    w = fake_worker()
    w.wait_ready(timeout_s=30)
    w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so"))
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 30, "solve() on n=7", args=_args(n=-1))  # ptrace
    f = info.value
    assert f.kind == "crash" and f.message.startswith("solve() on n=7: the worker was killed by SIGSYS: ")
    assert "system call 101" in f.message and "judge-worker: the sandbox refused system call 101" in f.log_tail
    assert blame(w, f).status == Status.RUNTIME_ERROR


@nvcc_test
def test_unconfined_when_asked(fake_worker, built, monkeypatch):
    monkeypatch.setenv(paths.ENV_CONFINE, "0")
    w = fake_worker()
    w.wait_ready(timeout_s=30)
    assert not w.confined
    w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so"))
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    w.request("call", 30, "solve()", args=_args())
    solve = [ln for ln in _log(w) if ln.startswith("solve:")]
    status = dict(line.split(":\t", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":\t" in line)
    mine = f"no_new_privs={int(status['NoNewPrivs'])} seccomp={int(status['Seccomp'])}"  # inherited, nothing added
    assert solve and solve[0].endswith(f"uid={os.getuid()} dumpable=1 {mine}"), solve


@nvcc_test
@pytest.mark.parametrize("case", ["cuda_error", "no_library", "no_solve", "too_many_parameters", "before_init",
                                  "unknown_op", "unknown_field", "wrong_argument", "unmapped_buffer", "baseline"])
def test_errors_are_replies_of_the_workers_kinds(fake_worker, built, case):
    """Each failure is a well-formed reply with the nonce (never a crash), of a kind the parent knows."""
    w = fake_worker(fail="cudaGetLastError" if case == "cuda_error" else None)
    w.wait_ready(timeout_s=30)
    init = {"params": VECTOR, "lib": str(built / "cpu_solve.so")}
    want: tuple[str, str]
    if case == "cuda_error":
        steps, want = [("init", init), ("map", {"buffers": BUFFERS}), ("call", {"args": _args()})], \
            ("cuda", "launching solve(): an illegal memory access was encountered (cudaErrorIllegalAddress)")
    elif case == "no_library":
        steps, want = [("init", {**init, "lib": str(built / "missing.so")})], ("os", "No such file or directory")
    elif case == "no_solve":
        steps, want = [("init", {**init, "lib": str(built / "abi.so")})], ("os", "has no symbol `solve`")
    elif case == "too_many_parameters":
        steps, want = [("init", {**init, "params": [{"name": "p", "kind": "tensor"}] * 23})], ("native", "on the stack")
    elif case == "before_init":
        steps, want = [("call", {"args": []})], ("native", "solve() called before init")
    elif case == "unknown_op":
        steps, want = [("bogus", {})], ("native", "unknown command `bogus`")
    elif case == "unknown_field":
        steps, want = [("init", {**init, "extra": 1})], ("native", "unexpected field `extra`")
    elif case == "wrong_argument":
        steps, want = [("init", init), ("map", {"buffers": BUFFERS}), ("call", {"args": _args()[:3] + [{"int": 2}]})], \
            ("native", "argument 3 does not match")
    elif case == "unmapped_buffer":
        steps, want = [("init", init), ("call", {"args": _args()})], ("native", "buffer `a` is not mapped")
    else:
        steps, want = [("init", {"params": VECTOR, "baseline": {"file": "x.py", "func": "f"}})], \
            ("native", "a baseline runs in the Python worker")
    with pytest.raises(WorkerFailure) as info:
        for op, args in steps:
            w.request(op, 30, op, **args)  # type: ignore[arg-type]
    assert (info.value.kind, info.value.kind in protocol.ERROR_KINDS) == (want[0], True), info.value
    assert want[1] in info.value.message, info.value.message
    assert w.proc.poll() is not None


# -- the confinement's self-test ------------------------------------------------------------------------------
def _filter(refused: int) -> bytes:
    """A BPF program that traps one system call and allows the rest (x86-64 only)."""
    def insn(code, jt, jf, k):
        return struct.pack("<HBBI", code, jt, jf, k)
    return b"".join([insn(0x20, 0, 0, 4), insn(0x15, 1, 0, 0xC000003E), insn(0x06, 0, 0, 0x80000000),
                     insn(0x20, 0, 0, 0), insn(0x15, 0, 1, refused), insn(0x06, 0, 0, 0x00030000),
                     insn(0x06, 0, 0, 0x7FFF0000)])


@nvcc_test
@gcc_test
def test_the_sandbox_self_test_dies_by_sigsys_naming_the_call(worker_bin, built):
    """init's confinement (judge/worker/native/confine.h) with a filter that traps getuid, then the
    library's solve() (which calls getuid): the process dies by SIGSYS, its handler's line names the
    call, and a thread started before the filter had it too (TSYNC)."""
    from judge.sandbox import seccomp

    getuid = 102
    r = subprocess.run([str(worker_bin), "--selftest-sandbox", _filter(getuid).hex(), str(built / "cpu_solve.so")],
                       capture_output=True, text=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})
    assert r.returncode == -signal.SIGSYS, (r.returncode, r.stdout, r.stderr)
    assert "the other thread's seccomp mode is 2" in r.stdout
    assert f"judge-worker: the sandbox refused system call {getuid}\n" in r.stderr
    assert seccomp.describe_refusal(r.stderr) is not None and str(getuid) in seccomp.describe_refusal(r.stderr)


@nvcc_test
@gcc_test
def test_the_sandbox_self_test_with_the_judges_program(worker_bin, built):
    from judge.sandbox import seccomp

    if seccomp.supported():
        pytest.skip(f"this machine cannot confine: {seccomp.supported()}")
    r = subprocess.run([str(worker_bin), "--selftest-sandbox", seccomp.program(os.getpid()).hex(),
                        str(built / "cpu_solve.so")], capture_output=True, text=True, timeout=60,
                       env={"PATH": os.environ.get("PATH", "")})
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "solve() returned" in r.stdout and "seccomp=2" in r.stderr and "no_new_privs=1" in r.stderr


@nvcc_test
def test_the_self_test_cannot_run_under_a_judge(worker_bin, built):
    """Started the way the parent starts a worker (its channel in the environment), the self-test mode
    refuses: it is no way around `init`."""
    env = {"PATH": os.environ.get("PATH", ""), paths.ENV_WORKER_FD: "1"}
    r = subprocess.run([str(worker_bin), "--selftest-sandbox", _filter(102).hex(), str(built / "cpu_solve.so")],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and "never under a judge" in r.stderr and "solve" not in r.stdout


# -- the pid namespace of its own (start-up, before CUDA) ---------------------------------------------------
def _ns_pid(pid: int) -> list[int]:
    """The pids of `pid` from its namespace outwards (/proc/PID/status's NSpid line)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return [int(x) for x in line.split()[1:]]
    return []


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for whoever reaps orphans here."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def _pidns_selftest(worker_bin: Path, action: str, out: Path, user: int | None = None,
                    env: dict[str, str] | None = None) -> subprocess.Popen:
    """`judge-worker --selftest-pidns ACTION` in a session of its own (as the judge starts a worker),
    its stdout and stderr into `out`, run as `user` if given, with `env` added to its environment."""
    def demote() -> None:
        if user is not None:
            os.setgroups([])
            os.setgid(user)
            os.setuid(user)

    with open(out, "wb") as log:
        return subprocess.Popen([str(worker_bin), "--selftest-pidns", action], stdin=subprocess.PIPE, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=demote,
                                env={"PATH": os.environ.get("PATH", ""), **(env or {})})


def _said(out: Path, timeout_s: float = 20.0) -> dict[str, str]:
    """The self-test's first line, `selftest: pid_namespace=B pid=N ppid=M proc_self=P[ why=...]`, as a dict."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        m = re.search(r"^selftest: pid_namespace=(\d) pid=(\d+) ppid=(\d+) proc_self=(\S+)(?: why=(.*))?$",
                      out.read_text(), re.M)
        if m:
            return {"own": m.group(1), "pid": m.group(2), "ppid": m.group(3), "proc_self": m.group(4),
                    "why": m.group(5) or ""}
        time.sleep(0.05)
    raise AssertionError(f"the self-test said nothing: {out.read_text()!r}")


def _mounts(pid: int | str = "self") -> list[str]:
    return Path(f"/proc/{pid}/mountinfo").read_text().splitlines()


@pytest.fixture
def pidns(worker_bin, tmp_path):
    """Skips, saying why, where this machine refuses the worker a pid namespace."""
    from judge.sandbox import pidns as probe

    if why := probe.refused():
        pytest.skip(f"this machine refuses a pid namespace ({why}): the worker carries on without one")
    return worker_bin


@nvcc_test
def test_the_worker_is_pid_2_of_its_own_namespace_and_dies_with_its_parent(pidns, tmp_path):
    """Where unshare(CLONE_NEWPID | CLONE_NEWNS) is allowed (root): the process the judge started
    waits for an init (pid 1 of a new namespace) that waits for the worker (pid 2, its parent pid 1);
    all three are in the judge's process group; killing the top process alone ends the other two
    (init by PR_SET_PDEATHSIG, the worker with its namespace)."""
    out = tmp_path / "out"
    p = _pidns_selftest(pidns, "wait", out)
    try:
        said = _said(out)
        assert (said["own"], said["pid"], said["ppid"]) == ("1", "2", "1"), said
        tree = sorted(local.descendants(p.pid))
        assert len(tree) == 2, tree  # init and the worker
        init, worker = sorted(tree, key=lambda pid: _ns_pid(pid)[-1])
        assert _ns_pid(init)[1:] == [1] and _ns_pid(worker)[1:] == [2] and _ns_pid(p.pid) == [p.pid]
        assert {os.getpgid(pid) for pid in (p.pid, init, worker)} == {p.pid}  # the judge's killpg reaches all
        os.kill(p.pid, signal.SIGKILL)  # the top process alone, not its group
        assert p.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while not (_gone(init) and _gone(worker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(init) and _gone(worker), (Path(f"/proc/{worker}/status").read_text()
                                               if not _gone(worker) else "init lingers")
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()


@nvcc_test
def test_the_worker_has_its_namespaces_proc_and_the_host_keeps_its_own(pidns, tmp_path):
    """The CUDA driver reads /proc for the process it runs in: without a /proc of the namespace's
    own, /proc/self named the host's pid and /proc/2 another process, and the first CUDA call failed
    (cudaErrorOperatingSystem, the H100 machine, 2026-11-24). Inside, /proc/self is pid 2, in a
    mount namespace of the worker's own whose mounts are private; the judge's /proc and mount tree
    do not change, while the worker runs nor after it."""
    before = _mounts()
    out = tmp_path / "out"
    p = _pidns_selftest(pidns, "wait", out)
    try:
        said = _said(out)
        assert said["own"] == "1" and said["proc_self"] == said["pid"] == "2", said
        init, worker = sorted(local.descendants(p.pid), key=lambda pid: _ns_pid(pid)[-1])
        assert os.readlink(f"/proc/{worker}/ns/mnt") != os.readlink("/proc/self/ns/mnt")
        assert os.readlink(f"/proc/{worker}/ns/mnt") == os.readlink(f"/proc/{init}/ns/mnt")
        theirs = _mounts(worker)
        assert [m for m in theirs if " /proc " in m and " - proc " in m], theirs
        assert not [m for m in theirs if " shared:" in m], theirs  # nothing propagates back to the host
        assert _mounts() == before and os.readlink("/proc/self") == str(os.getpid())
        p.stdin.close()
        assert p.wait(timeout=20) == 0, out.read_text()
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert _mounts() == before and os.readlink("/proc/self") == str(os.getpid())
    assert Path(f"/proc/{os.getpid()}/stat").read_text().split()[0] == str(os.getpid())


@nvcc_test
@pytest.mark.parametrize("step, message", [
    ("proc", "mounting /proc for the pid namespace: Operation not permitted (EPERM)"),
    ("private", "making the mounts private for the pid namespace's /proc: Operation not permitted (EPERM)")])
def test_a_namespace_without_its_proc_is_a_failure_not_a_silent_worker(pidns, built, tmp_path, step, message):
    """Where the OS gives the namespaces but refuses a mount (fake_mount.c), the worker does not
    carry on in a namespace where CUDA would fail: it says which mount and why, and exits 1."""
    out = tmp_path / "out"
    p = _pidns_selftest(pidns, "exit", out, env={"LD_PRELOAD": str(built / "fake_mount.so"), "FAKE_MOUNT_FAIL": step})
    assert p.wait(timeout=20) == 1, out.read_text()
    assert out.read_text().splitlines() == [f"selftest: {message}"]


@nvcc_test
@pytest.mark.parametrize("action, code", [("exit", 7), ("wait", 0), ("xfsz", -signal.SIGXFSZ)])
def test_the_workers_end_reaches_the_judge_through_its_namespace(pidns, tmp_path, action, code):
    """The top process ends as the worker did: its exit status, or death by its signal. SIGXFSZ (the
    log's cap) kills the worker because it is pid 2: a namespace's pid 1 ignores the signals it has
    no handler for, and a pid-1 worker would write on past the cap with EFBIG."""
    out = tmp_path / "out"
    p = _pidns_selftest(pidns, action, out)
    p.stdin.close()  # `wait` reads to the end of its stdin
    assert p.wait(timeout=20) == code, out.read_text()
    assert _said(out, 1)["own"] == "1"
    if action == "xfsz":
        assert "write failed" not in out.read_text() and out.stat().st_size <= 1024


@nvcc_test
@pytest.mark.skipif(not IS_ROOT, reason="runs the worker as nobody, which needs root")
def test_without_a_pid_namespace_the_worker_carries_on(worker_bin, tmp_path):
    """Where the OS refuses unshare (here: as nobody, without CAP_SYS_ADMIN) the worker says so and
    carries on as the process the judge started, alone, with the judge's /proc; never a failure."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="judge-pidns-") as d:  # pytest's tmp_path is closed to nobody
        home = Path(d)
        home.chmod(0o755)
        binary = home / "judge-worker"
        shutil.copy2(worker_bin, binary)
        binary.chmod(0o755)
        out = tmp_path / "out"
        p = _pidns_selftest(binary, "exit", out, user=65534)
        assert p.wait(timeout=20) == 7, out.read_text()
    said = _said(out, 1)
    assert said["own"] == "0" and int(said["pid"]) == int(said["proc_self"]) == p.pid, said
    assert "unshare(CLONE_NEWPID | CLONE_NEWNS)" in said["why"], said


@nvcc_test
@pytest.mark.parametrize("value", [None, "1", "yes"])
def test_the_judges_worker_in_its_namespace_on_a_fake_runtime(fake_worker, built, monkeypatch, value):
    """Through the real client, by default (JUDGE_PID_NAMESPACE unset, or anything but 0): the ready
    reply says whether the worker has a namespace of its own and its pid there; the CUDA runtime's
    first call sees itself in /proc/self; the filter is built for that pid (a signal to itself
    passes, one to pid 1 is refused), and the report of a killed worker's pids covers the worker's own."""
    from judge.sandbox import pidns as probe

    if value is None:
        monkeypatch.delenv(paths.ENV_PID_NAMESPACE, raising=False)
    else:
        monkeypatch.setenv(paths.ENV_PID_NAMESPACE, value)
    w = fake_worker()
    ready = w.wait_ready(timeout_s=30)
    own = probe.refused() is None
    assert ready["pid_namespace"] is own and w.pid_namespace is own
    assert w.own_pid == ready["pid"] == (2 if own else w.proc.pid)
    assert f"fake: proc_self={w.own_pid} pid={w.own_pid}" in _log(w)
    w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so"))
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    w.request("call", 30, "solve()", args=_args(n=-3))  # kill(getpid(), 0): itself
    tree = local.descendants(w.proc.pid)
    assert len(tree) == (2 if own else 0)
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 30, "solve() on n=7", args=_args(n=-4))  # kill(1, 0): init, or the host's init
    assert info.value.kind == "crash" and "system call 62 (kill)" in info.value.message, info.value
    w.close()
    assert tree <= local.KILLED  # the health gate waits for the context's owner, not the top process alone


@nvcc_test
@pytest.mark.parametrize("value", ["0", " 0 "])
def test_no_pid_namespace_when_turned_off(fake_worker, built, monkeypatch, value):
    """With JUDGE_PID_NAMESPACE=0 the worker asks for none: it is the process the judge started, and
    its filter's "itself" is that pid; a machine that would refuse the namespace's /proc does not
    matter then."""
    monkeypatch.setenv(paths.ENV_PID_NAMESPACE, value)
    w = fake_worker(no_mount="proc")
    ready = w.wait_ready(timeout_s=30)
    assert ready["pid_namespace"] is False and not w.pid_namespace and ready["pid"] == w.own_pid == w.proc.pid
    assert local.descendants(w.proc.pid) == set()
    assert f"fake: proc_self={w.proc.pid} pid={w.proc.pid}" in _log(w)
    w.request("init", 30, "loading the library", params=VECTOR, lib=str(built / "cpu_solve.so"))
    w.request("map", 30, "mapping buffers", buffers=BUFFERS)
    w.request("call", 30, "solve()", args=_args(n=-3))  # kill(getpid(), 0): itself


@nvcc_test
def test_a_namespace_without_its_proc_fails_the_start_with_a_clear_message(pidns, fake_worker, monkeypatch):
    """The judge's worker where the namespace's /proc cannot be mounted: its ready reply is an OS
    error naming the mount and how to judge without the namespace, before any CUDA call; the run
    is the judge's INTERNAL_ERROR ("starting the worker: ..."), not a worker that fails in CUDA."""
    from fakes import cpu_session

    from judge.engine.outcome import RunFailure
    from judge.problem import spec

    monkeypatch.delenv(paths.ENV_PID_NAMESPACE, raising=False)
    w = fake_worker(no_mount="proc")
    with pytest.raises(WorkerFailure) as info:
        w.wait_ready(timeout_s=30)
    assert info.value.kind == "os", info.value
    assert str(info.value) == ("mounting /proc for the pid namespace: Operation not permitted; "
                               f"set {paths.ENV_PID_NAMESPACE}=0 to judge without a pid namespace (EPERM)")
    assert "fake: cudaSetDevice" not in "\n".join(_log(w))
    s = cpu_session(spec.load_problem(ROOT / "problems" / "vector_add"))
    with pytest.raises(RunFailure) as failed:
        s.ready(fake_worker(no_mount="proc"), "starting the worker")
    assert failed.value.status == Status.INTERNAL_ERROR
    assert failed.value.message.startswith("starting the worker: mounting /proc for the pid namespace: "), failed.value


@gcc_test
def test_doctor_says_when_the_namespace_would_have_no_proc(built, monkeypatch):
    """`judge doctor`'s probe (judge/sandbox/pidns.py) asks the kernel what the worker asks: where
    the namespace's /proc cannot be mounted it says so, and the finding is required (every worker
    would fail to start) unless JUDGE_PID_NAMESPACE=0."""
    from judge.runner import doctor
    from judge.sandbox import pidns as probe

    if why := probe.probe().refused:
        pytest.skip(f"this machine refuses a pid namespace ({why})")
    monkeypatch.delenv(paths.ENV_PID_NAMESPACE, raising=False)
    assert probe.probe() == probe.Answer() and probe.refused() is None and probe.wanted()
    assert doctor._pid_namespace().ok
    monkeypatch.setenv("LD_PRELOAD", str(built / "fake_mount.so"))  # the probe's child inherits it
    assert probe.probe() == probe.Answer(no_proc="mounting /proc for the pid namespace: Operation not permitted")
    assert probe.refused() == "mounting /proc for the pid namespace: Operation not permitted"
    found = doctor._pid_namespace()
    assert not found.ok and found.required and paths.ENV_PID_NAMESPACE + "=0" in found.fix
    monkeypatch.setenv(paths.ENV_PID_NAMESPACE, "0")
    assert not probe.wanted()
    found = doctor._pid_namespace()
    assert not found.ok and not found.required


# -- wiring ------------------------------------------------------------------------------------------------------
def test_the_native_worker_answers_every_command():
    source = (NATIVE / "worker.cu").read_text()
    for op in protocol.OPS - protocol.TRITON_OPS - protocol.BASELINE_OPS:
        assert f'op == "{op}"' in source, op
    for op in protocol.BASELINE_OPS:  # refused as unknown: a candidate never allocates its own inputs
        assert f'op == "{op}"' not in source, op


def test_the_report_says_whether_the_candidate_was_confined():
    from fakes import FakeWorker, cpu_session

    from judge.problem import spec

    s = cpu_session(spec.load_problem(ROOT / "problems" / "vector_add"))
    assert s.report.environment.confined is False
    w = FakeWorker()
    w.confined = True  # type: ignore[attr-defined]
    s.load(w, {"lib": "x.so"})
    assert s.report.environment.confined is True
    s.load(FakeWorker(role="baseline torch"), {"baseline": {}})  # a baseline's worker does not change it
    assert s.report.environment.confined is True
    assert s.report.environment.pid_namespace is False
    w.pid_namespace = True  # type: ignore[attr-defined]
    s.load(w, {"lib": "x.so"})
    assert s.report.environment.pid_namespace is True


def test_python_is_not_the_candidates_worker():
    assert local.command(torch=True)[:3] == [sys.executable, "-m", "judge.worker.main"]


@nvcc_test
@gcc_test
def test_a_submission_writing_on_the_channel_is_a_malformed_reply(fake_worker):
    """tests/exploits/runtime/channel_deep_reply.cu (host code only) in the real native worker on the
    fake runtime, confined: its line nested 4000 deep on every fd reaches the channel, and the parent
    calls the reply malformed (the candidate's RUNTIME_ERROR), quickly."""
    from judge.build import nvcc as build
    from judge.build.cuda import CUDA
    from judge.engine.roles import blame
    from judge.problem import spec

    problem = spec.load_problem(ROOT / "problems" / "vector_add")
    (r,) = build.build_many([CUDA.request(problem, ROOT / "tests" / "exploits" / "runtime" / "channel_deep_reply.cu",
                                          "sm_80")])
    assert r.ok, r.error
    w = fake_worker()
    w.wait_ready(timeout_s=30)
    params = [{"name": n, "kind": "tensor" if ct.is_tensor else ct.scalar} for n, ct in problem.params]
    w.request("init", 30, "loading the library", params=params, lib=str(r.lib))
    w.request("map", 30, "mapping buffers", buffers=[{**b, "id": name} for b, name in zip(BUFFERS, "ABC")])
    t0 = time.perf_counter()
    with pytest.raises(WorkerFailure) as info:
        w.request("call", 20, "solve() on n=7", args=[{"buf": "A"}, {"buf": "B"}, {"buf": "C"}, {"int": 7}])
    assert time.perf_counter() - t0 < 10
    assert info.value.kind == "malformed" and "nested deeper than" in info.value.message, info.value
    assert blame(w, info.value).status == Status.RUNTIME_ERROR
