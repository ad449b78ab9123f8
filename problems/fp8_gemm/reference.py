"""fp8_gemm: C = (A·scale_a) @ (B·scale_b)ᵀ with A [M, K] and B [N, K] in e4m3, fp32 accumulation, bf16 out."""
import torch


def reference(A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor,
              M: int, N: int, K: int) -> torch.Tensor:
    # float32 (float64 when the CI passes float64 inputs). The e4m3 values are multiplied as they
    # are (exact, even in TF32) and the product scaled once: (A·sa)(B·sb)ᵀ = sa·sb·(A·Bᵀ).
    dt = torch.promote_types(scale_a.dtype, torch.float32)
    return (A.to(dt) @ B.to(dt).T) * (scale_a.to(dt) * scale_b.to(dt))


def baseline(A: torch.Tensor, B: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, C: torch.Tensor,
             M: int, N: int, K: int) -> None:
    # cuBLAS's FP8 GEMM (sm_89 and newer) with its default fp32 accumulation (use_fast_accum=False),
    # in place. Bᵀ is a column-major [K, N] view, the layout it requires; it also requires K and N
    # to be multiples of 16, as every benchmark shape is.
    torch._scaled_mm(A, B.t(), scale_a, scale_b, out_dtype=torch.bfloat16, use_fast_accum=False, out=C)
