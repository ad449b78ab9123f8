"""SDPA's backends on attention_large_d's benchmark shapes (issue 20: "report cuDNN's time next to it
where cuDNN supports the shape"), on a GPU machine:

    python3 scripts/measure/attention_backends.py [--calls 50] > out.md

The problem's baseline is SDPA's memory-efficient backend alone (problems/attention_large_d:
FlashAttention-2 has no kernel for D > 256); this times cuDNN's attention and the memory-efficient
backend side by side, each forced with `torch.nn.attention.sdpa_kernel`, on the problem's own
inputs (judge.problem.workloads.fill_inputs under a fixed secret), so that the judge's model answers
can be read against cuDNN where it runs. Each backend: 5 warm-up calls, then CALLS calls, each
timed alone with CUDA events after an L2 flush (a read of 2 × L2) outside the events, the GPU
resting as long as it was busy after each (docs/timing.md's rest); the median. A backend that
refuses a shape reads `n/a (why)`. Not the judge: its own medians are in reference_solutions/README.md.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def time_backend(torch, backend, q, k, v, causal: bool, calls: int, flush) -> float:
    from torch.nn.attention import sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    with sdpa_kernel([backend]):
        for _ in range(5):
            sdpa(q, k, v, is_causal=causal)
        torch.cuda.synchronize()
        times = []
        for _ in range(calls):
            flush.sum()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            sdpa(q, k, v, is_causal=causal)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
            times.append(ms)
            time.sleep(ms / 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()

    import torch
    from torch.nn.attention import SDPBackend

    from judge.problem import spec, workloads

    p = spec.load_problem(ROOT / "problems" / "attention_large_d")
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = torch.ones(max(2 * l2, 64 << 20) // 4, device="cuda")
    backends = [("cuDNN attention", SDPBackend.CUDNN_ATTENTION), ("memory-efficient", SDPBackend.EFFICIENT_ATTENTION)]
    print(f"{torch.cuda.get_device_name(0)}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"{args.calls} calls per backend and shape\n")
    print("| shape | " + " | ".join(f"{name} ms" for name, _ in backends) + " |")
    print("|---|" + "---|" * len(backends))
    for w in p.spec.benchmarks:
        bufs = {n: torch.empty(p.shape_of(n, w), dtype=torch.float16, device="cuda") for n in ("Q", "K", "V")}
        workloads.fill_inputs(p, w, bufs, 1, "backends")
        cells = []
        for _, backend in backends:
            try:
                ms = time_backend(torch, backend, bufs["Q"], bufs["K"], bufs["V"], bool(w["causal"]), args.calls, flush)
                cells.append(f"{ms:.4f}")
            except RuntimeError as e:  # the backend refuses the shape
                cells.append(f"n/a ({str(e).splitlines()[0][:80]})")
        print(f"| {spec.workload_id(w)} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
