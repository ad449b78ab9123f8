"""sgemm: C = A @ B in fp32 (fp32 in, fp32 accumulate, fp32 out), TF32 off."""
import torch


def reference(A: torch.Tensor, B: torch.Tensor, M: int, N: int, K: int) -> torch.Tensor:
    # float32 (float64 when the CI passes float64 inputs). TF32 is pinned off for the call:
    # a TF32 reference would be as wrong as the TF32 kernels this problem exists to reject.
    dt = torch.promote_types(A.dtype, torch.float32)
    tf32, precision = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        return A.to(dt) @ B.to(dt)
    finally:
        torch.set_float32_matmul_precision(precision)
        torch.backends.cuda.matmul.allow_tf32 = tf32


def baseline(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, M: int, N: int, K: int) -> None:
    # cuBLAS fp32 SGEMM on the CUDA cores: TF32 off (both switches; torch's default, pinned here
    # so the baseline is the fp32 kernel the candidate must match). Setting them costs < 1 µs.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.matmul(A, B, out=C)  # in place: no copy is timed
