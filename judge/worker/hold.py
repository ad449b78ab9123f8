"""The gate before each timed call, in the baseline worker: judge/worker/native/hold.h's twin
(docs/timing.md, "The hold").

`begin(wait)` enqueues judge_hold (every block slot of every SM, one warp each, sharing out the SMs'
shared memory) before the call's start event; once its blocks are resident it reads the call's
inputs (a candidate's sealed ones it opens with the call's key, judge/gpu/seal.py), then flushes L2
(the worker's flush buffer), and with `wait` it holds: `wait_resident()` waits until every block is
resident, and no kernel of any stream has room on any SM until `release()`, which the worker calls
once the call's work and its end event are queued. The GPU then runs the call without waiting for
the host: the host's launch latency (a Python call into torch, a cuDNN graph lookup) is outside the
timed window. `crowded()` / `late()` count the gates whose blocks were not all resident, or that the
host did not let go, in time (HOLD_ARRIVE_US, HOLD_TIMEOUT_MS). A baseline's inputs are never sealed:
its gate only reads them, so that both leave the inputs' pages just as recently used. A Triton
candidate's (judge/worker/triton_gpu.py) are, as a native one's.
"""
from __future__ import annotations

import ctypes

from judge.gpu.cudart import Runtime
from judge.gpu.integrity import Kernels
from judge.worker.protocol import HOLD_ARRIVE_US, HOLD_TIMEOUT_MS
from judge.worker.protocol import HOLD_COUNT_WORDS as COUNT_WORDS
from judge.worker.protocol import HOLD_CTL_WORDS as CTL_WORDS

# cudaDeviceAttr: multiprocessors, resident blocks per SM, shared memory per SM, reserved per block
_SMS, _BLOCKS, _PER_SM, _RESERVED = 16, 106, 81, 111


class Hold:
    def __init__(self, rt: Runtime, kernels: Kernels, flush: int, flush_bytes: int):
        self.rt, self.kernels, self.flush, self.flush_bytes = rt, kernels, flush, flush_bytes
        host, self.ctl_dev = rt.host_mapped(4 * CTL_WORDS)
        self.ctl = (ctypes.c_uint * CTL_WORDS).from_address(host)
        for i in range(CTL_WORDS):
            self.ctl[i] = 0
        self.count = rt.malloc(4 * COUNT_WORDS)
        rt.memset_async(self.count, 0, 4 * COUNT_WORDS)
        blocks = rt.attribute(_BLOCKS)
        self.grid = rt.attribute(_SMS) * blocks  # hold.h: every block slot of every SM, and its shared memory
        self.smem = (rt.attribute(_PER_SM) // blocks - rt.attribute(_RESERVED)) // 128 * 128
        self.number = 0
        self.begin(wait=True)  # once on the idle device: an SM-limited context cannot hold, and never will
        self.wait_resident()
        self.release()
        rt.synchronize("the hold's first run")
        self.usable = self.crowded() == 0

    def begin(self, wait: bool, jobs: int = 0, njobs: int = 0, sealed: bool = False, stamp: int = 0) -> None:
        """The gate, reading the call's `njobs` inputs (a table of pointer and bytes at `jobs`) first,
        or with `sealed` opening them with the key `open()` gives; the start stamp to `stamp` (if any)."""
        self.number = (self.number + 1) & 0xFFFFFFFF
        self.rt.memset_async(self.count, 0, 12)  # count[0..2]: blocks arrived, done with the inputs, done flushing
        self.kernels.hold(self.ctl_dev, self.count, self.number, HOLD_ARRIVE_US * 1000, HOLD_TIMEOUT_MS * 1000_000,
                          self.grid, self.smem, self.flush, self.flush_bytes, wait, jobs, njobs, sealed, stamp)

    def wait_resident(self) -> None:
        while self.ctl[1] != self.number:
            pass

    def open(self, key: list[int]) -> None:
        """The call's key, once resident: the gate opens the sealed inputs with it (hold.h's `open`;
        ctypes stores are plain stores, in program order, and the number goes last)."""
        self.ctl[5], self.ctl[6], self.ctl[7] = key
        self.ctl[4] = self.number

    def release(self) -> None:
        self.ctl[0] = self.number

    def crowded(self) -> int:
        return self.ctl[2]

    def late(self) -> int:
        return self.ctl[3]
