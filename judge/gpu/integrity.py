"""Output completeness and input integrity (docs/security.md, "runtime defences").

Poison patterns. Before every call an output is filled with a pattern chosen per call: a NaN
with a random, non-canonical payload for floating-point outputs (no arithmetic produces it, and
a correct output holds no NaN), or a value within 2^16 of INT32_MIN for int32 outputs (no
problem's correct output comes near it). Any element left unwritten fails the output check.

Completeness kernel. Right after the end event of a call, before any device-wide
synchronisation, the worker enqueues `judge_check16/32`: it counts the output words still equal
to the pattern and adds the count to the call's record in a buffer the parent owns
(judge/worker/protocol.py's CHECK_STRIDE layout), with the outputs' fingerprint. Work that solve() pushed to a
non-blocking stream has not finished when it runs: the count is not zero, and the parent
REJECTS. It runs on the worker's own *blocking* stream of the highest priority: a blocking
stream is ordered with the legacy default stream both ways (the count starts after the end
event, the next call's poison after the count), and the priority puts its blocks ahead of the
blocks still pending of a big kernel on another stream, so that the count does not wait behind
the very work it must catch. (A persistent side kernel that holds every SM still delays it;
the roofline floor in the pipeline catches the time such a call reports.) The kernels are
judge code (`integrity_kernels.cu`), compiled to PTX once (`integrity_kernels.ptx`) and loaded
with the driver API in the worker (`Kernels`), which never imports torch.

Fingerprint. The same pass (`judge_check16/32`) adds a fingerprint of each output, a wrapping sum
of `mix(word, index, salt)` over its words, to the call's record (judge/worker/protocol.py's
CHECK_STRIDE layout). After the request the parent fingerprints the outputs again, in its own
context with the same kernel (`Kernels.check`, judge/gpu/witness.py): work that finished after the
end event (a side stream the count did not wait for) makes the two differ. `fingerprint` is the
kernel's reference on the CPU.

Input digests. The parent keeps a digest of every input before a call (or a batch) and compares
after it: a submission that zeroes, scribbles on, reorders or uses its inputs as scratch is
REJECTED. The digest is the fingerprint above over the input's 32-bit (or 16-bit) words, taken by
`judge_check` on the device in one read of the input, for every input of a batch at once with one
wait (`Witness.digests`); `digest` is its reference on the CPU.
"""
from __future__ import annotations

import ctypes
import random
from pathlib import Path

# dtype → (bytes per pattern word, pattern kind)
WIDTH = {"float32": 4, "float16": 2, "bfloat16": 2, "int32": 4, "uint32": 4}
_CANONICAL = {"float32": (0x400000, 0x7FFFFF), "float16": (0x200, 0x3FF), "bfloat16": (0x40, 0x7F)}
_FLOAT = {"float32": (31, 0x7F800000, 0x7FFFFF), "float16": (15, 0x7C00, 0x3FF), "bfloat16": (15, 0x7F80, 0x7F)}


def poison_word(dtype: str, rng: random.Random | None = None) -> int | None:
    """A fresh poison pattern (unsigned, WIDTH[dtype] bytes) for an output of `dtype`, or None
    when the dtype has no pattern (then the output is poisoned with a byte, and not counted)."""
    rng = rng or random.SystemRandom()
    if dtype in _FLOAT:
        sign_bit, exponent, mask = _FLOAT[dtype]
        while True:
            payload = rng.randint(1, mask)
            if payload not in _CANONICAL[dtype]:
                return (rng.getrandbits(1) << sign_bit) | exponent | payload
    if dtype in ("int32", "uint32"):
        return 0x80000000 | rng.getrandbits(16)
    return None


def words(nbytes: int, width: int) -> int:
    return nbytes // width


# The kernels' PTX, generated from integrity_kernels.cu beside this file (its header says how;
# tests/test_exploits.py checks that the two still agree).
PTX = (Path(__file__).with_name("integrity_kernels.ptx")).read_text()

_BLOCK = 256
_MAX_BLOCKS = 2048
# The L2 flush (judge_read): its launch (8 blocks of 512 threads on each of an H100's 132 SMs), the
# bytes of sink after the buffer it reads, and the XOR of the buffer's words that would make it
# write there (never, in practice). The native worker gets them through its generated header.
FLUSH_BLOCK, FLUSH_GRID, FLUSH_SINK_BYTES, FLUSH_NEVER = 512, 1056, 16, 0x9E3779B9
GATE_WAIT, GATE_TOUCH = 1, 2  # judge_hold's modes (JUDGE_GATE_WAIT, JUDGE_GATE_TOUCH of integrity_kernels.cu)


class Kernels:
    """The judge's fill, check and stamp kernels (driver API, no torch), in the current context.

    In the baseline worker the runtime has made the device's primary context current
    (cudaSetDevice + cudaFree(0)), so the module loads into the same context as the events; in the
    parent (judge/gpu/witness.py) into the parent's own context. Launches go to the legacy default
    stream unless told otherwise. (The candidate's native worker compiles integrity_kernels.cu into
    itself, with its own high-priority check stream.)"""

    NAMES = ("judge_fill16", "judge_fill32", "judge_check16", "judge_check32", "judge_stamp", "judge_hold",
             "judge_read", "judge_crypt")

    def __init__(self):
        from judge.gpu.cudart import CudaError

        self._err = CudaError
        self.lib = ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)
        for name in ("cuInit", "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel",
                     "cuGetErrorName", "cuFuncSetAttribute"):
            getattr(self.lib, name).restype = ctypes.c_int
        vp = ctypes.c_void_p
        self.lib.cuLaunchKernel.argtypes = [vp, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                            ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, vp,
                                            ctypes.POINTER(vp), ctypes.POINTER(vp)]
        self._check(self.lib.cuInit(0), "cuInit")
        self.module = vp()
        self._image = ctypes.create_string_buffer(PTX.encode())
        self._check(self.lib.cuModuleLoadData(ctypes.byref(self.module), self._image),
                    "loading the judge's completeness kernels")
        self.fn = {}
        for name in self.NAMES:
            f = vp()
            self._check(self.lib.cuModuleGetFunction(ctypes.byref(f), self.module, name.encode()), name)
            self.fn[name] = f

    def _check(self, code: int, where: str) -> None:
        if code != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(code, ctypes.byref(name))
            text = (name.value or b"CUDA_ERROR").decode()
            raise self._err(code, text, f"driver error {code}", where)

    def _launch(self, name: str, n: int, args: list, stream: int | None = None, block: int = _BLOCK,
                grid: int | None = None, smem: int = 0) -> None:
        if n <= 0:
            return
        blocks = grid or max(1, min(_MAX_BLOCKS, (n + block - 1) // block))
        params = (ctypes.c_void_p * len(args))(*[ctypes.addressof(a) for a in args])  # args outlive the call
        self._check(self.lib.cuLaunchKernel(self.fn[name], blocks, 1, 1, block, 1, 1, smem, stream, params, None),
                    name)

    def hold(self, ctl: int, count: int, number: int, arrive_ns: int, release_ns: int, grid: int, smem: int,
             flush: int, flush_bytes: int, wait: bool, jobs: int = 0, njobs: int = 0, sealed: bool = False,
             stamp: int = 0) -> None:
        """judge_hold on the legacy default stream (judge/worker/hold.py), `grid` blocks of `smem`
        bytes of dynamic shared memory each (the attribute is raised the first time): the call's
        `njobs` inputs (pairs of pointer and bytes in device memory at `jobs`) read, or with `sealed`
        opened with the key the host gives once the blocks are resident (a candidate's: a baseline's
        are never sealed), the L2 flush of `flush_bytes` at `flush` (judge_read's buffer, its sink
        after it), the start stamp to the u64 at `stamp` (none if 0); with `wait` it holds until the
        host lets go."""
        if getattr(self, "_hold_smem", None) != smem:
            self._check(self.lib.cuFuncSetAttribute(self.fn["judge_hold"], 8, smem), "judge_hold's shared memory")
            self._hold_smem = smem  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        mode = (GATE_WAIT if wait else 0) | (GATE_TOUCH if njobs and not sealed else 0)
        self._launch("judge_hold", 1, [ctypes.c_void_p(ctl), ctypes.c_void_p(count), ctypes.c_uint(number),
                                       ctypes.c_ulonglong(arrive_ns), ctypes.c_ulonglong(release_ns),
                                       ctypes.c_void_p(jobs), ctypes.c_uint(njobs), ctypes.c_void_p(flush),
                                       ctypes.c_ulonglong(flush_bytes // 16), ctypes.c_uint32(FLUSH_NEVER),
                                       ctypes.c_void_p(flush + flush_bytes), ctypes.c_void_p(stamp),
                                       ctypes.c_uint(mode)], None, block=32, grid=grid, smem=smem)

    def crypt(self, ptr: int, nbytes: int, job: int, key: list[int]) -> None:
        """judge_crypt: XOR `nbytes` at `ptr` (16-byte aligned) with input `job`'s keystream under
        `key` (judge/gpu/seal.py), on the legacy default stream."""
        if ptr % 16:
            raise ValueError(f"judge_crypt needs a 16-byte aligned buffer, not {ptr:#x}")
        k0, k1, k2 = key
        self._launch("judge_crypt", max(1, (nbytes + 15) // 16), [
            ctypes.c_void_p(ptr), ctypes.c_ulonglong(nbytes), ctypes.c_uint32(job), ctypes.c_uint32(k0),
            ctypes.c_uint32(k1), ctypes.c_uint32(k2)])

    def fill(self, ptr: int, nbytes: int, width: int, word: int) -> None:
        """Fill `nbytes` at `ptr` with the pattern (a trailing partial word is left to the caller)."""
        n = words(nbytes, width)
        value = ctypes.c_uint16(word) if width == 2 else ctypes.c_uint32(word)
        self._launch(f"judge_fill{8 * width}", n, [ctypes.c_void_p(ptr), value, ctypes.c_ulonglong(n)])

    def check(self, ptr: int, nbytes: int, width: int, word: int, salt: int, out: int, stream: int | None) -> None:
        """Add to the u64 pair at `out` how many words at `ptr` still hold `word` ([0]) and their
        fingerprint with `salt` ([1], wrapping): `fingerprint`'s sum, on the device."""
        n = words(nbytes, width)
        value = ctypes.c_uint16(word) if width == 2 else ctypes.c_uint32(word)
        self._launch(f"judge_check{8 * width}", n, [ctypes.c_void_p(ptr), value, ctypes.c_ulonglong(n),
                                                   ctypes.c_ulonglong(salt), ctypes.c_void_p(out)], stream)

    def read(self, ptr: int, nbytes: int) -> None:
        """The L2 flush: read every 16 bytes of `nbytes` at `ptr` (a buffer nothing writes after it
        was set once, followed by FLUSH_SINK_BYTES of sink), so that L2 holds only clean lines of it."""
        n = nbytes // 16
        self._launch("judge_read", n, [ctypes.c_void_p(ptr), ctypes.c_ulonglong(n), ctypes.c_uint32(FLUSH_NEVER),
                                       ctypes.c_void_p(ptr + nbytes)], None, block=FLUSH_BLOCK, grid=FLUSH_GRID)

    def stamp(self, out: int, stream: int | None) -> None:
        """Write the GPU's %globaltimer (ns) to the u64 at `out`, in `stream`'s order (one thread)."""
        self._launch("judge_stamp", 1, [ctypes.c_void_p(out)], stream, block=1)


# -- parent side (torch) ---------------------------------------------------------------------------
MASK64 = (1 << 64) - 1
_GOLDEN, _MUL1, _MUL2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def fingerprinted(dtype: str) -> bool:
    """Whether outputs of `dtype` are counted and fingerprinted (they have a poison word)."""
    return dtype in WIDTH


def mix(word: int, i: int, salt: int) -> int:
    """judge_mix of integrity_kernels.cu, one word (unsigned, zero-extended) at index `i`."""
    x = (word ^ (i * _GOLDEN) ^ (salt << 56)) & MASK64
    x ^= x >> 30
    x = (x * _MUL1) & MASK64
    x ^= x >> 27
    x = (x * _MUL2) & MASK64
    return x ^ (x >> 31)


def fingerprint(words, salt: int) -> int:
    """The fingerprint `judge_check16/32` adds for a tensor of 16- or 32-bit words (any integer or
    float dtype of that width, on the CPU): Σ_i mix(word_i, i, salt) mod 2^64. Vectorised in
    int64, whose arithmetic wraps as the kernel's u64 does (shifts made logical by masks)."""
    import torch

    w = words.reshape(-1)
    if w.numel() == 0:
        return 0
    width = w.element_size()
    assert width in (2, 4), "the fingerprint is defined over 16- and 32-bit words"
    x = w.view(torch.int16 if width == 2 else torch.int32).to(torch.int64) & ((1 << (8 * width)) - 1)
    i = torch.arange(x.numel(), dtype=torch.int64)
    x = x ^ (i * _signed(_GOLDEN)) ^ _signed((salt << 56) & MASK64)
    for shift, mul in ((30, _MUL1), (27, _MUL2)):
        x = x ^ _shr(x, shift)
        x = x * _signed(mul)
    x = x ^ _shr(x, 31)
    return int(x.sum(dtype=torch.int64)) & MASK64


def _signed(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def _shr(x, s: int):
    """Logical right shift of int64 words."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def digest_words(t):
    """A tensor's bytes as the words its digest is over (on the CPU or the device): 32-bit words
    when its size is a multiple of 4, else 16-bit words, with an odd last byte left out (`digest`
    adds it on its own)."""
    import torch

    flat = t.reshape(-1).view(torch.uint8)
    if flat.numel() % 4 == 0:
        return flat.view(torch.int32)
    return flat[: flat.numel() // 2 * 2].view(torch.int16)


def odd_byte(t) -> int:
    """What a tensor's odd last byte adds to its digest (0 when its size is even): the byte plus 1."""
    flat = t.reshape(-1).view(__import__("torch").uint8)
    return int(flat[-1]) + 1 if flat.numel() % 2 else 0


def digest(t) -> int:
    """A tensor's digest, on the CPU: the fingerprint (salt 0) of `digest_words`, plus `odd_byte`.
    The parent's `Witness.digests` computes the same on the device in one pass: a changed,
    zeroed or permuted input changes it (input checks before and after every call and batch)."""
    return (fingerprint(digest_words(t), 0) + odd_byte(t)) & MASK64 if t.numel() else 0


def fill_tensor(t, dtype: str, word: int) -> None:
    """The parent's poison: the pattern in every word (a trailing byte, if any, gets 0xFF)."""
    import torch

    if t.numel() == 0:
        return
    width = WIDTH[dtype]
    flat = t.reshape(-1).view(torch.uint8)
    n = flat.numel() // width
    signed = word - (1 << (8 * width)) if word >= 1 << (8 * width - 1) else word
    if n:
        flat[: n * width].view(torch.int16 if width == 2 else torch.int32).fill_(signed)
    if flat.numel() > n * width:
        flat[n * width:].fill_(0xFF)
