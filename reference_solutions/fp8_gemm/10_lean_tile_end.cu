// fp8_gemm, step 10: step 9 with a leaner tile end. The producer, the schedule (GPC-ordered bands,
// the quorum round barrier), the tiles, the k-step loop and the promotion are step 9's
// (09_gpc_bands.cu and 08_wide_tile_144.cu have their counts); this header is what changes at the end
// of each tile, in both kernels (128- and 144-wide), and why. README.md, "Step 10", has the runs.
//
// Why (H200, 2026-11-30, Nsight Compute at 8192³, one call each; README "Step 10"):
//   - not the loads: step 9 with nothing loaded after the first round (`fp8_coalescing.py write`'s
//     step9_no_loads) needs 1,128,881 SM cycles against step 9's 1,142,091 (-1.2%; it runs faster
//     only at a higher clock, 1.63 GHz against 1.51, the power limit's share). Both are ~9-11% over
//     the tensor cores' floor (28 rounds × 64 k-steps × 576 cycles = 1,032,192).
//   - the tile end: source-level sampling (`--section SourceCounters`, scripts/probes/
//     ncu_source_regions.py) puts 80.4% of step 9's warp samples in the k-step loop (by its share of
//     the samples within ~1% of the floor a k-step) and 10.4% (~11% of the consumer warps') in code run
//     once a tile: a drain
//     (wait_group 0), the last 72 FADDs, the pack (72 FMUL, 36 F2FP), the next tile's origin (two
//     integer divisions), its first stage, then the previous tile's stores under that stage. Both
//     warpgroups reach it together, so the tensor cores idle through whatever one stage (576 cycles
//     for the two) does not cover. The stores were ~570 instructions a warp: the quad's gather of
//     each lane's 16 bytes by four shuffles whose sources and destinations depend on the lane (214
//     SEL, 36 SHFL.IDX, ~100 ISETP) - two warps a scheduler, ~1,100 issue cycles under a 576-cycle stage.
//   - cuBLAS's kernel (its SASS, shown by the same Nsight Compute page) drains every k-step instead
//     (one stage accumulator, wait_group 0; its warpgroups presumably out of step) and stores through shared
//     memory: STSM and a TMA store per warp, ~190 instructions a warp a tile.
//
// What changes (each a switch; 1 is the default unless said). Step 7's switches (FP7_PIPE, FP7_ADDR,
// FP7_PROMOTE2) are gone: their defaults are this file's only path (their others: 09_gpc_bands.cu).
//   1. FP10_STORE = 1: the quad's transposition as two butterfly rounds. Lane q holds, for two
//      8-column blocks, 4 registers e = 2·(block) + (row is r + 8), each 2 columns; lane q stores the
//      16 bytes of e = q, i.e. register q of every lane of the quad: a 4×4 transpose. Round b (1, 2)
//      swaps register e with the partner's (lane q ^ b) e ^ b where bit b of e differs from q's: per
//      pair of blocks 4 SHFL.BFLY and 12 SEL on lane-constant predicates (step 9: 4 SHFL.IDX, ~24
//      SEL, ~12 ISETP). FP10_STORE = 0 is step 9's gather.
//   2. The accumulators live across tiles and a tile's first promotion sets acc (acc = 0 + p: the
//      zero add keeps ptxas from merging acc into the stage accumulator's registers, which it then
//      copies under a wgmma in flight, C7515); no zeroing of acc a tile (step 9: 36 CS2R), and acc's
//      registers hold the packed results while they are stored.
//   3. FP10_EARLY: after a tile's drain and last promotion, the next tile's first stage is issued
//      before the pack, so the pack, the next origin and the stores run under it (FP10_EARLY = 0:
//      pack, then issue, step 9's order). Measured the same as 0 (0.999 / 0.999 / 1.002, with
//      FP10_FOLD = 1): kept for the order it gives, not for a gain.
// Measured and off by default (README, "Step 10"):
//   - FP10_STORE = 2: each lane's 4-byte pairs stored where they are (36 STG.E, no shuffles): 1.04 /
//     1.12 / 1.08-1.09 of step 9's time at the decode shape / 4096³ / 8192³ (without and with the seam): L2
//     reads 156.9M sectors against 131.5M at 8192³, hardware merges halved (a warp's store covers 16
//     bytes of each of 8 rows, half a sector; why that costs L2 reads was not traced).
//   - FP10_SEAM = 1: the next tile's first stage queued behind a tile's last before waiting for it
//     (every path still reaches the tile loop's head with one group in flight, stage 0 in p0). With
//     the butterfly and FP10_EARLY = 0: 1.003 / 0.993 / 0.998 of step 9's time, where the same file
//     without it measured 0.995 / 0.988 / 0.992 (same batch, 10:34 UTC); 1,157,451 cycles against
//     1,137,421. A guess, not
//     measured: the consumer now waits for the next tile's data (held by the round barrier) before
//     it can promote, pack and give back this tile's last stage.
//   - FP10_FOLD = 1: scale_a · scale_b folded into the promotions (FFMA for FADD, no FMUL at the
//     end): 1.014 of the unfolded file's time at 8192³ (SLOWER), 1.005 at 4096³.
//
// Predicted, before the runs: the seam +2-5% (wrong: no gain); the 4-byte stores ~1.5% (wrong: 8-12%
// slower); the butterfly ~1.8% if the stores were all on the critical path. Measured (the default,
// 10:47 UTC): `judge compare --budget 3` against step 9 0.995 / 0.992 / 0.992 (SAME by the judge's
// 1% rule, the intervals [0.987, 0.995] and [0.990, 0.993]); Nsight Compute at 8192³ 1,139,165
// cycles (step 9 1,147,834 in the same run, -0.8%), 245.4M warp instructions (253.8M), L2 reads
// 121.7M sectors (131.2M); `judge submit` 0.96× / 1.01× / 1.01× cuBLAS FP8; `judge verify --table`
// 0.974× / 1.009× / 1.013× (step 9 beside it 0.976× / 1.004× / 1.001×).
//
// Build (nvcc 13.0, the judge's flags, sm_90a): both kernels 168 registers at launch, 0 bytes stack,
// 0 spills, 112 / 96 bytes of static shared memory (144 / 128), no C7514/C7515 in any of the 24
// combinations of the switches. The wide kernel 3,256 instructions (step 9: 3,416): 24 QGMMA (16: the
// first tile's stage 0, stage 1, the loop's two, an odd count's last, the next tile's stage 0), SHFL.BFLY 72
// and SHFL.IDX 4 (step 9: SHFL.IDX 76), SEL 217 (464), CS2R 1 (36), STG.E.128 18 (18: the stores
// under the next tile and the last tile's). The 128-wide kernel 2,632 (2,768). sm_80: the empty
// kernel pair, gpc_where_sm and the fallback, as step 9.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cstdint>

// Step 10's switches (header).
#ifndef FP10_SEAM
#define FP10_SEAM 0     // 1: the next tile's first stage queued behind a tile's last, before its wait (measured slower)
#endif
#ifndef FP10_EARLY
#define FP10_EARLY 1    // after a tile's drain, the next tile's first stage issued before the pack (0: after it)
#endif
#ifndef FP10_FOLD
#define FP10_FOLD 0     // 1: scale_a · scale_b folded into the promotions (FFMA for FADD; measured slower)
#endif
#ifndef FP10_STORE
#define FP10_STORE 1    // a finished tile's 16-byte stores through a two-round butterfly in each quad (0: step 9's
                        // four gathering shuffles; 2: each lane's 4-byte pairs stored where they are)
#endif

// Step 8's switches.
#ifndef FP8_WIDE
#define FP8_WIDE 1      // 1: 128x144 tiles where the wave count says they finish first (8192^3), step 7's
                        // 128x128 elsewhere; 0: 128x128 always (step 7); 2: 128x144 always (for testing)
#endif
// Added after step 8's first measurement (08_wide_tile_144.cu's header, "Three trims"); each on by default, 0 turns it off.
#ifndef FP8_AUNI
#define FP8_AUNI 1      // A's descriptor base made warp-uniform by a lane-0 shuffle
#endif
#ifndef FP8_SERP
#define FP8_SERP 1      // every other tile of a cluster loads its k-steps last to first (L2 reuse across rounds)
#endif
#ifndef FP8_PROMO128
#define FP8_PROMO128 1  // the tensor maps' L2 promotion: 128 B (1) or step 7's 256 B (0)
#endif

// Step 9's switches (header).
#ifndef FP9_SCHED
#define FP9_SCHED 1     // the wide kernel's GPC-ordered bands and quorum barrier (0: step 8's schedule)
#endif
#ifndef FP9_BAND
#define FP9_BAND 16     // tile columns a band
#endif
#ifndef FP9_QUORUM
#define FP9_QUORUM 12   // arrivals a round may start without
#endif
#ifndef FP9_WAIT_CYCLES
#define FP9_WAIT_CYCLES 100000u  // SM cycles (~65 us) a cluster waits for the others to register before the
                                 // launch runs unlined (cluster ids' places, no barrier); 0: never lined up
                                 // (to test that path: header, "no wait without an end")
#endif
// The wide kernel's schedule state, reset by the last CTA of each launch (zero before the first).
__device__ int g_sm_gpc[1024];         // each SM's GPC label 0 .. g_groups - 1, uploaded at the first wide launch
__device__ int g_groups;               // how many labels
__device__ unsigned int g_gpc_n[1024]; // clusters registered per label
__device__ unsigned int g_gpc_all;     // clusters registered
__device__ unsigned int g_state;       // 0 registering, 1 lined up, 2 not
__device__ unsigned int g_round;       // round-barrier arrivals
__device__ unsigned int g_done;        // CTAs finished
constexpr int BM = 128, BK = 128, STAGES = 6;  // BK in e4m3 values = bytes
constexpr int BN_NARROW = 128, BN_WIDE = 144;  // the tile's columns: step 7's, and the wide tile's
constexpr int CLUSTER = 2;    // CTAs per cluster (1: no clusters, no multicast); they share one operand
constexpr int THREADS = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int A_BYTES = BM * BK;
// Per tile width: B's bytes a stage, a stage's bytes, the dynamic shared memory. The shared operand's
// tile (A's 128 rows along N, B's BN rows along M) is loaded in CLUSTER boxes, one per CTA, each
// multicast to the whole cluster.
template <int BN>
struct Tile {
    static constexpr int B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + alignment slack (barriers are static)
    static_assert(BN % (8 * CLUSTER) == 0 && BM % (8 * CLUSTER) == 0, "boxes start on a 1024-byte swizzle atom");
    static_assert(STAGE_BYTES % 1024 == 0 && A_BYTES % 1024 == 0, "stages and B start on a swizzle atom");
    static_assert(SMEM_BYTES + 2 * STAGES * 8 <= 227 * 1024, "fits the opt-in shared memory");
    static_assert(BN % 16 == 0 && BN <= 256, "a wgmma n, and the epilogue's pairs of 8-column blocks");
};

// wgmma and the TMA instructions exist only on sm_90a: the device code below is compiled for
// that target alone.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

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

__device__ __forceinline__ void wgmma_m64n144k32(float (&d)[72], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %74, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n144k32.f32.e4m3.e4m3 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71}, "
        "%72, %73, p, 1, 1;\n"
        "}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71])
        : "l"(da), "l"(db), "r"(accumulate));
}

template <int BN>
__device__ __forceinline__ void wgmma_tile(float (&d)[BN / 2], uint64_t da, uint64_t db, int accumulate) {
    if constexpr (BN == 128) wgmma_m64n128k32(d, da, db, accumulate);
    else wgmma_m64n144k32(d, da, db, accumulate);
}

// A cluster tile is cm × cn tiles (CLUSTER × 1 when the cluster runs along M and shares B, 1 ×
// CLUSTER along N sharing A); rank r takes its r-th tile. Cluster tile t in groups of 16 tile rows
// (16 / cm cluster-tile rows), column by column inside a group, so that the tiles running at the
// same time share their B rows (and A rows) in L2. With CLUSTER = 1 this is step 5's order.
template <int BN>
__device__ __forceinline__ void tile_origin(int t, int rank, bool along_n, int ctiles_m, int ctiles_n,
                                            int& m0, int& n0) {
    const int cm = along_n ? 1 : CLUSTER, cn = along_n ? CLUSTER : 1, group_m = 16 / cm;
    if constexpr (BN == BN_WIDE && FP9_SCHED) {
        if (!along_n) {  // bands of FP9_BAND tile columns, row-major inside a band
            const int band = t / (ctiles_m * FP9_BAND), v = t % (ctiles_m * FP9_BAND);
            const int width = min(FP9_BAND, ctiles_n - band * FP9_BAND);
            m0 = (cm * (v / width) + rank) * BM;
            n0 = (band * FP9_BAND + v % width) * BN;
            return;
        }
    }
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
template <int R>
__device__ __forceinline__ void fence_operand(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
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

template <int BN>
__global__ void __launch_bounds__(THREADS, 1)
gemm_wgmma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
           const float* __restrict__ scale_a, const float* __restrict__ scale_b,
           __nv_bfloat16* __restrict__ C, int M, int N, int K, int along_n) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int STAGE_BYTES = Tile<BN>::STAGE_BYTES, ACC = BN / 2;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    // Same offsets in every CTA (same kernel, same static layout): multicast relies on it.
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ctiles_m = along_n ? tiles_m : (tiles_m + CLUSTER - 1) / CLUSTER;
    const int ctiles_n = along_n ? (tiles_n + CLUSTER - 1) / CLUSTER : tiles_n, ctiles = ctiles_m * ctiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int rank = (int)cluster_rank(), cluster_hw = (int)cluster_id(), clusters = (int)cluster_count();
    constexpr bool SCHED = BN == BN_WIDE && FP9_SCHED;
    __shared__ int sched_pos;  // rank 0's: this cluster's place in each round (SCHED)
    if (SCHED && rank == 0 && threadIdx.x == 0) {
        int pos = cluster_hw;
        if (!along_n) {  // a GPC's clusters take consecutive places: clusters of lower labels, then its index
            unsigned sm;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
            const int g = g_sm_gpc[sm];
            const unsigned i = atomicAdd(&g_gpc_n[g], 1u);
            __threadfence();
            if (atomicAdd(&g_gpc_all, 1u) == (unsigned)clusters - 1 && FP9_WAIT_CYCLES > 0u)
                atomicCAS(&g_state, 0u, 1u);  // the last to register lines the launch up
            unsigned t0, now, state;
            asm volatile("mov.u32 %0, %%clock;" : "=r"(t0));
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(state) : "l"(&g_state) : "memory");
                asm volatile("mov.u32 %0, %%clock;" : "=r"(now));
            } while (state == 0u && now - t0 <= FP9_WAIT_CYCLES);
            if (state == 0u) {
                if (atomicCAS(&g_state, 0u, 2u) == 0u) atomicOr(&g_round, 0x40000000u);
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(state) : "l"(&g_state) : "memory");
            }
            if (state == 1u) {  // else the cluster id's place, and the round barriers pass at once
                unsigned before = 0;
                for (int h = 0; h < g; ++h) before += *(volatile unsigned*)&g_gpc_n[h];
                pos = (int)(before + i);
            }
        }
        sched_pos = pos;
    }

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);              // the own producer's arrive.expect_tx
            mbar_init(&empty[s], 8 * CLUSTER);   // lane 0 of each consumer warp of each CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely
    int cluster = cluster_hw;
    if constexpr (SCHED) {  // rank 0's place, through distributed shared memory
        uint32_t remote;
        asm volatile("mapa.shared::cluster.u32 %0, %1, 0;" : "=r"(remote) : "r"(smem_addr(&sched_pos)));
        asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(cluster) : "r"(remote) : "memory");
    }

    // Persistent: cluster c takes cluster tiles c, c + #clusters, ... The k-step counter `it` runs
    // on across tiles (identical in both CTAs of a cluster), so the producer fills the next tile's
    // stages while the consumers store this one.
    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            bool rev = false;  // FP8_SERP: this tile's k-steps last to first
            unsigned round_target = 0;
            for (int t = cluster; t < ctiles; t += clusters, rev = FP8_SERP && !rev) {
                if (SCHED && !along_n && t >= clusters) {  // each round starts together, all but FP9_QUORUM
                    round_target += CLUSTER * min(clusters, ctiles - (t - cluster));
                    atomicAdd(&g_round, 1u);
                    unsigned v;
                    do {
                        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(&g_round) : "memory");
                    } while (v + FP9_QUORUM < round_target);
                }
                int m0, n0;
                tile_origin<BN>(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
                // The own operand's 128 rows (A's at m0, or B's at n0 when A is the shared one) and
                // box `rank` of the shared one (its rows (tile rows / CLUSTER)·rank on from the cluster's
                // common m0 or n0). A box wholly past the matrix (rank 1 of a last cluster tile
                // with no tile of its own, or a shared half past M or N) loads rows from 0
                // instead: those rows' results are never stored.
                const int own_rows = along_n ? N : M, own0 = along_n ? n0 : m0;
                const int own_row = own0 < own_rows ? own0 : 0;
                const int sh_rows = along_n ? M : N;
                const int sh0 = (along_n ? m0 + BM / CLUSTER * rank : n0 + BN / CLUSTER * rank);
                const int sh_row = sh0 < sh_rows ? sh0 : 0;
                const CUtensorMap* own_map = along_n ? &tma_b : &tma_a;
                const CUtensorMap* sh_map = along_n ? &tma_a : &tma_b;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    const int kc = rev ? k_tiles - 1 - kt : kt;  // the k-step loaded
                    // stage s free in both CTAs: their consumers released k-step it - STAGES
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    uint8_t* a = smem + s * STAGE_BYTES;
                    uint8_t* own = along_n ? a + A_BYTES : a;
                    // this CTA's box of the shared operand: rows (its tile rows / CLUSTER)·rank on
                    uint8_t* sh = (along_n ? a : a + A_BYTES) + rank * (along_n ? BM / CLUSTER : BN / CLUSTER) * BK;
                    // 16 KB of A + 16 KB of B: the own operand, this CTA's box of the shared one and
                    // the partner's box (its multicast may land before this expect_tx: the tx-count
                    // goes negative and the pending arrival keeps the phase open).
                    mbar_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(own, own_map, &full[s], kc * BK, own_row);
                    if constexpr (CLUSTER > 1)
                        tma_load_2d_multicast(sh, sh_map, &full[s], kc * BK, sh_row, (uint16_t)((1u << CLUSTER) - 1));
                    else
                        tma_load_2d(sh, sh_map, &full[s], kc * BK, sh_row);
                }
            }
            // Producer tail: wait until the consumers of both CTAs have released the last STAGES
            // k-steps, i.e. until every remote arrive aimed at this CTA's empty barriers has landed.
            // (Phase it/STAGES of empty[it % STAGES] completes when k-step `it` is released.)
            for (int i = it - STAGES > 0 ? it - STAGES : 0; i < it; ++i)
                mbar_wait(&empty[i % STAGES], (i / STAGES) & 1);
            if (SCHED) {  // the last CTA out resets the schedule's counters for the next launch
                __threadfence();
                if (atomicAdd(&g_done, 1u) == gridDim.x - 1) {
                    for (int h = 0; h < g_groups; ++h) g_gpc_n[h] = 0;
                    g_gpc_all = 0;
                    g_state = 0;
                    g_round = 0;
                    __threadfence();
                    g_done = 0;
                }
            }
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
    uint32_t out[BN / 4];
    int out_r = 0, out_n0 = 0;  // this lane's first row (r) and the tile's first column
    auto pack = [&](const float (&acc)[ACC], int m0, int n0) {
#pragma unroll
        for (int i = 0; i < BN / 4; ++i)  // FP10_FOLD: acc already holds the scaled sums
            out[i] = FP10_FOLD ? bf16x2(acc[2 * i], acc[2 * i + 1]) : bf16x2(acc[2 * i] * scale, acc[2 * i + 1] * scale);
        out_r = m0 + row_off + warp * 16 + lane / 4;
        out_n0 = n0;
    };
    auto store_out = [&]() {
        if (FP10_STORE == 2 && N % 2 == 0) {
            // Each lane's pairs where they are (measured slower: header): out[2j] is (row r, columns
            // 8j + 2q, +1), out[2j + 1] the same of row r + 8; a warp's store covers 16 bytes of each
            // of 8 rows. Pointers in 4-byte units: row r + 8 is 4N on, block j 4j on.
            uint32_t* c0 = reinterpret_cast<uint32_t*>(C + (size_t)out_r * N + out_n0 + 2 * q);
            uint32_t* c8 = c0 + (size_t)4 * N;
            const int cols = N - out_n0 - 2 * q;  // this lane's columns left in the row
            const bool r0 = out_r < M, r8 = out_r + 8 < M;
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
                if (8 * j < cols) {  // N even: a lane's pair is inside or outside together
                    if (r0) c0[4 * j] = out[2 * j];
                    if (r8) c8[4 * j] = out[2 * j + 1];
                }
            }
        } else if (N % 8 == 0) {
            // A quad of lanes holds two 8-column blocks j, j+1 of rows r and r+8: lane p's out[2j + e],
            // e = 2·(block - j) + (row is r+8), is columns 2p, 2p+1 of (block, row) e. Lane q stores
            // the whole 16 bytes of (block, row) e = q, i.e. lane p's register q at position p: the
            // quad's 4×4 matrix of registers transposed.
            const bool odd = q & 1, hi = q & 2;
#pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
                uint32_t v[4] = {out[2 * j], out[2 * j + 1], out[2 * j + 2], out[2 * j + 3]};
                if (FP10_STORE == 1) {
                    // Two butterfly rounds: round b swaps v[e] with the partner's (lane q ^ b) v[e ^ b]
                    // where bit b of e differs from bit b of q; after both, v[p] is lane p's register q.
                    // Per pair of blocks 4 SHFL and 12 SEL on lane-constant predicates.
                    const uint32_t s0 = odd ? v[0] : v[1], s1 = odd ? v[2] : v[3];
                    const uint32_t r0 = __shfl_xor_sync(0xffffffffu, s0, 1);
                    const uint32_t r1 = __shfl_xor_sync(0xffffffffu, s1, 1);
                    if (odd) v[0] = r0, v[2] = r1;
                    else v[1] = r0, v[3] = r1;
                    const uint32_t s2 = hi ? v[0] : v[2], s3 = hi ? v[1] : v[3];
                    const uint32_t r2 = __shfl_xor_sync(0xffffffffu, s2, 2);
                    const uint32_t r3 = __shfl_xor_sync(0xffffffffu, s3, 2);
                    if (hi) v[0] = r2, v[1] = r3;
                    else v[2] = r2, v[3] = r3;
                } else {  // step 9's: round k reads lane q ^ k, which sends what lane q needs
                    uint32_t got[4] = {0, 0, 0, 0};
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        const int p = q ^ k;
                        const uint32_t send = p == 0 ? v[0] : p == 1 ? v[1] : p == 2 ? v[2] : v[3];
                        const uint32_t x = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
                        for (int i = 0; i < 4; ++i) got[i] = p == i ? x : got[i];
                    }
#pragma unroll
                    for (int i = 0; i < 4; ++i) v[i] = got[i];
                }
                const int row = out_r + 8 * (q % 2), col = out_n0 + (j + q / 2) * 8;
                if (row < M && col < N)  // N % 8 == 0: the 8 columns are inside or outside together
                    *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = make_uint4(v[0], v[1], v[2], v[3]);
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

    // The consumer's ring positions (step 7's FP7_ADDR): the stage to wait for next (rs, its phase
    // rph) and the stage to give back next (qs) are counters stepped once a stage; stages are waited
    // for and given back in order, across tiles. Each wgmma's descriptors are a base plus constants.
    int rs = 0, qs = 0;
    uint32_t rph = 0;
    // Only the low word of a descriptor holds the address (bits 0-13: address >> 4, < 2^14 for
    // shared memory); the high word is the same constant for every wgmma here (stride 1024 B,
    // 128-byte swizzle). 32-bit adds then, no carries into the high word.
#if FP8_AUNI  // A's base through a lane-0 shuffle: ptxas then keeps it uniform (no R2UR per wgmma)
    const uint32_t da0 = __shfl_sync(0xffffffffu, (uint32_t)make_desc(smem + row_off * BK), 0);
#else
    const uint32_t da0 = (uint32_t)make_desc(smem + row_off * BK);
#endif
    const uint32_t db0 = (uint32_t)make_desc(smem + A_BYTES);
    const uint64_t desc_hi = make_desc(smem) & 0xFFFFFFFF00000000ull;

    float acc[ACC], p0[ACC], p1[ACC];
    // The next stage's four wgmmas into `part`, from zero (one promotion interval: 128 products),
    // as one commit group.
    auto issue = [&](float (&part)[ACC]) {
        const int s = rs;
        const uint32_t ph = rph;
        if (++rs == STAGES) rs = 0, rph ^= 1;
        mbar_wait(&full[s], ph);
        const uint32_t off = (uint32_t)s * (STAGE_BYTES >> 4);  // descriptors count 16-byte units
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < BK / 32; ++k)  // k32 step k: 32 bytes on along both K-major rows
            wgmma_tile<BN>(part, desc_hi | (da0 + off + 2 * k), desc_hi | (db0 + off + 2 * k), k);
        wgmma_commit();
    };
    // The oldest stage not given back (its wgmmas waited for) returned to the producers of every CTA
    // of the cluster (lane 0 of each warp arrives on empty[s] of each CTA).
    auto release = [&]() {
        const int s = qs;
        if (++qs == STAGES) qs = 0;
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[s], r, lane == 0);
    };
    auto promote = [&](float (&part)[ACC]) {
        fence_operand(part);  // its reads stay after the wait that made it valid
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = FP10_FOLD ? fmaf(part[i], scale, acc[i]) : acc[i] + part[i];
    };
    // A tile's first promotion sets acc (no zeroing of acc at the tile's start): acc is dead from
    // the previous tile's pack to here, so the packed results being stored can live in its registers.
    auto promote_first = [&](float (&part)[ACC]) {
        fence_operand(part);
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = FP10_FOLD ? part[i] * scale : 0.f + part[i];
    };
    // One stage: issue it into `part`, wait for the one before it (in `prev`: `wait_group 1`),
    // give that back and promote it; the FADDs run under the new stage's wgmmas, and the stage
    // after writes `prev` again, so its QGMMAs follow them.
    auto step = [&](float (&part)[ACC], float (&prev)[ACC]) {
        issue(part);
        wgmma_wait_one();
        release();
        promote(prev);
    };

    // The seam (FP10_SEAM): a tile's last stage and the next tile's first are queued back to back,
    // so the tensor cores run the next tile's first stage under the last promotion, the pack, the
    // next tile's origin and the stores. ptxas keeps wgmmas asynchronous only if every path into a
    // point of the code has the same groups in flight (else C7514: all serialised), so every path
    // reaches the loop's head with exactly one group in flight, the tile's stage 0 in p0: issued
    // before the loop for the first tile, at the seam when the tile count is even (its last stage
    // in p1), after a drain otherwise; the loop is left only through the break, with none.
    if (cluster < ctiles) {
        issue(p0);  // the first tile's stage 0
        for (int t = cluster;;) {
            int m0, n0;
            tile_origin<BN>(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
            if (have_out) store_out();  // the previous tile's, under this tile's stage 0
            const int t_next = t + clusters;
            if (k_tiles == 1) {
                wgmma_wait_all();
                release();
                promote_first(p0);
            } else {
                issue(p1);  // stage 1
                wgmma_wait_one();
                release();
                promote_first(p0);
                int kt = 2;  // stages kt (even) into p0 and kt + 1 into p1
                for (; kt + 1 < k_tiles; kt += 2) {
                    step(p0, p1);
                    step(p1, p0);
                }
                if (kt == k_tiles) {  // an even count: the last stage is in p1, p0 is free
                    if (FP10_SEAM && t_next < ctiles) {
                        issue(p0);  // the next tile's stage 0, queued behind this tile's last
                        wgmma_wait_one();
                        release();
                        promote(p1);
                        pack(acc, m0, n0);
                        have_out = true;
                        t = t_next;
                        continue;
                    }
                    wgmma_wait_all();
                    release();
                    promote(p1);
                } else {  // odd: the last stage into p0
                    step(p0, p1);
                    wgmma_wait_all();
                    release();
                    promote(p0);
                }
            }
            if (t_next >= ctiles) {  // no next tile: nothing in flight from here on
                pack(acc, m0, n0);
                break;
            }
            if (FP10_EARLY) {  // the next tile's stage 0 first: the pack, its origin and the stores under it
                issue(p0);
                pack(acc, m0, n0);
            } else {  // step 9's order: the pack before it
                pack(acc, m0, n0);
                issue(p0);
            }
            have_out = true;
            t = t_next;
        }
        store_out();  // the last tile's: nothing left to overlap it with
    }
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
                    FP8_PROMO128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
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

// How a tile width covers a shape: the cluster's direction and the number of cluster tiles. The
// cluster runs along M (its CTAs share B) unless that leaves a CTA without a tile where running along
// N would not: an even number of tile rows, else of tile columns, else the longer side. The decode
// shape (one tile row) shares A.
struct Plan {
    bool along_n;
    int ctiles;
};
template <int BN>
static Plan plan(int M, int N) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const bool along_n = CLUSTER > 1 && tiles_m % CLUSTER != 0 && (tiles_n % CLUSTER == 0 || tiles_n > tiles_m);
    const int ctiles = along_n ? tiles_m * ((tiles_n + CLUSTER - 1) / CLUSTER) : ((tiles_m + CLUSTER - 1) / CLUSTER) * tiles_n;
    return {along_n, ctiles};
}

// Which SMs share a GPC: for fp8_gemm step 9's schedule (reference_solutions/fp8_gemm/09_gpc_bands.cu,
// which inlines this file) and the probes (lrc_gpc.cu, fp8_coalescing.py's GPC variants).
//
// The CTAs of a thread-block cluster always run in one GPC. Clusters of one-SM CTAs (200 KB of
// shared memory each) of 16, 14, 12, 10 and 8, launched 16 times each in grids larger than the GPU
// holds at once, land on many subsets of each GPC's SMs; SMs that ran one cluster are joined, and
// the joined groups are GPCs or parts of one (never two GPCs together). An SM that never ran a
// cluster of 8 or more with another is its own group.
#include <cuda_runtime.h>

__global__ void gpc_where_sm(int* out) {
    extern __shared__ char gpc_pad[];  // one CTA an SM: a cluster of c takes c SMs
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    gpc_pad[threadIdx.x] = 0;
    if (threadIdx.x == 0) out[blockIdx.x] = (int)sm;
}

static int gpc_root(int* parent, int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

// group[sm] for sm < max_sm: the smallest SM id of its group. Returns the number of groups, or -1
// where no cluster of 8 or more could launch (or a CUDA call failed).
extern "C" int gpc_groups(int* group, int max_sm) {
    if (max_sm <= 0 || max_sm > 1024) return -1;
    const int smem = 200 * 1024, sizes[5] = {16, 14, 12, 10, 8};
    if (cudaFuncSetAttribute(gpc_where_sm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess ||
        cudaFuncSetAttribute(gpc_where_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
        return -1;
    int* d = nullptr;
    if (cudaMalloc(&d, 16 * 16 * sizeof(int)) != cudaSuccess) return -1;
    int parent[1024], sms[16 * 16], launched = 0;
    for (int i = 0; i < max_sm; ++i) parent[i] = i;
    for (int size : sizes) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = size;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(16 * size);
        cfg.blockDim = dim3(32);
        cfg.dynamicSmemBytes = smem;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        for (int rep = 0; rep < 16; ++rep) {
            if (cudaLaunchKernelEx(&cfg, gpc_where_sm, d) != cudaSuccess ||
                cudaMemcpy(sms, d, sizeof(int) * 16 * size, cudaMemcpyDeviceToHost) != cudaSuccess) {
                (void)cudaGetLastError();  // this size does not launch here: try the next
                break;
            }
            ++launched;
            for (int i = 0; i < 16 * size; ++i) {
                const int lead = sms[i - i % size];
                if (sms[i] < max_sm && lead < max_sm) parent[gpc_root(parent, sms[i])] = gpc_root(parent, lead);
            }
        }
    }
    cudaFree(d);
    if (launched == 0) return -1;
    int groups = 0;
    for (int i = 0; i < max_sm; ++i) {
        const int r = gpc_root(parent, i);
        group[i] = max_sm;
        for (int j = 0; j < max_sm; ++j)  // label by the smallest member
            if (gpc_root(parent, j) == r && j < group[i]) group[i] = j;
        groups += group[i] == i;
    }
    return groups;
}

static cudaLaunchConfig_t launch_config(cudaLaunchAttribute* attr, int smem_bytes) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = CLUSTER;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.blockDim = dim3(THREADS);
    cfg.dynamicSmemBytes = smem_bytes;
    cfg.stream = 0;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

// How many clusters of gemm_wgmma<BN> can be resident at once: the persistent grid's size.
template <int BN>
static int resident() {
    static int r = -1;
    if (r < 0) {
        cudaFuncSetAttribute(gemm_wgmma<BN>, cudaFuncAttributeMaxDynamicSharedMemorySize, Tile<BN>::SMEM_BYTES);
        cudaLaunchAttribute attr[1];
        cudaLaunchConfig_t cfg = launch_config(attr, Tile<BN>::SMEM_BYTES);
        cfg.gridDim = dim3(CLUSTER * (device().sms / CLUSTER));
        int n = 0;
        if (cudaOccupancyMaxActiveClusters(&n, gemm_wgmma<BN>, &cfg) != cudaSuccess || n <= 0) {
            (void)cudaGetLastError();  // not fatal: assume every SM
            n = device().sms / CLUSTER;
        }
        r = n;
    }
    return r;
}

// FP8_WIDE = 1: the wide tile where it needs fewer rounds of the persistent grid, a round's time
// taken as proportional to the tile's columns, the wide tile's per column 4% less (a prediction
// from the header's counts: 5.6% fewer shared-memory bytes and 5.1% fewer issue slots per FLOP). Never where a cluster
// shares A (one tile row, the decode shape: bound by reading B, not by the tile). At 8192^3: 28
// rounds of 128×144 against 32 of 128×128 (31.03: the last round holds 4 tiles of 132); at 4096^3
// 8 rounds either way (7.03 and 7.76): step 7's tile.
static bool use_wide(int M, int N) {
#if FP8_WIDE == 2
    (void)M, (void)N;
    return true;
#elif FP8_WIDE == 1
    const Plan n = plan<BN_NARROW>(M, N), w = plan<BN_WIDE>(M, N);
    if (n.along_n || w.along_n) return false;
    const int rn = resident<BN_NARROW>(), rw = resident<BN_WIDE>();
    const long long rounds_n = (n.ctiles + rn - 1) / rn, rounds_w = (w.ctiles + rw - 1) / rw;
    return rounds_w * BN_WIDE * 24 < rounds_n * BN_NARROW * 25;  // 24/25: the 4% above
#else
    (void)M, (void)N;
    return false;
#endif
}

// One launch of gemm_wgmma<BN>; false (nothing launched) if TMA cannot describe the operands.
template <int BN>
static bool launch(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                   __nv_bfloat16* C, int M, int N, int K) {
    const Plan p = plan<BN>(M, N);
    CUtensorMap ma, mb;
    if (!make_map(&ma, A, M, K, p.along_n ? BM / CLUSTER : BM) || !make_map(&mb, B, N, K, p.along_n ? BN : BN / CLUSTER))
        return false;
    const int res = resident<BN>();
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg = launch_config(attr, Tile<BN>::SMEM_BYTES);
    const int clusters = p.ctiles < res ? p.ctiles : res;
    cfg.gridDim = dim3(CLUSTER * clusters);
    if (BN == BN_WIDE && FP9_SCHED) {
        static bool labelled = false;
        if (!labelled) {  // each SM's GPC label, once (all 0 where the GPCs cannot be told apart)
            static int labels[1024], index[1024];
            const int sms = device().sms < 1024 ? device().sms : 1024;
            int groups = 0;
            if (gpc_groups(labels, sms) > 0) {  // labels 0, 1, ... in the order of each group's first SM
                for (int i = 0; i < sms; ++i)
                    if (labels[i] == i) index[i] = groups++;
                for (int i = 0; i < sms; ++i) labels[i] = index[labels[i]];
            } else {
                for (int& l : labels) l = 0;
                groups = 1;
            }
            cudaMemcpyToSymbol(g_sm_gpc, labels, sizeof labels);
            cudaMemcpyToSymbol(g_groups, &groups, sizeof groups);
            labelled = true;
        }
    }
    cudaLaunchKernelEx(&cfg, gemm_wgmma<BN>, ma, mb, scale_a, scale_b, C, M, N, K, (int)p.along_n);
    return true;
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    if (device().cc == 90 && K % 16 == 0 && K > 0 &&
        (use_wide(M, N) ? launch<BN_WIDE>(A, B, scale_a, scale_b, C, M, N, K)
                        : launch<BN_NARROW>(A, B, scale_a, scale_b, C, M, N, K)))
        return;
    dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    gemm_fallback<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
}
