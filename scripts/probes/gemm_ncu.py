"""What cuBLAS runs, and how it and a model answer use the SM, on hgemm's and fp8_gemm's benchmark
shapes (issue 21). Run under Nsight Compute:

    ncu --profile-from-start off --clock-control none --section SpeedOfLight --section LaunchStats \
        --section Occupancy --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
        python3 scripts/probes/gemm_ncu.py HGEMM.so FP8.so

HGEMM.so / FP8.so: a model answer built with
`nvcc -O3 -gencode arch=compute_90a,code=sm_90a -shared -Xcompiler -fPIC FILE.cu -o FILE.so -lcuda`.
Inputs are made before the profiler starts; then, per shape, one cuBLAS call and one call of the
answer, each after two unprofiled warm-up calls, so ncu sees exactly the kernels of those calls
(cuBLAS's name says its tile, cluster and schedule). Not the judge: a look inside.
"""
import ctypes
import sys
from pathlib import Path

import torch

HGEMM = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
FP8 = [(128, 28672, 8192), (4096, 4096, 4096), (8192, 8192, 8192)]


def profiled(fn) -> None:
    fn(); fn(); torch.cuda.synchronize()
    prof = torch.cuda.cudart()
    prof.cudaProfilerStart(); fn(); torch.cuda.synchronize(); prof.cudaProfilerStop()


def load_solve(path: str, pointers: int, ints: int, prog: str):
    """A built answer's `solve(pointers..., ints...)`, or one line and exit 2 if the file is not one."""
    try:
        solve = ctypes.CDLL(path).solve
    except (OSError, AttributeError) as e:
        print(f"{prog}: {path} is not a built model answer: {str(e).splitlines()[0]}", file=sys.stderr)
        sys.exit(2)
    solve.argtypes = [ctypes.c_void_p] * pointers + [ctypes.c_int] * ints
    return solve


def main() -> None:
    if len(sys.argv) != 3 or not all(Path(a).is_file() for a in sys.argv[1:]):
        print("usage: gemm_ncu.py HGEMM.so FP8.so (two built model answers)", file=sys.stderr)
        sys.exit(2)
    hg = load_solve(sys.argv[1], 3, 3, "gemm_ncu.py")
    f8 = load_solve(sys.argv[2], 5, 3, "gemm_ncu.py")
    for m, n, k in HGEMM:
        a = torch.randn(m, k, device="cuda", dtype=torch.half) * k ** -0.25
        b = torch.randn(k, n, device="cuda", dtype=torch.half) * k ** -0.25
        c = torch.empty(m, n, device="cuda", dtype=torch.half)
        print(f"hgemm {m}x{n}x{k}: cuBLAS, then the answer", flush=True)
        profiled(lambda: torch.mm(a, b, out=c))
        profiled(lambda: hg(a.data_ptr(), b.data_ptr(), c.data_ptr(), m, n, k))
    for m, n, k in FP8:
        a = (torch.randn(m, k, device="cuda") * 16).to(torch.float8_e4m3fn)
        b = (torch.randn(n, k, device="cuda") * 16).to(torch.float8_e4m3fn)
        sa, sb = torch.tensor([0.01], device="cuda"), torch.tensor([0.01], device="cuda")
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        print(f"fp8_gemm {m}x{n}x{k}: cuBLAS, then the answer", flush=True)
        profiled(lambda: torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=False, out=c))
        profiled(lambda: f8(a.data_ptr(), b.data_ptr(), sa.data_ptr(), sb.data_ptr(), c.data_ptr(), m, n, k))


if __name__ == "__main__":
    main()
