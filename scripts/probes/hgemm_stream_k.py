"""hgemm step 10's stream-K tail on shapes that split it: each call checked, and calls back to back.

    python3 scripts/probes/hgemm_stream_k.py LIB.so [--calls N] [--quick]

LIB.so: a library built from `reference_solutions/hgemm/10_stream_k_tail.cu` (`nvcc -O3 -std=c++17
-shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a 10_stream_k_tail.cu -o LIB.so`;
nothing is built here). For each shape it prints how many clusters share the tail
(`hgemm_stream_k_config`), then checks N calls, each on a C filled with NaN and synchronised, and
N calls back to back (the last one's C checked) against torch.mm in fp32, with the problem's
tolerance (rtol = atol = 2e-3). The calls back to back are the point: the tail's flags must be
back at 0 when a call ends (its finishers reset them), or the next call's finisher reads a
partial that is not there yet. `--quick`: the two ragged shapes only (under compute-sanitizer).
Exit 1 if any output is wrong; on bad input one line and exit 2.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import probe_args  # this folder's

# (M, N, K, why). On 66 resident clusters of 2 (an H100 or H200 SXM): 153 cluster tiles of 65 k-steps
# (2 rounds + 21 in ranges of ~20.7: a finisher adds 2-3 partials; rank 1 of the last cluster row
# past M; N and K ragged), 67 tiles of 64 (1 round + 1 in 4 pieces), and the two benchmark shapes
# with tails (256 = 3 · 66 + 58 and 1024 = 15 · 66 + 34 tiles). Step 10 splits a tail only where each
# cluster then runs at least 32 k-steps fewer (HG10_MIN_SAVED): 4096³ prints 0 clusters unless the
# library was built with -DHG10_MIN_SAVED=0.
SHAPES = [(4224, 2056, 4104, "ragged, 2 rounds + 21 tiles in ranges of ~20.7 k-steps"),
          (256, 17152, 4096, "1 round + 1 tile in 4 pieces"),
          (4096, 4096, 4096, "benchmark"),
          (8192, 8192, 8192, "benchmark")]


def load(path: Path) -> ctypes.CDLL:
    lib = probe_args.load_library(path, {"hgemm_stream_k_config": [ctypes.c_int] * 3}, "10_stream_k_tail.cu")
    lib.solve.argtypes, lib.solve.restype = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3, None
    return lib


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="hgemm_stream_k.py", description=__doc__.splitlines()[0])
    ap.add_argument("lib", metavar="LIB.so")
    ap.add_argument("--calls", type=int, default=3, help="calls checked one by one, and back to back, per shape (default 3)")
    ap.add_argument("--quick", action="store_true", help="the two ragged shapes only")
    args = ap.parse_args(argv)
    if not 1 <= args.calls <= 100:
        ap.exit(2, f"hgemm_stream_k.py: --calls {args.calls}: from 1 to 100\n")
    return args


def bad_count(torch, c, ref) -> tuple[int, float]:  # type: ignore[no-untyped-def]
    err = (c.float() - ref).abs()
    bad = int((err > 2e-3 + 2e-3 * ref.abs()).sum()) + int(c.isnan().sum())
    return bad, float(err.nan_to_num(float("inf")).max())


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        lib = load(Path(args.lib))
    except ValueError as e:
        probe_args.fail("hgemm_stream_k.py", str(e))
    torch = probe_args.cuda_torch("hgemm_stream_k.py")
    wrong = 0
    for m, n, k, why in SHAPES[:2] if args.quick else SHAPES:
        g = torch.Generator(device="cuda").manual_seed(m + n + k)
        a = (torch.randn(m, k, device="cuda", generator=g) * k**-0.25).half()
        b = (torch.randn(k, n, device="cuda", generator=g) * k**-0.25).half()
        ref = a.float() @ b.float()
        c = torch.empty(m, n, device="cuda", dtype=torch.half)

        def call() -> None:
            lib.solve(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k)

        results = []
        for _ in range(args.calls):
            c.fill_(float("nan"))
            call()
            torch.cuda.synchronize()
            results.append(bad_count(torch, c, ref))
        c.fill_(float("nan"))
        for _ in range(args.calls):
            call()
        torch.cuda.synchronize()
        results.append(bad_count(torch, c, ref))
        bad = sum(r[0] for r in results)
        wrong += bad > 0
        print(f"{m}x{n}x{k} ({why}): stream-K tail over {lib.hgemm_stream_k_config(m, n, k)} clusters; "
              f"{args.calls} calls + {args.calls} back to back, wrong outputs {bad}, "
              f"max error {max(r[1] for r in results):.2e}", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
