# judge: rms_norm
#
# rms_norm, step 1 (Triton): one program per row; Σx² in fp32 over chunks, then the scaled write.
#
# Technique: the row is read in chunks of BLOCK halves, each widened to fp32 before squaring, so
# Σx² (about 65536 for 4096 columns of N(0, 4²)) never meets half's 65504 limit (the problem's
# wrong/ controls sum in half and overflow). rstd = 1 / sqrt(Σx² / cols + 1e-6); the second pass
# reads the row and the weight again and writes x · rstd · w, rounded once to half. Two reads of
# X and one write: 6 bytes an element, where a row held in registers (the CUDA ladder's 02) needs 4.
# Checked on CPU by `judge test ... --cpu` (tests/test_triton_answers.py). On an H200, 2026-11-28
# (`judge verify --table`): 4,078 / 3,022 / 3,744 GB/s (65536×4096 / 16384² /
# 262144×1024), 1.15× F.rms_norm.
import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * cols
    y_row = y_ptr + row * cols
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_row + offs, mask=offs < cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        mask = offs < cols
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + offs, (x * rstd * w).to(tl.float16), mask=mask)


def solve(X: torch.Tensor, weight: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    block = min(triton.next_power_of_2(cols), 4096)
    rms_norm_kernel[(rows,)](X, weight, Y, cols, 1e-6, BLOCK=block, num_warps=8 if block >= 2048 else 4)
