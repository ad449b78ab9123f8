// hgemm, step 10: step 9 with the persistent kernel's last, partial round as a stream-K tail, where
// that pays (8192³ on an H100 / H200 SXM; not 4096³, measured below). Written on a machine without a
// GPU (nvcc 13.0 only; the first prediction below was made there), then measured on an H200.
//
// Counting first. The persistent kernel (step 8's, `hgemm_wgmma`) runs cluster tiles of 2 × (128 ×
// 256) on the 66 clusters of two an H100 / H200 holds at once, in rounds: 4096³ has 256 cluster tiles,
// 3 rounds + 58 (the last round leaves 8 of 66 clusters idle, 12% of a round, 3% of the call); 8192³
// has 1,024, 15 rounds + 34 (32 idle, 48% of a round, 3% of the call). Stream-K lays the last round's
// k-steps end to end (58 · 64 and 34 · 128) and gives every cluster an equal range: 56.24 and 65.9
// k-steps instead of a whole tile's 64 and 128. At step 9's ~0.70 µs a k-step that is 5.4 µs (2.9%)
// at 4096³ and 43 µs (3.0%) at 8192³, before the split's own costs.
//
// The split. A range shorter than a tile holds at most two pieces: the end of one tile (unless it
// starts at a tile's first k-step), then the start of the next. The cluster whose range holds a
// tile's first k-step finishes the tile: that piece is its range's last, so the others (the first
// pieces of the ranges after it, run first) are usually done by then. A piece that is not a tile's
// start writes its fp32 partial sums (64 KB per consumer warpgroup, 32 float4 a thread laid out so
// that each store instruction of a warp writes 512 contiguous bytes, through L2 with st.cg) to its
// cluster's slot of a workspace, then a flag: every thread's stores, a warpgroup barrier, then one
// thread's fence and st.release.gpu, placed under the first k-step of the range's next piece so that
// waiting for the stores to land costs no k-step of its own. The finisher's thread 0 spins on each
// flag with ld.acquire.gpu and resets it to 0 (its only reader), a barrier, then each thread adds the
// partial into acc 16 float4 at a time (ld.global.cg), and the tile is stored as any other. Flags go
// back to 0 inside the kernel that set them, so calls need no reset and no per-call argument. The
// workspace (16.5 MB for 66 clusters) and flags are allocated once, on the first call that splits.
// The finisher spins until its partials exist, which needs every cluster of the grid resident at
// once: the grid is the occupancy query's count (step 8's), and nothing it waits for waits in turn.
//
// Written once, two kernels: `hgemm_wgmma<false>` is step 9's persistent kernel, instruction for
// instruction with the trims below off (3,040, a CPU test compares their SASS); `hgemm_wgmma<true>`
// runs the same full rounds,
// then the tail. The host takes the split only where each cluster's last round shrinks by
// HG10_MIN_SAVED = 32 k-steps or more (`stream_k_clusters`, exported as `hgemm_stream_k_config` for
// scripts/probes/hgemm_path.py and hgemm_stream_k.py); else step 9's plan. Switches: HG10_SK = 0 is
// step 9 (never split); HG10_MAX_SPLIT (4): at most this many pieces per tail tile, so a tail of one
// tile goes to 4 clusters, not 66; HG10_BATCH (16): float4 loads in flight per thread in the add;
// HG10_AUNI: A's descriptor base kept warp-uniform (every kernel's k-step: the wgmma descriptors
// in uniform registers, no R2UR; the persistent kernel 3,040 -> 2,984 instructions).
//
// Three trims, added after the first measurement below (README, "Three trims to step 10"), on by
// default, each 0 to turn it off: HG10_SERP, every other tile of a cluster loads its k-steps last to
// first, so that a round starts on the k-range the round before touched last (its A slices still in
// L2: DRAM read at 4096³ 147 -> 127 MB in Nsight Compute); HG10_PROMO128, the tensor maps' L2
// promotion 128 B instead of 256 B; HG10_AUNI above. `judge compare` against the file without them:
// 1.003 / 0.989 (FASTER) / 0.992 of its time at 2048³ / 4096³ / 8192³ (alone: the k order 0.995 at
// 4096³, the promotion 0.998, AUNI 0.996-0.998, each SAME). With HG10_SERP=0 HG10_AUNI=0 the kernels
// are step 9's SASS again (the promotion is host code); with them on, hgemm_wgmma<false> is 3,008
// instructions (AUNI -56, SERP +24 in the producer's loop), 0 spills.
//
// Build (nvcc 13.0.88, the judge's flags, sm_90a): hgemm_wgmma<true> 168 registers at launch
// (consumers 232 after USETMAXREG), 0 spills, 0 stack, 5,400 SASS instructions, 20 HGMMA.64x256x16
// (a k-step's four in five places: ptxas peels and copies the full rounds' loop and the two tail
// pieces' loops), 68 STG (32 of them the partial's STG.E.128.STRONG.GPU),
// 34 LDG (32 partial loads, 2 flag polls), 128 FADD; hgemm_wgmma<false> and both one-wave kernels
// as step 9's. Getting there: with the k-loop indexed from the piece's first k-step (kt - kb), ptxas
// spilled 8 KB (the epilogue chunk selection on a dynamic offset): the consumers need no k index, so
// the loop counts from 0; out[] (the previous tile's fp16 pairs) live through a piece that only
// writes a partial cost ~7 registers of spill, fixed by giving the loop its stores as a compile-time
// mode (none in a piece that follows a partial) and returning straight from a range that ends with
// its partial; the last full-round tile's stores under the first tail piece go through the TMA
// store path (step 8's last-tile epilogue) because the shuffle + STG path there spilled one register.
// sm_80: the fallback and empty wgmma kernels, as step 9.
//
// Predicted (before any run): 4096³ −1.5 to −2.5%, 8192³ −2.5 to −3% against step 9 (the saving
// above less ~1 µs to write a partial and ~1 µs to read one).
// Measured (one H200, driver 580.159.04, torch 2.11.0+cu130, 2026-11-29; hgemm README, "Step 10"):
// with the tail split at both shapes (-DHG10_MIN_SAVED=0) `judge compare` against step 9 gave
// 1.030× its time at 4096³ (SLOWER) and 0.984× at 8192³ (FASTER). scripts/probes/hgemm_tail_trace.py
// says why: in the tail the k-steps run ~9% slower than in the full rounds (0.76 against 0.70 µs
// at 4096³: the ranges start at different k, so the clusters working at once no longer share their
// A and B slices in L2), and a finisher adds its partial ~4 µs after its own last k-step (waiting
// for a late flag, then 64 KB through L2 per warpgroup): about 16-28 k-steps' time in all, more than
// 4096³'s 7 saved, less than 8192³'s 62. Hence HG10_MIN_SAVED = 32: `judge compare` of this file
// against step 9: 0.999 (2048³, SAME), 1.000 (4096³, SAME), **0.983 (8192³, FASTER)**.
//
// Everything else is step 9's (09_one_wave.cu): the one-wave kernel at 2048³, 128×256 tiles, the
// 4-stage ring of 48 KB, B multicast in clusters of two, setmaxnreg 40/232, the early loads and split
// cluster barrier, the epilogue under the next tile, the TMA store of the last tile, the fallback.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <type_traits>

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
// Step 9's switches (HG9_ONE_WAVE = 0 gives step 8 back: the same kernel, the same launches).
#ifndef HG9_ONE_WAVE  // shapes whose cluster tiles all fit in one wave go to hgemm_wgmma_one<cluster>
#define HG9_ONE_WAVE 1
#endif
#ifndef HG9_CLUSTER  // the largest cluster hgemm_wgmma_one is launched with: 4 (tried first, then 2) or 2
#define HG9_CLUSTER 4
#endif
#ifndef HG9_STAGE_EPI  // hgemm_wgmma_one's epilogue boxes in the freed stages: no wait between its 4 TMA stores
#define HG9_STAGE_EPI 1
#endif
#ifndef HG9_PRE  // hgemm_wgmma_one: k-steps loaded before the cluster barrier, without multicast (1..STAGES)
#define HG9_PRE 4
#endif
// Step 10's switches (HG10_SK = 0 gives step 9 back: the same kernels, the same launches).
#ifndef HG10_SK  // the tiles after the persistent kernel's last full round, split along K (stream-K)
#define HG10_SK 1
#endif
#ifndef HG10_MAX_SPLIT  // at most this many pieces per tail tile (fewer, longer pieces when the tail is small)
#define HG10_MAX_SPLIT 4
#endif
#ifndef HG10_MIN_SAVED  // split the tail only if each cluster then runs at least this many k-steps fewer
#define HG10_MIN_SAVED 32
#endif
#ifndef HG10_BATCH  // partial sums a finisher's thread loads at a time (float4s; 32 / HG10_BATCH round trips)
#define HG10_BATCH 16
#endif
// Added after step 10's first measurement (header, "Three trims"); each on by default, 0 turns it off.
#ifndef HG10_SERP  // every other tile of a cluster loads its k-steps last to first (L2 reuse across rounds)
#define HG10_SERP 1
#endif
#ifndef HG10_AUNI  // A's descriptor base through a lane-0 shuffle, so ptxas keeps it uniform
#define HG10_AUNI 1
#endif
#ifndef HG10_PROMO128  // the tensor maps' L2 promotion: 128 B (1) or step 9's 256 B (0)
#define HG10_PROMO128 1
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

// Step 10's stream-K tail. The tiles after the last full round (cluster tiles dp .. ctiles - 1,
// `rem` of them) lay their k-steps end to end, rem · k_tiles in all, and cluster c < n_sk takes the
// range [sk_bound(c), sk_bound(c + 1)) of that line. A range is shorter than a tile (rem < clusters),
// so it holds at most two pieces: the end of one tile (unless the range starts at a tile's first
// k-step) and then the start of the next. The cluster holding a tile's first k-step finishes the
// tile: it adds the fp32 partial sums of the clusters after it whose ranges start inside the tile
// (each cluster writes at most one partial, of its first piece: slot = cluster) and stores C.
__device__ __forceinline__ int sk_bound(int c, int work, int n_sk) { return (int)((long long)c * work / n_sk); }

// HG10_AUNI: A's descriptor depends on the warpgroup (threadIdx.x / 128), which ptxas does not know
// to be warp-uniform, so it is built in vector registers and moved to uniform ones (R2UR) at every
// wgmma; after a lane-0 shuffle it stays uniform (flash_attn's FA7_QUNI). Measured: README, "Step 10".
__device__ __forceinline__ uint32_t a_desc_uniform(uint32_t d) {
#if HG10_AUNI
    return __shfl_sync(0xffffffffu, d, 0);
#else
    return d;
#endif
}

// The 128 consumer threads of warpgroup wg (1 or 2) only; barrier 0 is __syncthreads.
__device__ __forceinline__ void warpgroup_sync(int wg) { asm volatile("bar.sync %0, 128;" :: "r"(wg) : "memory"); }
__device__ __forceinline__ void flag_release(int* f, int v) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" :: "l"(f), "r"(v) : "memory");
}
// An L2 read that stays in program order with the other volatile asm (see the partial sums' add).
__device__ __forceinline__ float4 load_cg(const float4* p) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}
__device__ __forceinline__ int flag_acquire(const int* f) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(f) : "memory");
    return v;
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// SK = false: step 9's persistent kernel (step 8's), every cluster tile whole. SK = true: the same
// full rounds, then the stream-K tail above (sk_ws: n_sk · 2 CTAs · 2 warpgroups · 64 KB of partial
// sums; sk_flag: one int per (cluster, CTA, warpgroup), 0 between calls: its finisher resets it).
template <bool SK>
__global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
            const __grid_constant__ CUtensorMap tma_c, half* __restrict__ C, int M, int N, int K,
            float* __restrict__ sk_ws, int* __restrict__ sk_flag, int n_sk) {
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
    // SK: whole tiles for the full rounds only (the host launches SK only with ctiles > clusters).
    const int dp = SK ? ctiles - ctiles % clusters : ctiles;
    const int sk_work = SK ? (ctiles - dp) * k_tiles : 0;
    // This cluster's range of the tail, computed where it is used from a fresh read of the cluster
    // id (a volatile asm: not merged with an earlier one), so that no value of it is held in a
    // register through a main loop (the consumers have none to spare there: acc and out[] take 192).
    auto sk_range = [&](int& lo, int& hi) {
        const int c = (int)cluster_id();
        lo = c < n_sk ? sk_bound(c, sk_work, n_sk) : 0;
        hi = c < n_sk ? sk_bound(c + 1, sk_work, n_sk) : 0;
    };
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
            // k-steps kb .. ke - 1 of cluster tile t (kb > 0 only for a stream-K piece); `rev`:
            // loaded last to first (HG10_SERP)
            auto load_steps = [&](int t, int kb, int ke, bool rev) {
                int m0, n0;
                tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
                const int a_row = m0 < M ? m0 : 0;  // rank 1 past the last tile row: any rows will do
                for (int kt = kb; kt < ke; ++kt, ++it) {
                    const int s = it % STAGES;
                    const int kc = rev ? k_tiles - 1 - kt : kt;  // the k-step loaded
                    // stage s free in both CTAs: their consumers released k-step it - STAGES
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    uint8_t* a = smem + s * STAGE_BYTES;
                    uint8_t* b = a + A_BYTES;
                    // 16 KB of A + 32 KB of B (half from this CTA's loads, half from the partner's)
                    mbar_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(a, &tma_a, &full[s], kc * BK, a_row);
#pragma unroll
                    for (int i = 0; i < B_BOXES_PER_CTA; ++i) {
                        const int j = rank * B_BOXES_PER_CTA + i;
                        if constexpr (CLUSTER > 1)
                            tma_load_2d_multicast(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kc * BK,
                                                  (uint16_t)((1u << CLUSTER) - 1));
                        else
                            tma_load_2d(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kc * BK);
                    }
                }
            };
            bool rev = false;  // HG10_SERP: every other tile of the cluster loads last to first
            for (int t = cluster; t < dp; t += clusters, rev = HG10_SERP && !rev) {
                const int kt0 = t == cluster ? pre : 0;  // k-steps already loaded before the barrier
                it += kt0;
                load_steps(t, kt0, k_tiles, rev);
            }
            if constexpr (SK) {
                int sk_lo, sk_hi;
                sk_range(sk_lo, sk_hi);
                for (int g = sk_lo; g < sk_hi;) {  // at most two pieces
                    const int kb = g % k_tiles, ke = min(k_tiles, kb + (sk_hi - g));
                    load_steps(dp + g / k_tiles, kb, ke, false);
                    g += ke - kb;
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
    const uint32_t desc_a0 = a_desc_uniform((uint32_t)make_desc(smem + row_off * (BK * 2), 16, 1024));
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
    // Chunk c of the previous tile's stores, `how` a constant: 1 step 9's (store_chunk), 2 through
    // TMA (the stream-K tail's first piece: shuffles + STG need one register more than the consumers
    // have there, and ptxas spills one).
    auto store_prev = [&](int c, auto how) {
#if HG8_TMA_STORE
        if constexpr (decltype(how)::value == 2) {
            store_chunk_tma(c);
            return;
        }
#endif
        store_chunk(c);
    };
    auto stores_under = [](auto how) { return decltype(how)::value == 1 || decltype(how)::value == 2; };
    int* flag_due = nullptr;  // a partial's flag, released under the first k-step of the next piece
    // The next n k-steps of the ring (a tile's, or a piece's) into acc from zero, the previous
    // tile's stores under them (`how` as above; 0: none, so that the compiler knows out[] is not
    // read; 3: none, and flag_due released once the first k-step's wgmmas are issued: the fence
    // that waits for the partial's stores then costs this warpgroup no more than the k-step it
    // waits under). The consumers need no k index: the stage comes from `it`.
    auto mainloop = [&](int n, auto how) {
        for (int kt = 0; kt < n; ++kt, ++it) {
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
            if constexpr (decltype(how)::value == 3) {
                if (kt == 0 && tid == 0) {
                    __threadfence();  // with the barrier after the stores: all 128 threads' partial visible
                    flag_release(flag_due, 1);
                }
            }
            // The previous tile's stores, a chunk per k-step, while this k-step's wgmmas run.
            if (stores_under(how) && have_out) {
#pragma unroll
                for (int c = 0; c < EPI_CHUNKS; ++c)
                    if (kt == c) store_prev(c, how);
            }
            wgmma_wait<1>();  // the previous k-step's wgmmas are done: release its stage
            if (kt > 0) release((it - 1) % STAGES);
        }
        wgmma_wait<0>();
        fence_operand(acc);
        release((it - 1) % STAGES);  // the tile's last stage
        if (stores_under(how) && have_out) {  // chunks a tile with fewer than EPI_CHUNKS k-steps had no room for
#pragma unroll
            for (int c = 0; c < EPI_CHUNKS; ++c)
                if (c >= n) store_prev(c, how);
        }
    };
    using Stores = std::integral_constant<int, 1>;
    // acc is tile (m0, n0)'s result: its stores go under the next piece's k-steps (or at the end).
    auto keep = [&](int m0, int n0) {
#pragma unroll
        for (int i = 0; i < 64; ++i) out[i] = half2_bits(acc[2 * i], acc[2 * i + 1]);
        out_row = m0 + row_off + warp * 16;
        out_n0 = n0;
        have_out = true;
    };
    for (int t = cluster; t < dp; t += clusters) {
        int m0, n0;
        tile_origin(t, rank, ctiles_m, tiles_n, m0, n0);
        mainloop(k_tiles, Stores{});
        keep(m0, n0);
    }
    if constexpr (SK) {
        // This warpgroup's partial sums in slot `c`: 32 float4 a thread, float4 i of thread tid at
        // i · 128 + tid (each store instruction of a warp writes 512 contiguous bytes).
        const int part = rank * 2 + (wg - 1);
        auto slot = [&](int c) {
            return reinterpret_cast<float4*>(sk_ws) + (size_t)(c * CLUSTER * 2 + part) * (32 * 128) + tid;
        };
        int sk_lo, sk_hi;
        sk_range(sk_lo, sk_hi);
        if (sk_lo < sk_hi) {  // every cluster had a full-round tile before: have_out is true here
            mainloop(min(k_tiles - sk_lo % k_tiles, sk_hi - sk_lo), std::integral_constant<int, 2>{});
            sk_range(sk_lo, sk_hi);
            const int n1 = min(k_tiles - sk_lo % k_tiles, sk_hi - sk_lo);
            int u = sk_lo / k_tiles, m0, n0;
            if (sk_lo % k_tiles > 0) {  // not the tile's start: the range's first piece, a partial for its finisher
                float4* p = slot(cluster);
#pragma unroll
                for (int i = 0; i < 32; ++i)
                    __stcg(p + i * 128, make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]));
                // The flag says the whole warpgroup's partial is out: every thread's stores before the
                // barrier, then one thread's fence and release (cumulative over what the barrier ordered).
                warpgroup_sync(wg);
                flag_due = sk_flag + cluster * CLUSTER * 2 + part;
                if (sk_lo + n1 == sk_hi) {  // nothing else in the range; every store of this CTA is out
                    if (tid == 0) {
                        __threadfence();
                        flag_release(flag_due, 1);
                    }
#if HG8_TMA_STORE
                    if (lane == 0) bulk_wait_read<0>();
#endif
                    return;
                }
                // the next tile's start (nothing to store under it), the flag released under its first k-step
                mainloop(sk_hi - sk_lo - n1, std::integral_constant<int, 3>{});
                ++u;
            }
            tile_origin(dp + u, rank, ctiles_m, tiles_n, m0, n0);
            // The tile's start: add the partials of the clusters whose ranges start inside the tile.
            const int tile_end = (u + 1) * k_tiles;
            for (int c = cluster + 1; c < n_sk && sk_bound(c, sk_work, n_sk) < tile_end; ++c) {
                if (tid == 0) {
                    int* f = sk_flag + c * CLUSTER * 2 + part;
                    while (flag_acquire(f) == 0) __nanosleep(64);
                    *f = 0;  // ready for the next call: this is the flag's only reader
                }
                warpgroup_sync(wg);
                const float4* p = slot(c);
                // HG10_BATCH float4 in flight at a time: all 32 at once would need 128 registers beside acc.
#pragma unroll
                for (int i0 = 0; i0 < 32; i0 += HG10_BATCH) {
                    float4 v[HG10_BATCH];
#pragma unroll
                    for (int i = 0; i < HG10_BATCH; ++i) v[i] = load_cg(p + (i0 + i) * 128);
#pragma unroll
                    for (int i = 0; i < HG10_BATCH; ++i) {
                        float* a = acc + 4 * (i0 + i);
                        a[0] += v[i].x;
                        a[1] += v[i].y;
                        a[2] += v[i].z;
                        a[3] += v[i].w;
                        asm volatile("" : "+f"(a[0]), "+f"(a[1]), "+f"(a[2]), "+f"(a[3]));  // added before the next loads
                    }
                }
            }
            keep(m0, n0);
        }
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

// ---------------------------------------------------------------------------------------------
// Step 9: the one-wave kernel (HG9_ONE_WAVE), a template on the cluster size CL (4 or 2, CTAs along
// M sharing B by multicast). Launched only when all of the shape's clusters of CL are resident at
// once (2048³: 32 clusters of 4 or 64 of 2), so it has no tile loop, no previous tile to store
// under the k-steps, and its whole epilogue is the exposed one. The step-8 kernel above is untouched.
static_assert(HG9_CLUSTER == 4 || HG9_CLUSTER == 2, "hgemm_wgmma_one's largest cluster: 4 or 2");
static_assert(HG9_PRE >= 1 && HG9_PRE <= STAGES, "the k-steps loaded before the cluster barrier fit the ring");
// HG9_STAGE_EPI: the epilogue boxes live in the A halves of the (then free) stages; otherwise
// step 8's per-warp box pair after the stages.
constexpr int SMEM9_BYTES = STAGES * STAGE_BYTES + (HG9_STAGE_EPI ? 0 : 8 * EPI_BUFS * EPI_BOX_BYTES) + 1024;
static_assert(SMEM9_BYTES + 64 <= 232448, "fits the 227 KB a block may opt in to");

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// As step 8's tile_origin, with CL tile rows per cluster and 16 / CL cluster rows per group.
template <int CL>
__device__ __forceinline__ void tile_origin9(int t, int rank, int ctiles_m, int tiles_n, int& m0, int& n0) {
    const int group = t / ((16 / CL) * tiles_n), first_m = group * (16 / CL);
    const int rows = min(ctiles_m - first_m, (16 / CL)), in_group = t % ((16 / CL) * tiles_n);
    m0 = (CL * (first_m + in_group % rows) + rank) * BM;
    n0 = (in_group / rows) * BN;
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <int CL>
__global__ void __launch_bounds__(THREADS, 1)
hgemm_wgmma_one(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
                const __grid_constant__ CUtensorMap tma_c, int M, int N, int K) {
    static_assert(BN / 64 % CL == 0, "each CTA multicasts a whole number of B boxes");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ctiles_m = (tiles_m + CL - 1) / CL, ctiles = ctiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    const int rank = (int)cluster_rank(), cluster = (int)cluster_id();
    const bool has_tile = cluster < ctiles;  // the host launches exactly ctiles clusters: always true
    int m0 = 0, n0 = 0;
    if (has_tile) tile_origin9<CL>(cluster, rank, ctiles_m, tiles_n, m0, n0);
    // First k-steps loaded before the cluster barrier, without multicast (step 8's HG8_EARLY).
    const int pre = HG8_EARLY ? (has_tile ? min(HG9_PRE, k_tiles) : 0) : 0;

    if (threadIdx.x == 0) {
#if HG8_PREFETCH
        prefetch_tmap(&tma_a);
        prefetch_tmap(&tma_b);
        prefetch_tmap(&tma_c);
#endif
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 8 * CL);  // lane 0 of each consumer warp of each CTA of the cluster
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#if HG8_EARLY
        if (pre > 0) {
            fence_proxy_async();
            const int a_row = m0 < M ? m0 : 0;
            for (int kt = 0; kt < pre; ++kt) {
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
    __syncthreads();
    cluster_arrive_relaxed();
#else
    cluster_sync();
#endif

    if (wg == 0) {  // producer: the tile's k-steps, then the tail
        setmaxnreg_dec<40>();
#if HG8_EARLY
        cluster_wait();
#endif
        if (tid == 0 && has_tile) {
            const int a_row = m0 < M ? m0 : 0;  // a rank past the last tile row: any rows will do
            for (int kt = pre; kt < k_tiles; ++kt) {
                const int s = kt % STAGES;
                if (kt >= STAGES) mbar_wait(&empty[s], ((kt / STAGES) - 1) & 1);
                uint8_t* a = smem + s * STAGE_BYTES;
                uint8_t* b = a + A_BYTES;
                mbar_expect_tx(&full[s], STAGE_BYTES);  // 16 KB of A + 32 KB of B (BN/64/CL boxes from each CTA)
                tma_load_2d(a, &tma_a, &full[s], kt * BK, a_row);
#pragma unroll
                for (int i = 0; i < BN / 64 / CL; ++i) {
                    const int j = rank * (BN / 64 / CL) + i;
                    if constexpr (CL > 1)
                        tma_load_2d_multicast(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kt * BK,
                                              (uint16_t)((1u << CL) - 1));
                    else
                        tma_load_2d(b + j * B_BOX_BYTES, &tma_b, &full[s], n0 + 64 * j, kt * BK);
                }
            }
            // Tail: every remote arrive aimed at this CTA's empty barriers has landed before it exits.
            for (int i = k_tiles - STAGES > 0 ? k_tiles - STAGES : 0; i < k_tiles; ++i)
                mbar_wait(&empty[i % STAGES], (i / STAGES) & 1);
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int row_off = (wg - 1) * 64;
    const int warp = tid / 32, lane = tid % 32;
#if HG8_EARLY
    if (!has_tile) cluster_wait();  // not launched so: still one wait per arrive
#endif
    if (!has_tile) return;

    auto release = [&](int s) {
#pragma unroll
        for (int r = 0; r < CL; ++r) mbar_arrive_cluster(&empty[s], r, lane == 0);
    };
    const uint32_t desc_a0 = a_desc_uniform((uint32_t)make_desc(smem + row_off * (BK * 2), 16, 1024));
    const uint32_t desc_b0 = (uint32_t)make_desc(smem + A_BYTES, 64 * BK * 2, 1024);
    constexpr uint64_t DESC_HI = make_desc_hi(1024);

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) acc[i] = 0.f;

    const int last = k_tiles - 1;
    for (int kt = 0; kt < last; ++kt) {
        const int s = kt % STAGES;
        mbar_wait(&full[s], (kt / STAGES) & 1);
        wgmma_fence();
        const uint32_t stage_off = (uint32_t)(s * (STAGE_BYTES >> 4));
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
            wgmma_m64n256k16(acc, DESC_HI | (desc_a0 + stage_off + 2 * k), DESC_HI | (desc_b0 + stage_off + 128 * k),
                             kt > 0 || k > 0);
        wgmma_commit();
#if HG8_EARLY
        if (kt == 0) cluster_wait();  // before this thread's first remote arrive
#endif
        wgmma_wait<1>();
        if (kt > 0) release((kt - 1) % STAGES);
    }

    // The last k-step, and the epilogue. Warp `warp` of this warpgroup stores its 16 rows in 4
    // chunks of 64 columns (16 × 64 boxes, 128-byte swizzle, one TMA store each; the map clips
    // rows ≥ M and columns ≥ N).
    const int out_row = m0 + row_off + warp * 16;
    const int f = last % STAGES;  // the last k-step's stage
    const int mi = lane / 8, mr = lane % 8;
    const uint32_t lane_off = (uint32_t)(((mi % 2) * 8 + mr) * 128);
#if HG9_STAGE_EPI
    // Box of (warp, chunk c): 2 KB slot (c/2)·8 + 2·warp + c%2 of the 16 slots that are this
    // warpgroup's A halves of the 4 stages (8 KB each), counted from stage f + 1: chunks 0 and 1
    // land in stages f+1, f+2, chunks 2 and 3 in f+3 and f (all written after wait_group 0). Only
    // this warpgroup's wgmmas read its A halves, and the TMA loads into them have all completed
    // (every k-step they carried was waited for), so each is free once this warpgroup is done.
    const uint32_t a_half0 = smem_addr(smem) + (uint32_t)(row_off * (BK * 2));
    auto box_addr = [&](int c) {
        const int slot = (c / 2) * 8 + 2 * warp + c % 2;
        return a_half0 + (uint32_t)(((f + 1 + slot / 4) % STAGES) * STAGE_BYTES + (slot % 4) * EPI_BOX_BYTES);
    };
#else
    const uint32_t epi_base = smem_addr(smem + STAGES * STAGE_BYTES) + ((wg - 1) * 4 + warp) * (EPI_BUFS * EPI_BOX_BYTES);
    int epi_n = 0;
#endif
    auto store_chunk = [&](int c) {  // c a constant (unrolled callers)
        const int col = n0 + EPI_COLS * c;
        if (out_row >= M || col >= N) return;  // the whole box is outside C (warp-uniform): no store
#if HG9_STAGE_EPI
        const uint32_t buf = box_addr(c);
#else
        const uint32_t buf = epi_base + (epi_n % EPI_BUFS) * EPI_BOX_BYTES;
        ++epi_n;
        if (lane == 0) bulk_wait_read<EPI_BUFS - 1>();
        __syncwarp();
#endif
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const int j = 8 * c + 2 * u;  // acc[4j .. 4j+7]: blocks j, j+1, rows r, r+8
            const uint32_t chunk = (uint32_t)(2 * u + mi / 2);
            stmatrix_x4(buf + lane_off + ((chunk ^ (uint32_t)mr) << 4), half2_bits(acc[4 * j], acc[4 * j + 1]),
                        half2_bits(acc[4 * j + 2], acc[4 * j + 3]), half2_bits(acc[4 * j + 4], acc[4 * j + 5]),
                        half2_bits(acc[4 * j + 6], acc[4 * j + 7]));
        }
        fence_proxy_async();
        __syncwarp();
        if (lane == 0) {
            tma_store_2d(&tma_c, buf, col, out_row);
            bulk_commit();
        }
    };

    mbar_wait(&full[f], (last / STAGES) & 1);
    wgmma_fence();
    {
        const uint32_t stage_off = (uint32_t)(f * (STAGE_BYTES >> 4));
#pragma unroll
        for (int k = 0; k < BK / 16; ++k)
            wgmma_m64n256k16(acc, DESC_HI | (desc_a0 + stage_off + 2 * k), DESC_HI | (desc_b0 + stage_off + 128 * k),
                             last > 0 || k > 0);
        wgmma_commit();
#if HG8_EARLY
        if (last == 0) cluster_wait();
#endif
        wgmma_wait<1>();
        if (last > 0) release((last - 1) % STAGES);
        wgmma_wait<0>();
        fence_operand(acc);
        release(f);
#if HG9_STAGE_EPI
        fence_proxy_async();  // the (completed) async-proxy accesses of the stages before the boxes' generic writes
#endif
#pragma unroll
        for (int c = 0; c < EPI_CHUNKS; ++c) store_chunk(c);
    }
    if (lane == 0) bulk_wait_read<0>();  // the shared memory stays until every store has read it
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
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    HG10_PROMO128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
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


// ---------------------------------------------------------------------------------------------
// Which kernel a shape takes. One decision, made by solve() and reported by hgemm_one_wave_config():
//   4, 2  hgemm_wgmma_one<4> / <2>: one tile per CTA, clusters of 4 / 2 along M (B multicast)
//   0     hgemm_wgmma, step 8's persistent kernel (clusters of 2); with a stream-K tail (step 10)
//         when stream_k_clusters() says so
//   -1    hgemm_fallback (not compute capability 9.0, K ≤ 0, or K or N not a multiple of 8)
//   -2    nothing is launched (M ≤ 0 or N ≤ 0)
// It assumes the three tensor maps encode (A, B and C 16-byte aligned, as every allocation of the
// judge and of torch is); solve() still sends a shape whose maps fail to the fallback.
constexpr int PATH_STEP8 = 0, PATH_FALLBACK = -1, PATH_NOTHING = -2;

static cudaLaunchConfig_t launch_config(cudaLaunchAttribute* attr, int cluster, int smem_bytes) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
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

// How many clusters of `cluster` CTAs of `kernel` can be resident at once (asked once per kernel).
// A cluster's CTAs sit in one GPC, so this is the sum over GPCs of ⌊SMs / cluster⌋ (one CTA per SM:
// ~198-226 KB of shared memory and 384 × 168 registers each), not sms / cluster. `fail`: the
// count to use when the query itself fails.
template <typename Kernel>
static int resident_clusters(Kernel kernel, int cluster, int smem_bytes, int fail) {
    cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
    cudaLaunchAttribute attr[1];
    cudaLaunchConfig_t cfg = launch_config(attr, cluster, smem_bytes);
    cfg.gridDim = dim3(cluster * (device().sms / cluster));
    int n = 0;
    if (cudaOccupancyMaxActiveClusters(&n, kernel, &cfg) != cudaSuccess || n <= 0) {
        (void)cudaGetLastError();  // not fatal
        n = fail;
    }
    return n;
}

static int resident_step8() {  // the persistent grid's size; on a failed query assume every SM
    static int n = -1;
    if (n < 0) n = resident_clusters(hgemm_wgmma<false>, CLUSTER, SMEM_BYTES, device().sms / CLUSTER);
    return n;
}

#if HG9_ONE_WAVE
template <int CL>
static int resident_one() {  // on a failed query: 0, the one-wave kernel is never taken
    static int n = -1;
    if (n < 0) n = resident_clusters(hgemm_wgmma_one<CL>, CL, SMEM9_BYTES, 0);
    return n;
}
#endif

static int choose_path(int M, int N, int K) {
    if (M <= 0 || N <= 0) return PATH_NOTHING;
    if (device().cc != 90 || K <= 0 || K % 8 != 0 || N % 8 != 0) return PATH_FALLBACK;
#if HG9_ONE_WAVE
    // The largest cluster whose clusters all fit at once. 2048³ has 16 × 8 tiles: 32 clusters of 4
    // need 8 GPCs holding 4 each, which an H100 / H200 with 132 SMs has only if six GPCs have 16 SMs
    // and two have 18; otherwise 64 clusters of 2 (66 resident on every such part).
    const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
#if HG9_CLUSTER >= 4
    if (((tiles_m + 3) / 4) * tiles_n <= resident_one<4>()) return 4;
#endif
    if (((tiles_m + 1) / 2) * tiles_n <= resident_one<2>()) return 2;
#endif
    return PATH_STEP8;
}

// Step 10: how many clusters share the persistent kernel's stream-K tail, 0 for none. The tail is
// the `rem` cluster tiles after the last full round of `clusters`; cut into at most HG10_MAX_SPLIT
// pieces each (a short tail in few long pieces: each partial costs its writer and its finisher
// time), over min(clusters, rem · HG10_MAX_SPLIT) clusters. Only where that shortens every cluster's
// last round by HG10_MIN_SAVED k-steps or more: the split costs about 16-28 k-steps' time of its own
// (measured on an H200, this file's header), so 4096³ (7 k-steps saved) keeps step 9's plan and
// 8192³ (62 saved) splits. Never when every round is full or there is only one.
static int stream_k_clusters(int ctiles, int clusters, int k_tiles) {
    const int rem = ctiles % clusters;
    if (!HG10_SK || ctiles <= clusters || rem == 0) return 0;
    const int n_sk = rem * HG10_MAX_SPLIT < clusters ? rem * HG10_MAX_SPLIT : clusters;
    const long long longest = ((long long)rem * k_tiles + n_sk - 1) / n_sk;  // k-steps of the longest range
    return k_tiles - longest >= HG10_MIN_SAVED ? n_sk : 0;
}

// The tail's partial sums (64 KB per consumer warpgroup of each CTA of each cluster that may write
// one: 256 KB a cluster, 16.5 MB for an H100's 66) and their flags, allocated on the first call that
// needs them, for every resident cluster, and kept. The flags start at 0, and each goes back to 0 in
// the kernel that set it (its tile's finisher resets it), so calls need no reset between them (no
// per-call argument either). One workspace for all calls: solve() launches on the legacy stream,
// so calls run one after another.
static float* g_sk_ws = nullptr;
static int* g_sk_flag = nullptr;
static bool sk_workspace(int clusters) {
    static bool tried = false;
    if (!tried) {
        tried = true;
        const size_t parts = (size_t)clusters * CLUSTER * 2;
        cudaFuncSetAttribute(hgemm_wgmma<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        if (cudaMalloc(&g_sk_ws, parts * BM / 2 * BN * sizeof(float)) != cudaSuccess ||
            cudaMalloc(&g_sk_flag, parts * sizeof(int)) != cudaSuccess ||
            cudaMemset(g_sk_flag, 0, parts * sizeof(int)) != cudaSuccess) {
            (void)cudaGetLastError();  // not fatal: step 9's plan instead
            cudaFree(g_sk_ws);
            cudaFree(g_sk_flag);
            g_sk_ws = nullptr;
            g_sk_flag = nullptr;
        }
    }
    return g_sk_flag != nullptr;
}

// The persistent grid's plan for M×N×K: the clusters resident at once, the clusters launched (as
// many, or fewer when there are fewer cluster tiles) and those the stream-K tail spreads over (0: none).
struct Step8Plan { int resident, clusters, n_sk; };
static Step8Plan step8_plan(int M, int N, int K) {
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    const int ctiles = ((tiles_m + CLUSTER - 1) / CLUSTER) * tiles_n, resident = resident_step8();
    const int clusters = ctiles < resident ? ctiles : resident;
    return {resident, clusters, stream_k_clusters(ctiles, clusters, (K + BK - 1) / BK)};
}

extern "C" int hgemm_stream_k_config(int M, int N, int K) {
    return choose_path(M, N, K) == PATH_STEP8 ? step8_plan(M, N, K).n_sk : 0;
}

// For a GPU session to print which kernel solve() would launch (ctypes); see choose_path.
extern "C" int hgemm_one_wave_config(int M, int N, int K) { return choose_path(M, N, K); }

// The counts behind that choice: resident clusters of hgemm_wgmma_one<4> (cluster = 4), of
// hgemm_wgmma_one<2> (cluster = 2), of step 8's hgemm_wgmma (cluster = 0); -1 for any other
// argument, for a device that is not compute capability 9.0, or for a one-wave kernel built out.
extern "C" int hgemm_one_wave_resident(int cluster) {
    if (device().cc != 90) return -1;
    if (cluster == 0) return resident_step8();
#if HG9_ONE_WAVE
#if HG9_CLUSTER >= 4
    if (cluster == 4) return resident_one<4>();
#endif
    if (cluster == 2) return resident_one<2>();
#endif
    return -1;
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    const int path = choose_path(M, N, K);
    if (path == PATH_NOTHING) return;
    CUtensorMap ma, mb, mc = {};
    // C through a map of 16 × 64 boxes (the TMA store clips rows ≥ M, columns ≥ N); C's row stride
    // is N · 2 bytes, a multiple of 16 here as for B. A, B or C the driver cannot map (base not
    // 16-byte aligned) takes the fallback.
    const bool maps = path != PATH_FALLBACK && make_map(&ma, A, M, K, BM) && make_map(&mb, B, K, N, BK) &&
                      (!(HG8_TMA_STORE || path > 0) || make_map(&mc, C, M, N, EPI_ROWS));
    if (!maps) {
        dim3 grid((N + 31) / 32, (M + 31) / 32);
        hgemm_fallback<<<grid, 256>>>(A, B, C, M, N, K);
        return;
    }
    cudaLaunchAttribute attr[1];
#if HG9_ONE_WAVE
    if (path > 0) {  // one wave of clusters of `path` CTAs, one tile each (every cluster resident)
        const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
        cudaLaunchConfig_t cfg = launch_config(attr, path, SMEM9_BYTES);
        cfg.gridDim = dim3(path * (((tiles_m + path - 1) / path) * tiles_n));
#if HG9_CLUSTER >= 4
        if (path == 4) {
            cudaLaunchKernelEx(&cfg, hgemm_wgmma_one<4>, ma, mb, mc, M, N, K);
            return;
        }
#endif
        cudaLaunchKernelEx(&cfg, hgemm_wgmma_one<2>, ma, mb, mc, M, N, K);
        return;
    }
#endif
    // Step 8: the persistent grid, as many clusters as are resident at once (or fewer).
    cudaLaunchConfig_t cfg = launch_config(attr, CLUSTER, SMEM_BYTES);
    const Step8Plan plan = step8_plan(M, N, K);
    cfg.gridDim = dim3(CLUSTER * plan.clusters);
    if (plan.n_sk > 0 && sk_workspace(plan.resident)) {
        cudaLaunchKernelEx(&cfg, hgemm_wgmma<true>, ma, mb, mc, C, M, N, K, g_sk_ws, g_sk_flag, plan.n_sk);
        return;
    }
    cudaLaunchKernelEx(&cfg, hgemm_wgmma<false>, ma, mb, mc, C, M, N, K, (float*)nullptr, (int*)nullptr, 0);
}
