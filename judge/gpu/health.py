"""The GPU health gate (docs/security.md): before each phase, the device must be fit to judge on.

A slow time caused by the machine must never be reported as the submission's. Before the tests
and before each benchmark shape the parent asks NVML for:

- memory still held by a worker this process killed (a crashed or hung worker's context is torn
  down by the driver asynchronously): its pid must have left the device's process list;
- a clock slowdown that is not the normal power management of a busy GPU: hardware slowdown,
  hardware or software thermal slowdown, hardware power brake (`SLOWDOWNS`). The software power
  cap is not one: every heavy kernel meets it, and the timing rests the GPU after heavy calls.

- SMs busy with another process's work: NVML's per-process utilisation samples of the last
  second must show no process outside this judge's own tree (this process and its descendants,
  the workers) using the SMs. The device-wide utilisation cannot be used: the parent's own
  reference computations keep it busy right before each phase. NVML reports host pids, so the
  check needs the judge in the host's pid namespace; in a container (more than one entry on the
  NSpid line of /proc/self/status) other processes cannot be told from ours and it is skipped
  (docs/security.md).

It polls until the device is fit, up to a bound; then the run ends as INTERNAL_ERROR (the
judge's problem), never as a slow time. Without NVML there is nothing to ask and the gate is open.
"""
from __future__ import annotations

import functools
import os
import time
from collections.abc import Set as AbstractSet

from judge.gpu.device import THROTTLE_REASONS, nvml
from judge.sandbox.memwatch import descendants

SLOWDOWNS = ("HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")
WAIT_S = 60.0
POLL_S = 0.25
UTIL_WINDOW_S = 1.0  # per-process utilisation samples this recent count


class Unhealthy(Exception):
    """The GPU did not become fit to judge on within the bound."""


def problems(index: int, dead_pids: set[int]) -> list[str]:
    """What makes the device unfit now ([] when it is fit, or when NVML cannot tell)."""
    nv = nvml()
    if nv is None:
        return []
    out = []
    try:
        h = nv.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # noqa: BLE001 — no handle, no opinion
        return []
    if dead_pids:
        try:
            procs = nv.nvmlDeviceGetComputeRunningProcesses(h)
            held = sorted(p.pid for p in procs if p.pid in dead_pids)
            if held:
                out.append(f"device memory still held by killed worker(s) {', '.join(map(str, held))}")
        except Exception:  # noqa: BLE001
            pass
    try:
        get = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        mask = get(h)
        slow = [name for name in SLOWDOWNS if mask & THROTTLE_REASONS[name]]
        if slow:
            out.append("clock slowdown: " + ", ".join(slow))
    except Exception:  # noqa: BLE001
        pass
    out += foreign_use(nv, h, also=dead_pids)
    return out


def foreign_use(nv, h, own: set[int] | None = None, namespaced: bool | None = None,
                also: AbstractSet[int] = frozenset()) -> list[str]:
    """Processes outside this judge's tree (`own`, by default this process and its descendants,
    plus `also`: workers it killed) that used the SMs in the last UTIL_WINDOW_S."""
    if own_pid_namespace_hidden() if namespaced is None else namespaced:
        return []
    try:
        since = int((time.time() - UTIL_WINDOW_S) * 1e6)
        samples = nv.nvmlDeviceGetProcessUtilization(h, since)
    except Exception:  # noqa: BLE001 — NotFound (no samples) or unsupported: no opinion
        return []
    mine = (own if own is not None else {os.getpid()} | descendants(os.getpid())) | also
    busy: dict[int, int] = {}
    for x in samples:
        if x.smUtil > 0 and x.pid not in mine:
            busy[x.pid] = max(busy.get(x.pid, 0), x.smUtil)
    return [f"another process uses the GPU (pid {pid}: {util}% of SM time)" for pid, util in sorted(busy.items())]


@functools.cache
def own_pid_namespace_hidden() -> bool:
    """True in a nested pid namespace (a container): NVML's pids are then not ours to compare."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("NSpid:"):
                return len(line.split()) > 2
    except OSError:
        pass
    return True


def wait_until_fit(index: int, dead_pids: set[int], wait_s: float = WAIT_S,
                   sleep=time.sleep, clock=time.monotonic) -> float:
    """Return the seconds waited once the device is fit; raise Unhealthy after `wait_s`."""
    t0 = clock()
    while True:
        found = problems(index, dead_pids)
        if not found:
            return clock() - t0
        if clock() - t0 >= wait_s:
            raise Unhealthy(f"the GPU is not fit to judge on after {wait_s:.0f} s: " + "; ".join(found))
        sleep(POLL_S)
