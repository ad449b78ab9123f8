"""The GPU health gate (DESIGN.md §5): before each phase, the device must be fit to judge on.

A slow time caused by the machine must never be reported as the submission's. Before the tests
and before each benchmark shape the parent asks NVML for:

- memory still held by a worker this process killed (a crashed or hung worker's context is torn
  down by the driver asynchronously): its pid must have left the device's process list;
- a clock slowdown that is not the normal power management of a busy GPU: hardware slowdown,
  hardware or software thermal slowdown, hardware power brake (`SLOWDOWNS`). The software power
  cap is not one: every heavy kernel meets it, and the timing rests the GPU after heavy calls.

It polls until the device is fit, up to a bound; then the run ends as INTERNAL_ERROR (the
judge's problem), never as a slow time. Utilisation is not gated: the parent's own reference
computations keep NVML's utilisation window busy right before each phase, and other processes on
the device cannot be told from ours across PID namespaces (containers); see docs/security.md.
Without NVML there is nothing to ask and the gate is open.
"""
from __future__ import annotations

import time

from .device import _REASONS, _nvml

SLOWDOWNS = ("HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")
WAIT_S = 60.0
POLL_S = 0.25


class Unhealthy(Exception):
    """The GPU did not become fit to judge on within the bound."""


def problems(index: int, dead_pids: set[int]) -> list[str]:
    """What makes the device unfit now ([] when it is fit, or when NVML cannot tell)."""
    nv = _nvml()
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
        slow = [name for name in SLOWDOWNS if mask & _REASONS[name]]
        if slow:
            out.append("clock slowdown: " + ", ".join(slow))
    except Exception:  # noqa: BLE001
        pass
    return out


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
