"""layer_norm: Y = (X - mean) / sqrt(var + 1e-5) · weight + bias over the last dimension."""
import torch

EPS = 1e-5


def reference(X: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    return torch.nn.functional.layer_norm(X.to(dt), (cols,), weight.to(dt), bias.to(dt), eps=EPS)


def baseline(X: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, Y: torch.Tensor,
             rows: int, cols: int) -> torch.Tensor:
    # has no out=: returns the output (fp16, fp32 statistics inside)
    return torch.nn.functional.layer_norm(X, (cols,), weight, bias, eps=EPS)
