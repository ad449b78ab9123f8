# judge: flash_attn
#
# flash_attn, step 1 (Triton): the FlashAttention-2 forward, one program per block of query rows.
#
# Technique: program (m, bh) holds BLOCK_M query rows of one (batch, head) and walks the keys in
# blocks of BLOCK_N: S = Q·Kᵀ by `tl.dot` (fp32), scaled by log2(e)/sqrt(D) so that exp2 replaces
# exp; an online softmax per row (running max m, running sum l; when m grows, l and the output
# accumulator are rescaled by exp2(m_old - m_new)); P rounded to fp16 for the second `tl.dot`
# with V, accumulated in fp32. The output is divided by l once, after the last block. Causal:
# the key loop stops at the block holding the diagonal; every block it visits takes the mask
# (key index > query index gets -inf), though only the diagonal one needs it. Rows past N (the
# ragged last block) are masked on load and store; keys past N get -inf. D is a power of two here
# (64 or 128) and a constexpr. Its weakest shapes are the causal ones (0.99× at N=16384, D=64):
# step 2 (`triton_02_causal_band.py`) masks only the diagonal blocks, launches the longest query
# blocks first and autotunes the tile.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 1.13× FA2 over the 12 shapes (0.99–1.26×), 437.4 TFLOPS
# at N=16384, D=128; 04_wgmma_pingpong.cu gave 1.45× in the same run.
import math

import torch
import triton
import triton.language as tl


@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N, qk_scale, CAUSAL: tl.constexpr, D: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * N * D
    rows = start_m + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    keys = tl.arange(0, BLOCK_N)
    q = tl.load(q_ptr + head + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    end = tl.minimum(N, start_m + BLOCK_M) if CAUSAL else N
    for start_n in range(0, end, BLOCK_N):
        kn = start_n + keys
        k = tl.load(k_ptr + head + kn[:, None] * D + cols[None, :], mask=kn[:, None] < N, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        valid = kn[None, :] < N
        if CAUSAL:
            valid = valid & (kn[None, :] <= rows[:, None])
        s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_ptr + head + kn[:, None] * D + cols[None, :], mask=kn[:, None] < N, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + head + rows[:, None] * D + cols[None, :], out.to(tl.float16), mask=rows[:, None] < N)


def solve(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, O: torch.Tensor, B: int, H: int, N: int, D: int,
          causal: int) -> None:
    block_m, block_n = 64, 64
    qk_scale = 1.4426950408889634 / math.sqrt(D)  # log2(e) / sqrt(D): exp2 in the kernel
    grid = (triton.cdiv(N, block_m), B * H)
    attn_fwd[grid](Q, K, V, O, N, qk_scale, CAUSAL=bool(causal), D=D, BLOCK_M=block_m, BLOCK_N=block_n,
                   num_warps=4, num_stages=2)
