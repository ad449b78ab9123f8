"""The GPU-side hold before each timed call, in the baseline worker: judge/worker/native/hold.h's
twin (docs/timing.md, "The hold").

`begin()` enqueues judge_hold (one block per SM, each with all the shared memory an SM has left
for a block) before the call's start event and `wait_resident()` waits until every block is
resident: no kernel of any stream has room on any SM until `release()`, which the worker calls once
the call's work and its end event are queued. The GPU then runs the call without waiting for the
host: the host's launch latency (a Python call into torch, a cuDNN graph lookup) is outside the
timed window. `crowded()` / `late()` count the holds whose blocks were not all resident, or that the
host did not let go, in time (HOLD_ARRIVE_US, HOLD_TIMEOUT_MS).
"""
from __future__ import annotations

import ctypes

from judge.gpu.cudart import Runtime
from judge.gpu.integrity import Kernels
from judge.worker.protocol import HOLD_ARRIVE_US, HOLD_TIMEOUT_MS

# cudaDeviceAttr: multiprocessors, shared memory per SM, per block (opt-in), reserved per block
_SMS, _PER_SM, _OPTIN, _RESERVED = 16, 81, 97, 111


class Hold:
    def __init__(self, rt: Runtime, kernels: Kernels):
        self.rt, self.kernels = rt, kernels
        host, self.ctl_dev = rt.host_mapped(16)
        self.ctl = (ctypes.c_uint * 4).from_address(host)
        for i in range(4):
            self.ctl[i] = 0
        self.count = rt.malloc(8)
        rt.memset_async(self.count, 0, 8)
        self.grid = rt.attribute(_SMS)
        self.smem = min(rt.attribute(_OPTIN), rt.attribute(_PER_SM) - rt.attribute(_RESERVED))
        self.number = 0
        self.begin()  # once on the idle device: an SM-limited context cannot hold, and never will
        self.wait_resident()
        self.release()
        rt.synchronize("the hold's first run")
        self.usable = self.crowded() == 0

    def begin(self) -> None:
        self.number = (self.number + 1) & 0xFFFFFFFF
        self.rt.memset_async(self.count, 0, 4)
        self.kernels.hold(self.ctl_dev, self.count, self.number, HOLD_ARRIVE_US * 1000, HOLD_TIMEOUT_MS * 1000_000,
                          self.grid, self.smem)

    def wait_resident(self) -> None:
        while self.ctl[1] != self.number:
            pass

    def release(self) -> None:
        self.ctl[0] = self.number

    def crowded(self) -> int:
        return self.ctl[2]

    def late(self) -> int:
        return self.ctl[3]
