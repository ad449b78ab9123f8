"""reduce_sum: out[0] = sum of X."""
import torch


def reference(X: torch.Tensor, n: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    return torch.sum(X.to(dt)).reshape(1)


def baseline(X: torch.Tensor, out: torch.Tensor, n: int) -> None:
    torch.sum(X, dim=0, keepdim=True, out=out)
