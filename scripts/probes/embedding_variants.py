import ctypes
import statistics
import sys

import torch

vocab = 32000
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
libs = {name: ctypes.CDLL(name).solve for name in sys.argv[1:]}
for f in libs.values(): f.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3
for n, dim in ((65536, 4096), (262144, 1024), (1048576, 128)):
    idx = torch.randint(0, vocab, (n,), device="cuda", dtype=torch.int32)
    table = torch.randn(vocab, dim, device="cuda", dtype=torch.half)
    out = torch.empty(n, dim, device="cuda", dtype=torch.half)
    declared = 2 * n * dim + 2 * min(n, vocab) * dim + 4 * n
    fns = {"torch": lambda: torch.nn.functional.embedding(idx, table)}
    for name, f in libs.items():
        fns[name] = (lambda f=f: f(idx.data_ptr(), table.data_ptr(), out.data_ptr(), n, vocab, dim))
    res = {k: [] for k in fns}
    for rnd in range(3):
        for k, fn in fns.items():
            ts = []
            for _ in range(40):
                flush.zero_()
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
            res[k].append(statistics.median(ts))
            if k != "torch":
                assert torch.equal(out, table[idx.long()]), k
    ref = statistics.median(res["torch"])
    for k, v in res.items():
        m = statistics.median(v)
        print(f"{n}x{dim} {k:28} {m:.4f} ms {declared/m/1e6:7.1f} GB/s declared  {100*declared/m/1e6/3040:5.1f}% of 3040  speedup {ref/m:.3f}")
