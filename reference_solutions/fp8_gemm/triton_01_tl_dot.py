# judge: fp8_gemm
#
# fp8_gemm, step 1 (Triton): tiles of C by `tl.dot` on e4m3 tiles, fp32 accumulation, grouped tile
# order, autotuned.
#
# Technique: program p owns one BLOCK_M × BLOCK_N tile of C and walks K in steps of BLOCK_K: an A
# tile [BLOCK_M, BLOCK_K] from A's rows and a B tile [BLOCK_K, BLOCK_N] read from B's rows (B is
# [N, K], so this tile is Bᵀ, each of its columns contiguous in memory: K-major, the layout FP8
# tensor cores take), masked at the ragged edges, and `tl.dot` accumulates in fp32. The
# scales multiply the tile once, before its one rounding to bf16. Tiles are visited in groups of
# GROUP_M rows of tiles, so the programs in flight share their A rows and B rows in L2. K is a
# multiple of 16, so a BLOCK_K of 64 or 128 needs its mask only on the last step.
# `max_num_imprecise_acc=32`: on Hopper, Triton lowers an e4m3 `tl.dot` to wgmma, whose FP8
# accumulator keeps fewer bits than fp32, and by default it stays in that accumulator for the whole
# K loop. Without the argument this file was WRONG_ANSWER on an H200 (2026-11-28): at M=N=128,
# K=16384 one element came out 3% off (-0.0757 for -0.0736). With it, the partial sums move into
# fp32 every 32 products, as cuBLAS's default mode (the baseline) does, and it was ACCEPTED.
# Checked on CPU by tests/test_triton_answers.py (Triton's interpreter has e4m3 tl.dot; it is exact,
# so only the GPU shows the accumulator). On that H200 (`judge submit`): 535.0 / 622.3 / 679.0
# TFLOPS at M=128,N=28672,K=8192 / 4096³ / 8192³, 0.59× / 0.47× / 0.46× cuBLAS FP8 (0.504×).
import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=4),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def fp8_gemm_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % (GROUP_M * tiles_n)) % rows_in_group
    tile_n = (pid % (GROUP_M * tiles_n)) // rows_in_group
    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
    b_tile = b_ptr + rn[None, :].to(tl.int64) * K + rk[:, None]  # Bᵀ's tile: element (k, n) is B[n][k]
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, max_num_imprecise_acc=32)
        a_tile += BLOCK_K
        b_tile += BLOCK_K
    scale = tl.load(scale_a_ptr) * tl.load(scale_b_ptr)
    c = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c, (acc * scale).to(tl.bfloat16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def solve(A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, C: torch.Tensor,
          M: int, N: int, K: int) -> None:
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    fp8_gemm_kernel[grid](A, B, scale_a, scale_b, C, M, N, K)
