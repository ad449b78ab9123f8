"""When each CTA of hgemm step 10's persistent kernel reaches each phase: a timeline of one call.

    python3 scripts/probes/hgemm_tail_trace.py [--out DIR] [--min-saved N] [--sk 0|1] [--calls N]

Writes a copy of `reference_solutions/hgemm/10_stream_k_tail.cu` with `%globaltimer` stamps (thread 0
of each CTA's first consumer warpgroup writes them to a device array), builds it with nvcc into DIR
(default /tmp/hgemm_tail_trace) with -DHG10_MIN_SAVED=N (default 0: the tail split at 4096³ too)
and -DHG10_SK, and runs 4096³ and 8192³: 20 warm-up calls, then three times N calls back to back
(default 3), the last call's stamps read. Prints, per stamp, how many CTAs wrote it and the min,
median and max in µs from the first CTA's start:

    dp_end       the full rounds' tiles done (SK builds only)
    piece1_end   the tail range's first piece done (its k-steps in acc)
    partial_out  its partial sums stored (the pieces that are not a tile's start)
    piece2_end   the second piece done (ranges with two)
    flag_seen    a finisher has seen its first partial's flag
    partials_in  a finisher has added every partial
    last_epi     the last tile's epilogue starts (every CTA with a tile to store)
    end          the CTA's stores are out

The stamps cost a few instructions each; the timeline is the build's, not step 10's to the
nanosecond. On bad input one line and exit 2.
"""
from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "reference_solutions" / "hgemm" / "10_stream_k_tail.cu"
STAMPS = ["start", "dp_end", "piece1_end", "partial_out", "piece2_end", "partials_in", "last_epi", "end",
          "flag_seen"]
SLOTS = 10  # stamps per CTA in the device array
MAX_CTAS = 1024


def stamp(k: int) -> str:
    return (f"if (wg == 1 && tid == 0) {{ unsigned long long t_; asm volatile(\"mov.u64 %0, %%globaltimer;\" "
            f": \"=l\"(t_)); if (blockIdx.x < {MAX_CTAS}) g_trace[blockIdx.x * {SLOTS} + {k}] = t_; }}")


# Where each stamp goes: (text before it, text after it, stamp, indent). Each before + after must occur
# in the source exactly once; the stamp's line goes between them.
STAMP_AT = [
    ("    // consumers: warpgroup 1 → rows m0 + [0, 64), warpgroup 2 → rows m0 + [64, 128)\n"
     "    setmaxnreg_inc<232>();\n", "", 0, 4),
    ("", "        int sk_lo, sk_hi;\n        sk_range(sk_lo, sk_hi);\n        if (sk_lo < sk_hi) {", 1, 8),
    ("", "            sk_range(sk_lo, sk_hi);\n            const int n1", 2, 12),
    ("                flag_due = sk_flag + cluster * CLUSTER * 2 + part;\n", "", 3, 16),
    ("                ++u;\n", "            }\n", 4, 16),
    ("                warpgroup_sync(wg);\n", "                const float4* p = slot(c);", 8, 16),
    ("", "            keep(m0, n0);\n        }\n    }\n", 5, 12),
    ("", "    if (have_out) {  // the last tile's epilogue: nothing left to overlap it with", 6, 4),
    ("                    if (lane == 0) bulk_wait_read<0>();\n#endif\n", "                    return;", 7, 20),
    ("store_chunk_last(c);\n    }\n#if HG8_TMA_STORE\n"
     "    if (lane == 0) bulk_wait_read<0>();  // the shared memory stays until every store has read it\n#endif\n",
     "#endif  // __CUDA_ARCH_FEAT_SM90_ALL", 7, 4),
]
KERNEL = "template <bool SK>\n__global__"  # the stamps' array goes before the persistent kernel
HOST = f"""
extern "C" int hgemm_trace(unsigned long long* host) {{
    return (int)cudaMemcpyFromSymbol(host, g_trace, sizeof(g_trace));
}}
extern "C" int hgemm_trace_clear() {{
    static unsigned long long zero[{MAX_CTAS * SLOTS}] = {{}};
    return (int)cudaMemcpyToSymbol(g_trace, zero, sizeof(zero));
}}
"""


def traced(src: str) -> str:
    """The source with its stamps; ValueError naming the first anchor that is not there exactly once."""
    for before, after, k, indent in [*STAMP_AT, (KERNEL, "", None, 0)]:
        if src.count(before + after) != 1:
            line = (before + after).strip().splitlines()[0]
            raise ValueError(f"the source no longer has this line exactly once: {line!r}")
        put = f"__device__ unsigned long long g_trace[{MAX_CTAS * SLOTS}];\n" if k is None else " " * indent + stamp(k) + "\n"
        src = src.replace(before + after, put + before if k is None else before + put + after)
    return src + HOST


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="hgemm_tail_trace.py", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/hgemm_tail_trace"), help="folder for the copy and its build")
    ap.add_argument("--min-saved", type=int, default=0, help="HG10_MIN_SAVED of the build (default 0)")
    ap.add_argument("--sk", type=int, choices=[0, 1], default=1, help="HG10_SK of the build (default 1)")
    ap.add_argument("--calls", type=int, default=3, help="calls back to back per read (default 3)")
    args = ap.parse_args(argv)
    if args.min_saved < 0:
        ap.exit(2, f"hgemm_tail_trace.py: --min-saved {args.min_saved}: 0 or more\n")
    if not 1 <= args.calls <= 100:
        ap.exit(2, f"hgemm_tail_trace.py: --calls {args.calls}: from 1 to 100\n")
    if args.out.exists() and not args.out.is_dir():
        ap.exit(2, f"hgemm_tail_trace.py: --out {args.out} is not a folder\n")
    return args


def timeline(rows: list[list[int]]) -> list[str]:
    t0 = min(r[0] for r in rows if r[0])
    lines = [f"  end to end   {(max(r[7] for r in rows) - t0) / 1e3:7.1f} us"]
    for k in (1, 2, 3, 4, 8, 5, 6, 7):
        v = [(r[k] - t0) / 1e3 for r in rows if r[k]]
        if v:
            lines.append(f"  {STAMPS[k]:12s} n={len(v):4d} min {min(v):7.1f} med {statistics.median(v):7.1f} "
                         f"max {max(v):7.1f}")
    return lines


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        src = traced(SOURCE.read_text())
    except ValueError as e:
        print(f"hgemm_tail_trace.py: {e}", file=sys.stderr)
        return 2
    import torch

    if shutil.which("nvcc") is None or not torch.cuda.is_available():
        print("hgemm_tail_trace.py: needs nvcc and a CUDA device (this probe runs on a GPU machine)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    cu, lib_path = args.out / "traced.cu", args.out / f"traced_sk{args.sk}_min{args.min_saved}.so"
    cu.write_text(src)
    subprocess.run(["nvcc", "-O3", "-std=c++17", "-shared", "-Xcompiler", "-fPIC", "-cudart", "shared",
                    "-DNVTX_DISABLE", f"-DHG10_SK={args.sk}", f"-DHG10_MIN_SAVED={args.min_saved}",
                    "-gencode", "arch=compute_90a,code=sm_90a", str(cu), "-o", str(lib_path), "-lcuda"], check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.solve.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_int] * 3
    for m in (4096, 8192):
        a, b = (torch.randn(m, m, device="cuda").half() for _ in range(2))
        c = torch.empty(m, m, device="cuda", dtype=torch.half)
        for _ in range(20):
            lib.solve(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, m, m)
        for rep in range(3):
            lib.hgemm_trace_clear()
            torch.cuda.synchronize()
            for _ in range(args.calls):
                lib.solve(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, m, m)
            torch.cuda.synchronize()
            buf = (ctypes.c_ulonglong * (MAX_CTAS * SLOTS))()
            lib.hgemm_trace(buf)
            rows = [[buf[i * SLOTS + k] for k in range(SLOTS)] for i in range(MAX_CTAS)]
            rows = [r for r in rows if r[0]]
            print(f"{lib_path.name} {m}^3, read {rep + 1} of 3 ({len(rows)} CTAs)")
            print("\n".join(timeline(rows)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
