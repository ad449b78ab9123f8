// fp8_gemm, step 7: step 6 with the consumer's wgmma pipeline never drained inside a tile, and a
// leaner stage: one `wgmma.wait_group 1` per stage, no register copies, descriptors and ring
// positions from counters. Step 6's producer, cluster protocol, tiles and epilogue are unchanged.
//
// What step 6 left (README.md): 0.84× / 0.86× cuBLAS FP8 at 8192³ / 4096³, 0.93× at the decode
// shape; at 4096³ cuBLAS runs step 6's own tile, k-step, stage count and cluster and is 17% faster,
// issuing 38.5% of the issue slots where step 6 issues 48.0% (Nsight Compute). Step 6's SASS (nvcc
// 13.0, sm_90a) says where the difference is. Its
// consumer loop holds two stages (0x3550-0x4910, 317 instructions): per stage 158.5 instructions,
// of which 4 QGMMA, 64 FADD (the promotion), 19 MOV, 5 barrier/wgmma-sync and 66.5 of address
// arithmetic (the ring position by a division by 6 and a make_desc per QGMMA, both operands).
//   - A drain every two stages: the loop's back edge is `WARPGROUP.DEPBAR.LE gsb0, 0x0` (the
//     `wgmma.wait_group 0` of `wait(p0)`), and the next QGMMA comes 30 IMAD.MOV (ptxas copies 30
//     of p0's registers, R122-R151, into R163-R191 and R5), ~40 address instructions and a
//     try_wait later. The warpgroup's tensor work stops there. The other warpgroup waits on the
//     same full barriers and shares the same tensor cores, so it likely reaches its own drain at
//     about the same time and does not cover it (a guess: the SASS cannot show it, a profile can).
//   - 26 of p0's 64 FADDs, on those copies, sit between the first QGMMA of p0's stage and the
//     second, so the second to fourth start ~30 issue slots late.
// The promotion's 64 FADDs per stage are what cuBLAS pays too (use_fast_accum=False; a 128-product
// interval is 64 FADDs per thread per stage whatever the tile), so the excess is the rest: ~90
// instructions per stage where cuBLAS's issue rate leaves room for ~40.
//
// 1. No drain in the loop (FP7_PIPE). Each stage: issue stage k into one stage accumulator, then
//    `wgmma.wait_group 1` (stage k - 1 done), give stage k - 1 back, promote it, and go on: one
//    group stays in flight across the loop's back edge, and `wait_group 0` comes once a tile.
//    What ptxas needs for that (learned here, on three drafts that it serialised with C7514, "non
//    wgmma instructions reading accumulator registers of a wgmma between start and end of the
//    pipeline stage"): every path into a point of the code must have the same groups in flight.
//    A loop entered with stage 0 in flight but left through a drained back edge, or a tail of
//    `if (stage left) step();` one after another, break it; the loop here is entered and re-entered
//    with one group in flight, into the same registers (p0), and each number of leftover stages is
//    its own straight path ending in `wait_group 0`. The FADDs of stage k - 1 run under stage k's
//    QGMMAs; the next stage writes the buffer they read, so its QGMMAs follow them (one group per
//    warpgroup queued meanwhile, 256 tensor cycles of its own at the FP8 rate, against ~115 issue
//    slots of FADDs and the rest).
// 2. Fewer instructions per stage (FP7_ADDR). The stage to wait for, its phase and the stage to
//    give back are counters stepped once a stage (stages are waited for and released in order,
//    across tiles), and a descriptor is a base plus constants, added in its low 32-bit word (the
//    address field, bits 0-13, never carries: shared addresses are < 2^18); the high word is the
//    constant 0x40000040 (1024-byte stride, 128-byte swizzle).
// SASS of the default build: the loop (2 stages) has 118 instructions a stage: 4 QGMMA, 64 FADD,
// 4 MOV, 5 sync, 41 other (step 6: 158.5); no DEPBAR.LE 0 in it (one DEPBAR.LE gsb0, 0x1 per stage);
// a stage is TRYWAIT, WARPGROUP.ARRIVE, 4 QGMMA (with ~17 address instructions among them),
// DEPBAR.LE 1, 2 SYNCS.ARRIVE and the 64 FADDs (the next stage's TRYWAIT hoisted among them): no
// FADD between QGMMAs of one stage, no register copies.
// 3. Promotion every two stages (FP7_PROMOTE2, OFF by default). Each stage accumulator takes two
//    stages (256 products; the second stage's four wgmmas accumulate onto the first's, in flight,
//    as CUTLASS's k-block chains do) and is added into acc once: 32 FADDs a stage, and the FADDs
//    have a whole stage of the other buffer to hide under (loop of 4 stages: 83.8 instructions a
//    stage). The accuracy budget does not allow it with margin (a model, not a measurement):
//    modelling the FP8 accumulator as 13 mantissa bits truncated after each k32 instruction
//    (DeepSeek-V3's "about 14 bits"; SageAttention2's FP22), the absolute error of C (C is about
//    N(0, s²), s in [0.25, 1)) is ~1.2e-4 rms for 128 products and ~2.1e-4 for 256 at the largest
//    scales problem.yaml draws (both factors near 1), about the same at K = 4096-16384; atol = 1e-3
//    is then 4.7 sigma, and among 8192³'s 67M outputs those near zero (|C| < ~0.02, ~1.5%) would
//    see ~1-3 failures in the Gaussian estimate (a 131K-output sample already reached 1.15e-3).
//    At typical scales it passes; the draw decides. Built and checked (no C7514, no spills, the
//    model below) so that it can be measured with -DFP7_PROMOTE2=1, not shipped.
//
// Predicted (the default, both changes), if the drains were where both warpgroups' tensor work
// stopped together, once per 1,024 tensor-core cycles of the two (two stages of 4 m64n128k32
// each) for ~100-200 cycles: +5-10% at 4096³ and 8192³ (0.90-0.95× cuBLAS),
// +0-3% at the decode shape (bound by reading B); issue slots busy ~38-40% at 4096³ (from 48%).
// Apart: FP7_PIPE alone (-DFP7_ADDR=0) most of it; FP7_ADDR alone (-DFP7_PIPE=0) +1-3% (shorter
// path from the drain to the next QGMMA). With -DFP7_PROMOTE2=1 a further +1-4% if it passes.
// Not done: a wider tile. 128×192 per CTA (two m64n192 consumers) needs 96 (acc) + 2 × 96 (stage
// accumulators) = 288 registers a thread, over 232; with one stage accumulator (192) its promotion
// cannot overlap the next stage (step 4's wait); 256×128 doubles the accumulators per CTA: four
// m64 consumer warpgroups (4 × 128 × ~200 registers > 65,536) or two holding 384 floats each.
//
// Switches (every combination builds clean): FP7_PIPE (default 1) and FP7_ADDR (1), each 0 builds
// that change step 6's way; FP7_PROMOTE2 (0), 1 turns change 3 on. With FP7_PIPE=0 and FP7_ADDR=0
// the waits and the addressing are step 6's, but the order within a stage is this file's (the
// FADDs after the wait, before the next issue), so ptxas makes no register copies: not a
// byte-for-byte step 6 (144 instructions a stage, 1 drain per 2 stages). Step 6's CLUSTER = 1
// and EPI_OVERLAP = false still build clean (both with and without FP7_PROMOTE2).
//
// Build (nvcc 13.0, the judge's flags): sm_90a: ptxas reports 168 registers (launch-time count;
// the consumers use up to R203 after USETMAXREG 232, step 6 up to R227), 96 bytes of static shared
// memory + 197,632 dynamic, 0 spills, 0 bytes stack, no warnings (no C7514/C7520), in all 8
// combinations of the switches. SASS: 16 QGMMA.64x128x32 (stage 0, the loop's two stages, the
// tail's one), 5 WARPGROUP.DEPBAR (2 of them LE 0: the two paths' ends), no LDL/STL; the
// epilogue's 32 SHFL and 8 STG.E.128 between the tile's first four QGMMAs and the loop (no DEPBAR
// between), as step 6.
// FP7_PROMOTE2=1: 44 QGMMA (stage 0, 16 in the loop of four, 4 + 8 + 12 in the tail's three
// paths), R204. sm_80: an empty kernel (4 registers) and the fallback (16).
// The consumer's order was checked before any GPU run with a model that mirrors the code
// (written with this step, in Python: every k_tiles 1-64 and 128, tiles in a row, all 8 switch
// combinations): groups complete in order, every stage released once, in order, after its group;
// no buffer read while a group writing it is in flight, none restarted before it was promoted,
// every stage promoted exactly once; at most 2 groups in flight; the same groups in flight at the
// loop's head from both edges; the counters equal step 6's (it + kt) % STAGES and phase. Five
// mutants (no wait, promoting the newest group, a drained head, the wrong tail buffer, a counter
// off by one) are each caught. The producer and the cluster protocol are step 6's, unchanged.
//
// Written on a machine without a GPU (the predictions above were made there). Measured on an
// NVIDIA H200 (2026-11-28, README.md): correct on every test at its first run (and on K = 384,
// added since for its odd path); `judge compare`
// against step 6: 0.964x / 0.873x / 0.885x of its time at the decode shape / 4096^3 / 8192^3
// (+3.7% / +14.6% / +13.0%, predicted +0-3% / +5-10% / +5-10%); `judge verify --table`: 0.96x /
// 1.00x / 0.95x cuBLAS FP8. Apart, by switching each off: FP7_PIPE bought 1-2% (predicted: most),
// FP7_ADDR 5% (predicted 1-3%). FP7_PROMOTE2=1 passed the tests and then gave a WRONG_ANSWER in a
// timed call at 4096^3 (2 of 16.8M outputs, 1.06e-3 off where 1.04e-3 was allowed): as modelled.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cstdint>

// Step 7's switches (-DFP7_PIPE=0 / -DFP7_ADDR=0: that change step 6's way; see the header).
#ifndef FP7_PROMOTE2
#define FP7_PROMOTE2 0  // 1: promote every 2 stages (256 products). OFF by default: the error model
                        // (header) puts it at the edge of the tolerance at 8192^3
#endif
#ifndef FP7_PIPE
#define FP7_PIPE 1      // no wgmma.wait_group 0 at the loop's back edge: one group always in flight
#endif
#ifndef FP7_ADDR
#define FP7_ADDR 1      // ring counters and precomputed wgmma descriptors instead of % / and make_desc
#endif


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

    // The consumer's ring positions. FP7_ADDR: the stage to wait for next (rs, its phase rph) and
    // the stage to give back next (qs) are counters stepped once a stage (stages are waited for and
    // given back in order, across tiles), and each wgmma's descriptors are a base plus constants:
    // no division by STAGES and no make_desc per wgmma in the loop.
#if FP7_ADDR
    int rs = 0, qs = 0;
    uint32_t rph = 0;
    // Only the low word of a descriptor holds the address (bits 0-13: address >> 4, < 2^14 for
    // shared memory); the high word is the same constant for every wgmma here (stride 1024 B,
    // 128-byte swizzle). 32-bit adds then, no carries into the high word.
    const uint32_t da0 = (uint32_t)make_desc(smem + row_off * BK), db0 = (uint32_t)make_desc(smem + A_BYTES);
    const uint64_t desc_hi = make_desc(smem) & 0xFFFFFFFF00000000ull;
#endif
    int it = 0;  // the ring position of this tile's first stage
    for (int t = cluster; t < ctiles; t += clusters, it += k_tiles) {
        int m0, n0;
        tile_origin(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
        float acc[64], p0[64], p1[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        // Stage kt's four wgmmas into `part` as one commit group; `first`: `part` starts from zero
        // (the first stage of its promotion interval), else they accumulate onto it.
        auto issue = [&](float (&part)[64], int kt, bool first) {
#if FP7_ADDR
            const int s = rs;
            const uint32_t ph = rph;
            if (++rs == STAGES) rs = 0, rph ^= 1;
            mbar_wait(&full[s], ph);
            const uint32_t off = (uint32_t)s * (STAGE_BYTES >> 4);  // descriptors count 16-byte units
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)  // k32 step k: 32 bytes on along both K-major rows
                wgmma_m64n128k32(part, desc_hi | (da0 + off + 2 * k), desc_hi | (db0 + off + 2 * k), first ? k : 1);
#else
            const int s = (it + kt) % STAGES;
            mbar_wait(&full[s], ((it + kt) / STAGES) & 1);
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * BK;
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)
                wgmma_m64n128k32(part, make_desc(a + k * 32), make_desc(b + k * 32), first ? k : 1);
#endif
            wgmma_commit();
        };
        // stage kt's wgmmas done (waited for): its stage given back to the producers of every CTA
        // of the cluster (lane 0 of each warp arrives on empty[s] of each CTA)
        auto release = [&](int kt) {
#if FP7_ADDR
            const int s = qs;
            if (++qs == STAGES) qs = 0;
#else
            const int s = (it + kt) % STAGES;
#endif
#pragma unroll
            for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[s], r, lane == 0);
        };
        auto promote = [&](float (&part)[64]) {
            fence_operand(part);  // its reads stay after the wait that made it valid
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] += part[i];  // 128 products in `part` (256 with FP7_PROMOTE2)
        };
        // One stage: issue stage kt into `part`, then wait for stage kt - 1 (in `prev`: the group
        // before the newest, `wait_group 1`), give it back, and promote `prev` if kt - 1 ended its
        // interval. The FADDs run under stage kt's wgmmas. With one stage per interval the next
        // stage writes `prev` again, so its QGMMAs follow the FADDs (a register dependence: at
        // most one group of this warpgroup is queued while they run); with FP7_PROMOTE2 the next
        // stage goes into `part` again and the FADDs have a whole stage.
        auto step = [&](float (&part)[64], float (&prev)[64], int kt, bool first, bool prev_last) {
            issue(part, kt, first);
            wgmma_wait_one();
            release(kt - 1);
            if (prev_last) promote(prev);
        };

        issue(p0, 0, true);
        // The previous tile's shuffles and stores while this tile's first stage runs (acc and p1
        // are dead or constant here: out's 32 registers fit).
        if (EPI_OVERLAP && have_out) store_out();
#if !FP7_PIPE
        wgmma_wait_all();  // step 6's drain: the loop's head sees nothing in flight from either edge
#endif
        // ptxas keeps the wgmmas asynchronous only if every path into a point of the code has the
        // same groups in flight (else C7514: every wgmma serialised). So: one group in flight at
        // the loop's head from both edges (FP7_PIPE: stage 0 from above, the iteration's last
        // stage from the back edge; both into p0), and a tail in which every number of leftover
        // stages is its own straight path ending in `wait_group 0`.
        int kt = 1;
#if FP7_PROMOTE2
        // Stage kt goes into p0 when kt % 4 is 0 or 1, into p1 when it is 2 or 3; an even stage
        // starts its buffer from zero, an odd one ends its interval. Iterations start at
        // kt % 4 == 1, so each position's buffer is fixed.
        for (; kt + 3 < k_tiles; kt += 4) {
            step(p0, p0, kt, false, false);      // kt % 4 == 1: p0's second stage
            step(p1, p0, kt + 1, true, true);    // 2: p1 from zero; p0's interval done: promoted
            step(p1, p1, kt + 2, false, false);  // 3: p1's second stage
            step(p0, p1, kt + 3, true, true);    // 0: p0 from zero; p1 promoted
#if !FP7_PIPE
            wgmma_wait_all();  // step 6's drain at the back edge (once per 4 stages here)
#endif
        }
        // 0 to 3 stages left (positions 1, 2, 3), each count its own path
        switch (k_tiles - kt) {
            case 0:  // the last stage (position 0) is in p0
                wgmma_wait_all();
                release(k_tiles - 1);
                promote(p0);
                break;
            case 1:
                step(p0, p0, kt, false, false);
                wgmma_wait_all();
                release(k_tiles - 1);
                promote(p0);
                break;
            case 2:
                step(p0, p0, kt, false, false);
                step(p1, p0, kt + 1, true, true);
                wgmma_wait_all();
                release(k_tiles - 1);
                promote(p1);
                break;
            default:  // 3
                step(p0, p0, kt, false, false);
                step(p1, p0, kt + 1, true, true);
                step(p1, p1, kt + 2, false, false);
                wgmma_wait_all();
                release(k_tiles - 1);
                promote(p1);
                break;
        }
#else
        // Step 6's interval: stage kt into p0 (even) or p1 (odd), each promoted one stage later.
        for (; kt + 1 < k_tiles; kt += 2) {
            step(p1, p0, kt, true, true);
            step(p0, p1, kt + 1, true, true);
#if !FP7_PIPE
            wgmma_wait_all();
#endif
        }
        if (kt < k_tiles) {  // the last stage in p1
            step(p1, p0, kt, true, true);
            wgmma_wait_all();
            release(k_tiles - 1);
            promote(p1);
        } else {  // in p0
            wgmma_wait_all();
            release(k_tiles - 1);
            promote(p0);
        }
#endif

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
