// flash_attn: step 7 with what its persistent schedule's full rounds leave split along the keys. An
// experiment, not a model answer (scripts/probes/README.md): its first version (FA8_SPLIT = 1 below)
// was correct on an H200 and slower than step 7; this version removes the cause found in its SASS and
// adds a second plan (FA8_SPLIT = 2, the default), measured at the end of this header: correct, 0.5%
// faster than step 7 at the one shape it was for and 1-2% slower on others, so not a step either. The
// version here puts the split in a kernel of its own (attn_fwd<.., SPLIT = true>), launched only for a
// plan that splits: every other kernel is step 7's, the same machine code (below). Measured too (end
// of this header): 0.6% slower than step 7 at that shape, the same elsewhere. Not a step; kept for
// what it measured. Everything not described here is step 7's:
// reference_solutions/flash_attn/07_lean_tiles.cu and the headers it carries.
//
// Why. The persistent kernel deals T work tiles (128 query rows of one head) to G = 132 CTAs in
// rounds. At the benchmark shape B = 16, H = 32, N = 1024, D = 128 non-causal, T = 4096 = 31·132 + 4:
// the last 4 tiles take a whole round while 128 SMs idle. scripts/probes/attention_tail.py measured
// it (reference_solutions/flash_attn/README.md, "The next steps"): step 7 at B·H = 512 takes 1.0745×
// its time at 495 (exactly 30 rounds), where the work alone gives 1.034×. That shape is the one where
// step 7 is under cuDNN (0.985× in docs/benchmarks.md's table).
//
// What (persistent kernel, two consumers, non-causal: every tile costs the same there). A piece is a
// range of key tiles of one work tile, a work item of its own. Its consumers run step 7's loop over
// those key tiles; then each thread writes its unnormalised O fragments, m and l to a workspace (floats
// of one index for all 128 threads of a consumer side by side), a counter per (tile, consumer) counts
// the tile's pieces, and the last to arrive reads the others' (ld.global.cg), rescales them to the
// common maximum, and runs step 7's epilogue; it sets the counter back to 0. The plan (make_split_plan,
// made once per shape on the host, as step 6's) lists each piece with its tile, key range and group.
// - FA8_SPLIT = 1, the last round: R = T mod G tiles left (T < G: all T), each in S = min(key tiles,
//   G / R, FA8_MAX_PIECES = 8) pieces, piece p of left tile i on CTA i·S + p after its full rounds.
//   At the shape above, 4 tiles in 8 pieces of one key tile; one CTA per tile reads 7 partials.
// - FA8_SPLIT = 2, a stream-K tail (after stream-K GEMMs' "data-parallel + stream-K" hybrid): F - 1
//   full rounds (F = T / G), then the last G + R tiles' key tiles dealt out evenly, each CTA taking a
//   contiguous share in tile order; a tile that straddles two shares becomes two pieces, the first
//   CTA's last item and the next CTA's first, so the next CTA's piece is done long before and the
//   first CTA merges one partial at its end. At the shape above each CTA gets 1088 / 132 = 8.24 key
//   tiles of tail instead of 16 (a full round and the 4-tile one), every CTA within one key tile of
//   the others. The tail's tiles are the last G + R in step 5's order, as in the stride's last two
//   rounds, so their K/V stay as local in L2 (shares over the whole problem would keep ~132 heads'
//   K/V live, 66 MB at D = 128, N = 1024, more than the 50 MB of L2).
// The workspace (pieces · 2 · (D / 2 + 4) · 128 floats) and counters are allocated at a shape's first
// call and kept. The producer gets 40 registers instead of 32 (its walk spilled 8 B at D = 64 at 32;
// 40 + 2 × 232 = 3 × 168, the launch's count) and reads a piece's tile and key range from the plan.
// Predicted (a work tile ~9 key-tile times with its epilogue, by step 7's accounting; README item 0):
// FA8_SPLIT = 1 -1.5 to -2.5% at the two N = 1024 non-causal shapes (before the 7-partial merge);
// FA8_SPLIT = 2 from 32 × 9 = 288 to 30 × 9 + 8.24 + ~2 (two pieces' own start and end) + ~0.6 (a
// partial written, one read) ≈ 281 key-tile times, -2 to -2.5% there (0.4438 ms -> ~0.433, ~1.01× of
// cuDNN's 0.4372 in docs/benchmarks.md's table); no change on any other benchmark shape (three
// consumers, step 5's kernel, or causal).
//
// Measured, the first version (FA8_SPLIT = 1 only; NVIDIA H200, driver 580.159.04, torch 2.11.0+cu130,
// 2026-11-29, one call each): correct (16 shapes, 12 of them split, each 3 times, then in reverse
// order; 5 builds; compute-sanitizer memcheck 0 errors on 4 split shapes); `judge submit` ACCEPTED with
// three tests added to problem.yaml for the run ({B, H, N, D} = {1, 17, 1000, 64}, {1, 5, 1000, 128},
// {1, 9, 2048, 128}, non-causal; in problem.yaml for good since every answer passed them); but
// `judge compare` against step 7 SLOWER on every shape of the persistent kernel, non-causal and causal
// alike: 1.041-1.055× at N = 1024, 1.013 / 1.058 at N = 4096 with D = 64, 1.011 / 1.015 at N = 16384
// with D = 64; SAME (1.000-1.004) where D = 128 runs step 5's kernel. Where three consumers run (D = 64 non-causal from N = 4096, causal at 16384) the loop is
// 579 instructions against step 7's 576 and the 1.1-1.5% is not explained.
// Causal tiles are never split, so the cost was in the loop: its SASS had 678 instructions per key
// tile at D = 128 against step 7's 649, with 39 R2UR (the K/V descriptors moved from vector to uniform
// registers every turn). Cause, found by removing parts of the new epilogue one at a time on a machine
// without a GPU: `if (!last_piece[c]) continue;`, a branch on a shared-memory load, which ptxas cannot
// prove warp-uniform, so the values the outer loop carries into the next work item were no longer
// uniform. Branching on a warp vote of the same flag (__all_sync) instead: 646 instructions / 1302
// stall cycles per key tile at D = 128 (step 7: 649 / 1293), 1118 / 2341 for the D = 64 loop unrolled
// by two (step 7: 1122 / 2348), 579 / 1203 with three consumers (576 / 1197); sass_stalls.py, nvcc
// 13.0, sm_90a; the same in both plans (the plan is host code).
// The split itself, in the same run (flash_attn_split_tail.py's first form, CUDA events): the split
// build over the FA8_SPLIT = 0 build was 1.038× at D = 128 non-causal against 1.044× causal, where
// nothing is split, so the last-round split saved about 0.6% of the 1.5-2.5% predicted, inside the
// script's noise; at D = 64 1.045× against 1.032×, a loss of about 1%. Not profiled: its merge (7
// partials of 34 KB per consumer, read by one CTA) and its pieces' own start are the suspects, which
// FA8_SPLIT = 2 has one of per CTA instead of 8 CTAs' worth on one.
//
// Measured, this version (FA8_SPLIT = 2 and the vote; same H200, 2026-11-29, 09:37-09:43 UTC): correct
// (flash_attn_split_tail.py: 16 shapes, 5 builds, 0 wrong calls; memcheck 0 errors on 4 split shapes;
// `judge submit` ACCEPTED); `judge compare` against step 7: 0.995 (SAME) at B = 16, H = 32, N = 1024,
// D = 128 non-causal, 1.020 at D = 64 (non-causal and causal), 1.013 at D = 128 causal, 1.011 / 1.014
// at D = 64 non-causal N = 4096 / 16384, SAME (1.001-1.009) on the other six; `judge submit`: 0.990x
// cuDNN at that shape (step 7 0.985x), 1.009-1.118x on the other 11. The 1-2% on shapes where nothing
// is split is not in the key-tile loop (646 / 649 instructions) but in what the split added around it,
// e.g. the producer's per-work-tile walk, 573 instructions / 2,264 stall cycles at D = 128 against step
// 7's 452 / 1,823 (463 / 1,825 at FA8_SPLIT = 0); which part costs was not measured.
// reference_solutions/flash_attn/README.md, "The next steps", item 0.
// Since then (not yet on a GPU): the split is its own instantiation, attn_fwd<D, 2, true, SPLIT = true>,
// launched for non-causal two-consumer shapes whose split plan could be made (and D >= FA8_SPLIT_MIN_D,
// default 64); its workspace and counters are device globals (g_split_ws, g_split_cnt), so every
// kernel keeps step 7's parameters. The other four kernels, in every build of this file (FA8_SPLIT 0,
// 1, 2), are step 7's own machine code: `cuobjdump -sass` of each is identical to step 7's, instruction
// text and both words of every encoding (nvcc 13.0, sm_90a, the judge's flags; tested by
// tests/scripts/test_split_tail_plan.py), which also needed a whole tile's key range written as step
// 7 writes it (n_kv), not as a piece's. So the shapes that do not split run step 7,
// and only the split kernel can cost: its key-tile loop 648 instructions / 1,304 stall cycles at
// D = 128 (step 7 649 / 1,293), 1,116 / 2,337 at D = 64 unrolled by two (1,122 / 2,348); its producer's
// per-item walk 535 / 2,128 at D = 128 (step 7's 452 / 1,823; the version measured above 573 / 2,264).
// ptxas (nvcc 13.0, sm_90a, -O3): 0 B stack, 0 spills in every kernel, at FA8_SPLIT 0, 1 and 2; "Used 168
// registers" (128 with three consumers); HGMMA: step 7's four kernels 136, the split ones 32 (D = 128)
// and 48 (D = 64), 216 in all. The host plans are checked without a GPU by
// tests/scripts/test_split_tail_plan.py (every key tile of every work tile run exactly once, every
// piece listed once and grouped with its tile's, workspace and counter indices in range; FA8_SPLIT = 1
// at most one piece per CTA and that one last, FA8_SPLIT = 2 every CTA's key tiles within one of the
// others').
// Measured, this version (same H200, 2026-11-29 12:10-12:13 UTC, at 7a8f442): correct (16 shapes, 4
// builds, 0 wrong calls; memcheck 0 errors on 4 split shapes, FA8_SPLIT_MIN_D 64 and 128; `judge
// submit` ACCEPTED); `judge compare --budget 3` against step 7 with FA8_SPLIT_MIN_D = 128: 1.006 (SAME,
// 0.4418 vs 0.4391 ms) at B = 16, H = 32, N = 1024, D = 128 non-causal, 0.998-1.001 (SAME) on the
// other 11 (step 7's machine code); with D = 64 split too, 1.020 (SLOWER) at N = 1024, D = 64
// non-causal. `judge submit`: 0.988x cuDNN at the target shape (step 7 in the same lease: 1.000x).
// The split's own kernel takes back what the tail saves. reference_solutions/flash_attn/README.md.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <algorithm>
#include <cstdlib>
#include <vector>

// Each technique of step 5 behind its own switch (all on by default; -DFA5_X=0 builds without it).
#ifndef FA5_REGS         // setmaxnreg (producer 24, consumers 240) and 128-key tiles at D = 128
#define FA5_REGS 1
#endif
#ifndef FA5_CVT_OVERLAP  // O rescaled under Q·K_jᵀ, before P·V is issued (FlashAttention-3's order)
#define FA5_CVT_OVERLAP 1
#endif
#ifndef FA5_PF2          // P packed to fp16 into a second fragment set before wait_group 0
#define FA5_PF2 1
#endif
#ifndef FA5_LPT          // causal: longest query tiles of each head first (step 4 already had it)
#define FA5_LPT 1
#endif
#ifndef FA5_BR192        // D = 64: three consumer warpgroups, 192 query rows per CTA (needs FA5_REGS) ...
#define FA5_BR192 1
#endif
#ifndef FA5_BR192_MIN_N  // ... when N >= this (at N = 1024 a 192-row tiling computes 12.5% padding rows)
#define FA5_BR192_MIN_N 2048
#endif
#ifndef FA5_BR192_CAUSAL // ... and for causal too (off: +9% tiles computed at N = 4096, +2% at 16384)
#define FA5_BR192_CAUSAL 0
#endif
#ifndef FA5_STAGES       // K/V stages (3 fit at D = 128 with 128-key tiles: 225 KB of 227)
#define FA5_STAGES 3
#endif
// Step 6's switches.
#ifndef FA6_PERSISTENT   // 1: persistent grid (one CTA per SM walking work tiles) for D = 64 and for
#define FA6_PERSISTENT 1 // D = 128 up to FA6_PERSIST_D128_MAX_N, else step 5's grid; 0: step 5's
#endif                   // everywhere; 2: persistent everywhere
#ifndef FA6_PERSIST_D128_MAX_N  // FA6_PERSISTENT = 1: D = 128 runs the persistent kernel when N <= this
#define FA6_PERSIST_D128_MAX_N 2048
#endif
#ifndef FA6_PLAN         // persistent: which CTA runs which tile (make_plan): 1 list schedule, 0 stride, 2 snake
#define FA6_PLAN 1
#endif
#ifndef FA6_BR192_CAUSAL_MIN_N  // D = 64 causal: three consumers when N >= this (FA5_BR192_CAUSAL: always)
#define FA6_BR192_CAUSAL_MIN_N 8192
#endif

// Step 7's switches (see the header).
#ifndef FA7_DESC         // wgmma descriptors as base + constant (one add per operand)
#define FA7_DESC 1
#endif
#ifndef FA7_EPI          // epilogue: the quad transpose in two xor-shuffle stages, O / l by rcp.approx
#define FA7_EPI 1
#endif
#ifndef FA7_MASK         // masking: a per-row-half key limit, one compare + one select per element
#define FA7_MASK 1
#endif
#ifndef FA7_QUNI         // the Q descriptor base through a lane-0 shuffle, so that ptxas keeps it uniform
#define FA7_QUNI 1
#endif

// The split's switches (see the header).
#ifndef FA8_SPLIT        // persistent, non-causal, two consumers: what the full rounds leave, split along the keys;
#define FA8_SPLIT 2      // 1: the last round's tiles in pieces; 2: a stream-K tail (make_split_plan); 0: off
#endif
#ifndef FA8_SPLIT_MIN_D  // the split kernel for head dims from this one (64: both; 128: D = 128 only)
#define FA8_SPLIT_MIN_D 64
#endif
#ifndef FA8_MAX_PIECES   // FA8_SPLIT = 1: at most this many pieces per split work tile
#define FA8_MAX_PIECES 8
#endif
static_assert(FA8_SPLIT >= 0 && FA8_SPLIT <= 2, "FA8_SPLIT: 0, 1 or 2");

static_assert(FA6_PERSISTENT >= 0 && FA6_PERSISTENT <= 2, "FA6_PERSISTENT: 0, 1 or 2");

constexpr int STAGES = FA5_STAGES;

// PERSIST_: the persistent kernel (step 6) or step 5's (one CTA per work tile); see FA6_PERSISTENT.
template <int D, int NC_ = 2, bool PERSIST_ = true> struct Cfg {
    static constexpr int NC = NC_;                                       // consumer warpgroups
    static constexpr bool PERSIST = PERSIST_;
    static_assert(NC == 2 || (NC == 3 && D == 64 && FA5_REGS), "three consumers: D = 64, setmaxnreg");
    static constexpr int BR = 64 * NC, THREADS = 128 * (NC + 1);         // query rows, threads per CTA
    // setmaxnreg: 128 × (24 + 2 × 240) = 64512 and 128 × (32 + 3 × 160) = 65536, of 65536. Persistent
    // with two consumers: 32 + 2 × 232 (= 63488): the producer's tile walk spilled at 24 (ptxas keeps
    // the code after setmaxnreg.dec within the new count: 16 bytes at D = 64, 4 at D = 128), and the
    // consumers use at most R220 (D = 64) and R183 (D = 128) of 232.
    static constexpr int PRODUCER_REGS = (NC == 3 || PERSIST) ? 32 : 24;
    static constexpr int CONSUMER_REGS = NC == 3 ? 160 : PRODUCER_REGS == 32 ? 232 : 240;
    // The split kernel's producer: 40 (32 + 2 × 232 left 8 registers a thread unused; 40 + 2 × 232 =
    // 3 × 168, the launch's); its walk decodes split pieces, and at 32 it spilled 8 B at D = 64.
    static constexpr int SPLIT_PRODUCER_REGS = 40;
    static_assert(128 * (PRODUCER_REGS + NC * CONSUMER_REGS) <= 65536, "register file");
    static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg wants multiples of 8");
    static constexpr int BC = (D == 64 || FA5_REGS) ? 128 : 64;  // keys per tile
    static constexpr int BOXES = D / 64;              // 64-column TMA boxes per row
    static constexpr int Q_BYTES = BR * D * 2, KV_BYTES = BC * D * 2;
    static constexpr int Q_BOX = BR * 128, KV_BOX = BC * 128;  // bytes of one 64-column box
    // Q buffers: two (the next tile's Q loads while this tile's runs) where they fit beside the K/V
    // stages: D = 64 (2 × 16 or 24 KB + 96 KB); at D = 128 one (2 × 32 KB + 192 KB > 227 KB): the
    // next Q loads once both consumers' last Q·Kᵀ of the tile is done (mbarrier q_empty).
    static constexpr int QBUF =
        (PERSIST && 2 * Q_BYTES + STAGES * 2 * KV_BYTES + 1024 + 128 <= 232448) ? 2 : 1;
    static constexpr int SMEM = QBUF * Q_BYTES + STAGES * 2 * KV_BYTES + 1024;
    // Persistent: each Q buffer in NC slices of 64 rows, one per consumer, each with its own
    // mbarriers (TMA boxes of 64 rows): consumer c's slice of the next tile loads as soon as c's own
    // last Q·Kᵀ is done, half a turn before the other consumer's, and it is c that starts the next
    // tile first (consumer 0). Step 5 (PERSIST false): one slice of BR rows.
    static constexpr int QSPLIT = PERSIST ? NC : 1, Q_SLICE_ROWS = BR / QSPLIT;
    // A second set of P fragments (BC / 4 = 32 registers) fits only at D = 64 with two consumers of
    // 240 registers: at D = 128 next to O (64) and S (64) ptxas serialises (C7512) and spills, and
    // so it does at D = 64 with three consumers of 160 or without setmaxnreg (168).
    static constexpr bool PF2 = FA5_PF2 && FA5_REGS && D == 64 && NC == 2;
    // 227 KB per block (sharedMemPerBlockOptin) less the static mbarriers (8 × (2 QBUF·QSPLIT + 2 STAGES) bytes)
    static_assert(SMEM + 8 * (2 * QBUF * QSPLIT + 2 * STAGES) <= 232448, "shared memory");
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}
// arrive only where pred holds (predicated, no branch between a consumer's wgmmas and their wait)
__device__ __forceinline__ void mbar_arrive_if(uint64_t* bar, bool pred) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %1, 0;\n@p mbarrier.arrive.shared::cta.b64 _, [%0];\n}\n"
                 :: "r"(smem_addr(bar)), "r"((int)pred) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred p;\nWAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}
// A wgmma shared-memory descriptor: 128-byte swizzle, byte offsets >> 4.
__device__ __forceinline__ uint64_t make_desc(const void* base, uint32_t lbo, uint32_t sbo) {
    return (uint64_t)((smem_addr(base) & 0x3FFFF) >> 4) | (uint64_t)((lbo & 0x3FFFF) >> 4) << 16 |
           (uint64_t)((sbo & 0x3FFFF) >> 4) << 32 | (uint64_t)1 << 62;
}
// The same descriptor in two halves: the low word of a box (address and LBO) and the shared high word.
__device__ __forceinline__ uint32_t desc_lo(const void* base, uint32_t lbo) {
    return ((smem_addr(base) & 0x3FFFF) >> 4) | ((lbo & 0x3FFFF) >> 4) << 16;
}
__device__ __forceinline__ uint64_t desc_of(uint32_t lo) {  // SBO 1024 B, 128-byte swizzle
    return (uint64_t)((1024u >> 4) | (1u << 30)) << 32 | lo;
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// wait until at most N committed groups of this warpgroup are still running
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// named barriers 1 .. NC, each over 256 threads: two consumer warpgroups (0 is __syncthreads)
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;" :: "r"(id) : "memory"); }
// named barrier over one warpgroup (128 threads): ids 1 + NC .. 2 NC, after the ping-pong's
__device__ __forceinline__ void wg_sync(int id) { asm volatile("bar.sync %0, 128;" :: "r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ float fast_exp2(float x) {  // one MUFU.EX2; exp2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float fast_rcp(float x) {  // one MUFU.RCP (step 6: IEEE 1 / x, a slow path)
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ uint32_t pack_half2(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
}

// D[64×64] += A[64×16] · B[16×64]; A and B K-major, from shared memory.
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "%32, %33, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(scale_d));
}

// D[64×128] += A[64×16] · B[16×128]; A and B K-major, from shared memory.
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(scale_d));
}

// D[64×64] += A[64×16] · B[16×64]; A (P) from registers, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// D[64×128] += A[64×16] · B[16×128]; A (P) from registers, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n128(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <int D>
__device__ __forceinline__ void qk(float (&s)[Cfg<D>::BC / 2], uint64_t dq, uint64_t dk, int accumulate) {
    if constexpr (Cfg<D>::BC == 128) wgmma_ss_n128(s, dq, dk, accumulate); else wgmma_ss_n64(s, dq, dk, accumulate);
}
template <int D>
__device__ __forceinline__ void pv(float (&o)[D / 2], const uint32_t (&p)[4], uint64_t dv) {
    if constexpr (D == 64) wgmma_rs_n64(o, p, dv); else wgmma_rs_n128(o, p, dv);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

#if FA8_SPLIT
// The split kernel's workspace (partial O, m, l per piece and consumer) and counters (split_workspace):
// device globals, so that every kernel keeps step 7's parameters and the kernels that do not split
// are step 7's own code.
__device__ float* g_split_ws;
__device__ int* g_split_cnt;
#endif

// SPLIT: the split kernel (persistent, two consumers, a plan from make_split_plan); every other
// instantiation is step 7's kernel, the same code (its SASS is compared in the header).
template <int D, int NC_, bool PERSIST, bool SPLIT = false>
__global__ void __launch_bounds__(Cfg<D, NC_, PERSIST>::THREADS, 1)
attn_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
         const __grid_constant__ CUtensorMap tv, half* __restrict__ O, int N, int causal, float scale_log2,
         int BH, const int* __restrict__ plan) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    static_assert(!SPLIT || (FA8_SPLIT && PERSIST && NC_ == 2), "the split kernel: persistent, two consumers");
    using C = Cfg<D, NC_, PERSIST>;
    constexpr int BC = C::BC, BR = C::BR, NC = C::NC, QBUF = C::QBUF;
    extern __shared__ uint8_t smem_raw[];
    constexpr int QSPLIT = C::QSPLIT;
    __shared__ __align__(8) uint64_t q_full[QBUF][QSPLIT], q_empty[QBUF][QSPLIT], full[STAGES], empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* ks = smem + QBUF * C::Q_BYTES;           // [STAGES][KV_BYTES] after the Q buffers
    uint8_t* vs = ks + STAGES * C::KV_BYTES;          // [STAGES][KV_BYTES]

    const int n_qtiles = (N + BR - 1) / BR;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
    // This CTA's k-th work item -> (head bh, query tile qt; the split kernel also key tiles j0 .. j1 - 1
    // and piece, the others take whole tiles); false when it has none left. Producer and consumers walk
    // the same sequence. Persistent: plan[b] .. plan[b + 1] - 1
    // index CTA b's items, each a whole work tile bh·n_qtiles + qt (key tiles 0 .. n_kv - 1, piece -1)
    // or, split, -1 - e for piece e, whose tile, key tiles j0 .. j1 - 1, group (its tile's counter),
    // the group's first piece and number of pieces are the six ints at plan[plan[G] + 6e] (G the
    // grid). Made on the host (make_plan, make_split_plan). Without a plan (the host could not make
    // one) one whole tile per CTA, blockIdx.x in step 5's order.
    auto tile_of = [&](int k, int& bh, int& qt, int& j0, int& j1, int& piece) -> bool {
        if constexpr (PERSIST) {
            int t = blockIdx.x;
            if (plan != nullptr) {
                const int i = __ldg(plan + blockIdx.x) + k;
                if (i >= __ldg(plan + blockIdx.x + 1)) return false;
                t = __ldg(plan + i);
                if constexpr (SPLIT) {  // a whole tile (non-causal: every key tile), or piece -1 - t
                    piece = -1;
                    j0 = 0;
                    j1 = (N + BC - 1) / BC;
                    if (t < 0) {  // its tile and key tiles from the table
                        piece = -1 - t;
                        const int* e = plan + __ldg(plan + gridDim.x) + 6 * piece;
                        t = __ldg(e);
                        j0 = __ldg(e + 1);
                        j1 = __ldg(e + 2);
                    }
                }
            } else if (k > 0) {
                return false;
            } else if (FA5_LPT && causal) {
                t += n_qtiles - 1 - 2 * (t % n_qtiles);  // longest first within each head
            }
            bh = t / n_qtiles;
            qt = t - bh * n_qtiles;
            return true;
        } else {  // step 5's grid (n_qtiles, BH): one work tile per CTA, plan unused
            bh = blockIdx.y;
            qt = (FA5_LPT && causal) ? n_qtiles - 1 - blockIdx.x : blockIdx.x;  // causal: longest tiles first
            return k == 0;
        }
    };

    if (threadIdx.x == 0) {
        for (int b = 0; b < QBUF; ++b)
            for (int x = 0; x < QSPLIT; ++x) {
                mbar_init(&q_full[b][x], 1);
                mbar_init(&q_empty[b][x], 128 * NC / QSPLIT);
            }
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 128 * NC);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer
#if FA5_REGS
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(SPLIT ? C::SPLIT_PRODUCER_REGS : C::PRODUCER_REGS));
#endif
        if (tid == 0) {
            // g: K/V tiles loaded so far over all of this CTA's work tiles (stage g % STAGES, its use
            // g / STAGES): the stage ring and the mbarrier phases run on across work tiles.
            int g = 0, bh, qt, j0 = 0, j1 = 0, piece = -1;
            for (int k = 0; tile_of(k, bh, qt, j0, j1, piece); ++k) {
                const int q0 = qt * BR, row0 = bh * N;                       // row0: the head's first row
                const int n_kv = ((causal ? min(N, q0 + BR) : N) + BC - 1) / BC;
                // key tiles j_begin .. j_end - 1: a whole tile's 0 .. n_kv - 1 but in the split kernel
                const int j_begin = SPLIT ? j0 : 0, j_end = SPLIT ? j1 : n_kv;
                const int qb = k % QBUF;                                     // Q buffer, its use k / QBUF
                auto load_q = [&]() {
                    for (int x = 0; x < QSPLIT; ++x) {  // slice x: rows q0 + x·Q_SLICE_ROWS, consumer x's
                        // its last reader: the last Q·Kᵀ of work tile k - QBUF of the slice's consumer(s)
                        if (k >= QBUF) mbar_wait(&q_empty[qb][x], ((k / QBUF) - 1) & 1);
                        mbar_expect_tx(&q_full[qb][x], C::Q_BYTES / QSPLIT);
                        // a slice wholly past the head's last row (ragged N) starts at that row instead:
                        // its rows are never stored, and the box then overlaps the tensor (as step 5's
                        // always did) even in the last head
                        const int qrow = min(row0 + q0 + x * C::Q_SLICE_ROWS, row0 + N - 1);
                        for (int b = 0; b < C::BOXES; ++b)
                            tma_load_2d(smem + qb * C::Q_BYTES + b * C::Q_BOX + x * C::Q_SLICE_ROWS * 128, &tq,
                                        &q_full[qb][x], 64 * b, qrow);
                    }
                };
                if constexpr (!PERSIST) load_q();
                for (int j = j_begin; j < j_end; ++j, ++g) {
                    const int s = g % STAGES;
                    if (g >= STAGES) mbar_wait(&empty[s], ((g / STAGES) - 1) & 1);
                    mbar_expect_tx(&full[s], 2 * C::KV_BYTES);
                    for (int b = 0; b < C::BOXES; ++b) {
                        tma_load_2d(ks + s * C::KV_BYTES + b * C::KV_BOX, &tk, &full[s], 64 * b, row0 + j * BC);
                        tma_load_2d(vs + s * C::KV_BYTES + b * C::KV_BOX, &tv, &full[s], 64 * b, row0 + j * BC);
                    }
                    // persistent: Q after the first K/V tile, whose stage frees (the previous work
                    // tile's P·V of key tile n_kv - 3) before a single Q buffer does (its last Q·Kᵀ)
                    if constexpr (PERSIST) {
                        if (j == j_begin) load_q();
                    }
                }
            }
        }
        return;
    }

#if FA5_REGS
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(C::CONSUMER_REGS));
#endif
    // consumer: rows q0 + wrow + [0, 64) of each work tile; this thread: rows r and r + 8 of its warp's 16
    const int warp = tid / 32, lane = tid % 32, quad = lane % 4;
    const int c = wg - 1, wrow = c * 64;
    // Ping-pong: consumer c may issue its wgmmas only after the other one has issued its own
    // (named barrier 1 + c, 256 threads: 128 wait, the other warpgroup's 128 arrive), so one
    // warpgroup's softmax runs while the other's products occupy the tensor cores.
    // Round robin for NC = 3: consumer c waits on barrier 1 + c and hands over on 1 + (c + 1) % NC.
    // Every consumer of a CTA has the same n_kv + 1 issue slots per work tile (n_kv is the CTA's), so
    // the round robin runs on unbroken across work tiles: the last consumer's final hand-over of a
    // tile goes to consumer 0's first slot of the next one, and is left out only after the CTA's last.
    const int next_bar = 1 + (c + 1) % NC;
    if (c == NC - 1) named_arrive(1);  // consumer 0 goes first
    float o[D / 2], s_acc[BC / 2], m[2], l[2], alpha[2];
    uint32_t pfa[BC / 16][4], pfb[BC / 16][4];  // pfb: only with PF2
#if FA7_DESC
    // low descriptor words of this consumer's Q slice in Q buffer 0, of K and of V in stage 0
    const uint32_t q_lo0 = FA7_QUNI ? __shfl_sync(0xffffffffu, desc_lo(smem + wrow * 128, 16), 0) : desc_lo(smem + wrow * 128, 16);
    const uint32_t k_lo0 = desc_lo(ks, 16), v_lo0 = desc_lo(vs, C::KV_BOX);
#endif
    int st_cur = 0, st_prev = 0;  // see step()
    uint32_t ph_cur = 0;
    int kvb = 0;  // K/V tiles of the previous work tiles: key tile j of this one is K/V load kvb + j
    int bh, qt, jb = 0, je = 0, piece = -1;
    for (int k = 0; tile_of(k, bh, qt, jb, je, piece); ++k) {
    const int q0 = qt * BR, row0 = bh * N;                   // row0: the head's first row
    const int n_kv = ((causal ? min(N, q0 + BR) : N) + BC - 1) / BC;
    // this item's key tiles j_begin .. j_end - 1 (a whole tile's 0 .. n_kv - 1 but in the split kernel);
    // j below is the key tile's own index, and key tile j is this CTA's K/V load kvb + j
    const int j_begin = SPLIT ? jb : 0, j_end = SPLIT ? je : n_kv;
    if constexpr (SPLIT) kvb -= jb;
    const int r = q0 + wrow + warp * 16 + lane / 4;
    const int qb = k % QBUF, qx = QSPLIT == 1 ? 0 : c;  // Q buffer and this consumer's slice of it
    const uint8_t* qs = smem + qb * C::Q_BYTES;
#if FA7_DESC
    const uint32_t q_lo = q_lo0 + (uint32_t)qb * (C::Q_BYTES >> 4);
#endif
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.f;
    mbar_wait(&q_full[qb][qx], (k / QBUF) & 1);

    // softmax of tile j in s_acc: mask, running max and sum, P = exp2(...) in place; alpha rescales O
    auto softmax = [&](int j) {
        const int k0 = j * BC;
        if (k0 + BC > N || (causal && k0 + BC > q0 + wrow)) {
#if FA7_MASK
            // key = k0 + 2·quad + 8t + (cc & 1) is masked iff key > min(row, N - 1) (causal) or key > N - 1:
            // one limit per row half, then a compare with a constant and a select per element
            // (step 6 recomputed key and row and tested both conditions per element)
            int lim[2];
#pragma unroll
            for (int h = 0; h < 2; ++h) lim[h] = (causal ? min(r + 8 * h, N - 1) : N - 1) - (k0 + 2 * quad);
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 4; ++cc)
                    if (8 * t + (cc & 1) > lim[cc >> 1]) s_acc[4 * t + cc] = -INFINITY;
#else
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 4; ++cc) {
                    const int key = k0 + 8 * t + 2 * quad + (cc & 1), row = r + 8 * (cc >> 1);
                    if (key >= N || (causal && key > row)) s_acc[4 * t + cc] = -INFINITY;
                }
#endif
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int t = 0; t < BC / 8; ++t) mx = fmaxf(mx, fmaxf(s_acc[4 * t + 2 * h], s_acc[4 * t + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx * scale_log2);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;
            alpha[h] = fast_exp2(m[h] - m_use);
            m[h] = m_new;
            float sum = 0.f;
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 2; ++cc) {
                    const float p = fast_exp2(s_acc[4 * t + 2 * h + cc] * scale_log2 - m_use);
                    s_acc[4 * t + 2 * h + cc] = p;
                    sum += p;
                }
            l[h] = l[h] * alpha[h] + sum;
        }
    };
    // O *= alpha (the alpha of the last softmax). Only while no wgmma that accumulates into O runs.
    auto rescale_o = [&]() {
#pragma unroll
        for (int t = 0; t < D / 8; ++t) {
#pragma unroll
            for (int i = 0; i < 4; ++i) o[4 * t + i] *= alpha[i / 2];
        }
    };
    // P (in s_acc) into the A fragments f. Only while no wgmma that reads f runs.
    auto pack = [&](uint32_t (&f)[BC / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i) f[kk][i] = pack_half2(s_acc[8 * kk + 2 * i], s_acc[8 * kk + 2 * i + 1]);
    };
#if FA7_DESC
    // Descriptors as a base + constant: the high word (SBO 1024 B, 128-byte swizzle) is the same for
    // all of them, and the low word (start address >> 4 in bits 0-13, LBO >> 4 in bits 16-29) of a
    // box at a known byte offset from a base is the base's low word + offset >> 4 (no carry out of
    // the 14-bit address field: every address is below 228 KB). One 32-bit add per wgmma operand
    // instead of step 6's per-wgmma (addr & 0x3FFFF) >> 4 | ... recomputation.
    auto issue_qk = [&](int s) {  // s: the K/V stage
        const uint32_t k_lo = k_lo0 + (uint32_t)s * (C::KV_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk)
            qk<D>(s_acc, desc_of(q_lo + (kk / 4) * (C::Q_BOX >> 4) + (kk % 4) * 2),
                  desc_of(k_lo + (kk / 4) * (C::KV_BOX >> 4) + (kk % 4) * 2), kk > 0);  // kk = 0 overwrites S
    };
    auto issue_pv = [&](int s, const uint32_t (&f)[BC / 16][4]) {
        const uint32_t v_lo = v_lo0 + (uint32_t)s * (C::KV_BYTES >> 4);
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) pv<D>(o, f[kk], desc_of(v_lo + kk * (16 * 128 >> 4)));
    };
#else
    auto issue_qk = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint8_t* q = qs + (kk / 4) * C::Q_BOX + wrow * 128 + (kk % 4) * 32;
            const uint8_t* kp = ks + s * C::KV_BYTES + (kk / 4) * C::KV_BOX + (kk % 4) * 32;
            qk<D>(s_acc, make_desc(q, 16, 1024), make_desc(kp, 16, 1024), kk > 0);  // kk = 0 overwrites S
        }
    };
    auto issue_pv = [&](int s, const uint32_t (&f)[BC / 16][4]) {
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            pv<D>(o, f[kk], make_desc(vs + s * C::KV_BYTES + kk * 16 * 128, C::KV_BOX, 1024));
    };
#endif
    // Stage and phase of key tile j (st_cur, ph_cur) and the stage of j - 1 (st_prev), at the start of
    // tile j's turn (step 6's expressions, computed once per turn). Carrying them as counters from turn
    // to turn instead (a compare and two selects) was tried: ptxas moved the whole descriptor
    // arithmetic into vector registers (+48 R2UR per turn) and spilled 8 B at D = 64, so not kept.
    auto step = [&](int j) {
        st_prev = (kvb + j - 1) % STAGES;  // j = 0: unused
        st_cur = (kvb + j) % STAGES;
        ph_cur = ((kvb + j) / STAGES) & 1;
    };
    // One turn, tile j (1 <= j < n_kv): issue S_j, then P_{j-1}·V_{j-1} from fin; the softmax of
    // S_j runs while P·V does; P_j ends in fout. EARLY (a constant at each call) packs P_j into fout before
    // wait_group 0, under P_{j-1}·V_{j-1}: only with two fragment sets (fout != fin).
    auto turn = [&](bool early, int j, const uint32_t (&fin)[BC / 16][4], uint32_t (&fout)[BC / 16][4]) {
        step(j);
        mbar_wait(&full[st_cur], ph_cur);
        named_sync(1 + c);
        wgmma_fence();
        issue_qk(st_cur);
        wgmma_commit();
#if FA5_CVT_OVERLAP
        rescale_o();       // alpha_{j-1}, under S_j's wgmmas: O belongs to no running wgmma
        wgmma_fence();     // O was written: order it before the P·V wgmmas that accumulate into it
#endif
        issue_pv(st_prev, fin);
        wgmma_commit();
        named_arrive(next_bar);
        wgmma_wait<1>();   // S_j is ready
        if constexpr (PERSIST)
            mbar_arrive_if(&q_empty[qb][qx], j == j_end - 1);  // the tile's last Q·Kᵀ is done: its Q slice is free
        softmax(j);
        if (early) pack(fout);  // not the set P_{j-1}·V_{j-1} reads
        wgmma_wait<0>();   // P_{j-1}·V_{j-1} too: its stage is free, O and fin may change
        mbar_arrive(&empty[st_prev]);
#if !FA5_CVT_OVERLAP
        rescale_o();
#endif
        if (!early) pack(fout);
    };

    // tile 0: S only
    step(j_begin);
    mbar_wait(&full[st_cur], ph_cur);
    named_sync(1 + c);
    wgmma_fence();
    issue_qk(st_cur);
    wgmma_commit();
    named_arrive(next_bar);
    wgmma_wait<0>();
    if constexpr (PERSIST) mbar_arrive_if(&q_empty[qb][qx], j_end - j_begin == 1);
    softmax(j_begin);
#if !FA5_CVT_OVERLAP
    rescale_o();           // O = 0: kept only to stay step 4 when the switch is off
#endif
    pack(pfa);
    // tiles 1 .. n_kv-1
    if constexpr (C::PF2) {
        // unrolled by two so that the fragment sets alternate at compile time (registers can't be
        // indexed); P of the last tile always ends in pfa, so the last P·V has one form
        int j = j_begin + 1;
        for (; j + 1 < j_end; j += 2) {
            turn(true, j, pfa, pfb);
            turn(true, j + 1, pfb, pfa);
        }
        // once, when an odd number of turns is left: packed after wait_group 0, as without PF2
        // (copying pfb into pfa here instead made ptxas serialise the wgmmas, C7513)
        for (; j < j_end; ++j) turn(false, j, pfa, pfa);
    } else {
        for (int j = j_begin + 1; j < j_end; ++j) turn(false, j, pfa, pfa);
    }
    // the last P·V
#if FA5_CVT_OVERLAP
    rescale_o();
#endif
    named_sync(1 + c);
    wgmma_fence();
    issue_pv(st_cur, pfa);  // stage of key tile j_end - 1
    wgmma_commit();
    {
        // the next consumer has one more slot (this work tile's, or for the last consumer the next
        // work tile's first); after the CTA's last tile the last consumer's hand-over has no taker
        int bh2, qt2, jb2, je2, piece2;
        if (c != NC - 1 || tile_of(k + 1, bh2, qt2, jb2, je2, piece2)) named_arrive(next_bar);
    }
    wgmma_wait<0>();
    if constexpr (PERSIST)
        mbar_arrive(&empty[st_cur]);  // the last stage goes back to the producer too
    kvb += j_end;

#if FA8_SPLIT
    if constexpr (SPLIT) {
        if (piece >= 0) {
            __shared__ int last_piece[NC_];  // this consumer's piece was its tile's last to finish
            float* const ws = g_split_ws;
            int* const cnt = g_split_cnt;
            // A piece of a split work tile. Its partial state (O unnormalised, m, l: each
            // thread its own fragments, as a [D / 2 + 4][128] block, float i of all 128 threads
            // consecutive) goes to the workspace; the piece that finishes last (a counter per tile
            // and consumer) merges the others' into its registers and runs the epilogue below.
            constexpr int W = D / 2 + 4;
            float* mine = ws + ((size_t)piece * NC + c) * W * 128 + tid;
#pragma unroll
            for (int i = 0; i < D / 2; ++i) mine[i * 128] = o[i];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                mine[(D / 2 + h) * 128] = m[h];
                mine[(D / 2 + 2 + h) * 128] = l[h];
            }
            __threadfence();      // the partial is visible device-wide before the count says so
            wg_sync(1 + NC + c);
            // the piece's group (its tile's counter), the group's first piece and number of pieces
            const int* info = plan + __ldg(plan + gridDim.x) + 6 * piece + 3;
            const int grp = __ldg(info), first = __ldg(info + 1), count = __ldg(info + 2);
            if (tid == 0) {
                const int done = atomicAdd(cnt + grp * NC + c, 1);
                const bool last = done == count - 1;
                if (last) cnt[grp * NC + c] = 0;  // every piece has counted: ready for the next call
                __threadfence();  // acquire: the other pieces' partials, counted before, are read after
                last_piece[c] = last;
            }
            wg_sync(1 + NC + c);
            // the flag through a warp vote, whose result ptxas knows to be warp-uniform: branching on the
            // shared-memory load itself made the loop's values at the next work item's start divergent
            // to ptxas, and it moved every turn's K/V descriptors through R2UR (+29 instructions a turn,
            // +8% of its stall cycles, on causal shapes too)
            if (!__all_sync(0xffffffffu, last_piece[c] != 0)) continue;  // another piece merges this one
            for (int other = first; other < first + count; ++other) {
                if (other == piece) continue;
                const float* theirs = ws + ((size_t)other * NC + c) * W * 128 + tid;
                float a[2], b[2];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float m2 = __ldcg(theirs + (D / 2 + h) * 128), l2 = __ldcg(theirs + (D / 2 + 2 + h) * 128);
                    const float mx = fmaxf(m[h], m2), mu = mx == -INFINITY ? 0.f : mx;
                    a[h] = fast_exp2(m[h] - mu);
                    b[h] = fast_exp2(m2 - mu);
                    m[h] = mx;
                    l[h] = l[h] * a[h] + l2 * b[h];
                }
#pragma unroll
                for (int t = 0; t < D / 8; ++t)
#pragma unroll
                    for (int i = 0; i < 4; ++i)
                        o[4 * t + i] = o[4 * t + i] * a[i / 2] + __ldcg(theirs + (4 * t + i) * 128) * b[i / 2];
            }
        }
    }
#endif  // FA8_SPLIT

#if FA7_EPI
    // epilogue: O / l, 16-byte stores, the quad's 4 × 4 words transposed in two butterfly stages
    // (step 6 had 4 index shuffles per store, each with its send and receive selects on the runtime
    // lane: ~40 instructions per store, ~290 per work tile at D = 128). Thread (quad q, e = q & 1,
    // f = q >> 1) holds W[u][h]: block t + u, row r + 8h, columns 2q, 2q + 1. Stage A (xor 1, per
    // block u): keep row half e, send the other; then the thread has row r + 8e, columns 4f .. 4f + 3
    // of both blocks. Stage B (xor 2): the f = 0 thread keeps block t and gets columns 4 .. 7 of it,
    // the f = 1 thread block t + 1 and columns 0 .. 3. Per store: 4 shuffles and 14 selects on the
    // two lane bits (computed once). The store map is step 6's: row r + 8e, block t + f.
    const bool e1 = (quad & 1) != 0, f1 = (quad & 2) != 0;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        l[h] = l[h] > 0.f ? fast_rcp(l[h]) : 0.f;  // l >= 1 on every row that has a key
    }
    {
        const int row = r + 8 * (quad & 1);
        half* orow = O + ((size_t)row0 + row) * D + (quad >> 1) * 8;
#pragma unroll
        for (int t = 0; t < D / 8; t += 2) {
            uint32_t x[2][2];  // after stage A: block t + u, columns 4f + 2i, + 1 of row r + 8e
#pragma unroll
            for (int u = 0; u < 2; ++u) {
                const int i = 4 * (t + u);
                const uint32_t w0 = pack_half2(o[i] * l[0], o[i + 1] * l[0]);      // row r
                const uint32_t w1 = pack_half2(o[i + 2] * l[1], o[i + 3] * l[1]);  // row r + 8
                const uint32_t got = __shfl_xor_sync(0xffffffffu, e1 ? w0 : w1, 1);
                x[u][0] = e1 ? got : w0;
                x[u][1] = e1 ? w1 : got;
            }
            const uint32_t g0 = __shfl_xor_sync(0xffffffffu, f1 ? x[0][0] : x[1][0], 2);
            const uint32_t g1 = __shfl_xor_sync(0xffffffffu, f1 ? x[0][1] : x[1][1], 2);
            const uint4 v = f1 ? make_uint4(g0, g1, x[1][0], x[1][1]) : make_uint4(x[0][0], x[0][1], g0, g1);
            if (row < N) *reinterpret_cast<uint4*>(orow + t * 8) = v;
        }
    }
#else
    // epilogue: O / l, 16-byte stores (a quad gathers the 8 columns its 4 lanes hold). Persistent:
    // it runs while the other consumer's last P·V does and the producer loads the next tile.
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        l[h] = l[h] > 0.f ? 1.f / l[h] : 0.f;
    }
#pragma unroll
    for (int t = 0; t < D / 8; t += 2) {
        uint32_t mine[4];  // index v: block t + v / 2, row r + 8 (v % 2)
#pragma unroll
        for (int v = 0; v < 4; ++v) {
            const int i = 4 * (t + v / 2) + 2 * (v % 2);
            mine[v] = pack_half2(o[i] * l[v % 2], o[i + 1] * l[v % 2]);
        }
        uint32_t got[4] = {0, 0, 0, 0};
#pragma unroll
        for (int kq = 0; kq < 4; ++kq) {
            const int p = quad ^ kq;
            const uint32_t send = p == 0 ? mine[0] : p == 1 ? mine[1] : p == 2 ? mine[2] : mine[3];
            const uint32_t v = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
            for (int i = 0; i < 4; ++i) got[i] = p == i ? v : got[i];
        }
        const int row = r + 8 * (quad % 2), col = (t + quad / 2) * 8;
        if (row < N)
            *reinterpret_cast<uint4*>(O + ((size_t)row0 + row) * D + col) = make_uint4(got[0], got[1], got[2], got[3]);
    }
#endif  // FA7_EPI
    }  // work tiles
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
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

// [rows × cols] row-major fp16, boxes of box_rows × 64 columns, 128-byte swizzle.
static bool make_map(CUtensorMap* map, const half* base, long long rows, int cols, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)cols * sizeof(half)};
    const cuuint32_t box[2] = {64, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    auto fn = encode_tiled();
    return fn && fn(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<half*>(base), dims, strides, box, elem_strides,
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                    CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

#if FA6_PERSISTENT  // 1 or 2: the persistent kernel is built; its host side
// SMs of the current device, queried once: the persistent grid's size
static int sm_count() {
    static int n = 0;
    if (n <= 0) {
        int dev = 0;
        cudaGetDevice(&dev);
        if (cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || n <= 0) n = 132;
    }
    return n;
}

// The plan: which of the G CTAs runs which tile, and in which order. Tiles in step 5's order
// (head-major, so that a head's K/V stay in L2 while its tiles run; causal query tiles longest first
// within each head). FA6_PLAN = 1: each tile to the CTA whose work so far ends first (list
// scheduling, what the hardware does with step 5's grid), by cost = 2 · key tiles + 1 (a key tile
// is 2; the extra half is the per-tile cost the overlap does not hide, a guess), ties to the lower
// CTA: non-causal tiles all cost the same, so that is a plain stride. FA6_PLAN = 0: a plain stride
// (t % G), causal too; 2: a snake (round k = tiles kG .. kG+G-1, odd rounds reversed, which pairs a
// long causal tile with a short one). FA6_PLAN = 1 takes the snake instead of the list schedule
// where the cost model gives it the shorter makespan (e.g. B = 3, H = 7, N = 3000 causal: -19%). By
// the cost model, causal: the stride is 1.31x the ideal makespan at
// N = 1024; the snake alone 1.23x the list schedule at N = 16384, D = 64 (BR = 192). Returns malloc'ed ints: G + 1 offsets (absolute), then each
// CTA's tiles (bh · n_qtiles + qt) in order; nullptr if out of memory.
static int* make_plan(int BH, int N, int BR, int BC, int causal, int G, int* n_ints) {
    const int nq = (N + BR - 1) / BR;
    const long long total = (long long)BH * nq;
    int* out = (int*)malloc(sizeof(int) * (G + 1 + total));
    int* owner = (int*)malloc(sizeof(int) * total);
    int* count = (int*)calloc(G, sizeof(int));
    long long* heap_t = (long long*)malloc(sizeof(long long) * G);
    int* heap_c = (int*)malloc(sizeof(int) * G);
    if (!out || !owner || !count || !heap_t || !heap_c) {
        free(out); free(owner); free(count); free(heap_t); free(heap_c);
        return nullptr;
    }
    auto tile_qt = [&](long long t) { const int rr = (int)(t % nq); return (FA5_LPT && causal) ? nq - 1 - rr : rr; };
    auto cost = [&](long long t) {
        const int qt = tile_qt(t), kv_end = (causal && (qt + 1) * BR < N) ? (qt + 1) * BR : N;
        return 2LL * ((kv_end + BC - 1) / BC) + 1;
    };
    auto snake = [&](long long t) { const int i = (int)(t % G); return (t / G) & 1 ? G - 1 - i : i; };
    for (int i = 0; i < G; ++i) { heap_t[i] = 0; heap_c[i] = i; }  // a valid min-heap: all 0, by index
    auto less = [&](int a, int b) { return heap_t[a] < heap_t[b] || (heap_t[a] == heap_t[b] && heap_c[a] < heap_c[b]); };
    for (long long t = 0; t < total; ++t) {
        if (FA6_PLAN == 0) { owner[t] = (int)(t % G); continue; }
        if (FA6_PLAN == 2) { owner[t] = snake(t); continue; }
        owner[t] = heap_c[0];
        heap_t[0] += cost(t);
        for (int i = 0;;) {  // sift down
            const int l = 2 * i + 1, r = l + 1;
            int m = i;
            if (l < G && less(l, m)) m = l;
            if (r < G && less(r, m)) m = r;
            if (m == i) break;
            const long long tt = heap_t[i]; heap_t[i] = heap_t[m]; heap_t[m] = tt;
            const int cc = heap_c[i]; heap_c[i] = heap_c[m]; heap_c[m] = cc;
            i = m;
        }
    }
    if (FA6_PLAN == 1) {  // the snake instead where the cost model says it ends sooner (heap_t: loads)
        long long list_end = 0, snake_end = 0;
        for (int i = 0; i < G; ++i) list_end = heap_t[i] > list_end ? heap_t[i] : list_end;
        for (int i = 0; i < G; ++i) heap_t[i] = 0;
        for (long long t = 0; t < total; ++t) heap_t[snake(t)] += cost(t);
        for (int i = 0; i < G; ++i) snake_end = heap_t[i] > snake_end ? heap_t[i] : snake_end;
        if (snake_end < list_end)
            for (long long t = 0; t < total; ++t) owner[t] = snake(t);
    }
    for (long long t = 0; t < total; ++t) ++count[owner[t]];
    out[0] = G + 1;
    for (int b = 0; b < G; ++b) out[b + 1] = out[b] + count[b];
    for (int b = 0; b < G; ++b) count[b] = out[b];  // fill cursors
    for (long long t = 0; t < total; ++t) out[count[owner[t]]++] = (int)((t / nq) * nq + tile_qt(t));
    *n_ints = (int)(G + 1 + total);
    free(owner); free(count); free(heap_t); free(heap_c);
    return out;
}

#if FA8_SPLIT
// The split plans (persistent kernel, two consumers, non-causal: every work tile has the same n_kv
// key tiles). T tiles over the SMs; the first rounds as make_plan's list schedule gives for equal
// costs, a stride (tile t to CTA t % G, step 5's order); what is left is run in pieces, a piece being
// a range of key tiles of one tile, and the tile's last piece to finish merging the others.
// FA8_SPLIT = 1, the last round: F = T / G full rounds, then each of the R = T - F·G tiles left in S =
//   min(n_kv, G / R, FA8_MAX_PIECES) pieces, piece p of left tile i (key tiles p·n_kv / S ..
//   (p + 1)·n_kv / S - 1) to CTA i·S + p after its F tiles. T < G: F = 0, R = T, grid T·S.
// FA8_SPLIT = 2, a stream-K tail: F - 1 full rounds, then the last G + R tiles' U = (G + R)·n_kv key
//   tiles dealt evenly, CTA b taking key tiles U·b / G .. U·(b + 1) / G - 1 of the tail in order: a
//   tile that straddles two CTAs' shares is two pieces (the first CTA's last item, the next CTA's
//   first). T < G: all T tiles form the tail, over min(G, T·n_kv) CTAs.
// Returns false where nothing would be split (no tile left over, or one key tile per tile).
struct SplitPlan {
    int G = 0, pieces = 0, groups = 0;
    std::vector<int> ints;  // make_plan's layout, a piece e as -1 - e, then 6 ints per piece (below)
};
static bool make_split_plan(long long T, int sms, int n_kv, SplitPlan& out) {
    if (n_kv < 2 || T < 1) return false;
    const long long F = T / sms, R = T - F * sms;
    if (T >= sms && R == 0) return false;
    struct Item { long long t; int j0, j1; };
    auto item = [](long long t, long long j0, long long j1) { Item it; it.t = t; it.j0 = (int)j0; it.j1 = (int)j1; return it; };
    std::vector<std::vector<Item>> items;
    if (FA8_SPLIT == 1) {
        const long long left = T < sms ? T : R;
        const long long S = std::min(std::min((long long)n_kv, (long long)sms / left), (long long)FA8_MAX_PIECES);
        if (S < 2) return false;
        const long long G = T < sms ? T * S : sms;
        items.resize(G);
        for (long long b = 0; b < G; ++b) {
            for (long long k = 0; k < F; ++k) items[b].push_back(item(b + k * G, 0, n_kv));
            if (b < left * S) {
                const long long p = b % S;
                items[b].push_back(item(F * G + b / S, p * n_kv / S, (p + 1) * n_kv / S));
            }
        }
    } else {
        const long long head = T >= sms ? (F - 1) * sms : 0, U = (T - head) * n_kv;
        const long long G = T >= sms ? sms : std::min<long long>(sms, U);
        items.resize(G);
        for (long long b = 0; b < G; ++b) {
            for (long long k = 0; k < (T >= sms ? F - 1 : 0); ++k) items[b].push_back(item(b + k * G, 0, n_kv));
            for (long long u = U * b / G, u1 = U * (b + 1) / G; u < u1;) {
                const long long t = u / n_kv, e = std::min(u1, (t + 1) * n_kv);
                items[b].push_back(item(head + t, u - t * n_kv, e - t * n_kv));
                u = e;
            }
        }
    }
    // The pieces, numbered as the CTAs list them: both plans list them tile by tile and, within a tile,
    // in key order, so a tile's pieces are consecutive, one group (its counter). Per piece: its tile,
    // first and end key tile, its group, the group's first piece, the group's number of pieces.
    const long long G = (long long)items.size();
    out.ints.assign((size_t)G + 1, 0);
    out.ints[0] = (int)(G + 1);
    std::vector<int> table, group_size;
    long long group_tile = -1;
    int e = 0, first = 0;
    for (long long b = 0; b < G; ++b) {
        for (const Item& it : items[b]) {
            if (it.j1 - it.j0 == n_kv) {
                out.ints.push_back((int)it.t);
                continue;
            }
            if (it.t != group_tile) {
                group_tile = it.t;
                first = e;
                group_size.push_back(0);
            }
            ++group_size.back();
            table.insert(table.end(), {(int)it.t, it.j0, it.j1, (int)group_size.size() - 1, first, 0});
            out.ints.push_back(-1 - e++);
        }
        out.ints[b + 1] = (int)out.ints.size();
    }
    if (e == 0) return false;
    for (int p = 0; p < e; ++p) table[6 * p + 5] = group_size[table[6 * p + 3]];
    out.ints.insert(out.ints.end(), table.begin(), table.end());
    out.G = (int)G;
    out.pieces = e;
    out.groups = (int)group_size.size();
    return true;
}

// The pieces' workspace (partial O, m, l per thread) and their counters, grown on demand (cudaMalloc,
// the counters zeroed on the launch's stream); each tile's last piece sets its counter back to 0.
// One workspace for every call: solve() runs its calls one after another on the legacy stream. The
// kernel finds them in g_split_ws and g_split_cnt, set on that stream where they are allocated.
static bool split_workspace(size_t floats, size_t counters) {
    static float* w = nullptr;
    static int* c = nullptr;
    static size_t w_cap = 0, c_cap = 0;
    if (floats > w_cap) {
        if (w) cudaFree(w);
        w = nullptr; w_cap = 0;
        if (cudaMalloc(&w, floats * sizeof(float)) != cudaSuccess) { w = nullptr; return false; }
        if (cudaMemcpyToSymbolAsync(g_split_ws, &w, sizeof(w), 0, cudaMemcpyHostToDevice, 0) != cudaSuccess) return false;
        w_cap = floats;
    }
    if (counters > c_cap) {
        if (c) cudaFree(c);
        c = nullptr; c_cap = 0;
        if (cudaMalloc(&c, counters * sizeof(int)) != cudaSuccess) { c = nullptr; return false; }
        if (cudaMemsetAsync(c, 0, counters * sizeof(int), 0) != cudaSuccess ||
            cudaMemcpyToSymbolAsync(g_split_cnt, &c, sizeof(c), 0, cudaMemcpyHostToDevice, 0) != cudaSuccess) {
            cudaFree(c); c = nullptr; return false;
        }
        c_cap = counters;
    }
    return true;
}
#endif  // FA8_SPLIT

// The plan in device memory, made and uploaded once per shape (a shape's first call pays for it:
// make_plan on the CPU, a cudaMalloc and a cudaMemcpyAsync of (G + 1 + tiles) ints, 17 KB for the
// benchmark shapes); 64 shapes are kept, then the oldest is replaced (its cudaFree waits for the GPU).
// split (FA8_SPLIT builds, non-causal, two consumers): the split plan instead, G the SM count; its grid,
// pieces and groups come back in *info (nullptr where nothing is split).
struct PlanInfo { int G = 0, pieces = 0, groups = 0; };

static const int* device_plan(int D, int BH, int N, int BR, int BC, int causal, int G, bool split = false,
                              PlanInfo* info = nullptr) {
    struct Entry { int D, BH, N, BR, causal, G; bool split; int* dev; PlanInfo info; };
    constexpr int CACHE = 64;
    static Entry cache[CACHE];
    static int used = 0, oldest = 0;
    for (int i = 0; i < used; ++i) {
        const Entry& e = cache[i];
        if (e.D == D && e.BH == BH && e.N == N && e.BR == BR && e.causal == causal && e.G == G && e.split == split) {
            if (info) *info = e.info;
            return e.dev;
        }
    }
    int n = 0;
    PlanInfo made;
    int* host = nullptr;
#if FA8_SPLIT
    if (split) {
        SplitPlan sp;
        if (!make_split_plan((long long)BH * ((N + BR - 1) / BR), G, (N + BC - 1) / BC, sp)) return nullptr;
        host = (int*)malloc(sizeof(int) * sp.ints.size());
        if (host) std::copy(sp.ints.begin(), sp.ints.end(), host);
        n = (int)sp.ints.size();
        made = {sp.G, sp.pieces, sp.groups};
    } else
#endif
    host = make_plan(BH, N, BR, BC, causal, G, &n);
    if (!host) return nullptr;
    int* dev = nullptr;
    if (cudaMalloc(&dev, sizeof(int) * (size_t)n) != cudaSuccess) { free(host); return nullptr; }
    // on the launch's stream (the legacy default), before the kernel; from pageable memory the call
    // returns once the data is staged, without waiting for the device (a timed call's gate holds it)
    if (cudaMemcpyAsync(dev, host, sizeof(int) * (size_t)n, cudaMemcpyHostToDevice, 0) != cudaSuccess) {
        free(host); return nullptr;  // dev stays allocated but unused: freeing it here would wait for the device
    }
    free(host);
    int slot;
    if (used < CACHE) {
        slot = used++;
    } else {
        slot = oldest;
        oldest = (oldest + 1) % CACHE;
        cudaFree(cache[slot].dev);
    }
    cache[slot] = {D, BH, N, BR, causal, G, split, dev, made};
    if (info) *info = made;
    return dev;
}
#endif  // FA6_PERSISTENT

template <int D, int NC, bool PERSIST, bool SPLIT = false>
static void configure() {
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_fwd<D, NC, PERSIST, SPLIT>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             Cfg<D, NC, PERSIST>::SMEM);
        configured = true;
    }
}

template <int D, int NC, bool PERSIST>
static void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    using C = Cfg<D, NC, PERSIST>;
    configure<D, NC, PERSIST>();
    CUtensorMap mq, mk, mv;
    const long long rows = (long long)BH * N;
    if (!make_map(&mq, Q, rows, D, C::Q_SLICE_ROWS) || !make_map(&mk, K, rows, D, C::BC) || !make_map(&mv, V, rows, D, C::BC))
        return;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);
    const int n_qtiles = (N + C::BR - 1) / C::BR;
    const int* plan = nullptr;
    dim3 grid(n_qtiles, BH);  // step 5: one CTA per (query tile, head)
#if FA6_PERSISTENT  // sm_count and device_plan exist only where the persistent kernel is built
    if constexpr (PERSIST) {
        const long long tiles = (long long)n_qtiles * BH;  // one CTA per SM, each walks its work tiles
        grid = dim3((unsigned)(tiles < sm_count() ? tiles : sm_count()));
#if FA8_SPLIT
        if constexpr (NC == 2 && D >= FA8_SPLIT_MIN_D) {
            if (!causal) {  // what is left after the full rounds, split along the keys: the split kernel
                PlanInfo info;
                const int* split = device_plan(D, BH, N, C::BR, C::BC, causal, sm_count(), true, &info);
                if (split != nullptr && split_workspace((size_t)info.pieces * NC * (D / 2 + 4) * 128,
                                                        (size_t)info.groups * NC)) {
                    configure<D, 2, true, true>();
                    attn_fwd<D, 2, true, true><<<dim3((unsigned)info.G), C::THREADS, C::SMEM>>>(
                        mq, mk, mv, O, N, causal, scale_log2, BH, split);
                    return;
                }
            }
        }
#endif
        plan = device_plan(D, BH, N, C::BR, C::BC, causal, (int)grid.x);
        if (plan == nullptr) grid = dim3((unsigned)tiles);  // no plan: one tile per CTA, as step 5
    }
#endif
    attn_fwd<D, NC, PERSIST><<<grid, C::THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2, BH, plan);
}

// Persistent or step 5's kernel. FA6_PERSISTENT = 1: persistent at D = 64 (it measured 0.88-1.00x
// of step 5's time at N = 1024..16384), and at D = 128 for N <= FA6_PERSIST_D128_MAX_N (0.91-0.97x
// at N = 1024; 1.00-1.06x at N >= 4096); the other values force one kernel everywhere. Only the
// kernels a build can launch are instantiated: D = 64 has no step 5 kernel at FA6_PERSISTENT = 1.
template <int D, int NC>
static void launch_any(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    if constexpr (FA6_PERSISTENT == 0) {
        launch<D, NC, false>(Q, K, V, O, BH, N, causal);
    } else if constexpr (FA6_PERSISTENT == 2 || D == 64) {
        launch<D, NC, true>(Q, K, V, O, BH, N, causal);
    } else {
        if (N <= FA6_PERSIST_D128_MAX_N) launch<D, NC, true>(Q, K, V, O, BH, N, causal);
        else launch<D, NC, false>(Q, K, V, O, BH, N, causal);
    }
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (B <= 0 || H <= 0 || N <= 0) return;
    if (D == 64) {
        if constexpr (FA5_BR192 && FA5_REGS) {  // three consumers need setmaxnreg (160 registers each)
            if (N >= FA5_BR192_MIN_N && (FA5_BR192_CAUSAL || !causal || N >= FA6_BR192_CAUSAL_MIN_N))
                return launch_any<64, 3>(Q, K, V, O, B * H, N, causal);
        }
        launch_any<64, 2>(Q, K, V, O, B * H, N, causal);
    } else {
        launch_any<128, 2>(Q, K, V, O, B * H, N, causal);
    }
}
