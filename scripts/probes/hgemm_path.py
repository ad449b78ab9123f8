"""Which kernel hgemm step 9 or 10 (`reference_solutions/hgemm/09_one_wave.cu`, `10_stream_k_tail.cu`) takes for each benchmark shape.

    python3 scripts/probes/hgemm_path.py LIB.so

LIB.so: a library built from the file (`nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC
-gencode arch=compute_90a,code=sm_90a 09_one_wave.cu -o LIB.so`; nothing is built here). Prints one
line: the GPU, its SM count, the path of 2048³ / 4096³ / 8192³ (`hgemm_one_wave_config`: 4 or 2 =
the one-wave kernel with clusters of 4 or 2, 0 = step 8's persistent kernel, -1 = the fallback
kernel, -2 = nothing launched) and the resident cluster counts behind it (`hgemm_one_wave_resident`:
c4, c2 = the one-wave kernel's, c0 = step 8's). A library from step 10 also exports
`hgemm_stream_k_config`: how many clusters share the persistent kernel's stream-K tail (0 = none),
printed after the path. On bad input one line and exit 2.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import probe_args  # this folder's

SHAPES = [(2048, 2048, 2048), (4096, 4096, 4096), (8192, 8192, 8192)]
NAMES = {4: "one-wave, clusters of 4", 2: "one-wave, clusters of 2", 0: "step 8's persistent kernel",
         -1: "fallback", -2: "nothing launched"}


def load(path: Path) -> ctypes.CDLL:
    """The library with its two functions typed; ValueError with one line if it is not step 9's or 10's."""
    return probe_args.load_library(path, {"hgemm_one_wave_config": [ctypes.c_int] * 3,
                                          "hgemm_one_wave_resident": [ctypes.c_int]},
                                   "09_one_wave.cu or 10_stream_k_tail.cu")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("hgemm_path.py: usage: hgemm_path.py LIB.so (a library built from 09_one_wave.cu or 10_stream_k_tail.cu)", file=sys.stderr)
        return 2
    try:
        lib = load(Path(argv[0]))
    except ValueError as e:
        probe_args.fail("hgemm_path.py", str(e))
    torch = probe_args.cuda_torch("hgemm_path.py")
    stream_k = getattr(lib, "hgemm_stream_k_config", None)
    if stream_k is not None:
        stream_k.argtypes, stream_k.restype = [ctypes.c_int] * 3, ctypes.c_int
    props = torch.cuda.get_device_properties(0)
    parts = [props.name, f"{props.multi_processor_count} SMs"]
    for m, n, k in SHAPES:
        code = lib.hgemm_one_wave_config(m, n, k)
        part = f"{m}x{n}x{k}: {code} ({NAMES.get(code, 'unknown code')})"
        if stream_k is not None:
            part += f", stream-K tail over {stream_k(m, n, k)} clusters"
        parts.append(part)
    parts.append("resident clusters: " + ", ".join(f"c{c}={lib.hgemm_one_wave_resident(c)}" for c in (4, 2, 0)))
    print("; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
