"""flash_attn: O = softmax(Q·Kᵀ / sqrt(D) [+ causal mask]) · V over [B, H, N, D] tensors."""
import math

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SCORE_ELEMENTS = 1 << 28  # at most this many scores (1 GiB in float32) exist at once


def reference(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, B: int, H: int, N: int, D: int,
              causal: int) -> torch.Tensor:
    """Plain softmax attention in float32 (float64 when given float64), a group of (batch, head)
    pairs and a block of query rows at a time, so N = 16384 never holds B·H·N·N scores and N = 1024
    takes two batched products instead of B·H small ones (the judge re-checks timed calls with it)."""
    dt = torch.promote_types(Q.dtype, torch.float32)
    q, k, v = (t.reshape(B * H, N, D) for t in (Q, K, V))
    out = torch.empty((B * H, N, D), dtype=dt, device=Q.device)
    rows = max(1, min(N, SCORE_ELEMENTS // N))
    heads = max(1, min(B * H, SCORE_ELEMENTS // (rows * N)))
    scale = 1.0 / math.sqrt(D)
    for h0 in range(0, B * H, heads):
        h1 = min(B * H, h0 + heads)
        kh, vh = k[h0:h1].to(dt), v[h0:h1].to(dt)
        for r0 in range(0, N, rows):
            r1 = min(N, r0 + rows)
            s = torch.bmm(q[h0:h1, r0:r1].to(dt), kh.transpose(1, 2)) * scale
            if causal:  # key j is visible to query i iff j <= i
                i = torch.arange(r0, r1, device=s.device)[:, None]
                j = torch.arange(N, device=s.device)[None, :]
                s.masked_fill_(j > i, float("-inf"))
            out[h0:h1, r0:r1] = torch.bmm(torch.softmax(s, dim=-1), vh)
    return out.reshape(B, H, N, D)


# Baselines: each pins one SDPA backend, so an unsupported case raises instead of silently
# falling back to another kernel. They return O (the judge times the call).
def baseline_fa2(Q, K, V, O, B, H, N, D, causal):
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(Q, K, V, is_causal=bool(causal))


def baseline_cudnn(Q, K, V, O, B, H, N, D, causal):
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return F.scaled_dot_product_attention(Q, K, V, is_causal=bool(causal))
