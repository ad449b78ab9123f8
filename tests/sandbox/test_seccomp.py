"""The worker's seccomp filter (judge/sandbox/seccomp.py), on the CPU.

Each case forks a child that installs the filter and then makes one system call through ctypes
(`libc.syscall`), and the parent reads the child's fate: "exit 0" for an allowed call (the child
also checks the call's result), "SIGSYS" for a refused one. Everything the child needs after the
filter is built before it (buffers, paths, descriptors, the program), so the interpreter itself
only reads, writes, maps memory and exits. A refused call's arguments are harmless had it run
(signal 0, descriptor -1, NULL pointers), so a filter that lets one through fails a test, nothing
more.
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from sandboxed import addr, fate, needs_seccomp, sc

from judge.sandbox import seccomp

HERE = Path(__file__).resolve().parent
NR = seccomp.NUMBERS

AT_FDCWD = -100
O_RDONLY, O_CLOEXEC, O_DIRECTORY = 0, 0o2000000, 0o200000
F_GETFL, F_SETOWN, F_SETSIG, F_SETLK = 3, 8, 10, 6
FIONREAD, TIOCSTI = 0x541B, 0x5412
PR_SET_DUMPABLE, PR_SET_PTRACER = 4, 0x59616D61
RLIMIT_NOFILE = 7
SIGCHLD = int(signal.SIGCHLD)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """What the cases use, made before any fork: files, paths, descriptors, buffers, a page."""
    d = tmp_path_factory.mktemp("seccomp")
    existing = d / "existing.txt"
    existing.write_text("original\n")
    libc_path = next(p for p in (Path(m.split()[-1]) for m in Path("/proc/self/maps").read_text().splitlines()
                                 if re.search(r"/libc(?:\.so|-[0-9.]+\.so)", m)) if p.is_file())
    r, w = os.pipe()
    libc_fd = os.open(libc_path, os.O_RDONLY)
    page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    e = SimpleNamespace(
        dir=d, existing=existing, new=d / "new.txt", newdir=d / "newdir",
        existing_c=ctypes.create_string_buffer(bytes(existing)),
        new_c=ctypes.create_string_buffer(bytes(d / "new.txt")),
        new2_c=ctypes.create_string_buffer(bytes(d / "new2.txt")),
        newdir_c=ctypes.create_string_buffer(bytes(d / "newdir")),
        dir_c=ctypes.create_string_buffer(bytes(d)),
        true_c=ctypes.create_string_buffer(b"/bin/true"),
        root_c=ctypes.create_string_buffer(b"/"),
        name_c=ctypes.create_string_buffer(b"judge-test"),
        msg=ctypes.create_string_buffer(b"hello\n", 6),
        buf=ctypes.create_string_buffer(64),
        word=ctypes.c_int(0),
        rlim=(ctypes.c_ulong * 2)(),
        ppid=os.getpid(),  # the parent of every child: this test process
        r=r, w=w, libc_fd=libc_fd,
        page_mmap=page, page=ctypes.addressof(ctypes.c_char.from_buffer(page)))
    yield e
    page.close()
    for fd in (r, w, libc_fd):
        os.close(fd)


P = mmap.PAGESIZE
RW, RX, RWX = 3, 5, 7
PRIVATE, ANON = mmap.MAP_PRIVATE, mmap.MAP_ANONYMOUS


def _thread(e, me):
    ran = []
    t = threading.Thread(target=lambda: ran.append(1))
    t.start()
    t.join()
    return ran == [1]


def _enosys(name):
    def call(e, me):
        rc = sc(name, 0, 0, 0, 0)
        return rc == -1 and ctypes.get_errno() == errno.ENOSYS
    return call


ALLOWED = {
    "write to a pipe": lambda e, me: sc("write", e.w, addr(e.msg), 6) == 6,
    "read": lambda e, me: sc("read", e.r, addr(e.buf), 0) == 0,
    "openat O_RDONLY": lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), O_RDONLY) >= 0,
    "openat O_RDONLY|O_CLOEXEC|O_DIRECTORY": lambda e, me: sc("openat", AT_FDCWD, addr(e.dir_c),
                                                              O_RDONLY | O_CLOEXEC | O_DIRECTORY) >= 0,
    "open O_RDONLY": lambda e, me: sc("open", addr(e.existing_c), O_RDONLY) >= 0,
    "kill(own pid, 0)": lambda e, me: sc("kill", me, 0) == 0,
    "tgkill(own pid, own tid, 0)": lambda e, me: sc("tgkill", me, me, 0) == 0,
    "tkill(own pid, 0)": lambda e, me: sc("tkill", me, 0) == 0,
    "mmap anonymous RW": lambda e, me: sc("mmap", 0, P, RW, PRIVATE | ANON, -1, 0) != -1,
    "mmap file-backed RX (libc)": lambda e, me: sc("mmap", 0, P, RX, PRIVATE, e.libc_fd, 0) != -1,
    "mprotect to read-only": lambda e, me: sc("mprotect", e.page, P, 1) == 0,
    "clone3 fails with ENOSYS": _enosys("clone3"),
    "openat2 fails with ENOSYS": _enosys("openat2"),
    "a Python thread runs and joins": _thread,
    "prctl(PR_SET_NAME)": lambda e, me: sc("prctl", 15, addr(e.name_c), 0, 0, 0) == 0,
    "prlimit64 of itself (pid 0)": lambda e, me: sc("prlimit64", 0, RLIMIT_NOFILE, 0, addr(e.rlim)) == 0,
    "prlimit64 of itself (own pid)": lambda e, me: sc("prlimit64", me, RLIMIT_NOFILE, 0, addr(e.rlim)) == 0,
    "fcntl(F_GETFL)": lambda e, me: sc("fcntl", e.r, F_GETFL) >= 0,
    "ioctl(FIONREAD)": lambda e, me: sc("ioctl", e.r, FIONREAD, addr(e.word)) == 0,
    "getppid": lambda e, me: sc("getppid") == e.ppid,
    "getrandom": lambda e, me: sc("getrandom", addr(e.buf), 16, 0) == 16,
    "futex wake": lambda e, me: sc("futex", addr(e.word), 1, 1, 0, 0, 0) == 0,  # FUTEX_WAKE
}

REFUSED = {
    "openat O_WRONLY": lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), os.O_WRONLY),
    "openat O_RDWR": lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), os.O_RDWR),
    "openat O_CREAT": lambda e, me: sc("openat", AT_FDCWD, addr(e.new_c), os.O_CREAT, 0o600),
    "openat O_APPEND": lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), os.O_APPEND),
    "openat O_TRUNC": lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), os.O_TRUNC),
    "open O_WRONLY|O_APPEND": lambda e, me: sc("open", addr(e.existing_c), os.O_WRONLY | os.O_APPEND),
    "creat": lambda e, me: sc("creat", addr(e.new_c), 0o600),
    "execve": lambda e, me: sc("execve", addr(e.true_c), 0, 0),
    "fork": lambda e, me: sc("fork"),
    "clone without CLONE_THREAD": lambda e, me: sc("clone", SIGCHLD, 0, 0, 0, 0),
    "kill(parent, 0)": lambda e, me: sc("kill", e.ppid, 0),
    "kill(0, 0): its process group": lambda e, me: sc("kill", 0, 0),
    "kill(-1, 0): every process": lambda e, me: sc("kill", -1, 0),
    "tgkill(parent)": lambda e, me: sc("tgkill", e.ppid, e.ppid, 0),
    "tkill(parent)": lambda e, me: sc("tkill", e.ppid, 0),
    "rt_sigqueueinfo(parent)": lambda e, me: sc("rt_sigqueueinfo", e.ppid, 0, 0),
    "pidfd_send_signal": lambda e, me: sc("pidfd_send_signal", -1, 0, 0, 0),
    "ptrace": lambda e, me: sc("ptrace", 3, e.ppid, 0, 0),  # PTRACE_PEEKUSER
    "process_vm_writev": lambda e, me: sc("process_vm_writev", e.ppid, 0, 0, 0, 0, 0),
    "process_vm_readv": lambda e, me: sc("process_vm_readv", e.ppid, 0, 0, 0, 0, 0),
    "socket": lambda e, me: sc("socket", 1, 1, 0),  # AF_UNIX, SOCK_STREAM
    "connect": lambda e, me: sc("connect", -1, 0, 0),
    "mmap anonymous RX": lambda e, me: sc("mmap", 0, P, RX, PRIVATE | ANON, -1, 0),
    "mmap anonymous RWX": lambda e, me: sc("mmap", 0, P, RWX, PRIVATE | ANON, -1, 0),
    "mmap anonymous RX with an fd (ignored by the kernel)": lambda e, me: sc("mmap", 0, P, RX, PRIVATE | ANON,
                                                                              e.libc_fd, 0),
    "mmap file-backed RWX (a private, writable copy)": lambda e, me: sc("mmap", 0, P, RWX, PRIVATE, e.libc_fd, 0),
    "mprotect to RX": lambda e, me: sc("mprotect", e.page, P, RX),
    "pkey_mprotect to RX": lambda e, me: sc("pkey_mprotect", e.page, P, RX, -1),
    "memfd_create": lambda e, me: sc("memfd_create", addr(e.name_c), 0),
    "pipe2": lambda e, me: sc("pipe2", 0, 0),
    "x32 getpid": lambda e, me: sc(seccomp.X32_SYSCALL_BIT | NR["getpid"]),
    "setsid": lambda e, me: sc("setsid"),
    "setpgid": lambda e, me: sc("setpgid", 0, 0),
    "unlink": lambda e, me: sc("unlink", addr(e.new_c)),
    "rename": lambda e, me: sc("rename", addr(e.new_c), addr(e.new2_c)),
    "mkdir": lambda e, me: sc("mkdir", addr(e.newdir_c), 0o700),
    "chdir": lambda e, me: sc("chdir", addr(e.root_c)),
    "unshare": lambda e, me: sc("unshare", 0),
    "mount": lambda e, me: sc("mount", 0, 0, 0, 0, 0),
    "setns": lambda e, me: sc("setns", -1, 0),
    "perf_event_open": lambda e, me: sc("perf_event_open", 0, 0, -1, -1, 0),
    "bpf": lambda e, me: sc("bpf", 0, 0, 0),
    "io_uring_setup": lambda e, me: sc("io_uring_setup", 1, 0),
    "userfaultfd": lambda e, me: sc("userfaultfd", 0),
    "kcmp": lambda e, me: sc("kcmp", e.ppid, e.ppid, 0, 0, 0),
    "pidfd_open": lambda e, me: sc("pidfd_open", e.ppid, 0),
    "personality": lambda e, me: sc("personality", 0xFFFFFFFF),
    "fcntl(F_SETOWN)": lambda e, me: sc("fcntl", -1, F_SETOWN, e.ppid),
    "fcntl(F_SETSIG)": lambda e, me: sc("fcntl", -1, F_SETSIG, 9),
    "fcntl(F_SETLK)": lambda e, me: sc("fcntl", -1, F_SETLK, 0),
    "flock": lambda e, me: sc("flock", -1, 1),
    "ioctl(TIOCSTI)": lambda e, me: sc("ioctl", -1, TIOCSTI, 0),
    "prctl(PR_SET_DUMPABLE)": lambda e, me: sc("prctl", PR_SET_DUMPABLE, 0, 0, 0, 0),
    "prctl(PR_SET_PTRACER)": lambda e, me: sc("prctl", PR_SET_PTRACER, e.ppid, 0, 0, 0),
    "prlimit64 of the parent": lambda e, me: sc("prlimit64", e.ppid, RLIMIT_NOFILE, 0, addr(e.rlim)),
    "pwrite64": lambda e, me: sc("pwrite64", -1, 0, 0, 0),
    "sendfile": lambda e, me: sc("sendfile", -1, -1, 0, 0),
    "wait4": lambda e, me: sc("wait4", -1, 0, 0, 0),
    "seccomp (another filter)": lambda e, me: sc("seccomp", 0, 0, 0),
}


@needs_seccomp
@pytest.mark.parametrize("case", ALLOWED)
def test_allowed(env, case):
    assert fate(ALLOWED[case], env) == "exit 0"


@needs_seccomp
@pytest.mark.parametrize("case", REFUSED)
def test_refused(env, case):
    assert fate(REFUSED[case], env) == "SIGSYS"


@needs_seccomp
def test_nothing_was_written_created_or_removed(env):
    for case in ("openat O_WRONLY", "openat O_RDWR", "openat O_CREAT", "openat O_APPEND", "openat O_TRUNC",
                 "creat", "mkdir"):
        assert fate(REFUSED[case], env) == "SIGSYS"
    assert env.existing.read_text() == "original\n"
    assert not env.new.exists() and not env.newdir.exists()


@needs_seccomp
def test_write_opens_lets_read_write_opens_through_and_nothing_more(env):
    assert fate(lambda e, me: sc("openat", AT_FDCWD, addr(e.existing_c), os.O_RDWR) >= 0, env,
                write_opens=True) == "exit 0"
    for flags, path in ((os.O_WRONLY, env.existing_c), (os.O_RDWR | os.O_APPEND, env.existing_c),
                        (os.O_RDWR | os.O_TRUNC, env.existing_c), (os.O_RDWR | os.O_CREAT, env.new_c)):
        assert fate(lambda e, me: sc("openat", AT_FDCWD, addr(path), flags, 0o600), env,
                    write_opens=True) == "SIGSYS", oct(flags)
    assert env.existing.read_text() == "original\n" and not env.new.exists()


@needs_seccomp
def test_install_reports_a_bad_program():
    with pytest.raises(ValueError):
        seccomp.install(b"")
    pid = os.fork()
    if pid == 0:
        code = 100
        try:
            seccomp.install(struct.pack("<HBBI", 0xFFFF, 0, 0, 0))  # no such BPF instruction
        except OSError as e:
            code = 0 if e.errno == errno.EINVAL and "seccomp" in str(e) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@needs_seccomp
def test_an_honest_cxx_library_loads_under_the_filter(tmp_path):
    """dlopen after the filter (the worker's order) of a library with C++ static initialisers that
    allocate, throw and catch, and write to stderr; libstdc++ comes with it."""
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("needs g++")
    lib = tmp_path / "honest_static_init.so"
    subprocess.run([gxx, "-O2", "-fPIC", "-shared", "-o", str(lib), str(HERE / "honest_static_init.cpp")],
                   check=True, timeout=120)
    assert fate(lambda env, me: ctypes.CDLL(str(env)).honest_value() == 4 + 2, lib) == "exit 0"


# -- the worker's side: a refusal reported the worker's way ------------------------------------------
@pytest.fixture(scope="module")
def reporter(tmp_path_factory):
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("needs gcc")
    exe = tmp_path_factory.mktemp("reporter") / "refusal_report"
    subprocess.run([gcc, "-O2", "-pthread", "-o", str(exe), str(HERE / "refusal_report.c")], check=True, timeout=60)
    return exe


def run_reporter(exe: Path, mode: str) -> subprocess.CompletedProcess:
    p = subprocess.Popen([str(exe), mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate(seccomp.program(p.pid), timeout=30)  # its pid: the filter's "itself"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


@needs_seccomp
@pytest.mark.parametrize("mode", ["kill-parent", "thread-kill-parent"])
def test_a_refusal_is_named_in_the_log(reporter, mode):
    """The refused call (here on a thread that existed before the filter: TSYNC) reaches the
    handler with its number, the log line names it, and the process dies by SIGSYS."""
    r = run_reporter(reporter, mode)
    assert r.returncode == -signal.SIGSYS, (r.returncode, r.stderr)
    log = r.stderr.decode()
    assert seccomp.REFUSED_LINE.search(log)
    assert seccomp.describe_refusal(log) == "the sandbox refused system call 62 (kill)"


@needs_seccomp
def test_an_allowed_call_runs_under_the_worker_handler(reporter):
    r = run_reporter(reporter, "kill-self")
    assert r.returncode == 0 and seccomp.describe_refusal(r.stderr.decode()) is None


# -- the program and the tables (no fork) -------------------------------------------------------------
def test_program_shape():
    prog = seccomp.program(1234)
    assert len(prog) % 8 == 0 and 0 < len(prog) // 8 < 4096  # BPF_MAXINSNS
    code, _, _, k = struct.unpack_from("<HBBI", prog, 0)
    assert (code, k) == (0x20, 4)  # first: load seccomp_data.arch
    code, jt, jf, k = struct.unpack_from("<HBBI", prog, 8)
    assert (code, k) == (0x15, seccomp.AUDIT_ARCH_X86_64)
    assert struct.unpack_from("<HBBI", prog, len(prog) - 8) == (0x06, 0, 0, seccomp.RET_TRAP)  # default: trap
    assert seccomp.program(1234) == prog  # deterministic
    assert seccomp.program(1234, write_opens=True) != prog and seccomp.program(1235) != prog


def test_every_rule_names_a_known_call_and_gives_a_reason():
    table = seccomp.rules(1234)
    for name, rule in table.items():
        assert name in seccomp.NUMBERS, name
        assert rule.why.strip(), name
    for name in ("execve", "execveat", "fork", "vfork", "socket", "ptrace", "process_vm_writev", "memfd_create",
                 "pipe2", "unlink", "setsid", "mount", "unshare", "perf_event_open", "bpf", "io_uring_setup",
                 "userfaultfd", "kcmp", "pidfd_open", "personality", "chdir", "pwrite64"):
        assert name not in table, name


def test_syscall_table_matches_the_kernel_headers():
    header = Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h")
    if not header.is_file():
        header = Path("/usr/include/asm/unistd_64.h")
    if not header.is_file():
        pytest.skip("no x86_64 kernel headers here")
    defined = {int(m.group(2)): m.group(1)
               for m in re.finditer(r"^#define __NR_(\w+)\s+(\d+)", header.read_text(), re.M)}
    assert defined, header
    mismatched = {nr: (name, seccomp.SYSCALLS.get(nr)) for nr, name in defined.items()
                  if seccomp.SYSCALLS.get(nr) != name}
    assert not mismatched


def test_syscall_name():
    assert seccomp.syscall_name(62) == "kill"
    assert seccomp.syscall_name(59) == "execve"
    assert seccomp.syscall_name(435) == "clone3"
    assert seccomp.syscall_name(999) == "syscall 999"
    assert seccomp.NUMBERS["openat"] == 257 and seccomp.NUMBERS["kill"] == 62


def test_describe_refusal():
    log = "some output\njudge-worker: the sandbox refused system call 62\nmore\n"
    assert seccomp.describe_refusal(log) == "the sandbox refused system call 62 (kill)"
    assert seccomp.describe_refusal("judge-worker: the sandbox refused system call 999") == \
        "the sandbox refused system call 999 (syscall 999)"
    assert seccomp.describe_refusal("a clean log\n") is None
    two = "judge-worker: the sandbox refused system call 59\njudge-worker: the sandbox refused system call 62\n"
    assert seccomp.describe_refusal(two) == "the sandbox refused system call 59 (execve)"  # the first


def test_supported(monkeypatch):
    if platform.machine() == "x86_64" and os.path.exists("/proc/self/status"):
        assert seccomp.supported() is None
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    assert seccomp.supported() == "seccomp filters are built for x86_64 only; this machine is aarch64"


def test_learning_mode_only_changes_the_refusals():
    """learn=True swaps every trap for a user notification and changes nothing else."""
    trap, notify = seccomp.program(4242), seccomp.program(4242, learn=True)
    assert len(trap) == len(notify)
    differ = [i for i in range(0, len(trap), 8) if trap[i:i + 8] != notify[i:i + 8]]
    assert differ and all(trap[i + 4:i + 8] == seccomp.RET_TRAP.to_bytes(4, "little")
                          and notify[i + 4:i + 8] == seccomp.RET_USER_NOTIF.to_bytes(4, "little") for i in differ)
