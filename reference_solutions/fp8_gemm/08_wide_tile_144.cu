// fp8_gemm, step 8: step 7 with a 128×144 tile (two consumer warpgroups of m64n144k32) for the shapes
// where it needs fewer rounds of the persistent grid (8192³), chosen at run time; step 7's 128×128
// kernel, unchanged (its SASS is byte-for-byte step 7's), everywhere else (4096³, the decode shape,
// the small tests).
//
// Why 144. Step 7 is 1.00× cuBLAS at 4096³ and 0.95× at 8192³, where cuBLAS's kernel is
// `144x128_128x6_1x2`: a 144-wide side. A 144-wide m64 wgmma has 72 fp32 accumulators a thread, so
// acc + two stage accumulators are 3 × 72 = 216 floats, which fit step 7's setmaxnreg budget of 232
// with step 7's overlapped promotion intact (160: 240 + ~12 > 232; 192: 288). Nothing else of step 7
// changes: the pipeline (one wgmma group in flight across the loop's back edge, wait_group 1 a stage),
// the promotion every 128 products (64 → 72 FADDs a thread a stage: per FLOP the same), the
// producer, the cluster protocol (the shared operand's box is now BN / 2 = 72 rows of B along M, still
// 64 of A along N), the epilogue (9 pairs of 8-column blocks instead of 8).
//
// Counts (per SM, one k32 step of the CTA, two consumer warpgroups):
//   - shared-memory bytes: 128×128 reads 2 × (2 KB of A + 4 KB of B) = 12 KB for 1.05 MFLOP
//     (11.7 KB/MFLOP); 128×144 reads 2 × (2 + 4.5) = 13 KB for 1.18 MFLOP (11.0 KB/MFLOP): -5.6%
//     bytes per FLOP.
//   - instructions a stage (SASS, the loop of two stages, nvcc 13.0): 128×128 118 = 4 QGMMA + 64
//     FADD + 50 other (step 7); 128×144 126 = 4 QGMMA + 72 FADD + 10 MOV + 5 sync + 35 other, i.e.
//     0.875 instructions per output column-stage against 0.922: -5.1% issue slots per FLOP (the
//     FADDs are a fixed 1 per output per 128 products; the ~50 others are spread over 144 columns).
//   - waves at 8192³ (132 SMs, clusters of 2, 66 resident): 128×128 is 2,048 cluster tiles = 31.03
//     rounds, i.e. 32 (the last holds 4 of 132 tiles); 128×144 is 32 × 57 = 1,824 = 27.6 rounds,
//     28. In tile-column units 28 × 144 = 4,032 against 32 × 128 = 4,096 (-1.6%) before any gain per
//     FLOP. At 4096³ both need 8 rounds (7.76 and 7.03): the wide tile would cost 12.5%, so the host
//     keeps 128×128; at the decode shape (one tile row, the cluster shares A) the host keeps step 7's.
//   - the 144th column: 8192 = 56 × 144 + 128, so the last tile column computes 16 unused columns
//     (0.2% of the work; TMA fills B's rows past N with zeros, the epilogue stores col < N only).
//   - shared memory: 6 stages of 16 KB (A) + 18 KB (B) = 204 KB + 1 KB alignment (step 7: 193 KB).
//
// Switch (every combination with step 7's FP7_PIPE, FP7_ADDR, FP7_PROMOTE2 builds clean):
// FP8_WIDE = 1 (default): the host picks 128×144 when its rounds × 144 × 0.96 < the 128×128 rounds ×
// 128 and no cluster shares A (the 0.96: this header's predicted per-column gain, not measured apart);
// 0: always 128×128 (step 7 exactly, with the trims below off); 2: always 128×144 (to test the wide
// kernel on every test shape).
//
// Three trims, added after the first measurement below (README, "Three trims"), on by default, each
// 0 to turn it off: FP8_AUNI, A's descriptor base made warp-uniform with a lane-0 shuffle (the wide
// kernel's loop 252 -> 241 instructions, R2UR in the file 102 -> 42); FP8_SERP, every other tile of a
// cluster loads its k-steps last to first, so that a round starts on the k-range the round before
// touched last (DRAM read at 8192³ 556 -> 501 MB in Nsight Compute); FP8_PROMO128, the tensor maps' L2
// promotion 128 B instead of 256 B. `judge compare` against the file without them: 0.995 / 0.992 /
// 0.989 (FASTER) of its time at the decode shape / 4096³ / 8192³. With FP8_SERP=0 FP8_AUNI=0 the
// kernels are the first measurement's SASS (the promotion is host code).
//
// Tried and dropped (on the SASS, before any GPU run): the consumer's code instantiated once per
// warpgroup with its first row a compile-time constant, so that A's descriptors would be uniform
// like B's (step 7 spends ~4 instructions per QGMMA moving them into uniform registers). With an
// if/else on the warpgroup ptxas kept the ring counters in ordinary registers (more R2UR, not
// fewer) and spilled 16 bytes in the wide kernel; not shipped.
//
// Build (nvcc 13.0, the judge's flags, sm_90a): both kernels 168 registers at launch, 96 bytes of
// static shared memory, 0 bytes stack, 0 spills, no warnings (no C7514/C7520), in all 24
// combinations of the switches. SASS of gemm_wgmma<144>: 16 QGMMA.64x144x32 (stage 0, the loop's two
// stages, the tail's one), 5 WARPGROUP.DEPBAR (one LE 1 a stage in the loop, 2 LE 0 at the paths'
// ends), no LDL/STL, registers up to R227 after USETMAXREG 232 (step 7: R203); the loop 252
// instructions for 2 stages. gemm_wgmma<128> is step 7's SASS instruction for instruction (trims off). sm_80: an
// empty kernel pair (4 registers) and the fallback (16).
//
// Predictions (written on a machine without a GPU, before the first run; measured below):
//   - 8192³: 0.935-0.984 of step 7's time (0.984 from the rounds alone if the tensor pipe is the
//     limit per FLOP; 0.935 if the 5-6% fewer smem bytes and issue slots per FLOP show in full):
//     0.97-1.02× cuBLAS (step 7: 0.95×).
//   - 4096³ and M=128,N=28672,K=8192: unchanged (the same kernel as step 7; the host's choice costs
//     two integer divisions and, once, an occupancy query of the second kernel).
//   - FP8_WIDE=2: 8192³ as above; 4096³ ~10% slower than step 7 (8 rounds of a 12.5% wider tile);
//     the decode shape within a few % (bound by reading B; 200 tiles instead of 224).
//
// Measured on an NVIDIA H200 (2026-11-28, README.md): correct on every test; with FP8_WIDE = 2 (the
// wide tile on every test shape) `judge test` ACCEPTED, 12 of 12 (its times were not measured).
// `judge compare` against step 7 (--budget 1): 0.998 (SAME) / 0.998 (SAME) / 0.972 (FASTER) of its
// time at the decode shape / 4096³ / 8192³: at 8192³ 2.8% faster, inside the predicted 0.935-0.984,
// nearer the 0.984 of the rounds alone than the 0.935 of the full per-FLOP gain; the others
// unchanged, as predicted. `judge submit`: 0.964× / 1.005× / 0.973× cuBLAS FP8 (geomean 0.981×;
// 8192³ 1,452 TFLOPS): inside the predicted 0.97-1.02× at 8192³, and still short of 1.0× there. The
// per-column 4% in FP8_WIDE = 1's rule was not measured on its own.
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


// Step 8's switches.
#ifndef FP8_WIDE
#define FP8_WIDE 1      // 1: 128x144 tiles where the wave count says they finish first (8192^3), step 7's
                        // 128x128 elsewhere; 0: 128x128 always (step 7); 2: 128x144 always (for testing)
#endif
// Added after step 8's first measurement (header, "Three trims"); each on by default, 0 turns it off.
#ifndef FP8_AUNI
#define FP8_AUNI 1      // A's descriptor base made warp-uniform by a lane-0 shuffle
#endif
#ifndef FP8_SERP
#define FP8_SERP 1      // every other tile of a cluster loads its k-steps last to first (L2 reuse across rounds)
#endif
#ifndef FP8_PROMO128
#define FP8_PROMO128 1  // the tensor maps' L2 promotion: 128 B (1) or step 7's 256 B (0)
#endif

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
constexpr bool EPI_OVERLAP = true;  // a tile's stores under the next tile's first stage (false: step 5's place)

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
            bool rev = false;  // FP8_SERP: this tile's k-steps last to first
            for (int t = cluster; t < ctiles; t += clusters, rev = FP8_SERP && !rev) {
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
        for (int i = 0; i < BN / 4; ++i) out[i] = bf16x2(acc[2 * i] * scale, acc[2 * i + 1] * scale);
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
#if FP8_AUNI  // A's base through a lane-0 shuffle: ptxas then keeps it uniform (no R2UR per wgmma)
    const uint32_t da0 = __shfl_sync(0xffffffffu, (uint32_t)make_desc(smem + row_off * BK), 0);
#else
    const uint32_t da0 = (uint32_t)make_desc(smem + row_off * BK);
#endif
    const uint32_t db0 = (uint32_t)make_desc(smem + A_BYTES);
    const uint64_t desc_hi = make_desc(smem) & 0xFFFFFFFF00000000ull;
#endif
    int it = 0;  // the ring position of this tile's first stage
    for (int t = cluster; t < ctiles; t += clusters, it += k_tiles) {
        int m0, n0;
        tile_origin<BN>(t, rank, along_n, ctiles_m, ctiles_n, m0, n0);
        float acc[ACC], p0[ACC], p1[ACC];
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[i] = 0.f;
        // Stage kt's four wgmmas into `part` as one commit group; `first`: `part` starts from zero
        // (the first stage of its promotion interval), else they accumulate onto it.
        auto issue = [&](float (&part)[ACC], int kt, bool first) {
#if FP7_ADDR
            const int s = rs;
            const uint32_t ph = rph;
            if (++rs == STAGES) rs = 0, rph ^= 1;
            mbar_wait(&full[s], ph);
            const uint32_t off = (uint32_t)s * (STAGE_BYTES >> 4);  // descriptors count 16-byte units
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)  // k32 step k: 32 bytes on along both K-major rows
                wgmma_tile<BN>(part, desc_hi | (da0 + off + 2 * k), desc_hi | (db0 + off + 2 * k), first ? k : 1);
#else
            const int s = (it + kt) % STAGES;
            mbar_wait(&full[s], ((it + kt) / STAGES) & 1);
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * BK;
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)
                wgmma_tile<BN>(part, make_desc(a + k * 32), make_desc(b + k * 32), first ? k : 1);
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
        auto promote = [&](float (&part)[ACC]) {
            fence_operand(part);  // its reads stay after the wait that made it valid
#pragma unroll
            for (int i = 0; i < ACC; ++i) acc[i] += part[i];  // 128 products in `part` (256 with FP7_PROMOTE2)
        };
        // One stage: issue stage kt into `part`, then wait for stage kt - 1 (in `prev`: the group
        // before the newest, `wait_group 1`), give it back, and promote `prev` if kt - 1 ended its
        // interval. The FADDs run under stage kt's wgmmas. With one stage per interval the next
        // stage writes `prev` again, so its QGMMAs follow the FADDs (a register dependence: at
        // most one group of this warpgroup is queued while they run); with FP7_PROMOTE2 the next
        // stage goes into `part` again and the FADDs have a whole stage.
        auto step = [&](float (&part)[ACC], float (&prev)[ACC], int kt, bool first, bool prev_last) {
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
