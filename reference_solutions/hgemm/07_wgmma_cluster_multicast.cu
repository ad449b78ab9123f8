// hgemm, step 7: step 6 plus a cluster of two CTAs that multicast the B tile they share, the
// epilogue of one tile stored while the next tile's wgmmas run, and `setmaxnreg` to make room.
//
// What step 6 left (README.md): 0.94× / 0.95× / 1.02× cuBLAS at 2048³ / 4096³ / 8192³ on an H100,
// ~0.95-0.97× on an H200. Two costs are still paid on every tile:
//   - L2 → SM traffic. Per 64-deep k-step a CTA reads A[128×64] (16 KB) and B[64×256] (32 KB)
//     for 4.2 MFLOP; at 740 TFLOPS that is 8.5 TB/s out of L2 for 132 SMs, near what L2 gives,
//     and the power it costs comes out of the SM clock.
//   - The epilogue. Both consumer warpgroups finish a tile together and then convert, shuffle and
//     store it (16 × 16-byte stores a thread after 64 shuffles): ~1 µs in which neither issues a
//     wgmma, once per tile (a tile's math is ~23 µs at 2048³ ... ~94 µs at 8192³ per SM).
//
// 1. Clusters of two along M, B multicast. The two CTAs of a cluster compute vertically adjacent
//    tiles (m0, n0) and (m0 + 128, n0), which need the same B[64×256] every k-step. Each loads its
//    own A[128×64] and half of B (two of the four 64×64 boxes: rank 0 boxes 0-1, rank 1 boxes
//    2-3) with `.multicast::cluster` to both CTAs, so a CTA reads 16 + 16 KB from L2 per k-step
//    instead of 16 + 32 (−33% of L2 → SM bytes). What changes in the pipeline:
//    - full[s] (count 1: the CTA's own producer) expects 48 KB as before: 16 KB of its A, 16 KB
//      of its own B half and 16 KB that the partner's multicast brings (which may land before
//      the local expect_tx: the tx-count goes negative and the pending arrival keeps the phase
//      open).
//    - A stage may be refilled only when the consumers of BOTH CTAs are done with it, as each
//      producer writes into both. Each consumer warp's lane 0 arrives (after its
//      `wgmma.wait_group`) on empty[s] of both CTAs (`mapa` + `mbarrier.arrive.shared::cluster`):
//      empty[s] counts 8 warps × 2 CTAs = 16 arrivals per phase.
//    - Start: barriers initialised, `fence.mbarrier_init`, then a cluster barrier, so no
//      multicast or remote arrive reaches a partner's barrier before it is initialised.
//    - Exit: no CTA may leave while its partner can still write its shared memory. Everything
//      that the partner sends is either a multicast into a stage (which this CTA's consumers wait
//      for through full[s]) or a remote arrive on empty[s] (which this CTA's producer waits for:
//      after its last load it waits on the empty barriers of the last STAGES k-steps, the
//      "producer tail"). So every incoming write has landed before the CTA's last thread exits.
//    The two CTAs walk the same sequence of cluster tiles (256×256: cluster c takes c, c + #clusters,
//    ...), so their k-step counters agree. If M has an odd number of tile rows, rank 1 of the last
//    cluster row has no tile: it still runs the k-steps (it must, for its partner's B), loads
//    A rows from row 0 instead of beyond M, and stores nothing (row < M fails).
//    Predicted: +2-4% on all three shapes (less L2 traffic; at 2048³ all 128 CTAs start at once and
//    the first stages arrive sooner).
// 2. The epilogue overlapped with the next tile. At the end of a tile a consumer waits for its
//    wgmmas, converts the 128 fp32 accumulators to 64 registers of fp16 pairs (`out`) and starts
//    the next tile at once; the shuffles and 16-byte stores of `out` run in 4 chunks (4 shuffle
//    rounds + 4 stores each) between the commit of each of the next tile's first 4 k-steps and
//    its `wgmma.wait_group`, while the tensor cores work. The first wgmma of a tile starts from
//    zero (scale-d = 0), so the accumulators are never cleared. The last tile's epilogue (and
//    chunks that a tile with fewer than 4 k-steps could not take) are stored at the end.
//    Predicted: +2% at 4096³ (3 of 4 tile boundaries per CTA hidden), +1% at 8192³, none at 2048³
//    (one tile per CTA: nothing to overlap with).
// 3. `setmaxnreg`: acc (128) + out (64) do not fit in the 168 registers that 384 threads may each
//    have. The producer warpgroup drops to 40 and the consumers rise to 232:
//    128 × 40 + 256 × 232 = 64,512 of 65,536 (as fp8_gemm step 5).
// 4. Not done: a smaller tile at 2048³. 128×256 gives 128 tiles on 132 SMs, one wave that uses 97%
//    of the SMs; 128×128 gives 256 tiles, 1.94 waves of a tile that reads more bytes per FLOP, so
//    no gain is expected. Only stream-K (splitting K of some tiles over the 4 idle SMs) could
//    recover those 3%, at the price of a cross-CTA reduction.
// Everything else is step 6's: 128×256 tiles, a 4-stage ring of 48 KB stages, wgmma.m64n256k16
// with 128-byte-swizzled descriptors, tiles walked in groups of 16 tile rows for L2 reuse, the
// fallback kernel for K % 8 or N % 8 != 0, and only the sm_90a build has the wgmma path.
//
// Build (nvcc 13.0.88, the judge's flags): sm_90a: ptxas reports 168 registers (the launch-time
// count; the consumers use up to R229 after USETMAXREG 232, the producer 40), 64 bytes of static
// shared memory + 197,632 dynamic, 0 spills, 0 bytes stack, no warnings (no C7514/C7520 wgmma
// serialisation). SASS: 4 HGMMA.64x256x16 (one k-step; the first with the scale-d predicate), one
// WARPGROUP.ARRIVE before them, the epilogue chunk (16 SHFL, 4 STG.E.128) between the last HGMMA
// and WARPGROUP.DEPBAR.LE gsb0 1, no LDL/STL; UTMALDG.2D for A and UTMALDG.2D.MULTICAST for B; the
// stage releases are SYNCS.ARRIVE.TRANS64.RED with no MEMBAR before them (the one MEMBAR.ALL.GPU
// and CCTL.IVALL are at the start, from the barrier-init fence and the cluster barrier). sm_80:
// an empty kernel (4 registers) and the fallback.
// CLUSTER = 1 builds the same kernel without clusters (plain TMA, one CTA's own arrivals; also
// clean): the switch that tells a cluster problem from anything else on the GPU.
// Before the first GPU run the barrier protocol (counts, parities, expect-tx bytes, the producer
// tail) was checked with a randomised model of two CTAs (TMA bytes, remote arrives and wgmma
// completions in random orders, 1-5 tiles × 1-9 k-steps): no deadlock, every wgmma reads its own
// k-step's bytes, no stage refilled before both CTAs' readers are done, nothing lands in an exited
// CTA; the model catches an empty[s] that counts only its own CTA's warps, and a missing tail.
//
// Measured (judge submit, NVIDIA H200, 2026-11-28 12:31 UTC, cuBLAS in the same run), 2048³ /
// 4096³ / 8192³: 0.0288 / 0.1826 / 1.4104 ms, 596 / 753 / 780 TFLOPS, 0.96× / 0.99× / 1.00×
// cuBLAS (0.982× geomean). Step 6 on the same kind of GPU (judge verify --table, earlier that
// day): 0.0293 / 0.1906 / 1.494 ms, 0.94× / 0.96× / 0.97×. So +1.7% / +4.4% / +5.9% over step 6,
// against +2-4% / +4-6% / +3-5% predicted; the target (≥ 1.00× on every shape) is met at 8192³
// only. Correct on every test shape (ragged ones included) at the first run.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128, BN = 256, BK = 64, STAGES = 4;
constexpr int CLUSTER = 2;    // CTAs per cluster, along M; they share (multicast) the B tile
constexpr int THREADS = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int A_BYTES = BM * BK * 2, B_BYTES = BK * BN * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + alignment slack (barriers are static)
static_assert(BN / 64 % CLUSTER == 0, "each CTA multicasts a whole number of B boxes");

// wgmma, TMA and clusters exist only on sm_90a: the device code below is compiled for that target
// alone (an sm_80 build keeps an empty kernel, and solve() never launches it there).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr int B_BOX_BYTES = 64 * BK * 2;            // one 64×64 box of B
constexpr int B_BOXES_PER_CTA = BN / 64 / CLUSTER;  // boxes each CTA loads (and multicasts)
constexpr int EPI_CHUNKS = 4;                       // the epilogue in 4 parts of 64 columns

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
            half* __restrict__ C, int M, int N, int K) {
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

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);                // the own producer's arrive.expect_tx
            mbar_init(&empty[s], 8 * CLUSTER);     // lane 0 of each consumer warp of each CTA
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    cluster_sync();  // both CTAs' barriers initialised before anyone multicasts or arrives remotely

    // Persistent: cluster c takes cluster tiles c, c + #clusters, ... The k-step counter `it` runs
    // on across tiles (identical in both CTAs of a cluster), so the producer fills the next tile's
    // stages while the consumers finish this one.
    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int t = cluster; t < ctiles; t += clusters) {
                int m0, n0;
                tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
                const int a_row = m0 < M ? m0 : 0;  // rank 1 past the last tile row: any rows will do
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
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
    const int warp = tid / 32, lane = tid % 32, q = lane % 4;

    // Stage s done in this warp (its wgmmas complete): one arrive per warp on empty[s] of each CTA.
    auto release = [&](int s) {
#pragma unroll
        for (int r = 0; r < CLUSTER; ++r) mbar_arrive_cluster(&empty[s], r, lane == 0);
    };

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
    int out_row = 0, out_n0 = 0;  // this lane's first row and the tile's first column
    bool have_out = false;

    // Chunk c of the epilogue: blocks j = 8c .. 8c+7 (64 columns). A quad of lanes holds two 8-column
    // blocks j, j+1 of rows r and r+8; four shuffles give lane q of the quad the whole 16 bytes of
    // one (block, row): q = 2·(block - j) + (row is r+8). Called with c a constant (unrolled loops).
    auto store_chunk = [&](int c) {
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
            const int row = out_row + 8 * (q % 2), col = out_n0 + (j + q / 2) * 8;
            if (row < M && col < N)  // N % 8 == 0 here: the 8 columns are inside or outside together
                *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = make_uint4(got[0], got[1], got[2], got[3]);
        }
    };

    int it = 0;
    for (int t = cluster; t < ctiles; t += clusters) {
        int m0, n0;
        tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            mbar_wait(&full[s], (it / STAGES) & 1);
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * (BK * 2);
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 16; ++k) {
                // A: K-major rows of 128 B, 8-row swizzle atoms 1024 B apart (SBO); +32 B per k16.
                // B: N-major, 64×64 boxes 8 KB apart along N (LBO), 8-row atoms 1024 B apart along
                //    K (SBO); +16 rows × 128 B per k16. The tile's first wgmma starts from zero.
                wgmma_m64n256k16(acc, make_desc(a + k * 32, 16, 1024), make_desc(b + k * 16 * 128, 64 * BK * 2, 1024),
                                 kt > 0 || k > 0);
            }
            wgmma_commit();
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
        out_row = m0 + row_off + warp * 16 + lane / 4;
        out_n0 = n0;
        have_out = true;
    }
    if (have_out) {  // the last tile's epilogue: nothing left to overlap it with
#pragma unroll
        for (int c = 0; c < EPI_CHUNKS; ++c) store_chunk(c);
    }
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
    CUtensorMap ma, mb;
    if (device().cc == 90 && K % 8 == 0 && N % 8 == 0 && K > 0 && make_map(&ma, A, M, K, BM) && make_map(&mb, B, K, N, BK)) {
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
        cudaLaunchKernelEx(&cfg, hgemm_wgmma, ma, mb, C, M, N, K);
    } else {
        dim3 grid((N + 31) / 32, (M + 31) / 32);
        hgemm_fallback<<<grid, 256>>>(A, B, C, M, N, K);
    }
}
