# expected: WRONG_ANSWER — whole chunks only: each row is read and written in chunks of 1024 columns with no mask, stopping before a partial chunk, so the last cols % 1024 columns are left out of the sum and never written (at cols < 1024, nothing is)
import torch
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    full = cols // BLOCK * BLOCK
    acc = tl.zeros([BLOCK], tl.float32)
    for start in range(0, full, BLOCK):
        x = tl.load(x_ptr + row * cols + start + lanes).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / cols + eps)
    for start in range(0, full, BLOCK):
        x = tl.load(x_ptr + row * cols + start + lanes).to(tl.float32)
        w = tl.load(w_ptr + start + lanes).to(tl.float32)
        tl.store(y_ptr + row * cols + start + lanes, (x * rstd * w).to(tl.float16))


def solve(X: torch.Tensor, weight: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    rms_norm_kernel[(rows,)](X, weight, Y, cols, 1e-6, BLOCK=1024)
