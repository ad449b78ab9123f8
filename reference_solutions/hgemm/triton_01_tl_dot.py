# judge: hgemm
#
# hgemm, step 1 (Triton): tiles of C by `tl.dot`, fp32 accumulation, grouped tile order, autotuned.
#
# Technique: program p owns one BLOCK_M × BLOCK_N tile of C and walks K in steps of BLOCK_K,
# loading an A tile and a B tile (masked at the ragged edges, zeros past them) and accumulating
# `tl.dot(a, b)` in fp32; the tile is rounded to fp16 once, at the end. Triton lowers `tl.dot` to
# the tensor cores of the target (wgmma on Hopper, mma.sync on Ampere) and pipelines the loads
# itself (`num_stages`). Tiles are visited in groups of GROUP_M rows of tiles, so the programs in
# flight at once share their A rows and B columns in L2. The autotuner picks the tile shape per
# (M, N, K) on the GPU; on CPU (`judge test --cpu`) each configuration is run once and the first
# is used. Checked on CPU by tests/test_triton_answers.py.
#
# Measured: ACCEPTED on an H100 (2026-11-25, `judge verify --table`): 751.8 TFLOPS at 8192³, 98% of
# cuBLAS there and 0.97× cuBLAS over the three benchmark shapes (reference_solutions/README.md).
import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def hgemm_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
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
    b_tile = b_ptr + rk[:, None].to(tl.int64) * N + rn[None, :]
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_tile, mask=(rm[:, None] < M) & (rk[None, :] + k < K), other=0.0)
        b = tl.load(b_tile, mask=(rk[:, None] + k < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K
        b_tile += BLOCK_K * N
    c = c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :]
    tl.store(c, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


def solve(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, M: int, N: int, K: int) -> None:
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    hgemm_kernel[grid](A, B, C, M, N, K)
