// hgemm, step 8: step 7 with a shorter start and a cheaper exposed end. Written on a machine
// without a GPU (the predictions below were made there); measured on an H200 at the end.
//
// What step 7 left (H200, Nsight Compute, clocks not locked): 27.94 µs against cuBLAS's 26.27 µs at
// 2048³, where each of the 128 CTAs computes exactly one 128×256 tile, so nothing overlaps the
// start (barrier init, cluster barrier, first TMA loads) or the end (the tile's epilogue). Its SASS:
//   - start: thread 0 initialises 8 mbarriers, then `barrier.cluster.arrive.release` +
//     `wait.acquire` (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, ERRBAR, CGAERRBAR, UCGABAR_ARV/WAIT,
//     CCTL.IVALL) for all 384 threads; only then does the producer compute its first tile
//     (tile_origin: two software divisions, ~70 instructions) and issue the first UTMALDG, whose
//     tensor map the TMA unit has not seen yet (no prefetch.tensormap).
//   - end: per consumer warp, 64 F2FP + an 860-instruction epilogue (64 SHFL, 16 STG.E.128, 397 SEL,
//     257 ISETP, 82 P2R: the `got[i] = p == i ? v : got[i]` selects on a runtime lane index), 2
//     warps per SM sub-partition: ≥ 1.9k issue cycles (≥ 0.95 µs at 1.98 GHz) before the last store
//     even leaves; each STG.128 touches 16 rows (16 L2 lines, one 32-byte sector each).
// 1. HG8_EARLY: thread 0 initialises the barriers, fences them (fence.mbarrier_init + fence.proxy.
//    async) and at once loads the first min(4, k_tiles) k-steps of its first tile ALONE: A and all
//    four B boxes, plain TMA, no multicast (the partner's barriers may not exist yet). Then
//    __syncthreads (own barriers initialised before anyone waits on them) and a split cluster
//    barrier: `barrier.cluster.arrive.relaxed` by every thread (fence.mbarrier_init.release.cluster
//    is the release it needs; no MEMBAR.ALL.GPU any more), `barrier.cluster.wait` by the producer
//    warpgroup before its first multicast and by each consumer warp after the first k-step's wgmmas
//    are issued, before its first remote arrive. Both CTAs of a cluster load the same `pre` k-steps
//    this way (same tiles, same k_tiles), so k-step `it` is multicast in both or in neither; full[s]
//    still expects 48 KB. Costs 16 KB × 4 more L2 → SM bytes per CTA, once.
//    Predicted: the first HGMMA ~0.2-0.9 µs earlier at every shape (MEMBAR.GPU and the cluster barrier
//    leave the path to the first load), i.e. +1-3% at 2048³, +0.1-0.4% at 4096³, ~0 at 8192³.
// 2. HG8_PREFETCH: `prefetch.tensormap` of the A, B (and C) maps by thread 0 as its first act
//    (3 UTMACCTL.PF); the first UTMALDG follows after the barrier init and tile_origin's ~100
//    instructions, time for the map fetch. Predicted: 0.1-0.3 µs of the same start, 0-1% at 2048³.
// 3. HG8_TMA_STORE = 1 (default): the CTA's LAST tile (the exposed one) is stored through shared
//    memory: each consumer warp owns two 2 KB boxes (16 rows × 64 columns, 128-byte swizzle; 32 KB
//    in all after the 4 stages: 230,400 B dynamic, fits the 232,448 opt-in); per 64-column chunk,
//    4 `stmatrix.x4` (the mma accumulator layout is stmatrix's), `fence.proxy.async`, __syncwarp,
//    and lane 0 issues one TMA store (cp.async.bulk.tensor ... bulk_group) and commits; the boxes
//    are used in turn per stored box and, before rewriting one, lane 0 waits `cp.async.bulk.
//    wait_group.read 1`; before exit `.read 0`. The TMA store clips rows ≥ M and columns ≥ N; a box
//    wholly outside C (warp-uniform test) is skipped, with no commit, so no group is ever empty. The chunks stored under the next tile's
//    k-steps stay step 7's shuffles + STG, which use no shared-memory bandwidth (the mainloop's
//    wgmma reads plus TMA writes already come to ~125 of 128 B/clk per SM at full tensor rate).
//    HG8_TMA_STORE = 2 stores every tile this way (kept as an option, not the default: +64 KB
//    written and +64 KB read of shared memory per tile while the wgmmas run).
//    Predicted: the exposed epilogue from ~1.3-1.8 µs to ~0.7-1.2 µs (860 → ~231 instructions per
//    warp; full 128-byte lines instead of 16 scattered sectors per store), +1-3% at 2048³, +0.2-0.4% at
//    4096³ (only the last tile of each CTA), ~0 at 8192³.
// 4. HG8_DESC: wgmma descriptors as a 32-bit low word (base + stage·STAGE_BYTES/16 + k·2 or k·128)
//    and a constant high word, instead of make_desc per wgmma: the k-step loses ~10 of its ~110
//    instructions (ptxas still rematerialises the smem base). Not on the critical path (HGMMA is
//    asynchronous); predicted ~0 at every shape, kept for the issue slots.
// Together, predicted: 2048³ −0.5 to −1.9 µs (0.97-1.02× cuBLAS, from 0.95-0.96×), 4096³ +0.3-0.8%
// (0.99-1.00×), 8192³ unchanged (1.00×). Not done: stream-K or the 4 idle SMs; an N-split of the
// last tile so half of its epilogue runs under the other half's math (reads A twice: below the
// noise for what it would save once the epilogue is ~0.3 µs of issue); try_wait spin loops are
// already 2 instructions (TRYWAIT, BRA) and the hardware suspends the warp between tries.
// Everything else is step 7's: 128×256 tiles, 4-stage ring of 48 KB, clusters of two along M with B
// multicast, the producer tail, setmaxnreg 40/232, the epilogue chunks under the next tile's first
// 4 k-steps, the fallback for K % 8 or N % 8 != 0 (and now also a C the driver cannot map), the
// `solve` ABI. All switches 0 gives step 7's kernel back: the same 3,224 SASS instructions and mix
// (one NOP became a LEA.HI; ~25 lines of row arithmetic scheduled differently, parameter offsets
// moved by the extra tensor map).
//
// Build (nvcc 13.0.88, the judge's flags), sm_90a: 168 registers at launch (consumers to 232 after
// USETMAXREG), 64 B static + 230,400 B dynamic shared memory, 0 spills, 0 stack, no warnings, no
// C7514/C7520; 4 HGMMA.64x256x16.F32 (one k-step, the first with the scale-d predicate); 46 UTMALDG
// (21 as step 7 + 25 in the unrolled early-load block); 3 UTMACCTL.PF; 16 STSM.16.M88.4 and 4
// UTMASTG.2D (final epilogue) besides 32 STG.E.128 / 128 SHFL (in-loop chunks); no MEMBAR.ALL.GPU;
// 1 UCGABAR_ARV and 3 UCGABAR_WAIT (producer; consumer after its first k-step; consumer without a tile);
// no LDL/STL. 3,040 SASS instructions (step 7: 3,224). Each switch off alone, HG8_TMA_STORE=2 and
// all off: 168 registers, 0 spills, no warnings, 4 HGMMA. sm_80: the
// fallback (32 registers) and an empty wgmma kernel. The judge's GPU-free check (build_check.check_file): BUILT
// for sm_90a and sm_80. A Python model written with this step (GPU-free): stmatrix + swizzle + TMA-store mapping (every element
// of C once, ragged shapes, no bank conflicts), the box double-buffer waits, the descriptor
// arithmetic against make_desc, and step 7's two-CTA barrier model extended with the early loads,
// random CTA start times and the split cluster barrier; its mutations are caught.
// Measured (NVIDIA H200, 2026-11-28, README.md): correct on every test at its first run; `judge
// compare` against step 7: 0.964x / 0.994x / 1.000x of its time at 2048^3 / 4096^3 / 8192^3;
// `judge verify --table`: 0.99x / 1.00x / 1.01x cuBLAS. Each switch off alone: HG8_TMA_STORE=0
// 1.030x the time at 2048^3 (the step's gain; predicted 1-3%), HG8_EARLY=0 0.999x and
// HG8_PREFETCH=0 1.001x (nothing, where 1-3% and 0-1% were predicted), HG8_DESC=0 1.008x,
// HG8_TMA_STORE=2 0.991-1.001x (SAME).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

// Step 8's switches (build with -DHG8_X=0 to turn one off; each is independent of the others).
#ifndef HG8_PREFETCH  // prefetch.tensormap of the tensor maps at kernel start
#define HG8_PREFETCH 1
#endif
#ifndef HG8_EARLY  // first stages loaded (without multicast) before the cluster barrier; relaxed arrive
#define HG8_EARLY 1
#endif
#ifndef HG8_TMA_STORE  // epilogue through stmatrix into per-warp smem boxes + TMA store, instead of
#define HG8_TMA_STORE 1  // shuffles + STG: 1 = the CTA's last tile only (the exposed one), 2 = every tile
#endif
#ifndef HG8_DESC  // wgmma descriptors: base descriptor + offset (instead of make_desc per wgmma)
#define HG8_DESC 1
#endif

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int CLUSTER = 2;    // CTAs per cluster, along M; they share (multicast) the B tile
constexpr int THREADS = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;
// Epilogue staging (HG8_TMA_STORE): each of the 8 consumer warps owns EPI_BUFS boxes of 16 rows ×
// 64 columns of C (2 KB, 128-byte swizzled), 32 KB in all, after the 4 stages.
constexpr int EPI_ROWS = 16, EPI_COLS = 64, EPI_BOX_BYTES = EPI_ROWS * EPI_COLS * 2, EPI_BUFS = 2;
constexpr int EPI_BYTES = HG8_TMA_STORE ? 8 * EPI_BUFS * EPI_BOX_BYTES : 0;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + EPI_BYTES + 1024;  // + alignment slack (barriers are static)
static_assert(SMEM_BYTES + 64 <= 232448, "fits the 227 KB a block may opt in to");
static_assert(BN / 64 % CLUSTER == 0, "each CTA multicasts a whole number of B boxes");

// wgmma, TMA and clusters exist only on sm_90a: the device code below is compiled for that target
// alone (an sm_80 build keeps an empty kernel, and solve() never launches it there).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int B_BOX_BYTES = 64 * BK * 2;            // one 64×64 box of B
constexpr int B_BOXES_PER_CTA = BN / 64 / CLUSTER;  // boxes each CTA loads (and multicasts)
constexpr int EPI_CHUNKS = 4;                       // the epilogue in 4 parts of 64 columns
static_assert(EPI_COLS * EPI_CHUNKS == BN, "the epilogue chunks cover the tile's columns");

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ uint32_t cluster_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t cluster_id() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ uint32_t cluster_count() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}
// Every thread of both CTAs; release/acquire orders the barrier initialisation before it.
__device__ __forceinline__ void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Split cluster barrier (HG8_EARLY): every thread arrives once (relaxed: the only thing it must
// publish is the mbarrier initialisation, which fence.mbarrier_init.release.cluster already
// orders) and waits once (acquire) before its first access to the partner CTA.
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// Bring a tensor map (a __grid_constant__ kernel parameter) into the TMA unit's descriptor cache.
__device__ __forceinline__ void prefetch_tmap(const CUtensorMap* map) {
    asm volatile("prefetch.tensormap [%0];" :: "l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// TMA store of one box from this CTA's shared memory; out-of-bounds elements are not written.
__device__ __forceinline__ void tma_store_2d(const CUtensorMap* map, uint32_t src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// At most N of this thread's bulk groups still reading their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}
// This thread's generic-proxy shared-memory writes visible to the async proxy (the TMA store).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Four 8×8 fp16 matrices: lanes 8i..8i+7 give the row addresses of matrix i, register i of lane l
// holds (row l/4, columns 2(l%4), +1) of matrix i: the mma accumulator layout.
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 :: "r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Arrive on the barrier at bar's offset in CTA `rank` of the cluster (this CTA included), if pred.
// The predicate is inside the asm so that no C++ branch diverges around it. Default semantics
// (release.cta): `.release.cluster` makes ptxas put MEMBAR.ALL.GPU before each arrive, which
// would wait for the epilogue's global stores in flight.
__device__ __forceinline__ void mbar_arrive_cluster(uint64_t* bar, uint32_t rank, bool pred) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        ".reg .b32 remote;\n"
        "setp.ne.u32 p, %2, 0;\n"
        "mapa.shared::cluster.u32 remote, %0, %1;\n"
        "@p mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(rank), "r"((uint32_t)pred) : "memory");
}

// Wait for the phase of parity `parity` to complete. The default acquire.cta is enough for the
// empty barriers too, which the partner's consumers arrive on: what they signal is that their
// wgmmas stopped reading a stage, and what follows the wait is a TMA write, not a read that
// must see their data (acquire.cluster costs a CCTL.IVALL, an L1 invalidation, per wait).
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}

// The box lands at dst's offset in every CTA of `mask`, and each of them gets the complete_tx (the
// box's bytes) on the barrier at bar's offset.
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const CUtensorMap* map, uint64_t* bar, int c0,
                                                      int c1, uint16_t mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%3, %4}], [%2], %5;"
        :: "r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(mask) : "memory");
}

// A shared-memory matrix descriptor for wgmma: 128-byte swizzle, byte offsets >> 4.
__device__ __forceinline__ uint64_t make_desc(const void* base, uint32_t lbo, uint32_t sbo) {
    uint64_t d = 0;
    d |= (uint64_t)((smem_addr(base) & 0x3FFFF) >> 4);
    d |= (uint64_t)((lbo & 0x3FFFF) >> 4) << 16;
    d |= (uint64_t)((sbo & 0x3FFFF) >> 4) << 32;
    d |= (uint64_t)1 << 62;  // SWIZZLE_128B
    return d;
}

// The high word of make_desc's descriptor (SBO and the swizzle mode), as a 64-bit value.
__host__ __device__ constexpr uint64_t make_desc_hi(uint32_t sbo) {
    return ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | ((uint64_t)1 << 62);
}

// D[64×256] (+)= A[64×16] · B[16×256]; A K-major, B N-major (imm-trans-b = 1). accumulate = 0
// starts D from zero (scale-d).
__device__ __forceinline__ void wgmma_m64n256k16(float (&d)[128], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %130, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
        "%128, %129, p, 1, 1, 0, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
        : "l"(da), "l"(db), "r"(accumulate));
}

// Cluster tiles (CLUSTER tile rows × 1 tile column) in groups of GROUP_M cluster rows, column by
// column inside a group, so that the tiles running at the same time share their B columns (and
// A rows) in L2. Rank r of the cluster takes tile row CLUSTER·(cluster row) + r.
constexpr int GROUP_M = 16 / CLUSTER;

__device__ __forceinline__ void tile_origin(int t, int rank, int ctiles_m, int tiles_n, int& m0, int& n0) {
    const int group = t / (GROUP_M * tiles_n), first_m = group * GROUP_M;
    const int rows = min(ctiles_m - first_m, GROUP_M), in_group = t % (GROUP_M * tiles_n);
    m0 = (CLUSTER * (first_m + in_group % rows) + rank) * BM;
    n0 = (in_group / rows) * BN;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }

// After a wait, the registers a wgmma wrote are read by ordinary instructions: this makes each of
// them an output of an asm statement that cannot move above the (volatile) wait.
__device__ __forceinline__ void fence_operand(float (&d)[128]) {
#pragma unroll
    for (int i = 0; i < 128; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N)); }

__device__ __forceinline__ uint32_t half2_bits(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

__global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
            const __grid_constant__ CUtensorMap tma_c, half* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    // Same offsets in every CTA (same kernel, same static layout): multicast relies on it.
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ctiles_m = (tiles_m + CLUSTER - 1) / CLUSTER, ctiles = ctiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int rank = (int)cluster_rank(), cluster = (int)cluster_id(), clusters = (int)cluster_count();
    // HG8_EARLY: the first `pre` k-steps of the CTA's first tile are loaded before the cluster
    // barrier, each CTA loading the whole B slice itself (no multicast: the partner's barriers may
    // not be initialised yet). The same in both CTAs of a cluster (same tiles, same k_tiles).
    const int pre = HG8_EARLY ? (cluster < ctiles ? min(STAGES, k_tiles) : 0) : 0;

    if (threadIdx.x == 0) {
#if HG8_PREFETCH
        prefetch_tmap(&tma_a);
        prefetch_tmap(&tma_b);
#if HG8_TMA_STORE
        prefetch_tmap(&tma_c);
#endif
#endif
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                // the own producer's arrive.expect_tx
            mbar_init(&empty[s], 8 * CLUSTER);     // lane 0 of each consumer warp of each CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#if HG8_EARLY
        if (pre > 0) {
            fence_proxy_async();  // the initialised barriers visible to this thread's TMA (async proxy)
            int m0, n0;
            tile_origin(cluster, rank, ctiles_m, tiles_n, m0, n0);
            const int a_row = m0 < M ? m0 : 0;
            for (int kt = 0; kt < pre; ++kt) {  // stage kt = k-step kt: all 48 KB from this CTA's loads
                uint8_t* a = smem + kt * STAGE_BYTES;
                uint8_t* b = a + A_BYTES;
                mbar_expect_tx(&full[kt], STAGE_BYTES);
                tma_load_2d(a, &tma_a, &full[kt], kt * BK, a_row);
#pragma unroll
                for (int j = 0; j < BN / 64; ++j) tma_load_2d(b + j * B_BOX_BYTES, &tma_b, &full[kt], n0 + 64 * j, kt * BK);
            }
        }
#endif
    }
#if HG8_EARLY
    __syncthreads();           // this CTA's barriers initialised before any of its threads waits on them
    cluster_arrive_relaxed();  // the wait comes before each thread's first access to the partner
#else
    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely
#endif

    // Persistent: cluster c takes cluster tiles c, c + #clusters, ... The k-step counter `it` runs
    // on across tiles (identical in both CTAs of a cluster), so the producer fills the next tile's
    // stages while the consumers finish this one.
    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
#if HG8_EARLY
        cluster_wait();  // the partner's barriers initialised: multicasts may start
#endif
        if (tid == 0) {
            int it = 0;
            for (int t = cluster; t < ctiles; t += clusters) {
                int m0, n0;
                tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
                const int a_row = m0 < M ? m0 : 0;  // rank 1 past the last tile row: any rows will do
                const int kt0 = t == cluster ? pre : 0;  // k-steps already loaded before the barrier
                it += kt0;
                for (int kt = kt0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    // stage s free in both CTAs: their consumers released k-step it - STAGES
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    uint8_t* a = smem + s * STAGE_BYTES;
                    uint8_t* b = a + A_BYTES;
                    // 16 KB of A + 32 KB of B (half from this CTA's loads, half from the partner's)
                    mbar_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(a, &tma_a, &full[s], kt * BK, a_row);
#pragma unroll
                    for (int i = 0; i < B_BOXES_PER_CTA; ++i) {
                        const int j = rank * B_BOXES_PER_CTA + i;
                        if constexpr (CLUSTER > 1)
                            tma_load_2d_multicast(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kt * BK,
                                                  (uint16_t)((1u << CLUSTER) - 1));
                        else
                            tma_load_2d(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kt * BK);
                    }
                }
            }
            // Producer tail: wait until the consumers of both CTAs have released the last STAGES
            // k-steps, i.e. until every remote arrive aimed at this CTA's empty barriers has landed.
            // (Phase it/STAGES of empty[it % STAGES] completes when k-step `it` is released.)
            for (int i = it - STAGES > 0 ? it - STAGES : 0; i < it; ++i)
                mbar_wait(&empty[i % STAGES], (i / STAGES) & 1);
        }
        return;
    }

    // consumers: warpgroup 1 → rows m0 + [0, 64), warpgroup 2 → rows m0 + [64, 128)
    setmaxnreg_inc<232>();
    const int row_off = (wg - 1) * 64;
    const int warp = tid / 32, lane = tid % 32;

    // Stage s done in this warp (its wgmmas complete): one arrive per warp on empty[s] of each CTA.
    auto release = [&](int s) {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[s], r, lane == 0);
    };

#if HG8_DESC
    // A: K-major rows of 128 B, 8-row swizzle atoms 1024 B apart (SBO); +32 B per k16.
    // B: N-major, 64×64 boxes 8 KB apart along N (LBO), 8-row atoms 1024 B apart along K (SBO);
    //    +16 rows × 128 B per k16. Stage s adds s·STAGE_BYTES. The start-address field holds
    //    (address & 0x3FFFF) >> 4 < 2^14 for every operand (shared memory < 256 KB, no carry out).
    //    Only the low word changes, so the sums are 32-bit (no carry into the LBO field either:
    //    start field + offsets < 2^14). The high word (SBO 1024 >> 4, 128-byte swizzle) is constant.
    const uint32_t desc_a0 = (uint32_t)make_desc(smem + row_off * (BK * 2), 16, 1024);
    const uint32_t desc_b0 = (uint32_t)make_desc(smem + A_BYTES, 64 * BK * 2, 1024);
    constexpr uint64_t DESC_HI = make_desc_hi(1024);
#endif

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;
    // The previous tile's results as fp16 pairs: out[i] = (acc[2i], acc[2i+1]). With the mma layout,
    // thread (warp w, lane l) holds rows 16w + l/4 (+8), columns 8j + 2(l%4) (+1) for j = 0..31:
    // acc[4j .. 4j+3] = (row r, cols 2q, 2q+1), (row r+8, same cols), so out[2j + v] for v = 0..3 are
    // (block j, row r), (block j, row r+8), (block j+1, row r), (block j+1, row r+8) for even j.
    uint32_t out[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) out[i] = 0u;
    int out_row = 0, out_n0 = 0;  // the warp's first row (this lane's: + lane / 4) and the tile's first column
    bool have_out = false;

#if HG8_TMA_STORE
    // Chunk c of the epilogue: the warp's 16 rows × columns 64c .. 64c+63 of the tile, through the
    // warp's next box buffer. Four stmatrix.x4 (u = 0..3: blocks j = 8c + 2u, j + 1, rows 0-7 and
    // 8-15) write the box in the 128-byte swizzle (16-byte chunk k of row r at r·128 + 16·(k ^ r%8)),
    // then lane 0 stores it with TMA (the map clips rows ≥ M and columns ≥ N).
    const uint32_t epi_base = smem_addr(smem + STAGES * STAGE_BYTES) + ((wg - 1) * 4 + warp) * (EPI_BUFS * EPI_BOX_BYTES);
    const int mi = lane / 8, mr = lane % 8;  // this lane gives the address of row mr of matrix mi
    const uint32_t lane_off = (uint32_t)(((mi % 2) * 8 + mr) * 128);
    int epi_n = 0;  // boxes this warp has stored: box buffer epi_n % EPI_BUFS is next
    auto store_chunk_tma = [&](int c) {
        const int col = out_n0 + EPI_COLS * c;
        if (out_row >= M || col >= N) return;  // the whole box is outside C (warp-uniform): no store, no group
        const uint32_t buf = epi_base + (epi_n % EPI_BUFS) * EPI_BOX_BYTES;
        ++epi_n;
        // One bulk group per stored box, buffers in turn: at most EPI_BUFS - 1 groups still reading
        // means the one that last read this buffer is done with it.
        if (lane == 0) bulk_wait_read<EPI_BUFS - 1>();
        __syncwarp();
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int j = 8 * c + 2 * u;
            const uint32_t chunk = (uint32_t)(2 * u + mi / 2);  // 16-byte column chunk in the 128-byte row
            stmatrix_x4(buf + lane_off + ((chunk ^ (uint32_t)mr) << 4), out[2 * j], out[2 * j + 1], out[2 * j + 2],
                        out[2 * j + 3]);
        }
        fence_proxy_async();
        __syncwarp();
        if (lane == 0) {
            tma_store_2d(&tma_c, buf, col, out_row);
            bulk_commit();
        }
    };
#endif
#if HG8_TMA_STORE < 2
    // Chunk c of the epilogue: blocks j = 8c .. 8c+7 (64 columns). A quad of lanes holds two 8-column
    // blocks j, j+1 of rows r and r+8; four shuffles give lane q of the quad the whole 16 bytes of
    // one (block, row): q = 2·(block - j) + (row is r+8). Called with c a constant (unrolled loops).
    const int q = lane % 4;
    auto store_chunk_stg = [&](int c) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int j = 8 * c + 2 * u;
            uint32_t got[4] = {0, 0, 0, 0};  // got[p]: lane p's pair for this lane's (block, row)
#pragma unroll
            for (int k = 0; k < 4; ++k) {  // round k: read lane q^k, which sends what lane (its q)^k = q needs
                const int p = q ^ k;
                const uint32_t send = p == 0 ? out[2 * j] : p == 1 ? out[2 * j + 1] : p == 2 ? out[2 * j + 2]
                                                                                            : out[2 * j + 3];
                const uint32_t v = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
                for (int i = 0; i < 4; ++i) got[i] = p == i ? v : got[i];
            }
            const int row = out_row + lane / 4 + 8 * (q % 2), col = out_n0 + (j + q / 2) * 8;
            if (row < M && col < N)  // N % 8 == 0 here: the 8 columns are inside or outside together
                *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = make_uint4(got[0], got[1], got[2], got[3]);
        }
    };
#endif
    // The chunks stored under the next tile's k-steps: shuffles + STG by default, as step 7 (no shared-
    // memory traffic while the wgmmas read it); the last tile's, with nothing to hide under: TMA.
    auto store_chunk = [&](int c) {
#if HG8_TMA_STORE >= 2
        store_chunk_tma(c);
#else
        store_chunk_stg(c);
#endif
    };
    auto store_chunk_last = [&](int c) {
#if HG8_TMA_STORE >= 1
        store_chunk_tma(c);
#else
        store_chunk_stg(c);
#endif
    };

    int it = 0;
    for (int t = cluster; t < ctiles; t += clusters) {
        int m0, n0;
        tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            wgmma_fence();
#if HG8_DESC
            const uint32_t stage_off = (uint32_t)(s * (STAGE_BYTES >> 4));
#pragma unroll
            for (int k = 0; k < BK / 16; ++k)
                wgmma_m64n256k16(acc, DESC_HI | (desc_a0 + stage_off + 2 * k), DESC_HI | (desc_b0 + stage_off + 128 * k),
                                 kt > 0 || k > 0);
#else
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * (BK * 2);
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
#pragma unroll
            for (int k = 0; k < BK / 16; ++k) {
                // A: K-major rows of 128 B, 8-row swizzle atoms 1024 B apart (SBO); +32 B per k16.
                // B: N-major, 64×64 boxes 8 KB apart along N (LBO), 8-row atoms 1024 B apart along
                //    K (SBO); +16 rows × 128 B per k16. The tile's first wgmma starts from zero.
                wgmma_m64n256k16(acc, make_desc(a + k * 32, 16, 1024), make_desc(b + k * 16 * 128, 64 * BK * 2, 1024),
                                 kt > 0 || k > 0);
            }
#endif
            wgmma_commit();
#if HG8_EARLY
            if (it == 0) cluster_wait();  // before this thread's first remote arrive (the release below / at the tile end)
#endif
            // The previous tile's stores, a chunk per k-step, while this k-step's wgmmas run.
            if (have_out) {
#pragma unroll
                for (int c = 0; c < EPI_CHUNKS; ++c)
                    if (kt == c) store_chunk(c);
            }
            wgmma_wait<1>();  // the previous k-step's wgmmas are done: release its stage
            if (kt > 0) release((it - 1) % STAGES);
        }
        wgmma_wait<0>();
        fence_operand(acc);
        release((it - 1) % STAGES);  // the tile's last stage
        if (have_out) {  // chunks a tile with fewer than EPI_CHUNKS k-steps had no room for
#pragma unroll
            for (int c = 0; c < EPI_CHUNKS; ++c)
                if (c >= k_tiles) store_chunk(c);
        }
#pragma unroll
        for (int i = 0; i < 64; ++i) out[i] = half2_bits(acc[2 * i], acc[2 * i + 1]);
        out_row = m0 + row_off + warp * 16;
        out_n0 = n0;
        have_out = true;
    }
#if HG8_EARLY
    if (it == 0) cluster_wait();  // no tile (not launched so): still one wait per arrive
#endif
    if (have_out) {  // the last tile's epilogue: nothing left to overlap it with
#pragma unroll
        for (int c = 0; c < EPI_CHUNKS; ++c) store_chunk_last(c);
    }
#if HG8_TMA_STORE
    if (lane == 0) bulk_wait_read<0>();  // the shared memory stays until every store has read it
#endif
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// Shapes TMA cannot describe (K or N not a multiple of 8): 32×32 shared-memory tiles, fp32.
__global__ void hgemm_fallback(const half* __restrict__ A, const half* __restrict__ B, half* __restrict__ C,
                               int M, int N, int K) {
    __shared__ float As[32][33], Bs[32][33];
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 32 × 8 threads, 4 rows each
    const int row0 = blockIdx.y * 32, col0 = blockIdx.x * 32;
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (int k0 = 0; k0 < K; k0 += 32) {
        for (int i = 0; i < 4; ++i) {
            const int r = ty + 8 * i;
            As[r][tx] = (row0 + r < M && k0 + tx < K) ? __half2float(A[(size_t)(row0 + r) * K + k0 + tx]) : 0.f;
            Bs[r][tx] = (k0 + r < K && col0 + tx < N) ? __half2float(B[(size_t)(k0 + r) * N + col0 + tx]) : 0.f;
        }
        __syncthreads();
        for (int k = 0; k < 32; ++k)
            for (int i = 0; i < 4; ++i) acc[i] += As[ty + 8 * i][k] * Bs[k][tx];
        __syncthreads();
    }
    for (int i = 0; i < 4; ++i) {
        const int r = row0 + ty + 8 * i, c = col0 + tx;
        if (r < M && c < N) C[(size_t)r * N + c] = __float2half_rn(acc[i]);
    }
}

static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&fn), 12000,
                                         cudaEnableDefault, &q);
    }
    return fn;
}

// A 2-D row-major fp16 matrix rows×cols, boxes of box_rows × 64 columns, 128-byte swizzle.
static bool make_map(CUtensorMap* map, const half* base, int rows, int cols, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(half)};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    auto fn = encode_tiled();
    return fn && fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<half*>(base), dims, strides, box, elem_strides,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

struct Device { int cc, sms; };
static Device device() {  // compute capability (9.0: the sm_90a kernel can run) and SM count
    static Device d{-1, 0};
    if (d.cc < 0) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
        d.cc = major * 10 + minor;
    }
    return d;
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    CUtensorMap ma, mb, mc = {};
    // HG8_TMA_STORE: C through a map of 16 × 64 boxes (the TMA store clips rows ≥ M, columns ≥ N); C's
    // row stride is N · 2 bytes, a multiple of 16 here as for B. A C the driver cannot map (base not
    // 16-byte aligned) takes the fallback, as such an A or B already does.
    if (device().cc == 90 && K % 8 == 0 && N % 8 == 0 && K > 0 && make_map(&ma, A, M, K, BM) && make_map(&mb, B, K, N, BK) &&
        (!HG8_TMA_STORE || make_map(&mc, C, M, N, EPI_ROWS))) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = CLUSTER;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.blockDim = dim3(THREADS);
        cfg.dynamicSmemBytes = SMEM_BYTES;
        cfg.stream = 0;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        // How many clusters can be resident at once: the persistent grid's size.
        static int resident = -1;
        if (resident < 0) {
            cudaFuncSetAttribute(hgemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
            cfg.gridDim = dim3(CLUSTER * (device().sms / CLUSTER));
            int n = 0;
            if (cudaOccupancyMaxActiveClusters(&n, hgemm_wgmma, &cfg) != cudaSuccess || n <= 0) {
                (void)cudaGetLastError();  // not fatal: assume every SM
                n = device().sms / CLUSTER;
            }
            resident = n;
        }
        const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
        const int ctiles = ((tiles_m + CLUSTER - 1) / CLUSTER) * tiles_n;
        const int clusters = ctiles < resident ? ctiles : resident;
        cfg.gridDim = dim3(CLUSTER * clusters);
        cudaLaunchKernelEx(&cfg, hgemm_wgmma, ma, mb, mc, C, M, N, K);
    } else {
        dim3 grid((N + 31) / 32, (M + 31) / 32);
        hgemm_fallback<<<grid, 256>>>(A, B, C, M, N, K);
    }
}
