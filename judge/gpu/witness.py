"""The parent's own look at the device (docs/security.md, classes 3 and 5): what the worker recorded
is checked against what the parent measures itself, in its own CUDA context.

- `fingerprints`: the fingerprint of each call's outputs as they are now (after the request), with
  the kernel the worker ran right after the call's end event (judge/gpu/integrity.py's `Kernels.check`).
  Outputs that changed after the end event (work left running on a side stream) no longer match.
- `digests`: a digest of each input (integrity.digest), all in one pass and one wait: the input
  checks before and after every test call and timed batch.
- `seal`: a timed batch's inputs made noise until their calls' gates open them (judge/gpu/seal.py).
- `stamp`: the GPU's %globaltimer, read by a one-thread kernel in the parent's context and waited
  for: the same clock for every context on the device, so the parent's stamps around a request
  bound the stamps the worker wrote inside it.

One instance per device and process (`witness()`): the module loads once into the parent's primary context.
`tests/fakes.py` has a CPU twin (integrity.fingerprint and a scripted clock).
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from judge.gpu import integrity

TICK_LOOKS = 16  # stamps taken to estimate the timer's resolution (once per process and device)

if TYPE_CHECKING:
    from judge.gpu.devmem import Buffer
    from judge.gpu.seal import Key


class Witness(Protocol):
    """What the engine asks of the parent's view of the device."""

    def fingerprints(self, calls: Sequence[Sequence[tuple[Buffer, int]]]) -> list[int]:
        """Per call, Σ (wrapping) of the fingerprints of its (output buffer, salt) pairs, now."""

    def digests(self, tensors: Sequence[Any]) -> list[int]:
        """Per tensor (on the device), `integrity.digest` of its bytes, now: one pass, one wait."""

    def seal(self, calls: Sequence[Sequence[Buffer]], keys: Sequence[Key]) -> None:
        """Per call, XOR its inputs (input j: job j) with the keystream under its key
        (judge/gpu/seal.py), now: one pass, one wait."""

    def stamp(self) -> int:
        """The GPU's %globaltimer (ns), taken now and waited for."""

    @property
    def tick_ns(self) -> int:
        """An upper estimate of %globaltimer's resolution (ns): the stamps' tolerances grow with it."""


class DeviceWitness:
    """`Witness` on the GPU: the judge's kernels on the legacy default stream of the parent's
    context (torch's default stream too), with scratch memory of its own."""

    def __init__(self, torch):
        self.torch = torch
        self.kernels = integrity.Kernels()
        self._stamp = torch.zeros(1, dtype=torch.int64, device="cuda")
        self._tick_ns: int | None = None

    def fingerprints(self, calls: Sequence[Sequence[tuple[Buffer, int]]]) -> list[int]:
        torch = self.torch
        if not calls:
            return []
        scratch = torch.zeros((len(calls), 2), dtype=torch.int64, device="cuda")
        torch.cuda.synchronize()  # the zeros are written before the kernels read them, whatever stream torch used
        for c, outputs in enumerate(calls):
            for buf, salt in outputs:
                if integrity.fingerprinted(buf.dtype) and buf.tensor.numel():
                    self.kernels.check(buf.ptr, buf.nbytes, integrity.WIDTH[buf.dtype], 0, salt,
                                       scratch.data_ptr() + 16 * c, None)
        torch.cuda.synchronize()
        return [int(v) & integrity.MASK64 for v in scratch[:, 1].tolist()]

    def digests(self, tensors: Sequence[Any]) -> list[int]:
        torch = self.torch
        if not tensors:
            return []
        scratch = torch.zeros((len(tensors), 2), dtype=torch.int64, device="cuda")
        torch.cuda.synchronize()  # as in fingerprints()
        for c, t in enumerate(tensors):
            if not t.numel():
                continue
            words = integrity.digest_words(t)
            if words.numel():
                self.kernels.check(words.data_ptr(), words.numel() * words.element_size(), words.element_size(), 0, 0,
                                   scratch.data_ptr() + 16 * c, None)
            flat = t.reshape(-1).view(torch.uint8)
            if flat.numel() % 2:  # integrity.odd_byte, on the device
                scratch[c, 1] += flat[-1].to(torch.int64) + 1
        torch.cuda.synchronize()
        return [int(v) & integrity.MASK64 for v in scratch[:, 1].tolist()]

    def seal(self, calls: Sequence[Sequence[Buffer]], keys: Sequence[Key]) -> None:
        self.torch.cuda.synchronize()  # the draws and checksums, on whatever stream torch used, come first
        for inputs, key in zip(calls, keys):
            for job, buf in enumerate(inputs):
                self.kernels.crypt(buf.ptr, buf.nbytes, job, key.wire())
        self.torch.cuda.synchronize()

    def stamp(self) -> int:
        self.torch.cuda.synchronize()  # whatever the parent queued before runs before the stamp
        self.kernels.stamp(self._stamp.data_ptr(), None)
        self.torch.cuda.synchronize()
        return int(self._stamp.item())

    @property
    def tick_ns(self) -> int:
        """The smallest step between TICK_LOOKS stamps launched back to back (a microsecond or two
        apart): the timer's resolution, or that gap where the timer is finer. Where the timer
        never moved, the smallest step between stamps taken one at a time (waited for, tens of us
        apart), or the wall time they all took."""
        if self._tick_ns is None:
            torch = self.torch
            looks = torch.zeros(TICK_LOOKS, dtype=torch.int64, device="cuda")
            torch.cuda.synchronize()
            for i in range(TICK_LOOKS):
                self.kernels.stamp(looks.data_ptr() + 8 * i, None)
            torch.cuda.synchronize()
            self._tick_ns = _step(looks.tolist())
            if self._tick_ns is None:
                t0 = time.perf_counter_ns()
                self._tick_ns = _step([self.stamp() for _ in range(TICK_LOOKS)]) or time.perf_counter_ns() - t0
        return self._tick_ns


def _step(stamps: list[int]) -> int | None:
    """The smallest positive step between consecutive stamps, or None when they never moved."""
    steps = [b - a for a, b in zip(stamps, stamps[1:]) if b > a]
    return min(steps) if steps else None


_WITNESSES: dict[int, DeviceWitness] = {}


def witness(torch) -> DeviceWitness:
    """The process's `DeviceWitness` for torch's current device (whose context must be current:
    after torch's first allocation on it)."""
    index = torch.cuda.current_device()
    if index not in _WITNESSES:
        _WITNESSES[index] = DeviceWitness(torch)
    return _WITNESSES[index]
