"""rope: rotary position embedding, "rotate half" (GPT-NeoX / LLaMA) pairing.

With h = dim/2 and t the token (row of the cos/sin tables), for i < h:
    Y[t, :, i]     = X[t, :, i] · cos[t, i] - X[t, :, i + h] · sin[t, i]
    Y[t, :, i + h] = X[t, :, i + h] · cos[t, i] + X[t, :, i] · sin[t, i]
"""
import torch

CHUNK_ELEMENTS = 1 << 26  # widen at most 2^26 elements of X at a time


def reference(X: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
              tokens: int, heads: int, dim: int) -> torch.Tensor:
    dt = torch.promote_types(X.dtype, torch.float32)
    h = dim // 2
    Y = torch.empty(X.shape, dtype=dt, device=X.device)
    step = max(1, CHUNK_ELEMENTS // (heads * dim))
    for t0 in range(0, tokens, step):  # chunked: the largest shape is 1 GiB per float32 temporary
        x = X[t0:t0 + step].to(dt)
        c = cos[t0:t0 + step, None, :].to(dt)
        s = sin[t0:t0 + step, None, :].to(dt)
        x1, x2 = x[..., :h], x[..., h:]
        Y[t0:t0 + step, :, :h] = x1 * c - x2 * s
        Y[t0:t0 + step, :, h:] = x2 * c + x1 * s
    return Y


def baseline(X: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, Y: torch.Tensor,
             tokens: int, heads: int, dim: int) -> None:
    # Plain torch, fp32 math (bf16 × fp32 promotes to fp32), written into Y's two halves with
    # one fp32 temporary per half: x1·cos (fp32), then addcmul rounds (x1·cos - x2·sin) once
    # to bf16 straight into Y. Four kernels; no torch op fuses RoPE.
    h = dim // 2
    c, s = cos[:, None, :], sin[:, None, :]
    x1, x2 = X[..., :h], X[..., h:]
    torch.addcmul(x1 * c, x2, s, value=-1, out=Y[..., :h])
    torch.addcmul(x2 * c, x1, s, out=Y[..., h:])
