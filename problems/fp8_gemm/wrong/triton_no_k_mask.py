# expected: WRONG_ANSWER — the K mask left out "because K is a multiple of 16": with BLOCK_K = 64 the last step of every K % 64 != 0 test reads the next row's values (and past the last row, the judge's guard values), so K = 16, 80, 144, 1008, 112 are all wrong
import torch
import triton
import triton.language as tl


@triton.jit
def fp8_gemm_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + (k + rk)[None, :], mask=rm[:, None] < M, other=0.0)  # BUG
        b = tl.load(b_ptr + rn[None, :].to(tl.int64) * K + (k + rk)[:, None], mask=rn[None, :] < N, other=0.0)  # BUG
        acc = tl.dot(a, b, acc)
    scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    c = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c, (acc * scale).to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def solve(A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, C: torch.Tensor,
          M: int, N: int, K: int) -> None:
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    fp8_gemm_kernel[grid](A, B, scale_a, scale_b, C, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64)
