"""The parent's own memory, out of the candidate's reach.

The run's secret (the seed of every input) lives in the parent's memory. The candidate's worker
cannot ptrace or use process_vm_readv (the seccomp filter refuses both), but opening
/proc/PARENT/mem read-only is a plain open, which the filter allows; the kernel lets a process of
the same user do it where no Yama ptrace_scope forbids it. A non-dumpable process's /proc files
belong to root, so the parent makes itself non-dumpable before it starts a candidate (a worker run
as another user, as the root judge's are, is refused anyway). Cost: no core dumps of the judge, and
attaching a debugger to it needs root.
"""
from __future__ import annotations

import ctypes
import os
import sys

PR_SET_DUMPABLE = 4


def hide_memory() -> None:
    """Make this process non-dumpable (Linux; elsewhere nothing to do). Raises OSError on failure."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl(PR_SET_DUMPABLE, 0): {os.strerror(e)}")
