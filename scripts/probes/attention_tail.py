"""Does the last round of work tiles cost a whole round? flash_attn at N = 1024, non-causal, with
B × H = 495, 512 and 528 (3,960, 4,096 and 4,224 tiles of 128 query rows: 30, 31.03 and 32 rounds on
132 SMs), the answer and cuDNN, GPU machine:

    python3 scripts/probes/attention_tail.py ANSWER.so [--rounds 7] [--heads 4,8,16]

ANSWER.so: a flash_attn model answer built as for attention_ncu.py. If the time grows with the
tiles, 512 lands at 4,096 / 3,960 = 1.034 of 495's time; if the 4 tiles of the last round cost a
round, at 32 / 30 = 1.067, as 528 does (the flash_attn README, "The next steps"). Each time: 10
back-to-back calls between CUDA events, the answer and cuDNN interleaved, the median of the rounds.
`--heads` times other head counts instead (B = 1, H each of them; e.g. 4,8,16: 32, 64 and 128
tiles, grids of one CTA a tile, where flash_attn step 8's first form of the claim left CTAs idle:
its README, "Step 8"), each against the first. Not the judge: a look inside.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
from attention_ncu import pair  # this folder's: the same inputs and calls
from gemm_ncu import load_solve

SHAPES = [(15, 33), (16, 32), (16, 33)]  # (B, H): B·H = 495, 512, 528
N, CALLS = 1024, 10


def per_call_ms(fn) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(CALLS):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / CALLS


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="attention_tail.py", description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("answer", type=Path, help="a built flash_attn model answer (.so)")
    ap.add_argument("--rounds", type=int, default=7, help="timed rounds (median), at least 3")
    ap.add_argument("--heads", help="comma-separated head counts (B = 1) instead of B·H = 495, 512, 528")
    a = ap.parse_args(argv)
    if a.rounds < 3:
        ap.error("--rounds must be at least 3")
    shapes = SHAPES
    if a.heads is not None:
        try:
            shapes = [(1, int(h)) for h in a.heads.split(",")]
        except ValueError:
            ap.error(f"--heads {a.heads}: whole numbers separated by commas")
        if len(shapes) < 2 or not all(1 <= h <= 4096 for _, h in shapes):
            ap.error(f"--heads {a.heads}: two or more, each from 1 to 4096")
    if not a.answer.is_file():
        ap.error(f"{a.answer} is not a built model answer")
    solve = load_solve(str(a.answer), 4, 5, "attention_tail.py")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for d in (64, 128):
        times: dict[str, list[float]] = {}
        for b, h in shapes:
            cudnn, answer = pair(solve, b, h, N, d, 0)
            for fn in (cudnn, answer, cudnn, answer):  # warm-up
                fn()
            runs: dict[str, list[float]] = {"answer": [], "cuDNN": []}
            for _ in range(a.rounds):
                runs["answer"].append(per_call_ms(answer))
                runs["cuDNN"].append(per_call_ms(cudnn))
            for who, ts in runs.items():
                times.setdefault(who, []).append(statistics.median(ts))
        tiles = [b * h * N // 128 for b, h in shapes]
        first = shapes[0][0] * shapes[0][1]
        for who, ts in times.items():
            cells = ", ".join(f"B·H={b * h} ({n / sms:.2f} rounds) {t:.4f} ms" for (b, h), n, t in zip(shapes, tiles, ts))
            ratios = ", ".join(f"{b * h}/{first} {t / ts[0]:.4f} (tiles {n / tiles[0]:.4f}, whole rounds "
                               f"{-(-n // sms) / -(-tiles[0] // sms):.4f})"
                               for (b, h), n, t in zip(shapes[1:], tiles[1:], ts[1:]))
            print(f"{who} D={d}: {cells}; {ratios}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
