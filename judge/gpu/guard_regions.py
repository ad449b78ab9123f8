"""Guard regions: a slack after the end of every buffer the parent shares with the workers
(docs/security.md, class 9). Workers are told a tensor's size, never the slack's.

A buffer used to be an allocation of exactly its size, whose page (the driver hands out 2 MiB)
went on past it: a kernel that read or wrote a few elements past the end (a float4 kernel without
its tail) saw whatever was there and was never caught. Now every buffer is followed by at least
GUARD_BYTES of slack, filled when it is allocated:

- after an **input**, values that change the answer of a kernel that reads and uses them: for
  floating types the cycle +inf, NaN, -inf (one element past the end already breaks a sum and a
  max, three a min, and NaN whatever it touches; e4m3 has no infinities, so there it is 448, NaN,
  -448, its largest values), for integer types the byte 0x5A in every byte (0x5A5A5A5A: a sum
  far off, an index far out of range, bin 0x5A of a histogram that masks its index);
- after an **output**, random bytes (per buffer, from the OS's generator): a kernel cannot write
  them back by chance.

The parent keeps a copy of each slack (`expected`) and compares after every test call and every
timed batch (`overrun`): a write past the end of an output or of an input is REJECTED, with how far
past the end it reached.
"""
from __future__ import annotations

import secrets

import torch

GUARD_BYTES = 64 << 10  # at least this much slack after every buffer: a float4 tail, a row of a tile
ALLOC_ALIGN = 256  # cudaMalloc's alignment: every allocation is rounded up to it
# What the parent allocates for each buffer is a multiple of this: a worker maps the whole
# allocation through CUDA IPC, and an allocation whose size is not a multiple of 2 MiB (a tensor
# plus its guard region, as it was) is mapped there in a way that made some access patterns up to
# 2.3x slower than on the parent's own mapping: a transposed `copy_` at 4096 x 16384, cross_entropy
# at vocab 50257 (H200, 2026-11-28, scripts/probes/ipc_mapping.py; rounded up: within 1%).
MAP_ALIGN = 2 << 20
INT_BYTE = 0x5A  # the slack of integer inputs: 0x5A5A5A5A as int32


def padded(nbytes: int) -> int:
    """A buffer of `nbytes` and its guard region: the slack is the rest (>= GUARD_BYTES)."""
    total = nbytes + GUARD_BYTES
    return (total + ALLOC_ALIGN - 1) // ALLOC_ALIGN * ALLOC_ALIGN


def allocated(nbytes: int) -> int:
    """The bytes the parent allocates for a buffer of `nbytes`: `padded` rounded up to MAP_ALIGN.
    Past the guard region the rest is zeroed when allocated (judge/gpu/devmem.py), not checked."""
    return -(-padded(nbytes) // MAP_ALIGN) * MAP_ALIGN


def pattern(nbytes: int, dtype: str, output: bool, device: torch.device | str = "cpu") -> torch.Tensor:
    """`nbytes` of slack content (uint8) for a buffer of `dtype` (see the module's doc), made on
    `device` (the parent's GPU: a few kernels, where building ~2 MiB on the CPU and copying it took
    ~1 ms a buffer, 0.24 s of a vector_add verdict's 196 buffers)."""
    if output:
        g = torch.Generator(device=device).manual_seed(secrets.randbits(63))
        return torch.randint(0, 256, (nbytes,), dtype=torch.uint8, generator=g, device=device)
    dt = getattr(torch, dtype)
    if dt.is_floating_point:
        cycle = torch.tensor([float("inf"), float("nan"), float("-inf")], dtype=dt).view(torch.uint8)
    else:
        cycle = torch.full((1,), INT_BYTE, dtype=torch.uint8)
    return cycle.to(device).repeat(nbytes // cycle.numel() + 1)[:nbytes]


def fill(slack: torch.Tensor, dtype: str, output: bool) -> torch.Tensor:
    """Fill `slack` (a uint8 tensor) with its pattern; returns the copy the parent compares with."""
    slack.copy_(pattern(slack.numel(), dtype, output, slack.device))
    return slack.clone()


def overrun(slack: torch.Tensor, expected: torch.Tensor) -> int:
    """How many bytes past the end a write reached: the last byte of `slack` that differs from
    `expected`, plus one; 0 when none differs."""
    diff = slack != expected
    if not bool(diff.any()):
        return 0
    return int(diff.nonzero().max()) + 1


def overruns(regions: list[tuple[torch.Tensor, torch.Tensor]]) -> list[int]:
    """`overrun` of each (slack, expected) pair, with one wait for all of them (a clean region, the
    usual case, costs a compare and a reduction on the device)."""
    if not regions:
        return []
    dirty = torch.stack([(slack != expected).any() for slack, expected in regions]).tolist()
    return [overrun(slack, expected) if d else 0 for (slack, expected), d in zip(regions, dirty)]
