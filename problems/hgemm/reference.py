"""hgemm: C = A @ B (fp16 in, fp32 accumulate, fp16 out)."""
import torch


def reference(A: torch.Tensor, B: torch.Tensor, M: int, N: int, K: int) -> torch.Tensor:
    # float32 (no TF32: torch's default matmul precision is "highest"), or float64 when given.
    dt = torch.promote_types(A.dtype, torch.float32)
    return A.to(dt) @ B.to(dt)


def baseline(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, M: int, N: int, K: int) -> None:
    torch.matmul(A, B, out=C)  # cuBLAS
