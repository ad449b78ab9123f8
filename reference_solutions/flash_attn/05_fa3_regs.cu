// flash_attn, step 5: step 4 (wgmma for Q·Kᵀ and P·V with P in registers, TMA, a producer warpgroup,
// consumers in ping-pong, the softmax of tile j under P·V of tile j-1, three K/V stages) plus the
// FlashAttention-3 techniques step 4 lacks, each behind a compile-time switch (all on by default;
// `nvcc -DFA5_X=0` builds without one, to measure it on its own). The numbers in 1-5 are the
// predictions written before the kernel first ran; what was measured is at the end of this header
// and, per technique, in README.md.
//
// 1. FA5_REGS: register reallocation. The producer warpgroup gives registers back
//    (`setmaxnreg.dec` to 24) and the two consumers take them (`setmaxnreg.inc` to 240):
//    128 × (24 + 2 × 240) = 64512 of the 65536 (launched at 168, the __launch_bounds__(384, 1)
//    cap). With them D = 128 runs 128-key tiles instead of 64: O (64 floats) + S (64) + P (32) =
//    160 registers of arrays, 184 in all (ptxas), over the 168 a thread has without
//    reallocation (BC = 128 without setmaxnreg: C7512, wgmmas serialised, 208 B spilled). Gain: at
//    BC = 64 the Q·Kᵀ wgmma is m64n64k16 (half the N of FA3's, more shared-memory operand traffic
//    per FLOP), and every per-tile fixed cost (mbarrier wait, named-barrier hand-over, two
//    wait_groups and the pipeline drain behind them, 8 shuffles + 2 exponentials for the row max
//    and alpha, 64 FMULs to rescale O) comes once per 64 keys; per 64 keys of a consumer thread
//    that is ~270 instructions at BC = 64 against ~225 at BC = 128. Shared memory: Q 32 KB + 3
//    stages × (K + V) 64 KB + 1 KB alignment = 225 KB of 227, so the third stage stays.
//    Predicted: +8% to +15% at D = 128 (0.86–0.92× cuDNN in step 4 → ~0.95–1.05× at N >= 4096),
//    no change at D = 64 from the registers alone (it already had 128-key tiles).
// 2. FA5_CVT_OVERLAP: FlashAttention-3's order inside a turn. O is rescaled by alpha_{j-1} after
//    S_j's wgmmas are issued and before P_{j-1}·V_{j-1} is (then a second wgmma.fence): the
//    FMULs run under Q·K_jᵀ on the tensor cores instead of after `wait_group 0`, where step 4
//    did them on the path to the next turn. O belongs to no running wgmma at that point (the
//    last P·V into it ended at the previous turn's wait_group 0), so ptxas keeps the wgmmas
//    asynchronous (no C75xx). Predicted: 0 to +3%, most at D = 128 (64 FMULs per tile).
// 3. FA5_PF2: P of tile j packed to fp16 before `wait_group 0`, into a second fragment set while
//    P_{j-1}·V_{j-1} still reads the first (the loop unrolled by two so that the sets alternate
//    at compile time; an odd last turn packs after wait_group 0). After wait_group 0 a turn has
//    nothing left but the mbarrier arrive. 32 more registers: only at D = 64 with two consumers
//    (D = 128: ptxas C7512 + spills at 240; three consumers at 160: spills), so in the default
//    build it is active at D = 64 where two consumers run (causal, or N < FA5_BR192_MIN_N).
//    Predicted: 0 to +3% at D = 64.
// 4. FA5_LPT: causal query tiles longest first inside each head (blockIdx.x reversed), the simple
//    FA3 order. Step 4 already did this; the switch only lets it be turned off. FA3's L2-grouped
//    LPT scheduler (heads in groups sized to L2, longest tiles of the group first) was tried on
//    step 4 (README: no gain at 4k, -3% to -8% at 1k) and is not repeated. Predicted: 0.
// 5. FA5_BR192 (D = 64, non-causal, N >= FA5_BR192_MIN_N = 2048): three consumers, 192 query rows
//    per CTA, as FA3 does at D = 64: 512 threads, setmaxnreg 32 / 160 (128 × (32 + 3 × 160) =
//    65536), the ping-pong a round robin (consumer c waits on named barrier 1 + c and hands over
//    on 1 + (c + 1) % 3). Each consumer's softmax now has two other consumers' products to hide
//    under instead of one (at D = 64 the softmax of a 64×128 tile is as long as its two
//    products), and K/V are read once per 192 query rows instead of 128. Not at N = 1024: 1024
//    rows in 192-row tiles compute 1152 (+12.5%), and causal 96 consumer tiles for 72 at
//    BR = 128 (model.py). Causal only with FA5_BR192_CAUSAL (default off): the wgmmas of a tile run
//    whole even where the mask empties them, and a 192-row diagonal band costs +9% consumer tiles
//    at N = 4096, +2.3% at 16384 over BR = 128. Predicted: 0 to +6% at D = 64, N >= 4096, non-causal.
// Also FA5_STAGES (default 3; 2 to compare).
//
// Unchanged from step 4: TMA boxes of 64 columns × (BR or BC) rows with 128-byte swizzle and the
// wgmma descriptors over them (the D = 128 V descriptor's leading byte offset is now the 16 KB
// box of a 128-key tile), masking (only the diagonal and ragged tiles), the epilogue, the ABI.
// Only sm_90a builds have the kernel (an sm_80 build compiles to empty kernels, O unwritten).
//
// ptxas (nvcc 13.0, sm_90a, all switches on): no spills, no C75xx warnings in any variant built
// (each switch off alone, all off). "Used 168 registers" (128 for three consumers) is the launch
// count; the highest register the consumer code uses: D = 128 R183, D = 64 two consumers (PF2)
// R215, D = 64 three consumers R152. HGMMA: 104 in all (D = 128: 32; D = 64: 48 with PF2's
// unrolled turns, 24 with three consumers). With every switch off: 153 / 157 registers and 48
// HGMMA, as step 4. The judge's build (nvcc 13.0.88, sm_90a): attn_fwd<128, 2> 168 registers at
// launch, 32 HGMMA; attn_fwd<64, 2> 168, 48 HGMMA; attn_fwd<64, 3> 128, 24 HGMMA; 0 B stack.
//
// Measured (NVIDIA H200, driver 580.159.04, torch 2.11.0+cu130, 2026-11-28): `judge submit --json`
// at 15:19 UTC, both baselines timed in the same run, 1.25-2.03x FA2 (geomean 1.66x) and against
// cuDNN 0.82-0.87x at N = 1024, 0.97-1.07x at N = 4096, 1.03-1.16x at N = 16384 (>= 1.0x on 5 of
// the 12 shapes; README.md has each). `judge compare` against step 4 in one run: faster on every
// shape, its time 0.805-0.978x of step 4's. Per technique (scripts/probes/flash_attn_variants.py,
// each switch off alone; that probe's noise is about +-5%): FA5_REGS +8% to +23% at D = 128,
// FA5_BR192 +13% / +15% at D = 64 non-causal, N >= 4096; FA5_CVT_OVERLAP, FA5_PF2 and FA5_LPT 0 to
// +7%, within the probe's noise; two stages instead of three -9% to -25%.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

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

constexpr int STAGES = FA5_STAGES;

template <int D, int NC_ = 2> struct Cfg {
    static constexpr int NC = NC_;                                       // consumer warpgroups
    static_assert(NC == 2 || (NC == 3 && D == 64 && FA5_REGS), "three consumers: D = 64, setmaxnreg");
    static constexpr int BR = 64 * NC, THREADS = 128 * (NC + 1);         // query rows, threads per CTA
    // setmaxnreg: 128 × (24 + 2 × 240) = 64512 and 128 × (32 + 3 × 160) = 65536, of 65536
    static constexpr int PRODUCER_REGS = NC == 2 ? 24 : 32, CONSUMER_REGS = NC == 2 ? 240 : 160;
    static_assert(128 * (PRODUCER_REGS + NC * CONSUMER_REGS) <= 65536, "register file");
    static_assert(PRODUCER_REGS % 8 == 0 && CONSUMER_REGS % 8 == 0, "setmaxnreg wants multiples of 8");
    static constexpr int BC = (D == 64 || FA5_REGS) ? 128 : 64;  // keys per tile
    static constexpr int BOXES = D / 64;              // 64-column TMA boxes per row
    static constexpr int Q_BYTES = BR * D * 2, KV_BYTES = BC * D * 2;
    static constexpr int Q_BOX = BR * 128, KV_BOX = BC * 128;  // bytes of one 64-column box
    static constexpr int SMEM = Q_BYTES + STAGES * 2 * KV_BYTES + 1024;
    // A second set of P fragments (BC / 4 = 32 registers) fits only at D = 64 with two consumers of
    // 240 registers: at D = 128 next to O (64) and S (64) ptxas serialises (C7512) and spills, and
    // so it does at D = 64 with three consumers of 160 or without setmaxnreg (168).
    static constexpr bool PF2 = FA5_PF2 && FA5_REGS && D == 64 && NC == 2;
    // 227 KB per block (sharedMemPerBlockOptin) less the 64 bytes of static mbarriers
    static_assert(SMEM + 64 <= 232448, "shared memory");
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
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
// wait until at most N committed groups of this warpgroup are still running
template <int N> __device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory"); }
// named barriers 1 .. NC, each over 256 threads: two consumer warpgroups (0 is __syncthreads)
__device__ __forceinline__ void named_sync(int id) { asm volatile("bar.sync %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ void named_arrive(int id) { asm volatile("bar.arrive %0, 256;" :: "r"(id) : "memory"); }
__device__ __forceinline__ float fast_exp2(float x) {  // one MUFU.EX2; exp2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
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

template <int D, int NC_>
__global__ void __launch_bounds__(Cfg<D, NC_>::THREADS, 1)
attn_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
         const __grid_constant__ CUtensorMap tv, half* __restrict__ O, int N, int causal, float scale_log2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = Cfg<D, NC_>;
    constexpr int BC = C::BC, BR = C::BR, NC = C::NC;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t q_full, full[STAGES], empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* qs = smem;
    uint8_t* ks = smem + C::Q_BYTES;                  // [STAGES][KV_BYTES]
    uint8_t* vs = ks + STAGES * C::KV_BYTES;          // [STAGES][KV_BYTES]

    const int n_qtiles = (N + BR - 1) / BR;
    const int qt = (FA5_LPT && causal) ? n_qtiles - 1 - blockIdx.x : blockIdx.x;  // causal: longest tiles first
    const int q0 = qt * BR, bh = blockIdx.y, row0 = bh * N;           // row0: the head's first row
    const int kv_end = causal ? min(N, q0 + BR) : N;
    const int n_kv = (kv_end + BC - 1) / BC;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        mbar_init(&q_full, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 128 * NC);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer
#if FA5_REGS
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(C::PRODUCER_REGS));
#endif
        if (tid == 0) {
            mbar_expect_tx(&q_full, C::Q_BYTES);
            for (int b = 0; b < C::BOXES; ++b) tma_load_2d(qs + b * C::Q_BOX, &tq, &q_full, 64 * b, row0 + q0);
            for (int j = 0; j < n_kv; ++j) {
                const int s = j % STAGES;
                if (j >= STAGES) mbar_wait(&empty[s], ((j / STAGES) - 1) & 1);
                mbar_expect_tx(&full[s], 2 * C::KV_BYTES);
                for (int b = 0; b < C::BOXES; ++b) {
                    tma_load_2d(ks + s * C::KV_BYTES + b * C::KV_BOX, &tk, &full[s], 64 * b, row0 + j * BC);
                    tma_load_2d(vs + s * C::KV_BYTES + b * C::KV_BOX, &tv, &full[s], 64 * b, row0 + j * BC);
                }
            }
        }
        return;
    }

#if FA5_REGS
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(C::CONSUMER_REGS));
#endif
    // consumer: rows q0 + wrow + [0, 64); this thread: rows r and r + 8 of its warp's 16
    const int warp = tid / 32, lane = tid % 32, quad = lane % 4;
    const int wrow = (wg - 1) * 64, r = q0 + wrow + warp * 16 + lane / 4;
    float o[D / 2], s_acc[BC / 2];
#pragma unroll
    for (int i = 0; i < D / 2; ++i) o[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    mbar_wait(&q_full, 0);

    // Ping-pong: consumer c may issue its wgmmas only after the other one has issued its own
    // (named barrier 1 + c, 256 threads: 128 wait, the other warpgroup's 128 arrive), so one
    // warpgroup's softmax runs while the other's products occupy the tensor cores.
    const int c = wg - 1;
    // Round robin for NC = 3: consumer c waits on barrier 1 + c and hands over on 1 + (c + 1) % NC.
    const int next_bar = 1 + (c + 1) % NC;
    if (c == NC - 1) named_arrive(1);  // consumer 0 goes first
    float alpha[2];
    // softmax of tile j in s_acc: mask, running max and sum, P = exp2(...) in place; alpha rescales O
    auto softmax = [&](int j) {
        const int k0 = j * BC;
        if (k0 + BC > N || (causal && k0 + BC > q0 + wrow)) {
#pragma unroll
            for (int t = 0; t < BC / 8; ++t)
#pragma unroll
                for (int cc = 0; cc < 4; ++cc) {
                    const int key = k0 + 8 * t + 2 * quad + (cc & 1), row = r + 8 * (cc >> 1);
                    if (key >= N || (causal && key > row)) s_acc[4 * t + cc] = -INFINITY;
                }
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
    auto issue_qk = [&](int j) {
        const int s = j % STAGES;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            const uint8_t* q = qs + (kk / 4) * C::Q_BOX + wrow * 128 + (kk % 4) * 32;
            const uint8_t* k = ks + s * C::KV_BYTES + (kk / 4) * C::KV_BOX + (kk % 4) * 32;
            qk<D>(s_acc, make_desc(q, 16, 1024), make_desc(k, 16, 1024), kk > 0);  // kk = 0 overwrites S
        }
    };
    auto issue_pv = [&](int j, const uint32_t (&f)[BC / 16][4]) {
        const int s = j % STAGES;
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            pv<D>(o, f[kk], make_desc(vs + s * C::KV_BYTES + kk * 16 * 128, C::KV_BOX, 1024));
    };
    // One turn, tile j (1 <= j < n_kv): issue S_j, then P_{j-1}·V_{j-1} from fin; the softmax of
    // S_j runs while P·V does; P_j ends in fout. EARLY (a constant at each call) packs P_j into fout before
    // wait_group 0, under P_{j-1}·V_{j-1}: only with two fragment sets (fout != fin).
    auto turn = [&](bool early, int j, const uint32_t (&fin)[BC / 16][4], uint32_t (&fout)[BC / 16][4]) {
        mbar_wait(&full[j % STAGES], (j / STAGES) & 1);
        named_sync(1 + c);
        wgmma_fence();
        issue_qk(j);
        wgmma_commit();
#if FA5_CVT_OVERLAP
        rescale_o();       // alpha_{j-1}, under S_j's wgmmas: O belongs to no running wgmma
        wgmma_fence();     // O was written: order it before the P·V wgmmas that accumulate into it
#endif
        issue_pv(j - 1, fin);
        wgmma_commit();
        named_arrive(next_bar);
        wgmma_wait<1>();   // S_j is ready
        softmax(j);
        if (early) pack(fout);  // not the set P_{j-1}·V_{j-1} reads
        wgmma_wait<0>();   // P_{j-1}·V_{j-1} too: its stage is free, O and fin may change
        mbar_arrive(&empty[(j - 1) % STAGES]);
#if !FA5_CVT_OVERLAP
        rescale_o();
#endif
        if (!early) pack(fout);
    };

    uint32_t pfa[BC / 16][4], pfb[BC / 16][4];  // pfb: only with PF2
    // tile 0: S only
    mbar_wait(&full[0], 0);
    named_sync(1 + c);
    wgmma_fence();
    issue_qk(0);
    wgmma_commit();
    named_arrive(next_bar);
    wgmma_wait<0>();
    softmax(0);
#if !FA5_CVT_OVERLAP
    rescale_o();           // O = 0: kept only to stay step 4 when the switch is off
#endif
    pack(pfa);
    // tiles 1 .. n_kv-1
    if constexpr (C::PF2) {
        // unrolled by two so that the fragment sets alternate at compile time (registers can't be
        // indexed); P of the last tile always ends in pfa, so the last P·V has one form
        int j = 1;
        for (; j + 1 < n_kv; j += 2) {
            turn(true, j, pfa, pfb);
            turn(true, j + 1, pfb, pfa);
        }
        // once, when an odd number of turns is left: packed after wait_group 0, as without PF2
        // (copying pfb into pfa here instead made ptxas serialise the wgmmas, C7513)
        for (; j < n_kv; ++j) turn(false, j, pfa, pfa);
    } else {
        for (int j = 1; j < n_kv; ++j) turn(false, j, pfa, pfa);
    }
    // the last P·V
#if FA5_CVT_OVERLAP
    rescale_o();
#endif
    named_sync(1 + c);
    wgmma_fence();
    issue_pv(n_kv - 1, pfa);
    wgmma_commit();
    if (c != NC - 1) named_arrive(next_bar);  // the next consumer has one more turn; the last's hand-over has no taker
    wgmma_wait<0>();

    // epilogue: O / l, 16-byte stores (a quad gathers the 8 columns its 4 lanes hold)
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
        for (int k = 0; k < 4; ++k) {
            const int p = quad ^ k;
            const uint32_t send = p == 0 ? mine[0] : p == 1 ? mine[1] : p == 2 ? mine[2] : mine[3];
            const uint32_t v = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
            for (int i = 0; i < 4; ++i) got[i] = p == i ? v : got[i];
        }
        const int row = r + 8 * (quad % 2), col = (t + quad / 2) * 8;
        if (row < N)
            *reinterpret_cast<uint4*>(O + ((size_t)row0 + row) * D + col) = make_uint4(got[0], got[1], got[2], got[3]);
    }
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

template <int D, int NC>
static void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    using C = Cfg<D, NC>;
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_fwd<D, NC>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        configured = true;
    }
    CUtensorMap mq, mk, mv;
    const long long rows = (long long)BH * N;
    if (!make_map(&mq, Q, rows, D, C::BR) || !make_map(&mk, K, rows, D, C::BC) || !make_map(&mv, V, rows, D, C::BC))
        return;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);
    dim3 grid((N + C::BR - 1) / C::BR, BH);
    attn_fwd<D, NC><<<grid, C::THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (B <= 0 || H <= 0 || N <= 0) return;
    if (D == 64) {
        if constexpr (FA5_BR192 && FA5_REGS) {  // three consumers need setmaxnreg (160 registers each)
            if (N >= FA5_BR192_MIN_N && (FA5_BR192_CAUSAL || !causal))
                return launch<64, 3>(Q, K, V, O, B * H, N, causal);
        }
        launch<64, 2>(Q, K, V, O, B * H, N, causal);
    } else {
        launch<128, 2>(Q, K, V, O, B * H, N, causal);
    }
}
