"""Sealed inputs (docs/security.md, "Sealed inputs"): a timed call's inputs are not readable until
its own gate holds every SM.

Before a timed batch the parent draws the inputs of every slot the batch will use, takes their
checksums, then XORs each input with a keystream under a key of the call's own, drawn from the OS
(`Key.fresh`), never sent before it is needed: in device memory the inputs are noise. When call i's
gate (judge_hold of integrity_kernels.cu) has every block resident, so that no other kernel of the
context can run, the worker asks the parent for call i's key on the channel; the parent sends it,
the gate opens the inputs (the same XOR), flushes L2, and the call starts. Work that a call leaves
behind on another stream, or starts in the gaps between calls, finds only noise where the next
calls' inputs are: it cannot compute their answers ahead of their timed windows.

The keystream is Philox4x32-10 (`judge_keystream`): 16 bytes per counter (block index, job, k2) under
the key (k0, k1), the job being the input's place among its call's inputs. `crypt` is the kernel's
reference on the CPU (the tests' fakes, and the check of the kernel on the GPU).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

_M32 = 0xFFFFFFFF
_MUL0, _MUL1 = 0xD2511F53, 0xCD9E8D57
_BUMP0, _BUMP1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10


@dataclass(frozen=True)
class Key:
    """A call's key: three 32-bit words."""

    k0: int
    k1: int
    k2: int

    @staticmethod
    def fresh() -> Key:
        return Key(secrets.randbits(32), secrets.randbits(32), secrets.randbits(32))

    def wire(self) -> list[int]:
        return [self.k0, self.k1, self.k2]


def keystream(blocks: int, job: int, key: Key, first: int = 0):
    """The keystream of input `job` for 16-byte blocks first..first+blocks-1: an int64 tensor of
    (blocks, 4) 32-bit words (as non-negative int64), on the CPU. Vectorised in int64, whose products
    wrap as the kernel's u64 ones do (the high halves masked)."""
    import torch

    b = torch.arange(first, first + blocks, dtype=torch.int64)
    c0, c1 = b & _M32, (b >> 32) & _M32
    c2 = torch.full_like(b, job & _M32)
    c3 = torch.full_like(b, key.k2)
    k0, k1 = key.k0, key.k1
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + _BUMP0) & _M32, (k1 + _BUMP1) & _M32
        p0, p1 = c0 * _MUL0, c2 * _MUL1
        n0 = ((p1 >> 32) & _M32) ^ c1 ^ k0
        n2 = ((p0 >> 32) & _M32) ^ c3 ^ k1
        c0, c1, c2, c3 = n0, p1 & _M32, n2, p0 & _M32
    return torch.stack([c0, c1, c2, c3], dim=1)


def crypt(t: Any, job: int, key: Key) -> None:
    """judge_crypt on the CPU: XOR the bytes of tensor `t` (contiguous, on the CPU) with input `job`'s
    keystream under `key`, in place. Its own inverse."""
    import torch

    flat = t.reshape(-1).view(torch.uint8)
    n = flat.numel()
    if not n:
        return
    words = keystream((n + 15) // 16, job, key)
    stream = torch.stack([(words >> (8 * i)) & 0xFF for i in range(4)], dim=2).reshape(-1)[:n]
    flat.bitwise_xor_(stream.to(torch.uint8))


def crypt_call(tensors: Any, key: Key) -> None:
    """`crypt` of a call's inputs, in order: input j with job j's keystream (the gate's numbering)."""
    for job, t in enumerate(tensors):
        crypt(t, job, key)
