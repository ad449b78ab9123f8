"""sgemv: y = A · x with A [M, K] row-major, x [K], y [M], all fp32."""
import torch


def reference(A: torch.Tensor, x: torch.Tensor, M: int, K: int) -> torch.Tensor:
    # A matrix-vector product runs on CUDA cores (cuBLAS gemv): TF32 never applies, in float32 or
    # float64 alike.
    dt = torch.promote_types(A.dtype, torch.float32)
    return torch.mv(A.to(dt), x.to(dt))


def baseline(A: torch.Tensor, x: torch.Tensor, y: torch.Tensor, M: int, K: int) -> None:
    # cuBLAS sgemv, in place (no copy is timed). The flag is the default; it is pinned so that no
    # setting made elsewhere could route an fp32 product through TF32 tensor cores.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.mv(A, x, out=y)
