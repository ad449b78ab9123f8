"""Whether this machine gives the candidate's worker a pid namespace of its own (`judge doctor`).

The native worker asks for one itself at start-up (judge/worker/native/confine.h's
`own_pid_namespace`: unshare(CLONE_NEWPID), then a pid 1 that waits and the worker as pid 2), and
carries on without it where the kernel refuses; its ready reply and the report's
`environment.pid_namespace` say which it was. This module asks the same question without a GPU:
a throwaway child calls unshare(CLONE_NEWPID) (which moves nobody: only a child it forked would
enter the namespace) and says what the kernel answered.
"""
from __future__ import annotations

import subprocess
import sys

CLONE_NEWPID = 0x20000000
_PROBE = f"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare({CLONE_NEWPID}) != 0:
    e = ctypes.get_errno()
    sys.stdout.write(f"unshare(CLONE_NEWPID): {{os.strerror(e)}}")
"""


def refused() -> str | None:
    """None when unshare(CLONE_NEWPID) succeeds for this user here (root, or CAP_SYS_ADMIN), else
    what the kernel said, or why it could not be asked."""
    if not sys.platform.startswith("linux"):
        return f"pid namespaces need Linux; this is {sys.platform}"
    try:
        r = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"the probe did not run: {e}"
    if r.returncode != 0:
        return f"the probe failed: {r.stderr.strip()[-200:]}"
    return r.stdout.strip() or None
