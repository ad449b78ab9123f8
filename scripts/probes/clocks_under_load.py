"""Whether a model answer that trails its library baseline loses cycles or clock rate (issues 20, 21).

Nsight Compute, clocks not locked, gives each kernel's elapsed cycles and the SM clock it ran at; one
call each cannot tell a kernel that needs more cycles from one the power limit runs slower. This
holds each call back-to-back for a window of seconds, the baseline and the answer in turn (A B B A
...: drift cancels), and samples the SM clock and board power through NVML in a thread meanwhile:

    python3 scripts/probes/clocks_under_load.py --hgemm HG.so --fp8 FP8.so --attn FA.so [--window 2] [--rounds 2]

Each .so: a model answer built with
`nvcc -O3 -gencode arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC FILE.cu -o FILE.so -lcuda`.
Per window: the median ms per call (CUDA events around each call), the mean SM clock and power while
it ran, and their product, kilocycles per call. Not the judge (no L2 flush, the same inputs): a
look at the clocks.
"""
import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import attention_ncu  # this folder's
import torch
from gemm_ncu import load_solve


class Sampler(threading.Thread):
    """SM clock (MHz) and power (W) every 10 ms until stopped."""

    def __init__(self, read) -> None:
        super().__init__(daemon=True)
        self.read, self.clocks, self.watts, self.halt = read, [], [], threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            mhz, watts = self.read()
            self.clocks.append(mhz)
            self.watts.append(watts)
            time.sleep(0.01)


def window(fn, seconds: float, read) -> tuple[float, float, float]:
    """(median ms per call, mean SM MHz, mean W) of back-to-back calls for `seconds`."""
    fn(); torch.cuda.synchronize()
    sampler = Sampler(read)
    sampler.start()
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end:
        pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(20)]
        for start, stop in pairs:
            start.record(); fn(); stop.record()
        torch.cuda.synchronize()
        times += [s.elapsed_time(e) for s, e in pairs]
    sampler.halt.set(); sampler.join()
    return statistics.median(times), statistics.fmean(sampler.clocks), statistics.fmean(sampler.watts)


def gemm_pairs(hg, f8) -> list[tuple[str, object, object]]:
    pairs = []
    if hg:
        m = n = k = 8192
        a = torch.randn(m, k, device="cuda", dtype=torch.half) * k ** -0.25
        b = torch.randn(k, n, device="cuda", dtype=torch.half) * k ** -0.25
        c = torch.empty(m, n, device="cuda", dtype=torch.half)
        pairs.append(("hgemm 8192^3: cuBLAS / answer", lambda: torch.mm(a, b, out=c),
                      lambda: hg(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k)))
    if f8:
        m = n = k = 8192
        a8 = (torch.randn(m, k, device="cuda") * 16).to(torch.float8_e4m3fn)
        b8 = (torch.randn(n, k, device="cuda") * 16).to(torch.float8_e4m3fn)
        sa, sb = torch.tensor([0.01], device="cuda"), torch.tensor([0.01], device="cuda")
        c8 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        pairs.append(("fp8_gemm 8192^3: cuBLAS / answer",
                      lambda: torch._scaled_mm(a8, b8.t(), sa, sb, out_dtype=torch.bfloat16, out=c8),
                      lambda: f8(a8.data_ptr(), b8.data_ptr(), sa.data_ptr(), sb.data_ptr(), c8.data_ptr(), m, n, k)))
    return pairs


def attn_pair(fa) -> tuple[str, object, object]:
    cudnn, answer = attention_ncu.pair(fa, 16, 32, 1024, 128, 0)
    return ("flash_attn B=16,H=32,N=1024,D=128: cuDNN / answer", cudnn, answer)


def main() -> None:
    ap = argparse.ArgumentParser(prog="clocks_under_load.py", description=__doc__.splitlines()[0])
    ap.add_argument("--hgemm"); ap.add_argument("--fp8"); ap.add_argument("--attn")
    ap.add_argument("--window", type=float, default=2.0, help="seconds per window (default 2)")
    ap.add_argument("--rounds", type=int, default=2, help="A B B A rounds (default 2)")
    args = ap.parse_args()
    given = [p for p in (args.hgemm, args.fp8, args.attn) if p]
    if not given:
        ap.error("give at least one of --hgemm, --fp8, --attn")
    for p in given:
        if not Path(p).is_file():
            ap.error(f"no such file: {p}")
    if args.window <= 0 or args.rounds < 1:
        ap.error("--window must be > 0 and --rounds >= 1")
    prog = "clocks_under_load.py"
    hg, f8, fa = (args.hgemm and load_solve(args.hgemm, 3, 3, prog), args.fp8 and load_solve(args.fp8, 5, 3, prog),
                  args.attn and load_solve(args.attn, 4, 5, prog))
    import pynvml  # here: bad input above needs neither NVML nor CUDA
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def read() -> tuple[float, float]:
        return (pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                pynvml.nvmlDeviceGetPowerUsage(handle) / 1000)

    pairs = gemm_pairs(hg, f8) + ([attn_pair(fa)] if fa else [])
    print("| pair | window | who | ms/call | SM MHz | W | kcycles/call |")
    print("|---|---|---|---|---|---|---|")
    for name, base, answer in pairs:
        sums = {"baseline": [], "answer": []}
        for r in range(args.rounds):
            for i, who in enumerate(("baseline", "answer", "answer", "baseline")):
                ms, mhz, watts = window(base if who == "baseline" else answer, args.window, read)
                sums[who].append((ms, mhz, watts))
                print(f"| {name} | {4 * r + i + 1} | {who} | {ms:.4f} | {mhz:.0f} | {watts:.0f} | {ms * mhz:.1f} |", flush=True)
        (bm, bc, _), (am, ac, _) = ([statistics.fmean(x) for x in zip(*sums[w])] for w in ("baseline", "answer"))
        print(f"| {name} | mean | answer / baseline | {am / bm:.4f} | {ac / bc:.4f} | | {am * ac / (bm * bc):.4f} |",
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
