# judge: flash_attn
#
# flash_attn, step 2 (Triton): step 1 with the mask only where it is needed, the longest causal
# query blocks first, and the tile shape autotuned.
#
# Technique, over step 1 (`triton_01_fa2.py`, whose header explains the online softmax):
# - Each program's key loop is split in two bands. Causal: the keys left of the query block's
#   diagonal (every one visible, every one in range: no mask, no `kn < N` test on the loads), then
#   the BLOCK_M / BLOCK_N key blocks on the diagonal, which take the causal mask and the range
#   mask. Not causal: the full key blocks with no mask, then the ragged last block with one.
#   Step 1 masked every block it visited: a compare and a select over each 64 × 64 score tile.
# - Causal: query block i visits i + 1 key blocks, so the programs differ up to N / BLOCK_M times
#   in length. Launched in order, a head's longest blocks start last and run alone at the end of
#   the grid; here program 0 of each head takes its last query block, so the short ones fill the
#   tail. (Heads stay together along the grid: a head's programs run at the same time and share
#   its K and V in L2.)
# - The tile shape (BLOCK_M, BLOCK_N, warps, stages) is chosen per shape by `triton.autotune`
#   from three configurations; BLOCK_M is a multiple of BLOCK_N so the diagonal band is whole
#   key blocks. The tuning happens in the judge's warm-up, outside every timed call.
# A diagonal-band key block can be entirely above the diagonal for some of the block's rows (the
# second 64 keys of a 128-row block, for its first 64 rows): their scores are all -inf there, and
# since the band's first block always holds each row's own key, the running max is finite and the
# block adds exp2(-inf) = 0. Rows past N are masked on load and store, as in step 1.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py; the interpreter runs
# the first configuration).
# Measured on an H200 (2026-11-28, `judge submit`, both workers warmed up first): ACCEPTED, 1.41×
# FA2 over the 12 shapes (1.27–1.48× each; 1.34–1.48× on every shape of N >= 4096), 532.6 TFLOPS at
# N=16384, D=128. Step 1's weakest shape, N=16384, D=64, causal: 295.3 -> 443.1 TFLOPS (0.99× ->
# 1.48× FA2), now as fast per FLOP as the same shape without the mask (459.0). `judge verify
# --table` the same hour: 1.41× (step 1 1.13×, 04_wgmma_pingpong.cu 1.46×). The warm-ups compiled
# 24 and 12 kernels (23.6 s and 10.7 s) and tried 42 and 36 configurations, outside the timing.
import math

import torch
import triton
import triton.language as tl

CONFIGS = [
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
    triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
    triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
]


@triton.jit
def key_band(acc, l_i, m_i, q, k_ptr, v_ptr, head, rows, lo, hi, N, qk_scale, D: tl.constexpr,
             BLOCK_N: tl.constexpr, MASK_RANGE: tl.constexpr, MASK_CAUSAL: tl.constexpr):
    """Fold key blocks [lo, hi) into the running (acc, l, m) of the query rows `rows`."""
    cols = tl.arange(0, D)
    keys = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        kn = start_n + keys
        offsets = head + kn[:, None] * D + cols[None, :]
        if MASK_RANGE:
            k = tl.load(k_ptr + offsets, mask=kn[:, None] < N, other=0.0)
            v = tl.load(v_ptr + offsets, mask=kn[:, None] < N, other=0.0)
        else:
            k = tl.load(k_ptr + offsets)
            v = tl.load(v_ptr + offsets)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        if MASK_RANGE:
            valid = kn[None, :] < N
            if MASK_CAUSAL:
                valid = valid & (kn[None, :] <= rows[:, None])
            s = tl.where(valid, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(configs=CONFIGS, key=["N", "D", "CAUSAL"])
@triton.jit
def attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N, qk_scale, CAUSAL: tl.constexpr, D: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    block = tl.program_id(0)
    if CAUSAL:  # the longest query blocks first
        block = tl.num_programs(0) - 1 - block
    start_m = block * BLOCK_M
    head = tl.program_id(1).to(tl.int64) * N * D
    rows = start_m + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, D)
    q = tl.load(q_ptr + head + rows[:, None] * D + cols[None, :], mask=rows[:, None] < N, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    if CAUSAL:
        # left of the diagonal: keys [0, start_m), all visible and all < N
        acc, l_i, m_i = key_band(acc, l_i, m_i, q, k_ptr, v_ptr, head, rows, 0, start_m, N, qk_scale,
                                 D, BLOCK_N, False, False)
        acc, l_i, m_i = key_band(acc, l_i, m_i, q, k_ptr, v_ptr, head, rows, start_m,
                                 tl.minimum(N, start_m + BLOCK_M), N, qk_scale, D, BLOCK_N, True, True)
    else:
        full = (N // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = key_band(acc, l_i, m_i, q, k_ptr, v_ptr, head, rows, 0, full, N, qk_scale,
                                 D, BLOCK_N, False, False)
        acc, l_i, m_i = key_band(acc, l_i, m_i, q, k_ptr, v_ptr, head, rows, full, N, N, qk_scale,
                                 D, BLOCK_N, True, False)
    out = acc / l_i[:, None]
    tl.store(o_ptr + head + rows[:, None] * D + cols[None, :], out.to(tl.float16), mask=rows[:, None] < N)


def solve(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, O: torch.Tensor, B: int, H: int, N: int, D: int,
          causal: int) -> None:
    qk_scale = 1.4426950408889634 / math.sqrt(D)  # log2(e) / sqrt(D): exp2 in the kernel

    def grid(meta):
        return (triton.cdiv(N, meta["BLOCK_M"]), B * H)

    attn_fwd[grid](Q, K, V, O, N, qk_scale, CAUSAL=bool(causal), D=D)
