// fp8_gemm, step 6: step 5 in clusters of two CTAs that multicast the operand they share, with a
// tile's epilogue stored while the next tile's first stage runs.
//
// What step 5 left (README.md, "Still to write"): 0.83× / 0.84× cuBLAS FP8 at 8192³ / 4096³, 0.91× at
// the decode shape. hgemm step 7 gained +1.7% / +4.4% / +5.9% over its step 6 from the same two
// changes; here they cost more per FLOP, since FP8 runs twice the fp16 rate on the same bytes:
//   - L2 → SM traffic. Per 128-deep stage a CTA reads A[128×128] and B[128×128], 16 + 16 KB, for
//     4.2 MFLOP; at step 5's 1,224 TFLOPS that is 9.5 TB/s out of L2 for 132 SMs (hgemm step 6:
//     8.5 TB/s at its rate), and its power comes out of the SM clock.
//   - The epilogue. At the end of each tile both consumer warpgroups wait for their last stage, then
//     scale, convert, shuffle and store (32 SHFL and 8 STG.128 a thread): the tensor cores idle
//     while they do, once a tile, and an fp8 tile takes half an fp16 one's time (~15 µs of math at
//     4096³, ~29 µs at 8192³ per SM, from step 5's times).
//
// 1. Clusters of two, one operand multicast (hgemm step 7's protocol, unchanged). Two CTAs compute
//    adjacent tiles that share an operand: along M, (m0, n0) and (m0 + 128, n0) share B; along N,
//    (m0, n0) and (m0, n0 + 128) share A. Each loads its own operand's 128 rows as before and one
//    64-row box of the shared one (rank r: rows 64r .. 64r + 63 of the tile) with
//    `.multicast::cluster` into both CTAs, at the same offset: two 64-row boxes of 128-byte rows
//    lie exactly as one 128-row box (8 KB apart, 1024-byte swizzle atoms), so the wgmma
//    descriptors are step 5's. A CTA reads 16 + 8 KB from L2 per stage instead of 32 (−25%).
//    - full[s] (count 1) expects the whole stage, 32 KB, as before: the own 16 KB, this CTA's box
//      and the partner's (which may land first: the tx-count goes negative and the pending arrival
//      keeps the phase open).
//    - empty[s] counts 8 consumer warps × 2 CTAs: after its wait, lane 0 of each consumer warp
//      arrives on empty[s] of both CTAs (`mapa` + `mbarrier.arrive.shared::cluster`, default
//      release.cta: no MEMBAR in the loop). Step 5's 256 per-thread arrivals become 16 per-warp.
//    - Start: barriers initialised, `fence.mbarrier_init`, then a cluster barrier. Exit: the
//      producer tail (after its last load the producer waits on the empty barriers of the last
//      STAGES k-steps, so every remote arrive has landed); every multicast into a CTA is waited
//      for by its own consumers through full[s].
//    - Direction, chosen on the host per shape: along M unless that leaves a CTA without a tile
//      where along N would not (an even number of tile rows, else of tile columns, else the longer
//      side). The decode shape (M = 128, one tile row) runs along N and shares A; the square ones
//      along M sharing B. A rank whose tile lies past M (or N) still runs every k-step (its
//      partner needs its box), loads its own operand from row 0 and stores nothing; a shared box
//      wholly past the matrix also loads from row 0 (its rows' results are never stored). The
//      tests cover both: along N at 257×129 (3 × 2 tiles), 64×200 and the decode shape; along M
//      at 509×257 and 8192³; an idle rank at 128³, 1×1, 300×264 (3 × 3) and 128×128×16384.
//    - Grid: cudaLaunchKernelEx with cluster dims, as many clusters as
//      cudaOccupancyMaxActiveClusters allows; cluster c takes cluster tiles c, c + #clusters, ... in
//      groups of 16 tile rows as before. No wave is lost: 2,048 / 512 / 112 cluster tiles on 66 (or
//      64) clusters take 32 / 8 / 2 rounds, as 4,096 / 1,024 / 224 tiles took on 132 CTAs.
//    Predicted: +2–4% at 4096³ and 8192³ (hgemm's multicast at a lower L2 rate, with its epilogue
//    change, gave +4–6%); 0–2% at the decode shape, bound by reading B from HBM, which the
//    multicast of A does not change.
// 2. The epilogue under the next tile. At the end of a tile a consumer scales and packs its 64
//    accumulators into 32 registers of bf16 pairs (`out`) and starts the next tile at once; the
//    shuffles and stores of `out` run between the commit of the next tile's first stage (into p0)
//    and its `wgmma.wait_group 0`, while those wgmmas run. There acc, p1 and the previous p0 are
//    dead, so out's 32 registers fit (R227 is the highest the consumers use, under 232). The last
//    tile's epilogue is stored after the loop. The promotion (issue order, waits, where the FADDs
//    go) is step 5's, untouched: SASS has the same QGMMA / DEPBAR / FADD sequence in the loop.
//    Predicted: +2–5% at 4096³ (7 of 8 tile boundaries per CTA hidden, ~0.5 µs each of ~15 µs),
//    +1–3% at 8192³ (31 of 32, of ~29 µs), ~0 at the decode shape (1–2 tiles per CTA, memory-bound).
// Together: +4–7% on the square shapes (0.87–0.90× cuBLAS), +0–2% at the decode shape (0.91–0.93×).
// Not done: a wider tile. With acc, p0 and p1 a consumer holds 192 floats of 232 registers; a
// 128×192 or 256×128 tile needs either one stage accumulator less (step 4's wait) or a third
// consumer warpgroup and a register budget that does not exist.
//
// Switches, to bisect a failure on the GPU: CLUSTER = 1 builds the kernel without clusters (plain
// TMA, the CTA's own arrivals; the tile order is step 5's), EPI_OVERLAP = false stores each tile
// where step 5 did. All four combinations build clean.
//
// Build (nvcc 13.0, the judge's flags): sm_90a: ptxas reports 168 registers (the launch-time
// count; the consumers use up to R227 after USETMAXREG 232, the producer 40), 96 bytes of static
// shared memory + 197,632 dynamic, 0 spills, 0 bytes stack, no warnings (no C7514/C7520). SASS: 16
// QGMMA.64x128x32 (as step 5), no LDL/STL; 7 UTMALDG.2D (own operand) and 7 UTMALDG.2D.MULTICAST
// (the shared box; the producer loop is unrolled); stage releases are SYNCS.ARRIVE.TRANS64.RED with
// no MEMBAR (the one MEMBAR.ALL.CTA, MEMBAR.ALL.GPU and CCTL.IVALL are at the start, from the
// barrier-init fence and the cluster barrier); the epilogue's SHFL and STG.E.128 lie between the
// next tile's first four QGMMAs and their WARPGROUP.DEPBAR. sm_80: an empty kernel (4 registers)
// and the fallback (16).
// Before the first GPU run the protocol with step 5's consumer order (two accumulators, a release
// per stage after its wait) was checked with a randomised model of two CTAs (TMA boxes landing in
// each CTA in random order, 1-5 tiles × 1-9 k-steps, 3,000 runs; CLUSTER = 1 too): no deadlock,
// every wgmma group reads its own k-step's bytes, no stage overwritten while either CTA's wgmmas
// read it, nothing lands in an exited CTA. The model catches a missing producer tail and an
// empty[s] that counts only its own CTA's warps.
//
// Measured (NVIDIA H200, 2026-11-28, cuBLAS FP8 in the same run; judge verify --table at 13:21 UTC):
// decode / 4096³ / 8192³: 0.0709 / 0.1194 / 0.8883 ms, 0.93× / 0.86× / 0.84× cuBLAS, 0.877×
// geomean (step 5 in the same run: 0.0724 / 0.1224 / 0.8962 ms, 0.862×): +2.1% / +2.5% / +0.9%
// over step 5, below the +4-7% predicted on the square shapes. Correct on every test at its first run.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 128, STAGES = 6;  // BK in e4m3 values = bytes
constexpr int CLUSTER = 2;    // CTAs per cluster (1: no clusters, no multicast); they share one operand
constexpr int THREADS = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + alignment slack (barriers are static)
// The shared operand's tile (A's or B's 128 rows) in CLUSTER boxes of SHARED_ROWS rows: each CTA
// loads one box and multicasts it to the whole cluster.
constexpr int SHARED_ROWS = BM / CLUSTER;
static_assert(BM == BN, "either operand may be the shared one: same tile rows");
static_assert(SHARED_ROWS % 8 == 0, "boxes start on a 1024-byte swizzle atom");

// wgmma and the TMA instructions exist only on sm_90a: the device code below is compiled for
// that target alone.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr bool EPI_OVERLAP = true;  // a tile's stores under the next tile's first stage (false: step 5's place)
constexpr int SHARED_BOX_BYTES = SHARED_ROWS * BK;  // one CTA's box of the shared operand

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

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

// Arrive on the barrier at bar's offset in CTA `rank` of the cluster (this CTA included), if pred.
// The predicate is inside the asm so that no C++ branch diverges around it. Default semantics
// (release.cta), as hgemm step 7: `.release.cluster` makes ptxas put a MEMBAR.ALL.GPU before each
// arrive, which would wait for the epilogue's global stores in flight.
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
// wgmmas stopped reading a stage, and what follows the wait is a TMA write, not a read that must
// see their data (acquire.cluster costs a CCTL.IVALL, an L1 invalidation, per wait).
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

// A shared-memory matrix descriptor for wgmma: 128-byte swizzle, byte offsets >> 4. For K-major
// operands with 128-byte rows the leading offset is unused and the stride offset is the 1024 B
// between 8-row swizzle atoms.
__device__ __forceinline__ uint64_t make_desc(const void* base) {
    uint64_t d = 0;
    d |= (uint64_t)((smem_addr(base) & 0x3FFFF) >> 4);
    d |= (uint64_t)(16 >> 4) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;  // SWIZZLE_128B
    return d;
}

// D[64×128] (+)= A[64×32] · B[32×128] in e4m3 with fp32 accumulators; A and B both K-major (FP8
// wgmma has no transpose). accumulate = 0 starts D from zero (scale-d): no instruction zeroes it.
__device__ __forceinline__ void wgmma_m64n128k32(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

// A cluster tile is cm × cn tiles (CLUSTER × 1 when the cluster runs along M and shares B, 1 ×
// CLUSTER along N sharing A); rank r takes its r-th tile. Cluster tile t in groups of 16 tile rows
// (16 / cm cluster-tile rows), column by column inside a group, so that the tiles running at the
// same time share their B rows (and A rows) in L2. With CLUSTER = 1 this is step 5's order.
__device__ __forceinline__ void tile_origin(int t, int rank, bool along_n, int ctiles_m, int ctiles_n,
                                            int& m0, int& n0) {
    const int cm = along_n ? 1 : CLUSTER, cn = along_n ? CLUSTER : 1, group_m = 16 / cm;
    const int group = t / (group_m * ctiles_n), first_m = group * group_m;
    const int rows = min(ctiles_m - first_m, group_m), in_group = t % (group_m * ctiles_n);
    m0 = (cm * (first_m + in_group % rows) + (along_n ? 0 : rank)) * BM;
    n0 = (cn * (in_group / rows) + (along_n ? rank : 0)) * BN;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_one() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// After a wait, the registers a wgmma wrote are read by ordinary instructions: this makes each
// of them an output of an asm statement that cannot move above the (volatile) wait.
__device__ __forceinline__ void fence_operand(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N)); }

__device__ __forceinline__ uint32_t bf16x2(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

__global__ void __launch_bounds__(THREADS, 1)
gemm_wgmma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
           const float* __restrict__ scale_a, const float* __restrict__ scale_b,
           __nv_bfloat16* __restrict__ C, int M, int N, int K, int along_n) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    // Same offsets in every CTA (same kernel, same static layout): multicast relies on it.
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ctiles_m = along_n ? tiles_m : (tiles_m + CLUSTER - 1) / CLUSTER;
    const int ctiles_n = along_n ? (tiles_n + CLUSTER - 1) / CLUSTER : tiles_n, ctiles = ctiles_m * ctiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int rank = (int)cluster_rank(), cluster = (int)cluster_id(), clusters = (int)cluster_count();

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);              // the own producer's arrive.expect_tx
            mbar_init(&empty[s], 8 * CLUSTER);   // lane 0 of each consumer warp of each CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely

    // Persistent: cluster c takes cluster tiles c, c + #clusters, ... The k-step counter `it` runs
    // on across tiles (identical in both CTAs of a cluster), so the producer fills the next tile's
    // stages while the consumers store this one.
    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int t = cluster; t < ctiles; t += clusters) {
                int m0, n0;
                tile_origin(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
                // The own operand's 128 rows (A's at m0, or B's at n0 when A is the shared one) and
                // box `rank` of the shared one (its rows `SHARED_ROWS·rank` on from the cluster's
                // common m0 or n0). A box wholly past the matrix (rank 1 of a last cluster tile
                // with no tile of its own, or a shared half past M or N) loads rows from 0
                // instead: those rows' results are never stored.
                const int own_rows = along_n ? N : M, own0 = along_n ? n0 : m0;
                const int own_row = own0 < own_rows ? own0 : 0;
                const int sh_rows = along_n ? M : N;
                const int sh0 = (along_n ? m0 : n0) + SHARED_ROWS * rank;
                const int sh_row = sh0 < sh_rows ? sh0 : 0;
                const CUtensorMap* own_map = along_n ? &tma_b : &tma_a;
                const CUtensorMap* sh_map = along_n ? &tma_a : &tma_b;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    // stage s free in both CTAs: their consumers released k-step it - STAGES
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    uint8_t* a = smem + s * STAGE_BYTES;
                    uint8_t* own = along_n ? a + A_BYTES : a;
                    uint8_t* sh = (along_n ? a : a + A_BYTES) + rank * SHARED_BOX_BYTES;
                    // 16 KB of A + 16 KB of B: the own operand, this CTA's box of the shared one and
                    // the partner's box (its multicast may land before this expect_tx: the tx-count
                    // goes negative and the pending arrival keeps the phase open).
                    mbar_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(own, own_map, &full[s], kt * BK, own_row);
                    if constexpr (CLUSTER > 1)
                        tma_load_2d_multicast(sh, sh_map, &full[s], kt * BK, sh_row, (uint16_t)((1u << CLUSTER) - 1));
                    else
                        tma_load_2d(sh, sh_map, &full[s], kt * BK, sh_row);
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
    const int warp = tid / 32, lane = tid % 32, q = lane % 4;
    const float scale = *scale_a * *scale_b;

    // A finished tile's results as bf16 pairs, scaled: out[i] = (acc[2i], acc[2i+1]) · scale. With
    // the wgmma layout, acc[4j .. 4j+3] are rows r (+8), columns 8j + 2q (+1) of the tile, with r
    // the lane's row and q = lane % 4, so out[2j + v] for v = 0..3 are (block j, row r), (block j,
    // row r+8), (block j+1, row r), (block j+1, row r+8) for even j.
    uint32_t out[32];
    int out_r = 0, out_n0 = 0;  // this lane's first row (r) and the tile's first column
    auto pack = [&](const float (&acc)[64], int m0, int n0) {
#pragma unroll
        for (int i = 0; i < 32; ++i) out[i] = bf16x2(acc[2 * i] * scale, acc[2 * i + 1] * scale);
        out_r = m0 + row_off + warp * 16 + lane / 4;
        out_n0 = n0;
    };
    auto store_out = [&]() {
        if (N % 8 == 0) {
            // A quad of lanes holds two 8-column blocks j, j+1 of rows r and r+8. Four shuffles give
            // lane q of the quad the whole 16 bytes of one (block, row): q = 2·(block - j) + (row is r+8).
#pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
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
                const int row = out_r + 8 * (q % 2), col = out_n0 + (j + q / 2) * 8;
                if (row < M && col < N)  // N % 8 == 0: the 8 columns are inside or outside together
                    *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = make_uint4(got[0], got[1], got[2], got[3]);
            }
        } else {
            uint16_t* c16 = reinterpret_cast<uint16_t*>(C);
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                for (int v = 0; v < 4; ++v) {  // acc[4j + v] is half v % 2 of out[2j + v / 2]
                    const int row = out_r + 8 * (v / 2), col = out_n0 + 8 * j + 2 * q + v % 2;
                    const uint32_t pair = out[2 * j + v / 2];
                    if (row < M && col < N)
                        c16[(size_t)row * N + col] = (uint16_t)(v % 2 ? pair >> 16 : pair & 0xffffu);
                }
            }
        }
    };
    bool have_out = false;

    int it = 0;  // the ring position of this tile's first stage
    for (int t = cluster; t < ctiles; t += clusters, it += k_tiles) {
        int m0, n0;
        tile_origin(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
        float acc[64], p0[64], p1[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        // stage kt's four wgmmas into `part`, from zero, as one commit group
        auto issue = [&](float (&part)[64], int kt) {
            const int s = (it + kt) % STAGES;
            mbar_wait(&full[s], ((it + kt) / STAGES) & 1);
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * BK;
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)
                wgmma_m64n128k32(part, make_desc(a + k * 32), make_desc(b + k * 32), k);
            wgmma_commit();
        };
        // every group done: `part` may be read (and its stage given back)
        auto wait = [&](float (&part)[64]) {
            wgmma_wait_all();
            fence_operand(part);
        };
        // stage kt, done (this warp's wgmmas waited for), given back to the producers of every CTA
        // of the cluster (lane 0 of each warp arrives on empty[s] of each CTA) and added into acc
        auto retire = [&](float (&part)[64], int kt) {
#pragma unroll
            for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[(it + kt) % STAGES], r, lane == 0);
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] += part[i];  // at most 128 products in `part`
        };
        // Stages in pairs after the first (the header gives the order and why); nothing is in
        // flight at the loop's back edge. An even count leaves one stage after the loop (the branch
        // depends on K alone, the same for every thread).
        issue(p0, 0);
        // The previous tile's shuffles and stores while this tile's first stage runs (acc, p1 and
        // the previous tile's p0 are dead here: out's 32 registers fit).
        if (EPI_OVERLAP && have_out) store_out();
        wait(p0);
        int kt = 1;
        for (; kt + 1 < k_tiles; kt += 2) {
            issue(p1, kt);
            retire(p0, kt - 1);
            issue(p0, kt + 1);
            wgmma_wait_one();
            fence_operand(p1);
            retire(p1, kt);
            wait(p0);
        }
        if (kt < k_tiles) {  // kt = k_tiles - 1
            issue(p1, kt);
            retire(p0, kt - 1);
            wait(p1);
            retire(p1, kt);
        } else {
            retire(p0, kt - 1);
        }

        pack(acc, m0, n0);
        have_out = true;
        if (!EPI_OVERLAP) store_out();
    }
    if (EPI_OVERLAP && have_out) store_out();  // the last tile's: nothing left to overlap it with
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// GPUs other than sm_90 (and shapes TMA cannot describe): step 1's loop, one thread per output.
__global__ void gemm_fallback(const __nv_fp8_e4m3* __restrict__ A, const __nv_fp8_e4m3* __restrict__ B,
                              const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                              __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += float(A[(size_t)row * K + k]) * float(B[(size_t)col * K + k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc * (*scale_a * *scale_b));
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

// A 2-D row-major e4m3 matrix rows×K (K-major), boxes of box_rows × 128 bytes, 128-byte swizzle.
static bool make_map(CUtensorMap* map, const __nv_fp8_e4m3* base, int rows, int K, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)K};  // bytes; K % 16 == 0
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    auto fn = encode_tiled();
    return fn && fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<__nv_fp8_e4m3*>(base), dims, strides, box,
                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
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

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    // The cluster runs along M (its CTAs share B) unless that leaves a CTA without a tile where
    // running along N would not: an even number of tile rows, else of tile columns, else the
    // longer side. The decode shape (one tile row) shares A.
    const bool along_n = CLUSTER > 1 && tiles_m % CLUSTER != 0 && (tiles_n % CLUSTER == 0 || tiles_n > tiles_m);
    CUtensorMap ma, mb;
    if (device().cc == 90 && K % 16 == 0 && K > 0 && make_map(&ma, A, M, K, along_n ? SHARED_ROWS : BM) &&
        make_map(&mb, B, N, K, along_n ? BN : SHARED_ROWS)) {
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
            cudaFuncSetAttribute(gemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
            cfg.gridDim = dim3(CLUSTER * (device().sms / CLUSTER));
            int n = 0;
            if (cudaOccupancyMaxActiveClusters(&n, gemm_wgmma, &cfg) != cudaSuccess || n <= 0) {
                (void)cudaGetLastError();  // not fatal: assume every SM
                n = device().sms / CLUSTER;
            }
            resident = n;
        }
        const int ctiles = along_n ? tiles_m * ((tiles_n + CLUSTER - 1) / CLUSTER)
                                   : ((tiles_m + CLUSTER - 1) / CLUSTER) * tiles_n;
        const int clusters = ctiles < resident ? ctiles : resident;
        cfg.gridDim = dim3(CLUSTER * clusters);
        cudaLaunchKernelEx(&cfg, gemm_wgmma, ma, mb, scale_a, scale_b, C, M, N, K, (int)along_n);
    } else {
        dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
        gemm_fallback<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
    }
}
