# judge: rms_norm
#
# rms_norm, step 2 (Triton): the whole row in registers: the row is read once.
#
# Technique: step 1 reads each row twice (once for Σx², once to write), 6 bytes moved per element
# where 4 suffice. Up to 16384 columns a row fits in one program's registers: BLOCK =
# next_power_of_2(cols) lanes over BLOCK / 512 warps (4 to 32), 16 to 32 fp32 values per thread.
# The row is loaded once and widened to fp32, Σx² is reduced across the program (never in half:
# the problem's wrong/ controls overflow 65504 there), and x · rstd · w is stored, rounded once to
# half. The weight (cols halves, read by every row) stays in L2. Longer rows fall back to step 1's
# chunked two-pass kernel, kept below.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 95.8–97.9% of the copy rate on every shape, 1.33×
# F.rms_norm.
import torch
import triton
import triton.language as tl

MAX_ROW = 16384  # columns held in registers at most


@triton.jit
def rms_norm_row(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + offs, (x * rstd * w).to(tl.float16), mask=mask)


@triton.jit
def rms_norm_chunks(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        mask = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * cols + offs, (x * rstd * w).to(tl.float16), mask=mask)


def solve(X: torch.Tensor, weight: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    block = triton.next_power_of_2(cols)
    if block <= MAX_ROW:
        rms_norm_row[(rows,)](X, weight, Y, cols, 1e-6, BLOCK=block, num_warps=min(32, max(4, block // 512)))
    else:
        rms_norm_chunks[(rows,)](X, weight, Y, cols, 1e-6, BLOCK=4096, num_warps=8)
