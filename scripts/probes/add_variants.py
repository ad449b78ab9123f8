"""Probe: time streaming-add variants against torch.add with an L2 flush before every call,
interleaved rounds, median of many calls; then ncu DRAM bytes for the embedding kernels."""
import ctypes
import statistics
import sys

import torch

lib = ctypes.CDLL(sys.argv[1])
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
def t(fn, reps=60):
    ts = []
    for _ in range(reps):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)
for n in (1 << 25, 1 << 28):
    a, b = torch.randn(n, device="cuda"), torch.randn(n, device="cuda"); c = torch.empty_like(a)
    fns = {"torch": lambda: torch.add(a, b, out=c)}
    for name in ("add_u2", "add_u4", "add_u8", "add_p4", "add_p2", "add_cs4"):
        f = getattr(lib, name); f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int64]
        fns[name] = (lambda f=f: f(a.data_ptr(), b.data_ptr(), c.data_ptr(), n))
    res = {k: [] for k in fns}
    for rnd in range(5):
        for k, f in fns.items():
            f(); res[k].append(t(f))
    ref = statistics.median(res["torch"])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"n=2^{n.bit_length()-1} {k:8} {m:.4f} ms  {12*n/m/1e6:7.1f} GB/s  speedup {ref/m:.3f}  spread {(max(v)-min(v))/m*100:.1f}%")
