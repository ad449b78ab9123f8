"""What cuDNN's attention runs, and how it and a flash_attn model answer use the SM, on the shapes
where the answer trails it (issue 20). Run under Nsight Compute:

    ncu --profile-from-start off --clock-control none --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section ComputeWorkloadAnalysis --section WarpStateStats \
        python3 scripts/probes/attention_ncu.py ANSWER.so

ANSWER.so: a flash_attn model answer built with
`nvcc -O3 -gencode arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC FILE.cu -o FILE.so -lcuda`.
Inputs (the problem's distributions) are made before the profiler starts; then, per shape, one
cuDNN call (SDPA's cuDNN backend, as the problem's baseline) and one call of the answer, each after
two unprofiled warm-up calls, so ncu sees exactly the kernels of those calls. Not the judge: a look
inside.
"""
import sys
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from gemm_ncu import load_solve, profiled  # this folder's: the same way of profiling one call
from torch.nn.attention import SDPBackend, sdpa_kernel

# (B, H, N, D, causal): the four N = 1024 benchmark shapes and the two at N = 4096, D = 128
SHAPES = [(16, 32, 1024, 64, 0), (16, 32, 1024, 64, 1), (16, 32, 1024, 128, 0), (16, 32, 1024, 128, 1),
          (4, 32, 4096, 128, 0), (4, 32, 4096, 128, 1)]


def pair(solve, b: int, h: int, n: int, d: int, causal: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """cuDNN's call and the answer's on one shape's inputs (Q ~ 3·N(0, 1), K ~ N(0, 1), V ~ U[0, 2))."""
    q = torch.randn(b, h, n, d, device="cuda", dtype=torch.half) * 3
    k = torch.randn(b, h, n, d, device="cuda", dtype=torch.half)
    v = torch.rand(b, h, n, d, device="cuda", dtype=torch.half) * 2
    o = torch.empty_like(q)

    def cudnn() -> None:
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))

    return cudnn, lambda: solve(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, h, n, d, causal)


def main() -> None:
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_file():
        print("usage: attention_ncu.py ANSWER.so (a built flash_attn model answer)", file=sys.stderr)
        sys.exit(2)
    solve = load_solve(sys.argv[1], 4, 5, "attention_ncu.py")
    for b, h, n, d, causal in SHAPES:
        cudnn, answer = pair(solve, b, h, n, d, causal)
        print(f"flash_attn B={b},H={h},N={n},D={d},causal={causal}: cuDNN, then the answer", flush=True)
        profiled(cudnn)
        profiled(answer)


if __name__ == "__main__":
    main()
