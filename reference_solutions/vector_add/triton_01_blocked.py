# judge: vector_add
#
# vector_add, step 1 (Triton): one program per block of BLOCK elements.
#
# Technique: program p covers elements [p * BLOCK, (p + 1) * BLOCK); `tl.arange` gives the block's
# offsets as one tensor, and a mask `offs < n` guards the last, partial block (a masked load reads
# nothing, a masked store writes nothing). Triton turns the contiguous block into vector loads and
# stores (16 bytes a thread where alignment allows) by itself: what 02_float4.cu does by hand.
# Offsets are int64 where n * 4 bytes could pass 2^31 (a 2^28-element benchmark is 1 GiB a tensor).
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 4,384 GB/s at n = 2^28, 102% of the measured copy rate, 1.00× torch.add.
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(c_ptr + offs, a + b, mask=mask)


def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, n: int) -> None:
    block = 1024
    add_kernel[(triton.cdiv(n, block),)](A, B, C, n, BLOCK=block, num_warps=4)
