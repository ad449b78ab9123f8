"""relu: Y = max(X, 0)."""
import torch


def reference(X: torch.Tensor, n: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    return torch.relu(X.to(dt))


def baseline(X: torch.Tensor, Y: torch.Tensor, n: int) -> None:
    torch.clamp_min(X, 0, out=Y)  # torch.relu has no out=; clamp_min is the same op, in place
