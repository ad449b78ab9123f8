# expected: WRONG_ANSWER — a half accumulator: each 32-deep tl.dot returns fp16 and the running sum is rounded to fp16 after every step: from K = 1000 on (|C| ~ 1) some outputs miss rtol = atol = 2e-3, and at K = 16384 most do
import torch
import triton
import triton.language as tl


@triton.jit
def hgemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float16)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :] + k,
                    mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_ptr + (rk[:, None] + k).to(tl.int64) * N + rn[None, :],
                    mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, out_dtype=tl.float16)
    tl.store(c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, M: int, N: int, K: int) -> None:
    hgemm_kernel[(triton.cdiv(M, 64), triton.cdiv(N, 64))](A, B, C, M, N, K, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
