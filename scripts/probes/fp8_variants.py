"""The variants of fp8_gemm step 8 that scripts/probes/fp8_coalescing.py `write`s (issue 21): each an edit
list of (old, new) texts of `reference_solutions/fp8_gemm/08_wide_tile_144.cu`, applied by `patched`;
`variants` returns every file. What each variant is: fp8_coalescing.py's docstring. No I/O here but
reading gpc_groups.cuh, which some variants inline; a step 8 without a line the edits change raises
ValueError (fp8_coalescing.py says so in one line and exits 2)."""
from __future__ import annotations

import probe_args  # this folder's

SOURCE = probe_args.ROOT / "reference_solutions" / "fp8_gemm" / "08_wide_tile_144.cu"
STEP9 = probe_args.ROOT / "reference_solutions" / "fp8_gemm" / "09_gpc_bands.cu"
GROUP = ("group_m = 16 / cm", "group_m = FP8_GROUP / cm")
RASTER = ("    const int group = t / (group_m * ctiles_n), first_m = group * group_m;\n"
          "    const int rows = min(ctiles_m - first_m, group_m), in_group = t % (group_m * ctiles_n);\n"
          "    m0 = (cm * (first_m + in_group % rows) + (along_n ? 0 : rank)) * BM;\n"
          "    n0 = (cn * (in_group / rows) + (along_n ? rank : 0)) * BN;\n")
HRASTER = (RASTER, "    (void)group_m;  // groups of FP8_HGROUP cluster-tile columns, row by row inside a group\n"
                   "    const int group = t / (FP8_HGROUP * ctiles_m), first_n = group * FP8_HGROUP;\n"
                   "    const int cols = min(ctiles_n - first_n, FP8_HGROUP), in_group = t % (FP8_HGROUP * ctiles_m);\n"
                   "    m0 = (cm * (in_group / cols) + (along_n ? 0 : rank)) * BM;\n"
                   "    n0 = (cn * (first_n + in_group % cols) + (along_n ? rank : 0)) * BN;\n")
CLUSTER1 = ("constexpr int CLUSTER = 2;", "constexpr int CLUSTER = 1;")
CONSTANTS = "constexpr int BM = 128, BK = 128, STAGES = 6;"
TILE_LOOP = ("            bool rev = false;  // FP8_SERP: this tile's k-steps last to first\n"
             "            for (int t = cluster; t < ctiles; t += clusters, rev = FP8_SERP && !rev) {\n")
QUORUMS = (4, 12, 32)  # arrivals (two a cluster) a round barrier may go without
TIMEOUTS = (1500, 3000)  # SM cycles a round barrier waits at most (a k-step at 8192³: ~700)
LAUNCH = "    cfg.gridDim = dim3(CLUSTER * clusters);\n    cudaLaunchKernelEx("


def spin(flag: str, target: str, indent: int) -> str:
    """The lines that wait until the counter at `flag` reaches `target`, indented `indent` spaces."""
    pad = " " * indent
    return (f"{pad}unsigned v;\n{pad}do {{\n"
            f"{pad}    asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(v) : \"l\"({flag}) : \"memory\");\n"
            f"{pad}}} while (v < {target});\n")


ROUND = [
    (CONSTANTS, "#ifndef FP8_LOCKSTEP\n#define FP8_LOCKSTEP 1\n#endif\n__device__ unsigned int g_lk_count;\n" + CONSTANTS),
    (TILE_LOOP, TILE_LOOP.replace("            for (", "            unsigned lk_target = 0;\n            for (") +
     "                if (FP8_LOCKSTEP && t >= clusters) {  // every producer starts round r together\n"
     "                    lk_target += CLUSTER * min(clusters, ctiles - (t - cluster));\n"
     "                    atomicAdd(&g_lk_count, 1u);\n" +
     spin("&g_lk_count", "lk_target", 20) +
     "                }\n"),
    (LAUNCH, "    cfg.gridDim = dim3(CLUSTER * clusters);\n    static void* lk = nullptr;\n"
             "    if (!lk) cudaGetSymbolAddress(&lk, g_lk_count);\n    cudaMemsetAsync(lk, 0, 4, 0);\n"
             "    cudaLaunchKernelEx("),
]
ROUND_EVERY4 = ("                if (FP8_LOCKSTEP && t >= clusters) {  // every producer starts round r together\n",
                "                if (FP8_LOCKSTEP && t >= clusters && (t / clusters) % 4 == 0) {  // every 4th round\n")
WAIT_END = "                    } while (v < lk_target);\n"


def round_quorum(q: int) -> tuple[str, str]:
    """The round barrier's wait, released when all but q of the arrivals due are in."""
    return WAIT_END, f"                    }} while (v + {q} < lk_target);  // all but {q} arrivals (stragglers hold no one)\n"


def round_timeout(cycles: int) -> list[tuple[str, str]]:
    """The round barrier's wait, given up after `cycles` of the SM's clock (a straggler holds the rest that long at most)."""
    return [("                    unsigned v;\n",
             "                    unsigned v;\n                    const long long lk_t0 = clock64();\n"),
            (WAIT_END, f"                    }} while (v < lk_target && clock64() - lk_t0 < {cycles});  // at most {cycles} cycles\n")]


ROW = [
    (CONSTANTS, "__device__ unsigned int g_row_count[8192];\n" + CONSTANTS),
    (TILE_LOOP, TILE_LOOP +
     "                if (!along_n && t >= clusters) {  // the clusters of this round on the same tile row start together\n"
     "                    const int group_m = 16 / CLUSTER, gsize = group_m * ctiles_n, r = t / clusters;\n"
     "                    const int group = t / gsize, in_group = t % gsize;\n"
     "                    const int rows = min(ctiles_m - group * group_m, group_m), row = in_group % rows;\n"
     "                    const int first = r * clusters, last = min(first + clusters, ctiles);\n"
     "                    const int key = (r * 2 + group - first / gsize) * group_m + row;\n"
     "                    if (key < 8192) {\n"
     "                        unsigned n = 0;\n"
     "                        for (int u = first; u < last; ++u) {\n"
     "                            const int ug = u / gsize, ur = min(ctiles_m - ug * group_m, group_m);\n"
     "                            n += (ug == group && (u % gsize) % ur == row) ? CLUSTER : 0;\n"
     "                        }\n"
     "                        atomicAdd(&g_row_count[key], 1u);\n" +
     spin("&g_row_count[key]", "n", 24) +
     "                    }\n"
     "                }\n"),
    (LAUNCH, "    cfg.gridDim = dim3(CLUSTER * clusters);\n    static void* rc = nullptr;\n"
             "    if (!rc) cudaGetSymbolAddress(&rc, g_row_count);\n"
             "    cudaMemsetAsync(rc, 0, sizeof(unsigned) * 8192, 0);\n    cudaLaunchKernelEx("),
]
ROW_O1 = [  # ROW with the count in closed form: per tile a few divisions, no loop over the round
    ROW[0],
    (TILE_LOOP, TILE_LOOP +
     "                if (!along_n && t >= clusters) {  // the clusters of this round on the same tile row start together\n"
     "                    const int group_m = 16 / CLUSTER, gsize = group_m * ctiles_n, r = t / clusters;\n"
     "                    const int group = t / gsize, g0 = group * gsize;\n"
     "                    const int rows = min(ctiles_m - group * group_m, group_m), row = (t - g0) % rows;\n"
     "                    // this round's cluster tiles inside this group, from its start: [a, b); those on\n"
     "                    // this row are the x there with x % rows == row (fewer than x: f(x) below)\n"
     "                    const int a = max(r * clusters, g0) - g0;\n"
     "                    const int b = min(min((r + 1) * clusters, ctiles), g0 + rows * ctiles_n) - g0;\n"
     "                    const int fb = b > row ? (b - row - 1) / rows + 1 : 0, fa = a > row ? (a - row - 1) / rows + 1 : 0;\n"
     "                    const unsigned n = CLUSTER * (unsigned)(fb - fa);\n"
     "                    const int key = (r * 2 + group - (r * clusters) / gsize) * group_m + row;\n"
     "                    if (key < 8192) {\n"
     "                        atomicAdd(&g_row_count[key], 1u);\n" +
     spin("&g_row_count[key]", "n", 24) +
     "                    }\n"
     "                }\n"),
    ROW[2],
]
GPC_GROUPS = (probe_args.ROOT / "scripts" / "probes" / "gpc_groups.cuh").read_text().replace(
    "#pragma once\n", "")  # inlined: a variant stands alone
EMPTY_WAIT = "                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);\n"
TRACE_READ = r"""
// fp8_coalescing.py's trace: the entries of the last call.
extern "C" int fp8_trace(unsigned long long* out, int n) {
    if (n < 0 || n > 4 * 2 * TRACE_TILES) return -1;
    return cudaMemcpyFromSymbol(out, g_trace, sizeof(unsigned long long) * n) == cudaSuccess ? 0 : -1;
}
"""  # the trace variants' host side; those not built on a GPC variant add GPC_GROUPS
TRACE = [  # step 8 with, per cluster tile and CTA, when its producer issued k-steps 0, K/2 and the last
    (CONSTANTS, "#define TRACE_TILES 8192\n__device__ unsigned long long g_trace[4 * 2 * TRACE_TILES];\n" + CONSTANTS),
    (EMPTY_WAIT, EMPTY_WAIT +
     "                    if (t < TRACE_TILES && (kt == 0 || kt == k_tiles / 2 || kt == k_tiles - 1)) {\n"
     "                        unsigned long long now;  // entry: three times (ns), then smid << 48 | round << 32 | m0\n"
     "                        asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(now));\n"
     "                        unsigned long long* e = g_trace + 4 * (2 * t + rank);\n"
     "                        e[kt == 0 ? 0 : kt == k_tiles - 1 ? 2 : 1] = now;\n"
     "                        if (kt == 0) {\n"
     "                            unsigned sm;\n"
     "                            asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
     "                            e[3] = (unsigned long long)sm << 48 | (unsigned long long)(t / clusters) << 32 | (unsigned)m0;\n"
     "                        }\n"
     "                    }\n"),
]
def indented(lines: str, indent: int) -> str:
    """Each line of `lines` (written at indent 0) indented `indent` spaces."""
    return "".join(" " * indent + line + "\n" for line in lines.splitlines())


GPC_REGISTER = (  # a cluster's rank 0 registers its GPC; `before` clusters have lower labels, it is the i-th of its own
    'unsigned sm;\n'
    'asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));\n'
    'const int g = g_sm_gpc[sm];\n'
    'const unsigned i = atomicAdd(&g_gpc_n[g], 1u);\n'
    '__threadfence();\n'
    'atomicAdd(&g_gpc_all, 1u);\n')
GPC_BEFORE = ('unsigned before = 0;\n'
              'for (int h = 0; h < g; ++h) before += *(volatile unsigned*)&g_gpc_n[h];\n')
GPC_HOST = (  # the launch's host side: labels once, the counters zeroed before each call
    'static bool gpc_ready = false;\n'
    'if (!gpc_ready) {  // each SM\'s GPC label, once (all 0 if the GPCs cannot be told apart)\n'
    '    static int labels[1024];\n'
    '    if (gpc_groups(labels, device().sms) < 0)\n'
    '        for (int& l : labels) l = 0;\n'
    '    cudaMemcpyToSymbol(g_sm_gpc, labels, sizeof labels);\n'
    '    gpc_ready = true;\n'
    '}\n'
    'static void* gpc_n = nullptr;\n'
    'static void* gpc_all = nullptr;\n'
    'if (!gpc_n) cudaGetSymbolAddress(&gpc_n, g_gpc_n), cudaGetSymbolAddress(&gpc_all, g_gpc_all);\n'
    'cudaMemsetAsync(gpc_n, 0, sizeof(unsigned) * 1024, 0);\n'
    'cudaMemsetAsync(gpc_all, 0, sizeof(unsigned), 0);\n')


IDS = "    const int rank = (int)cluster_rank(), cluster = (int)cluster_id(), clusters = (int)cluster_count();\n"
GPC = [  # step 8 with each GPC's clusters on consecutive tiles of one tile row (A's sharers in one GPC)
    (CONSTANTS, "__device__ int g_sm_gpc[1024];        // each SM's GPC label (gpc_groups), uploaded once\n"
                "__device__ unsigned int g_gpc_n[1024]; // clusters of this call per label (zeroed before it)\n"
                "__device__ unsigned int g_gpc_all;     // clusters of this call registered (zeroed before it)\n" + CONSTANTS),
    (RASTER, "    if (!along_n) {  // GPC raster: cluster tiles row-major (a row's consecutive tiles share A)\n"
             "        m0 = (cm * (t / ctiles_n) + rank) * BM;\n"
             "        n0 = (t % ctiles_n) * BN;\n"
             "        return;\n"
             "    }\n" + RASTER),
    (IDS, "    const int rank = (int)cluster_rank(), cluster0 = (int)cluster_id(), clusters0 = (int)cluster_count();\n"
          "    __shared__ int gpc_sched[3];  // rank 0's: this cluster's first tile, stride, end\n"
          "    if (!along_n && rank == 0 && threadIdx.x == 0) {\n"
          "        // A GPC's n clusters take its share of the tiles, [S, E) in row-major order, i-th, i+n-th, ...\n" +
          indented(GPC_REGISTER, 8) + spin("&g_gpc_all", "(unsigned)clusters0", 8) + indented(GPC_BEFORE, 8) +
          "        const unsigned n = *(volatile unsigned*)&g_gpc_n[g];\n"
          "        const int S = (int)((long long)ctiles * before / clusters0);\n"
          "        gpc_sched[0] = S + (int)i;\n"
          "        gpc_sched[1] = (int)n;\n"
          "        gpc_sched[2] = (int)((long long)ctiles * (before + n) / clusters0);\n"
          "    }\n"),
    ("    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely\n",
     "    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely\n"
     "    __shared__ int gpc_mine[3];  // this CTA's first tile, stride, end (read afresh by each loop turn)\n"
     "    if (threadIdx.x < 3) {  // rank 0's schedule, through distributed shared memory\n"
     "        int v = threadIdx.x == 0 ? cluster0 : threadIdx.x == 1 ? clusters0 : ctiles;\n"
     "        if (!along_n) {\n"
     "            uint32_t remote;\n"
     "            asm volatile(\"mapa.shared::cluster.u32 %0, %1, 0;\" : \"=r\"(remote) : \"r\"(smem_addr(&gpc_sched[threadIdx.x])));\n"
     "            asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(v) : \"r\"(remote) : \"memory\");\n"
     "        }\n"
     "        gpc_mine[threadIdx.x] = v;\n"
     "    }\n"
     "    __syncthreads();\n"
     "    const volatile int* sched = gpc_mine;\n"),
    ("            for (int t = cluster; t < ctiles; t += clusters, rev = FP8_SERP && !rev) {\n",
     "            for (int t = sched[0]; t < sched[2]; t += sched[1], rev = FP8_SERP && !rev) {\n"),
    ("    for (int t = cluster; t < ctiles; t += clusters, it += k_tiles) {\n",
     "    for (int t = sched[0]; t < sched[2]; t += sched[1], it += k_tiles) {\n"),
    (LAUNCH, "    cfg.gridDim = dim3(CLUSTER * clusters);\n" + indented(GPC_HOST, 4) + "    cudaLaunchKernelEx("),
    ("static cudaLaunchConfig_t launch_config(", GPC_GROUPS + "\nstatic cudaLaunchConfig_t launch_config("),
]
GPC_LAUNCH = "    cudaLaunchKernelEx(&cfg, gemm_wgmma<BN>,"
BAND = [  # tiles in bands of FP8_BAND columns, row by row inside a band; a round's clusters in GPC order
    GPC[0],
    (RASTER, "    if (!along_n) {  // bands of FP8_BAND tile columns, row-major inside a band: a round's\n"
             "        // consecutive clusters share a tile row, and every round's tiles the band's B columns\n"
             "        const int band = t / (ctiles_m * FP8_BAND), v = t % (ctiles_m * FP8_BAND);\n"
             "        const int width = min(FP8_BAND, ctiles_n - band * FP8_BAND);\n"
             "        m0 = (cm * (v / width) + rank) * BM;\n"
             "        n0 = (band * FP8_BAND + v % width) * BN;\n"
             "        return;\n"
             "    }\n" + RASTER),
    (IDS, "    const int rank = (int)cluster_rank(), clusters = (int)cluster_count();\n"
          "    __shared__ int gpc_pos;  // rank 0's: this cluster's place in each round\n"
          "    if (rank == 0 && threadIdx.x == 0) {\n"
          "        int pos = (int)cluster_id();\n"
          "        if (!along_n && FP8_GPC_ORDER) {  // the clusters of one GPC next to each other\n" +
          indented(GPC_REGISTER, 12) + spin("&g_gpc_all", "(unsigned)clusters", 12) + indented(GPC_BEFORE, 12) +
          "            pos = (int)(before + i);\n"
          "        }\n"
          "        gpc_pos = pos;\n"
          "    }\n"),
    ("    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely\n",
     "    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely\n"
     "    int cluster_pos;  // rank 0's, through distributed shared memory\n"
     "    {\n"
     "        uint32_t remote;\n"
     "        asm volatile(\"mapa.shared::cluster.u32 %0, %1, 0;\" : \"=r\"(remote) : \"r\"(smem_addr(&gpc_pos)));\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(cluster_pos) : \"r\"(remote) : \"memory\");\n"
     "    }\n"
     "    const int cluster = cluster_pos;\n"),
    (GPC_LAUNCH, "    if (FP8_GPC_ORDER) {\n" + indented(GPC_HOST, 8) + "    }\n" + GPC_LAUNCH),
    GPC[-1],
]
TRACE_ROUND = ("(unsigned long long)(t / clusters) << 32",  # the GPC raster's round: its own turns
               "(unsigned long long)((t - sched[0]) / sched[1]) << 32")
PAIR = [
    (CONSTANTS, "__device__ unsigned int g_pair_flags[8192];\n" + CONSTANTS),
    (TILE_LOOP, TILE_LOOP +
     "                if (!along_n && t >= clusters && t < 8192) {  // pair: the tile in the same row, the neighbouring column\n"
     "                    const int group_m = 16 / CLUSTER, gsize = group_m * ctiles_n;\n"
     "                    const int group = t / gsize, first_m = group * group_m, in_group = t % gsize;\n"
     "                    const int rows = min(ctiles_m - first_m, group_m), col = in_group / rows;\n"
     "                    const int partner = t + ((col & 1) ? -rows : rows);\n"
     "                    atomicAdd(&g_pair_flags[t], 1u);\n"
     "                    if (partner < ctiles && partner < 8192 && partner / gsize == group && partner / clusters == t / clusters) {\n" +
     spin("&g_pair_flags[partner]", "(unsigned)CLUSTER", 24) +
     "                    }\n"
     "                }\n"),
    (LAUNCH, "    cfg.gridDim = dim3(CLUSTER * clusters);\n    static void* pf = nullptr;\n"
             "    if (!pf) cudaGetSymbolAddress(&pf, g_pair_flags);\n"
             "    cudaMemsetAsync(pf, 0, 4 * (p.ctiles < 8192 ? p.ctiles : 8192), 0);\n    cudaLaunchKernelEx("),
]


STEP9_ROUND = "                if (SCHED && !along_n && t >= clusters) {  // each round starts together, all but FP9_QUORUM\n"


def step9_every(n: int) -> tuple[str, str]:
    """Step 9's round barrier at every n-th round only (its cost paid 1/n as often; the rounds drift
    between)."""
    return STEP9_ROUND, STEP9_ROUND.replace("t >= clusters)", f"t >= clusters && (t / clusters) % {n} == 0)")


# Step 9 with a round barrier per GPC instead of one for the whole launch: the L2 request coalescer
# merges only requests of SMs in one GPC, so only a GPC's clusters (8-9, consecutive places of a
# round) need to start a round together; each waits for its GPC's 16-18 CTAs (all but FP9_GQUORUM)
# rather than for all but 12 of the launch's 132, and the GPCs may drift apart. A launch that does not
# line up has no barrier at all. Rank 0 passes its GPC's label, first place and cluster count to rank
# 1 through distributed shared memory, as it passes its place.
STEP9_GPC_BARRIER = [
    ("__device__ unsigned int g_done;        // CTAs finished\n",
     "__device__ unsigned int g_done;        // CTAs finished\n"
     "__device__ unsigned int g_round_gpc[1024];  // round-barrier arrivals per GPC label\n"
     "#ifndef FP9_GQUORUM\n#define FP9_GQUORUM 0  // arrivals of its GPC a round may start without\n#endif\n"),
    ("    __shared__ int sched_pos;  // rank 0's: this cluster's place in each round (SCHED)\n",
     "    __shared__ int sched_pos;  // rank 0's: this cluster's place in each round (SCHED)\n"
     "    __shared__ int sched_gpc[3];  // rank 0's: its GPC label, the GPC's first place, its clusters (0: no barrier)\n"),
    ("        int pos = cluster_hw;\n",
     "        int pos = cluster_hw;\n        sched_gpc[0] = 0, sched_gpc[1] = 0, sched_gpc[2] = 0;\n"),
    ("                pos = (int)(before + i);\n",
     "                pos = (int)(before + i);\n"
     "                sched_gpc[0] = g, sched_gpc[1] = (int)before, sched_gpc[2] = (int)*(volatile unsigned*)&g_gpc_n[g];\n"),
    ("    int cluster = cluster_hw;\n"
     "    if constexpr (SCHED) {  // rank 0's place, through distributed shared memory\n"
     "        uint32_t remote;\n"
     "        asm volatile(\"mapa.shared::cluster.u32 %0, %1, 0;\" : \"=r\"(remote) : \"r\"(smem_addr(&sched_pos)));\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(cluster) : \"r\"(remote) : \"memory\");\n"
     "    }\n",
     "    int cluster = cluster_hw, gpc = 0, gpc_first = 0, gpc_n = 0;\n"
     "    if constexpr (SCHED) {  // rank 0's place and GPC, through distributed shared memory\n"
     "        uint32_t remote;\n"
     "        asm volatile(\"mapa.shared::cluster.u32 %0, %1, 0;\" : \"=r\"(remote) : \"r\"(smem_addr(&sched_pos)));\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(cluster) : \"r\"(remote) : \"memory\");\n"
     "        asm volatile(\"mapa.shared::cluster.u32 %0, %1, 0;\" : \"=r\"(remote) : \"r\"(smem_addr(sched_gpc)));\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(gpc) : \"r\"(remote) : \"memory\");\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(gpc_first) : \"r\"(remote + 4) : \"memory\");\n"
     "        asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(gpc_n) : \"r\"(remote + 8) : \"memory\");\n"
     "    }\n"),
    ("                if (SCHED && !along_n && t >= clusters) {  // each round starts together, all but FP9_QUORUM\n"
     "                    round_target += CLUSTER * min(clusters, ctiles - (t - cluster));\n"
     "                    atomicAdd(&g_round, 1u);\n"
     "                    unsigned v;\n"
     "                    do {\n"
     "                        asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(v) : \"l\"(&g_round) : \"memory\");\n"
     "                    } while (v + FP9_QUORUM < round_target);\n"
     "                }\n",
     "                if (SCHED && !along_n && t >= clusters && gpc_n > 0) {  // each round starts together in a GPC\n"
     "                    round_target += CLUSTER * min(gpc_n, ctiles - (t - cluster) - gpc_first);\n"
     "                    atomicAdd(&g_round_gpc[gpc], 1u);\n"
     "                    unsigned v;\n"
     "                    do {\n"
     "                        asm volatile(\"ld.acquire.gpu.global.u32 %0, [%1];\" : \"=r\"(v) : \"l\"(&g_round_gpc[gpc]) : \"memory\");\n"
     "                    } while (v + FP9_GQUORUM < round_target);\n"
     "                }\n"),
    ("                    for (int h = 0; h < g_groups; ++h) g_gpc_n[h] = 0;\n",
     "                    for (int h = 0; h < g_groups; ++h) g_gpc_n[h] = 0, g_round_gpc[h] = 0;\n"),
]


# Step 8 with its cluster tiles claimed as the clusters free (flash_attn step 8's FA8_DYN, for the GEMM):
# each cluster's first tile is its id; rank 0's producer claims the next from g_cl_next (one atomicAdd
# a tile) and hands each tile to both CTAs' producers and consumers through a ring of TRING slots in
# shared memory (a distributed store, then an mbarrier arrive with release.cluster; the readers wait
# with acquire.cluster). Eight slots are enough: rank 0 writes tile j's after issuing tile j - 1's
# loads, whose last waited until every consumer of both CTAs gave back k-step it - 1 - STAGES, so every
# consumer has started tile j - 7 or later; rank 1's producer reads its slots ahead of its consumers.
# The last cluster to finish zeroes the counters (no host work a call).
CLAIM_HELPERS = r"""
// The claimed variant's hand-over: tile t into slot and one arrive on bar, in CTA `rank` of the cluster.
__device__ __forceinline__ void cl_publish(int* slot, uint64_t* bar, uint32_t rank, int t) {
    asm volatile(
        "{\n.reg .b32 rs, rb;\n"
        "mapa.shared::cluster.u32 rs, %0, %2;\n"
        "mapa.shared::cluster.u32 rb, %1, %2;\n"
        "st.shared::cluster.u32 [rs], %3;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [rb];\n}\n"
        :: "r"(smem_addr(slot)), "r"(smem_addr(bar)), "r"(rank), "r"(t) : "memory");
}
// Wait for phase `parity` of a barrier another CTA of the cluster may complete (acquire.cluster: its
// store before the arrive is visible after the wait).
__device__ __forceinline__ void cl_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred p;\nCLW_%=:\n"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra CLW_%=;\n}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
"""
CLAIMED = [
    (CONSTANTS, "__device__ unsigned int g_cl_next, g_cl_done;  // claimed tiles: the next claim, clusters done\n"
                "constexpr int TRING = 8;  // tile ring slots\n" + CONSTANTS),
    ("    return *reinterpret_cast<uint32_t*>(&h);\n}\n#endif  // __CUDA_ARCH_FEAT_SM90_ALL\n",
     "    return *reinterpret_cast<uint32_t*>(&h);\n}\n" + CLAIM_HELPERS + "#endif  // __CUDA_ARCH_FEAT_SM90_ALL\n"),
    ("    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];\n",
     "    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];\n"
     "    __shared__ int tile_ring[TRING];\n    __shared__ __align__(8) uint64_t tile_full[TRING];\n"
     "    __shared__ unsigned cl_claimed;\n"),
    ("            mbar_init(&empty[s], 8 * CLUSTER);   // lane 0 of each consumer warp of each CTA\n        }\n",
     "            mbar_init(&empty[s], 8 * CLUSTER);   // lane 0 of each consumer warp of each CTA\n        }\n"
     "        for (int i = 0; i < TRING; ++i) mbar_init(&tile_full[i], 1);  // rank 0's producer's arrive\n"),
    (TILE_LOOP, "            bool rev = false;  // FP8_SERP: this tile's k-steps last to first\n"
                "            if (rank == 0) cl_claimed = (unsigned)cluster;  // the first tile: the cluster's id\n"
                "            for (int j = 0;; ++j, rev = FP8_SERP && !rev) {\n"
                "                int t;\n"
                "                if (rank == 0) {  // claim the next (its answer waits in shared memory), hand this one over\n"
                "                    const unsigned c = *(volatile unsigned*)&cl_claimed;\n"
                "                    t = c < (unsigned)ctiles ? (int)c : -1;\n"
                "                    if (t >= 0) cl_claimed = (unsigned)clusters + atomicAdd(&g_cl_next, 1u);\n"
                "                    for (int r = 0; r < CLUSTER; ++r) cl_publish(&tile_ring[j % TRING], &tile_full[j % TRING], r, t);\n"
                "                } else {\n"
                "                    cl_wait(&tile_full[j % TRING], (j / TRING) & 1);\n"
                "                    t = *(volatile int*)&tile_ring[j % TRING];\n"
                "                }\n"
                "                if (t < 0) break;\n"),
    ("            // Producer tail: wait until the consumers of both CTAs have released the last STAGES\n",
     "            if (rank == 0 && atomicAdd(&g_cl_done, 1u) == (unsigned)clusters - 1) {  // the last: zero both\n"
     "                g_cl_next = 0;\n                g_cl_done = 0;\n            }\n"
     "            // Producer tail: wait until the consumers of both CTAs have released the last STAGES\n"),
    ("    for (int t = cluster; t < ctiles; t += clusters, it += k_tiles) {\n",
     "    for (int j = 0;; ++j, it += k_tiles) {\n"
     "        cl_wait(&tile_full[j % TRING], (j / TRING) & 1);\n"
     "        const int t = *(volatile int*)&tile_ring[j % TRING];\n"
     "        if (t < 0) break;\n"),
]

# claimed_async: claimed.cu with the claim's answer in a register of rank 0's producer, asked for after
# the hand-over, and without the two costs claimed.cu's hand-over carried that step 8's own
# notes warn of (its mbar_arrive_cluster and mbar_wait): a release.cluster arrive makes ptxas put a
# MEMBAR.ALL.GPU before it (twice a tile here, in rank 0's producer), and an acquire.cluster wait a
# CCTL.IVALL (every reader, every tile). Instead rank 0 writes the tile into both CTAs' slots with
# st.async, which completes 4 bytes of transaction on the slot's mbarrier in that CTA, and each CTA's
# producer arrives on its own slot's barrier expecting those 4 bytes (the barrier's one arrival);
# the readers wait with the default semantics, as for a TMA load. (ptxas still aggregates the claim
# over the warp, a SHFL of its answer right after it, even as an atom in inline PTX: the producer
# thread waits for the round trip there, after the hand-over, with the ring's stages ahead of it.)
CLAIMED_ASYNC = [
    ("    __shared__ unsigned cl_claimed;\n", ""),
    ("            if (rank == 0) cl_claimed = (unsigned)cluster;  // the first tile: the cluster's id\n",
     "            unsigned cl_claimed = (unsigned)cluster;  // rank 0: the next tile (the first: the cluster's id)\n"),
    ('        "mapa.shared::cluster.u32 rb, %1, %2;\\n"\n'
     '        "st.shared::cluster.u32 [rs], %3;\\n"\n'
     '        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [rb];\\n}\\n"\n',
     '        "mapa.shared::cluster.u32 rb, %1, %2;\\n"\n'
     '        "st.async.shared::cluster.mbarrier::complete_tx::bytes.u32 [rs], %3, [rb];\\n}\\n"\n'),
    ("mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%0], %1;",
     "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;"),
    ("                    const unsigned c = *(volatile unsigned*)&cl_claimed;\n"
     "                    t = c < (unsigned)ctiles ? (int)c : -1;\n"
     "                    if (t >= 0) cl_claimed = (unsigned)clusters + atomicAdd(&g_cl_next, 1u);\n"
     "                    for (int r = 0; r < CLUSTER; ++r) cl_publish(&tile_ring[j % TRING], &tile_full[j % TRING], r, t);\n",
     "                    t = cl_claimed < (unsigned)ctiles ? (int)cl_claimed : -1;\n"
     "                    mbar_expect_tx(&tile_full[j % TRING], 4);  // the slot's one arrival, its 4 bytes to come\n"
     "                    for (int r = 0; r < CLUSTER; ++r) cl_publish(&tile_ring[j % TRING], &tile_full[j % TRING], r, t);\n"
     "                    if (t >= 0) {\n"
     "                        unsigned got;\n"
     '                        asm volatile("atom.global.add.u32 %0, [%1], 1;" : "=r"(got) : "l"(&g_cl_next));\n'
     "                        cl_claimed = (unsigned)clusters + got;\n"
     "                    }\n"),
    ("                    cl_wait(&tile_full[j % TRING], (j / TRING) & 1);\n"
     "                    t = *(volatile int*)&tile_ring[j % TRING];\n"
     "                }\n",
     "                    mbar_expect_tx(&tile_full[j % TRING], 4);  // rank 0's st.async brings the 4 bytes\n"
     "                    cl_wait(&tile_full[j % TRING], (j / TRING) & 1);\n"
     "                    t = *(volatile int*)&tile_ring[j % TRING];\n"
     "                }\n"),
]

# Step 9 with its loads cut after the first round, for timing only (the results are wrong): does the
# main loop wait on what reaches the SMs through the crossbar, or on the tensor cores? At 8192³ step 9's
# SMs request ~7.9 TB/s before the coalescer merges 31% of it. step9_no_loads: from the second round on
# the producer arrives on each stage's barrier with no bytes and loads nothing (the consumers reuse the
# first round's bytes; the ring's flow control is step 9's); step9_no_shared_loads: only the shared
# operand's multicast boxes are cut, the own operand still loaded. Timed by `call` under ncu, which
# prints the error and times the call anyway; `judge` would reject them.
STEP9_LOADS = (
    "                    mbar_expect_tx(&full[s], STAGE_BYTES);\n"
    "                    tma_load_2d(own, own_map, &full[s], kc * BK, own_row);\n"
    "                    if constexpr (CLUSTER > 1)\n"
    "                        tma_load_2d_multicast(sh, sh_map, &full[s], kc * BK, sh_row, (uint16_t)((1u << CLUSTER) - 1));\n"
    "                    else\n"
    "                        tma_load_2d(sh, sh_map, &full[s], kc * BK, sh_row);\n")
STEP9_NO_LOADS = (STEP9_LOADS,
    "                    if (t >= clusters) {  // step9_no_loads: the stage's one arrival, no bytes, no loads\n"
    "                        mbar_expect_tx(&full[s], 0);\n"
    "                        continue;\n"
    "                    }\n" + STEP9_LOADS)
STEP9_NO_SHARED = (STEP9_LOADS,
    "                    const bool shared = t < clusters;  // step9_no_shared_loads: the own operand only\n"
    "                    mbar_expect_tx(&full[s], shared ? STAGE_BYTES : (along_n ? Tile<BN>::B_BYTES : A_BYTES));\n"
    "                    tma_load_2d(own, own_map, &full[s], kc * BK, own_row);\n"
    "                    if (shared)\n"
    "                        tma_load_2d_multicast(sh, sh_map, &full[s], kc * BK, sh_row, (uint16_t)((1u << CLUSTER) - 1));\n")

# Step 9's schedule on both kernels: the three places that limit it to the wide one.
STEP9_WIDE_ONLY = "BN == BN_WIDE && FP9_SCHED"


def patched(src: str, edits: list[tuple[str, str]], name: str = SOURCE.name, copies: int = 1) -> str:
    """src (the file `name`) with each (old, new) applied; old must occur exactly `copies` times (else the
    file changed: say so)."""
    for old, new in edits:
        if src.count(old) != copies:
            raise ValueError(f"{name} has {src.count(old)} copies of the line the variants change "
                             f"({old.strip().splitlines()[0][:60]!r}), not {copies}: update this probe")
        src = src.replace(old, new)
    return src


def variants(src: str, step9: str | None = None) -> dict[str, str]:
    """{file name: source} of every variant `write` makes: of step 8 (src), and of step 9 when its text is
    given (step9_never.cu, never lined up: bands in cluster-id order, no barrier; step9_no_barrier.cu,
    GPC order without the barrier; step9_narrow.cu, the schedule on the 128-wide kernel too;
    step9_gpc_barrier.cu, a round barrier per GPC (_q2: 2 of a GPC's CTAs may be late);
    step9_every{2,4}.cu, its round barrier every 2nd or 4th round; step9_quorum{24,48}.cu;
    step9_no_loads.cu and step9_no_shared_loads.cu, for timing only: loads cut after the first round)."""
    out = {f"group{g}_serp{s}.cu": f"#define FP8_SERP {s}\n#define FP8_GROUP {g}\n" + patched(src, [GROUP])
           for g in (2, 4, 8, 16, 32, 64) for s in (0, 1)}
    out.update({f"hgroup{g}_serp{s}.cu": f"#define FP8_SERP {s}\n#define FP8_HGROUP {g}\n" + patched(src, [HRASTER])
                for g in (4, 8, 16, 32) for s in (0, 1)})
    out["cluster1.cu"] = patched(src, [CLUSTER1])
    out["claimed.cu"] = patched(src, CLAIMED)
    out["claimed_async.cu"] = patched(out["claimed.cu"], CLAIMED_ASYNC)
    out["round_barrier.cu"] = patched(src, ROUND)
    out["round_barrier_serp0.cu"] = "#define FP8_SERP 0\n" + out["round_barrier.cu"]
    out["round_barrier_every4.cu"] = patched(out["round_barrier.cu"], [ROUND_EVERY4])
    for q in QUORUMS:
        out[f"round_quorum{q}.cu"] = patched(out["round_barrier.cu"], [round_quorum(q)])
    for c in TIMEOUTS:
        out[f"round_timeout{c}.cu"] = patched(out["round_barrier.cu"], round_timeout(c))
    out["row_barrier.cu"] = patched(src, ROW)
    out["row_barrier_o1.cu"] = patched(src, ROW_O1)
    out["pair_barrier.cu"] = patched(src, PAIR)
    out["gpc_raster.cu"] = patched(src, GPC)
    for width, order in ((8, 0), (8, 1), (16, 1)):
        band = f"#define FP8_BAND {width}\n#define FP8_GPC_ORDER {order}\n"
        out[f"band{width}_gpc{order}.cu"] = band + patched(src, BAND)
        out[f"band{width}_gpc{order}_barrier.cu"] = band + patched(patched(src, ROUND), BAND)
    out["band16_gpc1_quorum12.cu"] = "#define FP8_BAND 16\n#define FP8_GPC_ORDER 1\n" + patched(
        patched(patched(src, ROUND), [round_quorum(12)]), BAND)
    out["trace.cu"] = patched(src, TRACE) + TRACE_READ + GPC_GROUPS
    out["trace_band8_gpc1_barrier.cu"] = patched(out["band8_gpc1_barrier.cu"], TRACE) + TRACE_READ
    out["trace_gpc_raster.cu"] = patched(patched(out["gpc_raster.cu"], TRACE), [TRACE_ROUND]) + \
        TRACE_READ
    out["trace_round_barrier.cu"] = patched(out["round_barrier.cu"], TRACE) + TRACE_READ + GPC_GROUPS
    if step9 is not None:
        out["step9_never.cu"] = "#define FP9_WAIT_CYCLES 0u\n" + step9
        out["step9_no_barrier.cu"] = "#define FP9_QUORUM 1000000\n" + step9
        out["step9_narrow.cu"] = patched(step9, [(STEP9_WIDE_ONLY, "FP9_SCHED")], STEP9.name, copies=3)
        out["step9_gpc_barrier.cu"] = patched(step9, STEP9_GPC_BARRIER, STEP9.name)
        out["step9_gpc_barrier_q2.cu"] = "#define FP9_GQUORUM 2\n" + out["step9_gpc_barrier.cu"]
        for n in (2, 4):
            out[f"step9_every{n}.cu"] = patched(step9, [step9_every(n)], STEP9.name)
        for q in (24, 48):
            out[f"step9_quorum{q}.cu"] = f"#define FP9_QUORUM {q}\n" + step9
        out["step9_no_loads.cu"] = patched(step9, [STEP9_NO_LOADS], STEP9.name)
        out["step9_no_shared_loads.cu"] = patched(step9, [STEP9_NO_SHARED], STEP9.name)
    return out
