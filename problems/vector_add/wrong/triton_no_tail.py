# expected: WRONG_ANSWER — whole blocks only: the grid rounds n down to a multiple of 1024 and the kernel has no mask, so the last n % 1024 elements of C are never written (and at n < 1024 nothing is)
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, tl.load(a_ptr + offs) + tl.load(b_ptr + offs))


def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, n: int) -> None:
    add_kernel[(n // 1024,)](A, B, C, BLOCK=1024)
