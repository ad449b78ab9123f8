# judge: softmax
#
# softmax, step 2 (Triton): the whole row in registers: one read, one write.
#
# Technique: step 1 reads every element twice (12 bytes moved per element where 8 suffice). Up to
# 32768 columns a row fits in one program's registers: BLOCK = next_power_of_2(cols) lanes, spread
# over up to 32 warps (32768 fp32 values over 1024 threads is 32 registers each), so the row is
# loaded once, its maximum and sum are reduced across the program, and exp(x - max) / sum is
# stored: 8 bytes per element, what a copy moves. Warps grow with the row (BLOCK / 256 warps, 4 to
# 32) so each thread holds 8 to 32 values. Longer rows, which would not fit, fall back to step 1's
# online two-pass kernel, kept below.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 97.5–99.6% of the copy rate on every shape, 3.13×
# torch.softmax.
import torch
import triton
import triton.language as tl

MAX_ROW = 32768  # columns held in registers at most


@triton.jit
def softmax_row(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offs, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def softmax_online(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        seen = m_new > float("-inf")
        s = s * tl.where(seen, tl.exp(m - m_new), 1.0) + tl.where(seen, tl.exp(x - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    inv = 1.0 / tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf"))
        tl.store(y_ptr + row * cols + offs, tl.exp(x - row_max) * inv, mask=offs < cols)


def solve(X: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    block = triton.next_power_of_2(cols)
    if block <= MAX_ROW:
        softmax_row[(rows,)](X, Y, cols, BLOCK=block, num_warps=min(32, max(4, block // 256)))
    else:
        softmax_online[(rows,)](X, Y, cols, BLOCK=2048, num_warps=8)
