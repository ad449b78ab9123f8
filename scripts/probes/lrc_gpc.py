"""Does the L2 request coalescer merge requests only from SMs of one GPC? (issue 21)

    ncu --profile-from-start off --clock-control none --metrics "$(python3 scripts/probes/fp8_coalescing.py metrics)" \\
        python3 scripts/probes/lrc_gpc.py lrc_gpc.so [STEPS SET]    # default 256 steps, sets of 4 SMs

lrc_gpc.so: `lrc_gpc.cu` beside this file, built as its header says. The GPU's SMs are grouped by GPC
(gpc_groups.cuh: the SMs that ran one thread-block cluster); then one launch per case, each inside a
profiler range after two unprofiled ones (gemm_ncu.py's `profiled`), in this order:

    private          every SM loads its own data (nothing to merge)
    same GPC         sets of SET SMs of one GPC load the same data, every step started at one moment
    across GPCs      sets of SET SMs of SET different GPCs, the same
    same, unaligned  the same-GPC sets, each CTA starting a step when its last ended

Both kinds of set are made of the same SMs (the first SMs of the SET largest groups found), as many
sets of SET each way; the other SMs load their own data in every case, so every case asks for the same
number of sectors. It prints each case's sets and time per step; ncu prints the merged sectors
(`..._coalescing_achieved_type_hardware`) per launch, in the order above. On bad input one line and
exit 2. The fp8_gemm README ("Only requests from one GPC merge") has what it showed.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import probe_args  # this folder's

PROBE = "lrc_gpc.py"
STEP_BYTES = 4 * 16384


def sets_of(groups: list[int], size: int, across: bool) -> list[list[int]]:
    """Sets of `size` SM ids, both ways from the same SMs: the first k SMs (k the smallest chosen
    group's size, rounded down to a multiple of `size`) of the `size` largest groups (of at least
    `size` SMs), taken `size` at a time from one group, or (across) the i-th SM of each group."""
    members = [[sm for sm, g in enumerate(groups) if g == lead] for lead in sorted(set(groups))]
    chosen = sorted((m for m in members if len(m) >= size), key=len, reverse=True)[:size]
    if len(chosen) < size:
        return []
    k = min(len(m) for m in chosen) // size * size
    if across:
        return [[m[i] for m in chosen] for i in range(k)]
    return [m[i:i + size] for m in chosen for i in range(0, k, size)]


def regions(sms: int, sets: list[list[int]]) -> list[int]:
    """region_of[sm]: the set's index for an SM in a set, else a region of its own."""
    region = [-1] * sms
    for i, members in enumerate(sets):
        for sm in members:
            region[sm] = i
    free = len(sets)
    for sm in range(sms):
        if region[sm] < 0:
            region[sm], free = free, free + 1
    return region


def main(argv: list[str]) -> None:
    if len(argv) not in (1, 3) or argv[0].startswith("-"):
        probe_args.fail(PROBE, "usage: lrc_gpc.py LIB.so [STEPS SET]")
    try:
        steps, size = (int(argv[1]), int(argv[2])) if len(argv) == 3 else (256, 4)
    except ValueError:
        probe_args.fail(PROBE, f"STEPS and SET must be whole numbers, not {' '.join(argv[1:])}")
    if not 1 <= steps <= 1024:
        probe_args.fail(PROBE, f"STEPS {steps}: from 1 to 1024")
    if not 2 <= size <= 8:
        probe_args.fail(PROBE, f"SET {size}: from 2 to 8")
    try:
        lib = probe_args.load_library(Path(argv[0]), {"gpc_groups": [ctypes.c_void_p, ctypes.c_int],
                                                       "lrc_gpc_run": [ctypes.c_void_p, ctypes.c_void_p] + [ctypes.c_int] * 3},
                                      "lrc_gpc.cu")
    except ValueError as e:
        probe_args.fail(PROBE, str(e))
    torch = probe_args.cuda_torch(PROBE)
    from gemm_ncu import profiled  # this folder's

    groups = probe_args.gpc_labels(PROBE, lib, torch)
    sms = len(groups)
    print(f"{sms} SMs in groups of {sorted(groups.count(g) for g in set(groups))}", flush=True)
    same, across = sets_of(groups, size, False), sets_of(groups, size, True)
    if not same or not across:
        probe_args.fail(PROBE, f"SET {size}: fewer than {size} groups of {size} SMs found")
    src = torch.empty(sms * steps * STEP_BYTES, dtype=torch.uint8, device="cuda")
    cases = [("private", [], 1), ("same GPC", same, 1), ("across GPCs", across, 1), ("same, unaligned", same, 0)]
    for name, sets, aligned in cases:
        region = torch.tensor(regions(sms, sets), dtype=torch.int32, device="cuda")

        def run(region=region, aligned=aligned) -> None:
            if lib.lrc_gpc_run(src.data_ptr(), region.data_ptr(), sms, steps, aligned) != 0:
                probe_args.fail(PROBE, "lrc_gpc_run failed (a CUDA error)")

        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(); run(); end.record(); torch.cuda.synchronize()
        print(f"{name}: {len(sets)} sets of {size} SMs ({sum(map(len, sets))} SMs), "
              f"{start.elapsed_time(end) * 1e3 / steps:.2f} us a step", flush=True)
        profiled(run)


if __name__ == "__main__":
    main(sys.argv[1:])
