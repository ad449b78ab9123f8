"""Time flash_attn solution libraries against FA2 and cuDNN (SDPA) on the problem's benchmark shapes.

    nvcc -O3 -gencode arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC FILE.cu -o FILE.so
    python3 scripts/probes/flash_attn_variants.py A.so B.so ...

Each shape: outputs checked against SDPA's math backend in fp32 (atol 2e-3 + rtol 5e-3, the
problem's tolerance), then CUDA-event times after a 256 MB L2 flush, rounds interleaved across
implementations; the median per implementation. Not the judge: it only picks between variants.
"""
import ctypes
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

SHAPES = [(16, 32, 1024, 64), (16, 32, 1024, 128), (4, 32, 4096, 64), (4, 32, 4096, 128),
          (1, 32, 16384, 64), (1, 32, 16384, 128)]
RAGGED = [(1, 1, 1, 64), (1, 2, 17, 64), (2, 3, 127, 128), (1, 2, 129, 64), (2, 1, 129, 128),
          (1, 3, 1531, 128), (2, 2, 4099, 64), (3, 5, 700, 64)]  # correctness only
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
libs = {}
for path in sys.argv[1:]:
    f = ctypes.CDLL(path).solve
    f.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_int] * 5
    libs[path.rsplit("/", 1)[-1]] = f


def sdpa(backend, q, k, v, causal):
    with sdpa_kernel(backend):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def timed(fn, n=15):
    ts = []
    for _ in range(n):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)


for B, H, N, D in RAGGED:
    for causal in (0, 1):
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.half) for _ in range(3))
        q *= 3
        v.uniform_(0, 2)
        ref = sdpa(SDPBackend.MATH, q.float(), k.float(), v.float(), bool(causal))
        for name, f in libs.items():
            o = torch.full_like(q, float("nan"))
            f(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), B, H, N, D, causal)
            torch.cuda.synchronize()
            bad = int(((o.float() - ref).abs() > 2e-3 + 5e-3 * ref.abs()).sum()) + int(o.isnan().sum())
            print(f"{'WRONG' if bad else 'ok'} {name} B={B} H={H} N={N} D={D} causal={causal}" + (f": {bad} bad" if bad else ""))

for B, H, N, D in SHAPES:
    for causal in (0, 1):
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.half) for _ in range(3))
        q *= 3
        v.uniform_(0, 2)
        o = torch.empty_like(q)
        ref = sdpa(SDPBackend.MATH, q.float(), k.float(), v.float(), bool(causal)) if N <= 4096 else None
        fns = {"FA2": lambda: sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, bool(causal)),
               "cuDNN": lambda: sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, bool(causal))}
        for name, f in libs.items():
            fns[name] = (lambda f=f: f(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), B, H, N, D, causal))
            o.fill_(float("nan"))
            f(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), B, H, N, D, causal)
            torch.cuda.synchronize()
            exp = ref if ref is not None else fns["FA2"]().float()
            err = (o.float() - exp).abs() - (2e-3 + 5e-3 * exp.abs()) * (1 if ref is not None else 2)
            bad = int((err > 0).sum()) + int(o.isnan().sum())
            if bad:
                print(f"WRONG {name} B={B} H={H} N={N} D={D} causal={causal}: {bad} bad, max err {err.max().item():.3g}")
        res = {name: [] for name in fns}
        for _ in range(3):
            for name, fn in fns.items():
                res[name].append(timed(fn))
        flops = 4 * B * H * N * N * D * (2 - causal) / 2
        fa2, cudnn = statistics.median(res["FA2"]), statistics.median(res["cuDNN"])
        line = f"N={N:5} D={D:3} c={causal}  FA2 {flops / fa2 / 1e9:5.0f}  cuDNN {flops / cudnn / 1e9:5.0f} |"
        for name in libs:
            t = statistics.median(res[name])
            line += f" {name} {flops / t / 1e9:5.0f} ({fa2 / t:.2f}x)"
        print(line, flush=True)
