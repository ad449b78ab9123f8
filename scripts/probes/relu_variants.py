import ctypes
import statistics
import sys

import torch

flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
libs = {name: ctypes.CDLL(name).solve for name in sys.argv[1:]}
for f in libs.values(): f.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int]
for n in (1 << 26, 1 << 29):
    x = torch.randn(n, device="cuda", dtype=torch.half); y = torch.empty_like(x)
    fns = {"torch": lambda: torch.clamp_min(x, 0)}
    for name, f in libs.items():
        fns[name] = (lambda f=f: f(x.data_ptr(), y.data_ptr(), n))
    res = {k: [] for k in fns}
    for rnd in range(3):
        for k, fn in fns.items():
            ts = []
            for _ in range(30):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
            res[k].append(statistics.median(ts))
    ref = statistics.median(res["torch"])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"n=2^{n.bit_length()-1} {k:24} {m:.4f} ms {4*n/m/1e6:7.1f} GB/s speedup {ref/m:.3f}")
