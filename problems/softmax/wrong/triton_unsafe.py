# expected: WRONG_ANSWER — no max subtraction: exp(x) of logits X ~ 40·randn overflows float32 to Inf past x = 88.7, and Inf/Inf = NaN
import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        s += tl.exp(tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf")))
    total = tl.sum(s, axis=0)
    for start in range(0, cols, BLOCK):
        offs = start + lanes
        x = tl.load(x_ptr + row * cols + offs, mask=offs < cols, other=float("-inf"))
        tl.store(y_ptr + row * cols + offs, tl.exp(x) / total, mask=offs < cols)


def solve(X: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    softmax_kernel[(rows,)](X, Y, cols, BLOCK=min(triton.next_power_of_2(cols), 2048))
