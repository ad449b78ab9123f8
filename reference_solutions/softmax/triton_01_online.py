# judge: softmax
#
# softmax, step 1 (Triton): one program per row, an online (max, sum) pass, then a write pass.
#
# Technique: the row is read in chunks of BLOCK columns. Each lane keeps its own running maximum m
# and running sum s of exp(x - m); when a chunk raises a lane's maximum, its sum is rescaled by
# exp(m_old - m_new) first. After the last chunk the lanes are combined: the row's maximum M, and
# its sum as Σ s · exp(m - M). A second pass reads the row again and writes exp(x - M) / sum. Two
# reads and one write per element: 12 bytes, where a row that fits in registers (the CUDA ladder's
# 03) needs 8. Lanes that never saw a column keep m = -inf: their rescale factor and their terms
# are forced to 1 and 0, never exp(-inf - -inf) = NaN.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 3,932 / 2,772 / 3,118 GB/s (65536×4096 / 8192×32768 /
# 262144×1024), 2.40× torch.softmax.
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    lanes = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf"))
        m_new = tl.maximum(m, x)
        seen = m_new > float("-inf")
        alpha = tl.where(seen, tl.exp(m - m_new), 1.0)
        term = tl.where(seen, tl.exp(x - m_new), 0.0)
        s = s * alpha + term
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    inv = 1.0 / row_sum
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_row + offs, mask=offs < cols, other=float("-inf"))
        tl.store(y_row + offs, tl.exp(x - row_max) * inv, mask=offs < cols)


def solve(X: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    block = min(triton.next_power_of_2(cols), 2048)
    softmax_kernel[(rows,)](X, Y, cols, BLOCK=block, num_warps=8 if block >= 1024 else 4)
