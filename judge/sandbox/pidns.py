"""Whether this machine gives the candidate's worker a pid namespace of its own (`judge doctor`).

The native worker asks for one itself at start-up unless JUDGE_PID_NAMESPACE=0
(judge/worker/native/confine.h's `own_pid_namespace`: unshare(CLONE_NEWPID | CLONE_NEWNS), a pid 1
that mounts the namespace's own /proc and waits, and the worker as pid 2). It carries on without
one where the kernel refuses the unshare, and fails to start where the /proc cannot be mounted
(the CUDA driver needs it); its ready reply and the report's `environment.pid_namespace` say which
it was. This module asks the same questions without a GPU: a throwaway child unshares, forks a
pid 1 that makes the copied mounts private and mounts a proc, and says what the kernel answered.
Nothing of it reaches this process's namespaces.
"""
from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass

from judge import paths

CLONE_NEWNS, CLONE_NEWPID = 0x00020000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_PROBE = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
def say(kind, what):
    os.write(1, f"{{kind}} {{what}}: {{os.strerror(ctypes.get_errno())}}".encode())
if libc.unshare({CLONE_NEWPID | CLONE_NEWNS}) != 0:
    say("refused", "unshare(CLONE_NEWPID | CLONE_NEWNS)")
    sys.exit(0)
pid = os.fork()
if pid == 0:
    if libc.mount(None, b"/", None, {MS_REC | MS_PRIVATE}, None) != 0:
        say("no_proc", "making the mounts private for the pid namespace's /proc")
    elif libc.mount(b"proc", b"/proc", b"proc", {MS_NOSUID | MS_NODEV | MS_NOEXEC}, None) != 0:
        say("no_proc", "mounting /proc for the pid namespace")
    os._exit(0)
os.waitpid(pid, 0)
"""


@dataclass(frozen=True)
class Answer:
    refused: str | None = None  # why unshare was refused (or could not be asked): the worker goes on without
    no_proc: str | None = None  # why the namespace's /proc could not be mounted: the worker would not start


def wanted() -> bool:
    """Whether a candidate's worker asks for a pid namespace of its own: yes unless JUDGE_PID_NAMESPACE=0."""
    return os.environ.get(paths.ENV_PID_NAMESPACE, "1").strip() != "0"


def probe() -> Answer:
    """What this machine says to the worker's namespaces, for this user (root, or CAP_SYS_ADMIN)."""
    if not sys.platform.startswith("linux"):
        return Answer(refused=f"pid namespaces need Linux; this is {sys.platform}")
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Answer(refused=f"the probe did not run: {e}")
    if r.returncode != 0:
        return Answer(refused=f"the probe failed: {r.stderr.strip()[-200:]}")
    kind, _, why = r.stdout.strip().partition(" ")
    if kind == "no_proc":
        return Answer(no_proc=why)
    return Answer(refused=why if kind == "refused" else r.stdout.strip()[-200:] or None)


def refused() -> str | None:
    """None when this machine gives the worker its namespace with its /proc, else why not."""
    a = probe()
    return a.refused or a.no_proc
