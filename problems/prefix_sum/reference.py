"""prefix_sum: inclusive scan, Y[i] = X[0] + ... + X[i] in int32 (wrap-around) arithmetic."""
import torch


def reference(X: torch.Tensor, n: int) -> torch.Tensor:
    # Integers: no floating point, so no promotion. Summed exactly in int64, then cast to int32,
    # which wraps modulo 2^32 like int32 addition on the GPU (with the problem's inputs nothing
    # ever wraps: |Y| stays far below 2^31).
    return torch.cumsum(X.to(torch.int64), dim=0).to(torch.int32)


def baseline(X: torch.Tensor, Y: torch.Tensor, n: int) -> None:
    # CUB's single-pass scan on the GPU, int32 in and out, in place: no copy is timed.
    torch.cumsum(X, dim=0, dtype=torch.int32, out=Y)
