"""Write-only, copy and read-only bandwidth through torch, for the embedding notes (a
write-heavy mix). Usage: python3 write_bandwidth.py"""
import statistics

import torch

flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
x = torch.empty(537 << 20, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
def t(fn):
    ts = []
    for _ in range(30):
        flush.zero_(); s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); e.synchronize(); ts.append(s.elapsed_time(e))
    return statistics.median(ts)
nb = x.numel()
print(f"write-only fill_  {nb / t(lambda: x.fill_(7)) / 1e6:7.1f} GB/s")
print(f"copy (r+w)        {2 * nb / t(lambda: y.copy_(x)) / 1e6:7.1f} GB/s")
xs = x.view(torch.float32)
print(f"read-only sum     {nb / t(lambda: xs.sum()) / 1e6:7.1f} GB/s  (float32 torch.sum)")
