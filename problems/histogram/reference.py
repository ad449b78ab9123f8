"""histogram: counts[b] = #{i : X[i] == b} for b in [0, 256)."""
import torch

BINS = 256


def reference(X: torch.Tensor, n: int) -> torch.Tensor:
    # Integer counting: no floating point, so no promotion. bincount returns int64; the judge
    # compares it exactly with the int32 output.
    return torch.bincount(X.long(), minlength=BINS)


def baseline(X: torch.Tensor, counts: torch.Tensor, n: int) -> torch.Tensor:
    # Returned, not copied into counts (bincount has no out=, and an extra copy would slow it).
    return torch.bincount(X, minlength=BINS)
