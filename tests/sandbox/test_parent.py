"""judge/sandbox/parent.py: after hide_memory(), another process of the same user cannot read the
process's memory through /proc/PID/mem; before it, it can (the control). Run as root, both
processes first become nobody (a change of user makes a process non-dumpable: the control makes
itself dumpable again)."""
from __future__ import annotations

import ctypes
import os
import signal
import sys

import pytest

from judge.sandbox import parent

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
NOBODY = 65534


def _as_user() -> None:
    if os.geteuid() == 0:
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
        ctypes.CDLL(None).prctl(parent.PR_SET_DUMPABLE, 1, 0, 0, 0)


def _target(hide: bool) -> int:
    """A process that (maybe) hides its memory, then waits to be killed."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _as_user()
        if hide:
            parent.hide_memory()
        os.write(w, b"x")
        signal.pause()
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"x"
    os.close(r)
    return pid


def _can_read_mem(pid: int) -> bool:
    """Whether another process of the same user opens /proc/PID/mem."""
    reader = os.fork()
    if reader == 0:
        _as_user()
        try:
            with open(f"/proc/{pid}/mem", "rb"):
                os._exit(0)
        except PermissionError:
            os._exit(1)
        os._exit(2)
    _, status = os.waitpid(reader, 0)
    assert os.WEXITSTATUS(status) in (0, 1), status
    return os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("hide", [False, True])
def test_hidden_memory_is_not_readable_by_the_same_user(hide):
    pid = _target(hide)
    try:
        assert _can_read_mem(pid) is (not hide)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
