"""gelu: Y = 0.5 * X * (1 + erf(X / sqrt(2))), the exact (erf) form."""
import torch


def reference(X: torch.Tensor, n: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    return torch.nn.functional.gelu(X.to(dt), approximate="none")


def baseline(X: torch.Tensor, Y: torch.Tensor, n: int) -> torch.Tensor:
    return torch.nn.functional.gelu(X, approximate="none")  # has no out=: returns the output
