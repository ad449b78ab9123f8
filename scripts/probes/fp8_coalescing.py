"""Why cuBLAS's SMs read fewer L2 sectors than fp8_gemm step 8's: the L2 request coalescer (issue 21).

    python3 scripts/probes/fp8_coalescing.py write DIR          # step 8's variants as .cu files in DIR
    python3 scripts/probes/fp8_coalescing.py metrics            # the ncu --metrics list below
    python3 scripts/probes/fp8_coalescing.py trace TRACE.so [M N K]   # sharers' load times, GPCs
    ncu --profile-from-start off --clock-control none --metrics "$(python3 scripts/probes/fp8_coalescing.py metrics)" \\
        python3 scripts/probes/fp8_coalescing.py call LIB.so|cublas [M N K]

`write` makes copies of `reference_solutions/fp8_gemm/08_wide_tile_144.cu` that change only how the
tiles running at the same time line up (each .cu is a model answer: `judge compare` takes it as is;
their edits are in this folder's fp8_variants.py):

    group{G}_serp{S}     the raster's group G tile rows (step 8: 16) with FP8_SERP = S (step 8: 1)
    hgroup{G}_serp{S}    the transposed raster: groups of G cluster-tile columns, row by row inside a
                         group (a round's tiles then share A rows, which are not multicast, with more
                         tiles: the requests the coalescer can merge), FP8_SERP = S
    cluster1             no clusters, no multicast (CLUSTER = 1)
    round_barrier        every CTA's producer waits at each round's first tile until every CTA with a
                         tile in that round has arrived (a counter in global memory, zeroed before each
                         call by a 4-byte memset); round_barrier_serp0 the same with FP8_SERP = 0;
                         round_barrier_every4 only at every fourth round's first tile;
                         round_quorum{Q} released when all but Q (4, 12, 32) of the arrivals due are in;
                         round_timeout{C} released after C (1500, 3000) cycles of the SM's clock at most
    gpc_raster           each GPC's clusters on consecutive tiles of one tile row, so that the CTAs that
                         read the same A rows run in one GPC: the GPU's GPCs found once (gpc_groups.cuh,
                         inlined), the tiles dealt to GPCs by their cluster counts at each call
    band{W}_gpc{O}       tiles in bands of W (8, 16) tile columns, row by row inside a band; with O = 1 a
                         round's places given to the clusters in GPC order (a tile row's consecutive
                         tiles to one GPC's clusters), with O = 0 by cluster id; `_barrier` with
                         round_barrier's wait (band8_gpc0/1, band16_gpc1), band16_gpc1_quorum12 with
                         round_quorum12's
    trace                step 8 recording when each CTA's producer issues k-steps 0, K/2 and the last
                         of each tile, on which SM, and for which A rows (for `trace`);
                         trace_round_barrier, trace_gpc_raster and trace_band8_gpc1_barrier the same
                         of those
    row_barrier          each producer waits until the clusters of its round on its tile row (the
                         ones that read its A rows) have arrived; it counts them in a loop over the
                         round's tiles (a counter per round and row, zeroed by a 32 KB memset);
                         row_barrier_o1 the same count in closed form (a few divisions a tile)
    pair_barrier         each producer waits for the cluster whose tile shares its A rows in the
                         neighbouring column of the same round (a flag per cluster tile, zeroed by a
                         memset before each call)
    step9_never          fp8_gemm step 9 (09_gpc_bands.cu) never lined up (FP9_WAIT_CYCLES 0): its
                         bands in cluster-id order, no barrier; step9_no_barrier: its GPC order without
                         the barrier (a quorum that never waits)
    step9_narrow         step 9's schedule on its 128-wide kernel too (4096³, the small tests)
    step9_gpc_barrier    step 9 with a round barrier per GPC (its 16-18 CTAs) instead of the launch's;
                         step9_gpc_barrier_q2 the same letting 2 of a GPC's CTAs be late
    step9_every{N}       step 9 with its round barrier at every N-th round only (2, 4)
    step9_quorum{Q}      step 9 with a round barrier that lets Q CTAs be late (24, 48; step 9: 12)
    step9_no_loads       for timing only (results wrong; `call` prints the error and times it anyway):
                         step 9 loading nothing after the first round (each stage's barrier arrived on
                         with no bytes); step9_no_shared_loads only the multicast operand's boxes cut:
                         whether the main loop waits on what reaches the SMs or on the tensor cores
    claimed              step 8 with its cluster tiles claimed as the clusters free (flash_attn step
                         8's claim): each cluster's first tile its id, then one atomicAdd a tile by
                         rank 0, handed to both CTAs through an 8-slot ring (both kernels); measured
                         1.7-8% slower than step 8, not kept (the fp8_gemm README, "Still to write");
                         claimed_async the same without GPU-wide fences in the hand-over (st.async into
                         both CTAs' slots): 2.6-12.6% slower

`call` runs LIB.so (a built fp8_gemm answer, `nvcc -O3 -shared -Xcompiler -fPIC -gencode
arch=compute_90a,code=sm_90a FILE.cu -o LIB.so -lcuda`) at M N K (default 8192³): one call checked
against fp32 torch, then gemm_ncu.py's way of profiling (two calls, then one inside a profiler range),
so that ncu sees exactly that call. `call cublas` does the same with the problem's baseline (cuBLAS FP8
through `torch._scaled_mm`, as problems/fp8_gemm's reference calls it).

`trace TRACE.so [M N K]` (TRACE.so built from `write`'s trace.cu the same way): which SMs share a GPC
(the CTAs of a cluster always do: scripts/probes/gpc_groups.cuh), then one traced call after two untraced ones, and how far
apart in time the CTAs that read the same A rows in the same round issue their loads (the sharers,
whose requests the coalescer can merge), whether they run in one GPC, and the same spread for whole
rounds.

The metrics: the kernel's time, cycles and clock, DRAM bytes read, L2 sectors read by the SMs, and the
L2 request coalescer's (LRC) read sectors that the SMs requested (`coalescable`) and that it merged
with other requests for the same sectors reaching it close together (`achieved_type_hardware`; a
multicast's are `_programmatic`). On
bad input one line and exit 2. The fp8_gemm README ("The L2 request coalescer") has what it showed.
"""
from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import fp8_variants  # this folder's
import probe_args

PROBE = "fp8_coalescing.py"
METRICS = ("gpu__time_duration.sum,sm__cycles_elapsed.max,gpc__cycles_elapsed.avg.per_second,dram__bytes_read.sum,"
           "lts__t_sectors_srcunit_tex_op_read.sum,lrc__request_sectors_op_read_coalescable.sum,"
           "lrc__request_sectors_op_read_coalescing_achieved_type_hardware.sum,"
           "lrc__request_sectors_op_read_coalescing_achieved_type_programmatic.sum")


def variants(src: str, step9: str | None = None) -> dict[str, str]:
    """fp8_variants.variants(src, step9), or one line and exit 2 when step 8 or 9 no longer has a line
    they change."""
    try:
        return fp8_variants.variants(src, step9)
    except ValueError as e:
        probe_args.fail(PROBE, str(e))


def write(folder: str) -> None:
    out = Path(folder)
    if not out.is_dir():
        probe_args.fail(PROBE, f"{folder} is not a folder")
    for name, text in variants(fp8_variants.SOURCE.read_text(), fp8_variants.STEP9.read_text()).items():
        (out / name).write_text(text)
        print(out / name)


def parse_shape(shape: list[str]) -> tuple[int, int, int]:
    """M N K from the command line (8192³ when none), or one line and exit 2."""
    try:
        m, n, k = (int(x) for x in shape) if shape else (8192, 8192, 8192)
    except ValueError:
        probe_args.fail(PROBE, f"M N K must be three whole numbers, not {' '.join(shape)}")
    if min(m, n, k) <= 0 or k % 16:
        probe_args.fail(PROBE, f"M N K = {m} {n} {k}: each above 0, K a multiple of 16")
    return m, n, k


def inputs(torch, m: int, n: int, k: int):
    """A [M, K] and B [N, K] in e4m3 (normal × 16), scales 0.01, C [M, N] bf16 (empty)."""
    a = (torch.randn(m, k, device="cuda") * 16).to(torch.float8_e4m3fn)
    b = (torch.randn(n, k, device="cuda") * 16).to(torch.float8_e4m3fn)
    sa, sb = torch.tensor([0.01], device="cuda"), torch.tensor([0.01], device="cuda")
    return a, b, sa, sb, torch.empty(m, n, device="cuda", dtype=torch.bfloat16)


def call(lib: str, shape: list[str]) -> None:
    m, n, k = parse_shape(shape)
    solve = None
    if lib != "cublas":
        try:
            solve = probe_args.load_library(Path(lib), {"solve": [ctypes.c_void_p] * 5 + [ctypes.c_int] * 3},
                                            "fp8_gemm").solve
        except ValueError as e:
            probe_args.fail(PROBE, str(e))
    torch = probe_args.cuda_torch(PROBE)
    a, b, sa, sb, c = inputs(torch, m, n, k)

    def run() -> None:
        if solve is None:  # the problem's baseline: cuBLAS FP8 through torch._scaled_mm, into the same C
            torch._scaled_mm(a, b.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=False, out=c)
        else:
            solve(a.data_ptr(), b.data_ptr(), sa.data_ptr(), sb.data_ptr(), c.data_ptr(), m, n, k)

    run(); torch.cuda.synchronize()
    ref = a.float() @ b.float().t() * 1e-4
    err = (c.float() - ref).abs().max().item()
    print(f"{lib} at {m}x{n}x{k}: max |C - fp32| = {err:.4g} (half a bf16 step at the largest |C|: "
          f"{ref.abs().max().item() * 2 ** -8:.4g})", flush=True)
    from gemm_ncu import profiled  # this folder's: two unprofiled calls, then one in the profiler's range

    profiled(run)


def spreads(entries: list[tuple[int, int, int, int, int, int]], gpc: list[int]) -> dict[str, float]:
    """From the trace's entries (t0, t_mid, t_end in ns, smid, round, m0: one per CTA and tile), the
    medians over the sets of CTAs that read the same A rows in the same round ("sharers") of how far
    apart in time they issued k-steps 0, K/2 and the last (µs), the same for whole rounds at k-step 0,
    the time from a tile's first k-step to its last, the share of sharer sets whose CTAs all ran in
    one GPC, and how many GPCs a set's CTAs ran in, counting only SMs whose GPC is known (gpc[sm]:
    `gpc_groups`'s labels; an SM alone in its group never shared a cluster)."""
    import statistics

    sets: dict[tuple[int, int], list[tuple[int, int, int, int, int, int]]] = {}
    rounds: dict[int, list[int]] = {}
    for e in entries:
        sets.setdefault((e[4], e[5]), []).append(e)
        rounds.setdefault(e[4], []).append(e[0])
    shared = [v for v in sets.values() if len(v) > 1]
    if not shared:
        return {}

    def spread(i: int) -> float:
        return statistics.median(max(x[i] for x in v) - min(x[i] for x in v) for v in shared) / 1e3

    k_steps = [(e[2] - e[0]) for e in entries if e[2] > e[0]]
    mapped = {g: gpc.count(g) > 1 for g in gpc}  # an SM alone in its group: its GPC is not known
    return {"sharer sets": len(shared), "sharers a set (median)": statistics.median(len(v) for v in shared),
            "in one GPC (share of sets)": sum(len({gpc[x[3]] for x in v}) == 1 for v in shared) / len(shared),
            "GPCs a set's CTAs on mapped SMs run in (median)": statistics.median(
                len({gpc[x[3]] for x in v if mapped[gpc[x[3]]]}) for v in shared),
            "spread at k-step 0 (us)": spread(0), "spread at k-step K/2 (us)": spread(1),
            "spread at the last k-step (us)": spread(2),
            "a round's spread at k-step 0 (us)": statistics.median(max(v) - min(v) for v in rounds.values()) / 1e3,
            "tile time, first to last k-step (us)": statistics.median(k_steps) / 1e3 if k_steps else 0.0}


def trace(lib: str, shape: list[str]) -> None:
    m, n, k = parse_shape(shape)
    try:
        so = probe_args.load_library(Path(lib), {"solve": [ctypes.c_void_p] * 5 + [ctypes.c_int] * 3,
                                                 "fp8_trace": [ctypes.c_void_p, ctypes.c_int],
                                                 "gpc_groups": [ctypes.c_void_p, ctypes.c_int]},
                                     "fp8_coalescing.py write's trace.cu")
    except ValueError as e:
        probe_args.fail(PROBE, str(e))
    torch = probe_args.cuda_torch(PROBE)
    gpc = probe_args.gpc_labels(PROBE, so, torch)
    sizes = sorted(gpc.count(lead) for lead in set(gpc))
    print(f"{len(sizes)} groups of SMs joined by the clusters they ran (GPCs or parts of one): sizes {sizes}")
    a, b, sa, sb, c = inputs(torch, m, n, k)
    for _ in range(3):
        so.solve(a.data_ptr(), b.data_ptr(), sa.data_ptr(), sb.data_ptr(), c.data_ptr(), m, n, k)
    torch.cuda.synchronize()
    raw = (ctypes.c_ulonglong * (4 * 2 * 8192))()
    if so.fp8_trace(raw, len(raw)) != 0:
        probe_args.fail(PROBE, f"{lib}: fp8_trace failed")
    entries = [(raw[i], raw[i + 1], raw[i + 2], raw[i + 3] >> 48, (raw[i + 3] >> 32) & 0xFFFF, raw[i + 3] & 0xFFFFFFFF)
               for i in range(0, len(raw), 4) if raw[i]]
    print(f"{lib} at {m}x{n}x{k}: {len(entries)} tile starts traced")
    for key, value in spreads(entries, gpc).items():
        print(f"  {key}: {value:.3g}")


def main(argv: list[str]) -> None:
    usage = "usage: fp8_coalescing.py write DIR | metrics | call LIB.so|cublas [M N K] | trace TRACE.so [M N K]"
    if argv[:1] == ["write"] and len(argv) == 2:
        write(argv[1])
    elif argv == ["metrics"]:
        print(METRICS)
    elif argv[:1] == ["call"] and len(argv) in (2, 5):
        call(argv[1], argv[2:])
    elif argv[:1] == ["trace"] and len(argv) in (2, 5):
        trace(argv[1], argv[2:])
    else:
        probe_args.fail(PROBE, usage)


if __name__ == "__main__":
    main(sys.argv[1:])
