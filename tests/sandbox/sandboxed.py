"""Helpers of tests/sandbox/: run one action in a forked child under the worker's seccomp filter
(judge/sandbox/seccomp.py) and read the child's fate."""
from __future__ import annotations

import ctypes
import os
import resource
import signal

import pytest

from judge.sandbox import seccomp

needs_seccomp = pytest.mark.skipif(seccomp.supported() is not None, reason=str(seccomp.supported()))

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
PR_SET_DUMPABLE = 4


def sc(name_or_nr: str | int, *args: int) -> int:
    """One raw system call by name or number (glibc's syscall(): -1 and errno on failure)."""
    nr = seccomp.NUMBERS[name_or_nr] if isinstance(name_or_nr, str) else name_or_nr
    return libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))


def addr(buf) -> int:
    return ctypes.addressof(buf)


def fate(action, env=None, *, write_opens: bool = False, filtered: bool = True) -> str:
    """Fork; in the child install the filter (unless `filtered` is false) and run
    `action(env, my_pid)`: a truthy or None result is success (exit 0), a falsy one exit 3, an
    exception exit 100 (before the filter) or 101 (after). The child's fate: "exit N" or the name
    of the signal that killed it. Whatever the child needs after the filter must exist before it."""
    pid = os.fork()
    if pid == 0:  # the child: nothing may escape into pytest
        code = 100
        try:
            me = os.getpid()
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a SIGSYS death writes no core
            libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
            prog = seccomp.program(me, write_opens=write_opens)
            code = 101
            if filtered:
                seccomp.install(prog)
            result = action(env, me)
            code = 0 if result is None or result else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return f"exit {os.WEXITSTATUS(status)}"
