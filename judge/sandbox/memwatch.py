"""The local worker's host-memory limit, enforced from the parent.

RLIMIT_AS cannot be used with CUDA (the driver reserves a virtual range the size of device plus
host memory), so a thread of the parent reads the resident memory of the worker and of every
process it started (/proc/PID/task/*/children, recursively) a few times a second, and kills the
worker's process group once the sum passes the limit. Between two reads a process can grow by at
most what it can touch in that time (~1 GB at 4 GB/s of page faults), which the default limit
leaves room for.
"""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judge.sandbox.cgroup import Group

PAGE = os.sysconf("SC_PAGE_SIZE")
INTERVAL_S = 0.2


def default_limit() -> int:
    """Half the machine's memory, at most 32 GiB: a worker needs a few hundred MB (the CUDA
    runtime and its libraries; torch for a baseline: ~2 GB)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * PAGE
    except (ValueError, OSError):
        total = 16 << 30
    return min(32 << 30, total // 2)


def descendants(pid: int) -> set[int]:
    """Every process `pid` started, and theirs (/proc/PID/task/*/children)."""
    seen: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                for c in Path(f"/proc/{p}/task/{task}/children").read_text().split():
                    if int(c) not in seen:
                        seen.add(int(c))
                        todo.append(int(c))
        except (OSError, ValueError):
            continue
    return seen


def resident_bytes(pid: int) -> int:
    """Resident memory of `pid` and its descendants (0 for a process that is gone)."""
    total = 0
    for p in {pid} | descendants(pid):
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


class MemoryWatch:
    """Watch `pid` (the leader of its own process group) until `stop()` or its exit; when its
    tree's resident memory passes `limit` bytes, kill the group and keep what was seen in
    `exceeded` (bytes). With the worker's cgroup (judge/sandbox/cgroup.py), whose limit the kernel
    enforces: once its OOM killer ended any process of it (cgroup v1 ends only the largest), end the
    rest too, and set `oom_killed`."""

    def __init__(self, pid: int, limit: int, group: Group | None = None):
        self.pid, self.limit, self.group = pid, limit, group
        self.exceeded: int | None = None
        self.oom_killed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"memwatch-{pid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(INTERVAL_S):
            if not os.path.exists(f"/proc/{self.pid}"):
                return
            if self.group is not None and self.group.oom_kills():
                self.oom_killed = True
                self._kill()
                return
            used = resident_bytes(self.pid)
            if used > self.limit:
                self.exceeded = used
                self._kill()
                return

    def _kill(self) -> None:
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.group is not None:
            self.group.kill()

    def stop(self) -> None:
        self._stop.set()
