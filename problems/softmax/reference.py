"""softmax: Y = softmax(X, dim=-1) row by row."""
import torch


def reference(X: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    return torch.softmax(X.to(dt), dim=-1)


def baseline(X: torch.Tensor, Y: torch.Tensor, rows: int, cols: int) -> None:
    torch.softmax(X, dim=-1, out=Y)
