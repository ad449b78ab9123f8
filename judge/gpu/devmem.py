"""Device buffers the parent owns and shares with workers through CUDA IPC, seen as torch tensors.

Buffers are plain `cudaMalloc` allocations (one per tensor), so an IPC handle maps that tensor
and its guard region into a worker and nothing else of the parent's memory. Every allocation ends
in a guard region (judge/gpu/guard_regions.py): the tensor's `nbytes`, the size the worker is
told, then at least GUARD_BYTES of slack the parent fills and checks; the allocation is rounded up
to a multiple of 2 MiB (guard_regions.MAP_ALIGN says why).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from judge.gpu import guard_regions
from judge.gpu.cudart import Runtime


class _Interface:
    def __init__(self, ptr: int, nbytes: int):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


def tensor_at(ptr: int, nbytes: int, dtype: str, shape: list[int] | tuple[int, ...]) -> torch.Tensor:
    """A torch view of `nbytes` of device memory at `ptr` (no copy, no ownership)."""
    raw = torch.as_tensor(_Interface(ptr, nbytes), device="cuda")
    return raw.view(getattr(torch, dtype)).view(tuple(shape))


@dataclass
class Buffer:
    id: str
    ptr: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]
    tensor: torch.Tensor
    handle: str
    slack: Any = None  # uint8 view of the guard region after the tensor (None: no guard region)
    expected: Any = None  # what the guard region must still hold (the parent's copy)
    output: bool = True

    def wire(self) -> dict:
        return {"id": self.id, "handle": self.handle, "nbytes": self.nbytes, "dtype": self.dtype,
                "shape": list(self.shape)}

    def overrun(self) -> int:
        """How many bytes past the end solve() wrote (0: the guard region is intact)."""
        return 0 if self.slack is None else guard_regions.overrun(self.slack, self.expected)


class DeviceBuffers:
    """Allocates IPC-shareable buffers; `free()` releases them all."""

    def __init__(self, runtime: Runtime):
        self.rt = runtime
        self.buffers: dict[str, Buffer] = {}

    def alloc(self, id: str, dtype: str, shape: tuple[int, ...], output: bool = True) -> Buffer:
        """A buffer for a tensor of `dtype` and `shape` and its guard region, filled for an output
        (`output`) or an input (judge/gpu/guard_regions.py)."""
        itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        nbytes = max(1, itemsize * _numel(shape))
        total, size = guard_regions.padded(nbytes), guard_regions.allocated(nbytes)
        ptr = self.rt.malloc(size)
        if size > total:  # the worker maps this too: zeros, not what the memory held before (the parent's)
            tensor_at(ptr + total, size - total, "uint8", (size - total,)).zero_()
        slack = tensor_at(ptr + nbytes, total - nbytes, "uint8", (total - nbytes,))
        buf = Buffer(id, ptr, nbytes, dtype, tuple(shape), tensor_at(ptr, nbytes, dtype, shape)
                     if _numel(shape) else torch.empty(shape, dtype=getattr(torch, dtype), device="cuda"),
                     self.rt.ipc_handle(ptr).hex(), slack, guard_regions.fill(slack, dtype, output), output)
        self.buffers[id] = buf
        return buf

    def free(self, ids: Iterable[str] | None = None) -> None:
        """Release the buffers named `ids`, or every one."""
        torch.cuda.synchronize()
        for id in list(self.buffers) if ids is None else list(ids):
            self.rt.free(self.buffers.pop(id).ptr)


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
