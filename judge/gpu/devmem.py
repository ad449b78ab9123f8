"""Device buffers the parent owns and shares with workers through CUDA IPC, seen as torch tensors.

Buffers are plain `cudaMalloc` allocations (one per tensor), so an IPC handle maps exactly
that tensor into a worker and nothing else of the parent's memory.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

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

    def wire(self) -> dict:
        return {"id": self.id, "handle": self.handle, "nbytes": self.nbytes, "dtype": self.dtype,
                "shape": list(self.shape)}


class DeviceBuffers:
    """Allocates IPC-shareable buffers; `free()` releases them all."""

    def __init__(self, runtime: Runtime):
        self.rt = runtime
        self.buffers: dict[str, Buffer] = {}

    def alloc(self, id: str, dtype: str, shape: tuple[int, ...]) -> Buffer:
        itemsize = torch.empty((), dtype=getattr(torch, dtype)).element_size()
        nbytes = max(1, itemsize * _numel(shape))
        ptr = self.rt.malloc(nbytes)
        buf = Buffer(id, ptr, nbytes, dtype, tuple(shape), tensor_at(ptr, nbytes, dtype, shape)
                     if _numel(shape) else torch.empty(shape, dtype=getattr(torch, dtype), device="cuda"),
                     self.rt.ipc_handle(ptr).hex())
        self.buffers[id] = buf
        return buf

    def free(self) -> None:
        torch.cuda.synchronize()
        for b in self.buffers.values():
            self.rt.free(b.ptr)
        self.buffers.clear()


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
