"""Built flash_attn answers against fp32 attention on the shapes where how work tiles reach the CTAs
matters (issue 20's step 8 claims them from a global counter), on a GPU:

    python3 scripts/probes/flash_attn_check.py ANSWER.so [ANSWER.so ...] [--small]
    compute-sanitizer --tool memcheck python3 scripts/probes/flash_attn_check.py ANSWER.so --small

ANSWER.so: a model answer built as for attention_ncu.py. Each shape runs twice in a row through the
whole list (a claiming kernel's counters must be back at zero after every launch), O filled with NaN
before each call, checked against SDPA's math in fp32 with the problem's tolerance (atol 2e-3,
rtol 5e-3). The shapes: ragged N, grids below, at and above 132 SMs' rounds (1 to 133 heads, N = 1
to 4,099, D = 64 and 128), and causal ones (the plan's path). `--small`: five small shapes, for
compute-sanitizer. Prints one line a call and the count of wrong calls; exit 1 if any. Not the judge.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import probe_args  # this folder's
from gemm_ncu import load_solve  # this folder's: a built answer's solve(), or one line and exit 2

PROBE = "flash_attn_check.py"
# (B, H, N, D, causal)
FULL = [(1, 17, 1000, 64, 0), (1, 5, 1000, 128, 0), (4, 35, 1000, 128, 0), (2, 3, 1000, 64, 0), (1, 133, 1000, 64, 0),
        (16, 32, 1024, 128, 0), (16, 32, 1024, 64, 0), (1, 3, 1531, 128, 1), (2, 2, 4099, 64, 0), (1, 1, 17, 128, 0),
        (1, 1, 1, 64, 0), (4, 32, 1024, 128, 1), (3, 50, 2048, 128, 0)]
SMALL = [(1, 40, 1000, 128, 0), (1, 35, 1000, 64, 0), (2, 3, 1000, 64, 0), (1, 3, 1531, 128, 1), (1, 1, 17, 128, 0)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=PROBE, description=__doc__.splitlines()[0])
    ap.add_argument("answers", nargs="+", type=Path, help="built flash_attn model answers (.so)")
    ap.add_argument("--small", action="store_true", help="five small shapes (for compute-sanitizer)")
    a = ap.parse_args(argv)
    solves = {}
    for path in a.answers:
        if not path.is_file():
            probe_args.fail(PROBE, f"no such file: {path}")
        solves[path.name] = load_solve(str(path.resolve()), 4, 5, PROBE)
    torch = probe_args.cuda_torch(PROBE)
    import torch.nn.functional as F

    wrong = 0
    for name, solve in solves.items():
        for b, h, n, d, causal in (SMALL if a.small else FULL) * 2:
            g = torch.Generator(device="cuda").manual_seed(b * 1000 + h * 10 + n + d)
            q = (torch.randn(b, h, n, d, device="cuda", generator=g) * 3).half()
            k = torch.randn(b, h, n, d, device="cuda", generator=g).half()
            v = (torch.rand(b, h, n, d, device="cuda", generator=g) * 2).half()
            o = torch.full_like(q, float("nan"))
            solve(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, h, n, d, causal)
            torch.cuda.synchronize()
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=bool(causal))
            err = (o.float() - ref).abs()
            ok = bool(torch.isfinite(o).all()) and bool((err <= 2e-3 + 5e-3 * ref.abs()).all())
            wrong += not ok
            print(f"{name} B={b},H={h},N={n},D={d},causal={causal}: max error {err.max().item():.2e} "
                  f"{'ok' if ok else 'WRONG'}", flush=True)
    print(f"wrong calls: {wrong}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
