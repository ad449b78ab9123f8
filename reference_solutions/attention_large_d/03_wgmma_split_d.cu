// attention_large_d, step 3: Hopper (sm_90a): wgmma for Q·Kᵀ and P·V, TMA loads, warp
// specialisation (a producer warpgroup, two consumer warpgroups, `setmaxnreg`), at D = 256 and 512.
//
// What step 2 left (README.md): mma.sync's operands reach the tensor cores through ldmatrix, ~260 B
// of shared-memory traffic per mma, so step 2 was bound by shared memory at 215-255 TFLOPS
// (1.48-1.71× SDPA's memory-efficient backend). A wgmma reads its operands from shared memory once
// for a whole warpgroup: m64n256k16 with P in registers reads 8 KB of V for 262,144 multiply-adds
// (0.03 B per multiply-add against step 2's ~0.13).
//
// Structure (flash_attn's step 3 scaled up; a CTA of 3 warpgroups, 384 threads):
//   - warpgroup 0, the producer, gives its registers away (`setmaxnreg.dec` 40) and one of its
//     threads issues every TMA load: the CTA's Q tile once, then K and V tiles of BC keys into two
//     2-stage rings, each stage with its own full and empty mbarrier. K's stage is released as
//     soon as S has been computed from it, V's once P·V has: the producer refills K a whole tile
//     ahead, V one and a half.
//   - warpgroups 1 and 2, the consumers (`setmaxnreg.inc` 232: 128·40 + 256·232 = 64,512 of the
//     SM's 65,536 registers), each hold a 64-row × 256-column fp32 slice of O (128 registers a
//     thread) and per key tile: S = Q·Kᵀ with wgmma (both operands K-major in shared memory,
//     16 k16 steps over 256 columns of D), mask, online softmax on the accumulators, P rounded
//     once to fp16 in registers as the A operand (RS form) of wgmma m64n256k16 against V (N-major,
//     the transposed descriptor), issued without waiting: it finishes under the next tile's S.
//     The rescale of O (128 FMULs a thread, as many instructions as the rest of the softmax at
//     D = 512) is skipped by a warp none of whose rows' max grew: alpha is then exactly 1.
//   - D = 256 (BR = 128 query rows, BC = 64 keys): the consumers own rows 0-63 and 64-127 of the
//     tile and are independent, so one's softmax runs under the other's wgmmas.
//   - D = 512 (BR = 64, BC = 32): a 64-row slice of O over all 512 columns would take 256
//     registers a thread, so both consumers own the SAME 64 rows, consumer c the columns
//     [256c, 256c + 256) of O, and the reduction of S is split the same way: consumer c computes
//     the partial S_c = Q[:, slice c]·K[:, slice c]ᵀ, writes it to shared memory (fp32, 8 KB),
//     and after a named barrier over the 256 consumer threads (bar.sync 1, 256) adds the other's.
//     Thread t of both consumers holds the same (row, key) elements, and a + b == b + a, so both
//     hold bit-identical scores and run the same (cheap, 16 scores a thread) softmax redundantly;
//     each then does O_c += P·V[:, slice c]. The exchange buffer alternates with the tile's parity,
//     so one barrier per tile suffices (consumer c rewrites [p][c] two tiles later, after the
//     next barrier, which the other consumer passes only once it has read [p][c]).
// Shared memory: Q 64 KB (both D), K and V rings 2 × 2 × 32 KB, the S exchange 32 KB (D = 512):
// 197,632 B (D = 256) and 230,400 B (D = 512) with 1 KB of alignment slack, under the 227 KB a
// block may have. BC = 32 at D = 512 is what fits: 64-key tiles would need 256 KB of rings.
// Masking and ragged N (flash_attn's): the tensor maps cover all B·H·N rows of [B·H·N, D], so a
// tile running past its head's N rows reads the next head's rows (or TMA's zeros past the tensor):
// those keys are masked to -inf by index and those query rows are not stored. Causal: a CTA stops
// at the key tile holding its last row (D = 256: consumer 0's rows see that last tile fully
// masked and get P = 0), only tiles that cross the diagonal are masked, the longest query tiles
// are launched first. exp2 with log2(e)/sqrt(D) folded in; a row with no visible key yet uses 0
// as its base (no exp2(-inf - -inf) = NaN); m, l and O fp32; O divided by l once at the end.
// Only sm_90a builds have this kernel: an sm_80 build compiles to an empty kernel, and solve()
// launches nothing unless the device is compute capability 9.0 (as flash_attn's steps 3 and 4).
//
// Count: 4·B·H·N²·D FLOPs (half of it causal): 0.55 T (D = 256) and 1.10 T (D = 512) at B·H = 32,
// N = 4096; Q, K, V, O are 0.27 / 0.54 GB of HBM, 0.1 ms. On chip, at ~4,096 dense fp16 FLOP per
// clock per SM (an H100/H200 SM at ~1.75 GHz: m64n256k16 in 128 clocks, m64n64k16 in 32,
// m64n32k16 in 16) and 128 B per clock of shared memory, per CTA and key tile:
//   D = 256, 64 keys: S 2 × 16 m64n64k16 (1,024 clocks; they read 128 KB of Q and K: 1,024
//     clocks of shared memory, at the limit), P·V 2 × 4 m64n256k16 (1,024 clocks, 64 KB), so
//     ~2,050 clocks of tensor cores; 1,024 CTAs are 7.8 waves of 64 tiles: 0.60 ms at 100%.
//   D = 512, 32 keys: S 2 × 16 m64n32k16 (512 clocks of tensor cores but 96 KB = 768 clocks of
//     shared memory), P·V 2 × 2 m64n256k16 (512 clocks, 32 KB): ~1,300 clocks, plus the exchange
//     and the softmax, which nothing overlaps here (both consumers wait at the same barrier):
//     ~1,700-1,900 a tile; 2,048 CTAs are 15.5 waves of 128 tiles: 2.0-2.2 ms. And L2: every CTA
//     streams all of its head's K and V (8 MB), 17.2 GB per call: 2.2-3.1 ms at 5.5-8 TB/s (an
//     assumption: not measured here; step 2 drew 4 TB/s without being bound by it).
// Predicted (H200, against SDPA memory-efficient's 3.458 / 1.895 / 7.161 / 3.910 ms; flash_attn's
// step 3, the same structure at D = 128, ran at ~50% of the tensor cores' rate; more here at
// D = 256, where the mmas are twice as long against the same softmax):
//   D = 256: 1.0-1.4 ms (390-550 TFLOPS), 2.5-3.5×;  causal: 0.55-0.8 ms, 2.4-3.4×
//   D = 512: 2.3-3.3 ms (330-480 TFLOPS), 2.2-3.1×;  causal: 1.2-1.8 ms, 2.2-3.3×
// The risk is D = 512's L2 traffic: at the 4 TB/s that step 2 drew it would be ~4.3 ms (1.7×),
// short of the issue's 2×; then the fix is a 2-CTA cluster (neighbouring query tiles of a head)
// multicasting each K and V tile, half of it issued by each CTA (hgemm's step 7).
// Build facts (nvcc 13.0, the judge's flags, cuobjdump -sass): ptxas reports 168 registers (the
// launch-time count: 65,536 / 384), 0 spills, 0 stack; in the SASS the consumers use up to R199
// (D = 256) and R188 (D = 512) after USETMAXREG.TRY_ALLOC 232, the producer drops to 40; no LDL or
// STL; the S exchange is 4 STS.128 + 4 LDS.128 a thread. HGMMA per kernel: D = 256 16 ×
// 64x64x16 + 4 × 64x256x16.tnspB, D = 512 16 × 64x32x16 + 2 × 64x256x16.tnspB, each group ending
// in one gsb0 (not serialised: no C7514/C7520 warning).
// sm_80: an empty kernel, 4 registers.
// Measured (NVIDIA H200, 2026-11-28, SDPA memory-efficient in the same run; judge verify --table at
// 13:21 UTC): 0.8705 / 0.5167 / 2.8804 / 1.5628 ms at D = 256 / 256 causal / 512 / 512 causal:
// 632 / 532 / 382 / 352 TFLOPS, 3.99× / 3.68× / 2.51× / 2.51× SDPA, 3.10× geomean (judge submit
// at 13:19: 4.00× / 3.68× / 2.51× / 2.50×). D = 256 beat its predicted 1.0-1.4 ms; D = 512 landed
// inside its 2.3-3.3 ms (non-causal) and 1.2-1.8 ms (causal). Correct on every test at its first run.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 384;  // a producer warpgroup + 2 consumer warpgroups
constexpr int STAGES = 2;     // K and V tiles in flight (separate rings, separate barriers)
constexpr int DH = 256;       // columns of D per consumer: its reduction slice of S, its columns of O

// D = 256: each consumer owns 64 of the CTA's 128 query rows and all 256 columns (no split).
// D = 512: both consumers own the same 64 rows, consumer c the columns [256c, 256c + 256) of O and
//          of the reduction Q·Kᵀ; the partial scores are exchanged through shared memory.
template <int D> struct Cfg {
    static constexpr bool SPLIT = D == 512;
    static constexpr int BR = SPLIT ? 64 : 128;                // query rows per CTA
    static constexpr int BC = SPLIT ? 32 : 64;                 // keys per tile
    static constexpr int BOXES = D / 64;                       // 64-column TMA boxes per row
    static constexpr int Q_BYTES = BR * D * 2, KV_BYTES = BC * D * 2;
    static constexpr int Q_BOX = BR * 128, KV_BOX = BC * 128;  // bytes of one 64-column box
    static constexpr int X_BYTES = SPLIT ? 2 * 2 * 64 * BC * 4 : 0;  // [parity][consumer] fp32 partial S
    static constexpr int SMEM = Q_BYTES + 2 * STAGES * KV_BYTES + X_BYTES + 1024;  // + alignment slack
};
static_assert(Cfg<512>::BOXES * 64 == 2 * DH && Cfg<256>::BOXES * 64 == DH, "a consumer's slice of D");
static_assert(Cfg<256>::SMEM == 197632 && Cfg<512>::SMEM == 230400, "shared memory per CTA");
static_assert(Cfg<512>::SMEM + 64 <= 227 * 1024, "within sm_90's 227 KB per block (barriers are static)");

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
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// named barrier 1 over the 256 consumer threads (0 is __syncthreads, used once at the start)
__device__ __forceinline__ void consumers_sync() { asm volatile("bar.sync 1, 256;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N)); }
__device__ __forceinline__ void sts128(uint32_t addr, float a, float b, float c, float d) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" :: "r"(addr), "f"(a), "f"(b), "f"(c), "f"(d) : "memory");
}
__device__ __forceinline__ void lds128(uint32_t addr, float (&v)[4]) {
    asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];" : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3]) : "r"(addr)
                 : "memory");
}
__device__ __forceinline__ float fast_exp2(float x) {  // one MUFU.EX2; exp2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ uint32_t pack_half2(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);  // a in the low 16 bits: the lower column
    return *reinterpret_cast<uint32_t*>(&h);
}

// S[64×64] (+)= A[64×16] · B[16×64]; A and B K-major, from shared memory; scale_d = 0 overwrites.
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

// S[64×32] (+)= A[64×16] · B[16×32]; A and B K-major, from shared memory; scale_d = 0 overwrites.
__device__ __forceinline__ void wgmma_ss_n32(float (&d)[16], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
        "}, %16, %17, p, 1, 1, 0, 0;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
        : "l"(da), "l"(db), "r"(scale_d));
}

// O[64×256] += A[64×16] · B[16×256]; A (P) from registers, B N-major (imm-trans-b = 1).
__device__ __forceinline__ void wgmma_rs_n256(float (&d)[128], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.eq.u32 p, 1, 1;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n}\n"
        :
          "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
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
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// S = Q·Kᵀ for one k16 step: m64n64k16 (D = 256, 64-key tiles) or m64n32k16 (D = 512, 32-key tiles)
template <int D>
__device__ __forceinline__ void qk(float (&s)[Cfg<D>::BC / 2], uint64_t dq, uint64_t dk, int accumulate) {
    if constexpr (D == 256) wgmma_ss_n64(s, dq, dk, accumulate); else wgmma_ss_n32(s, dq, dk, accumulate);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <int D>
__global__ void __launch_bounds__(THREADS, 1)
attn_large_d_wgmma(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                   const __grid_constant__ CUtensorMap tv, half* __restrict__ O, int N, int causal,
                   float scale_log2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = Cfg<D>;
    constexpr int BR = C::BR, BC = C::BC;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t q_full, k_full[STAGES], v_full[STAGES], k_empty[STAGES], v_empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* qs = smem;                                     // [BOXES][BR][64] fp16, 128-byte swizzled boxes
    uint8_t* ks = qs + C::Q_BYTES;                          // [STAGES][BOXES][BC][64]
    uint8_t* vs = ks + STAGES * C::KV_BYTES;                // [STAGES][BOXES][BC][64]
    const uint32_t xs = smem_addr(vs + STAGES * C::KV_BYTES);  // D = 512: float4 [2][2][BC / 8][128]

    const int n_qtiles = (N + BR - 1) / BR;
    const int qt = causal ? n_qtiles - 1 - (int)blockIdx.x : (int)blockIdx.x;  // causal: longest tiles first
    const int q0 = qt * BR, row0 = (int)blockIdx.y * N;  // row0: the head's first row in the [B·H·N, D] maps
    const int kv_end = causal ? min(N, q0 + BR) : N;
    const int n_kv = (kv_end + BC - 1) / BC;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        mbar_init(&q_full, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&k_full[s], 1);
            mbar_init(&v_full[s], 1);
            mbar_init(&k_empty[s], 256);
            mbar_init(&v_empty[s], 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer: one thread issues every TMA load
        setmaxnreg_dec<40>();
        if (tid == 0) {
            mbar_expect_tx(&q_full, C::Q_BYTES);
            for (int b = 0; b < C::BOXES; ++b) tma_load_2d(qs + b * C::Q_BOX, &tq, &q_full, 64 * b, row0 + q0);
            // Load j of a ring goes to stage j % STAGES; from the second lap on it waits for the
            // consumers' release of that stage's previous load (phase (j / STAGES - 1) % 2).
            for (int j = 0; j < n_kv; ++j) {
                const int s = j % STAGES;
                const uint32_t ph = ((j / STAGES) - 1) & 1;
                if (j >= STAGES) mbar_wait(&k_empty[s], ph);
                mbar_expect_tx(&k_full[s], C::KV_BYTES);
                for (int b = 0; b < C::BOXES; ++b)
                    tma_load_2d(ks + s * C::KV_BYTES + b * C::KV_BOX, &tk, &k_full[s], 64 * b, row0 + j * BC);
                if (j >= STAGES) mbar_wait(&v_empty[s], ph);
                mbar_expect_tx(&v_full[s], C::KV_BYTES);
                for (int b = 0; b < C::BOXES; ++b)
                    tma_load_2d(vs + s * C::KV_BYTES + b * C::KV_BOX, &tv, &v_full[s], 64 * b, row0 + j * BC);
            }
        }
        return;
    }

    // consumers
    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const int wrow = C::SPLIT ? 0 : 64 * c;   // the consumer's first row within the CTA's tile
    const int dcol = C::SPLIT ? DH * c : 0;   // its slice of D: S's reduction and O's columns
    const int warp = tid / 32, lane = tid % 32, quad = lane % 4;
    const int r = q0 + wrow + warp * 16 + lane / 4;  // this thread's rows: r and r + 8
    float o[DH / 2], s_acc[BC / 2];
#pragma unroll
    for (int i = 0; i < DH / 2; ++i) o[i] = 0.f;
#pragma unroll
    for (int i = 0; i < BC / 2; ++i) s_acc[i] = 0.f;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    mbar_wait(&q_full, 0);

    for (int j = 0; j < n_kv; ++j) {
        const int s = j % STAGES;
        const uint32_t ph = (j / STAGES) & 1;
        // 1. S (D = 512: this consumer's partial) = Q[rows, slice]·K[keys, slice]ᵀ, 16 k16 steps.
        //    Q and K K-major: 8-row swizzle atoms 1 KB apart (SBO); +32 B per k16 inside a box.
        mbar_wait(&k_full[s], ph);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < DH / 16; ++kk) {
            const int b = dcol / 64 + kk / 4;
            const uint8_t* q = qs + b * C::Q_BOX + wrow * 128 + (kk % 4) * 32;
            const uint8_t* k = ks + s * C::KV_BYTES + b * C::KV_BOX + (kk % 4) * 32;
            qk<D>(s_acc, make_desc(q, 16, 1024), make_desc(k, 16, 1024), kk > 0);  // kk = 0 overwrites S
        }
        wgmma_commit();
        wgmma_wait0();  // S is ready, and so is the previous tile's P·V: K_j's and V_{j-1}'s stages are free
        mbar_arrive(&k_empty[s]);
        if (j > 0) mbar_arrive(&v_empty[(j - 1) % STAGES]);

        // 2. D = 512: add the other consumer's partial. Thread t of both consumers holds the same
        //    (row, key) elements, so each writes its 16 floats as 4 float4 at [parity][c][i][t]
        //    (a warp's store: 512 contiguous bytes) and reads the other's. The buffer alternates
        //    with the tile's parity: consumer c rewrites [p][c] two tiles later, after the next
        //    barrier, which the other consumer passes only once it has read [p][c].
        if constexpr (C::SPLIT) {
            const uint32_t mine = xs + (((j & 1) * 2 + c) * (BC / 8) * 128 + tid) * 16;
            const uint32_t other = xs + (((j & 1) * 2 + (1 - c)) * (BC / 8) * 128 + tid) * 16;
#pragma unroll
            for (int i = 0; i < BC / 8; ++i)
                sts128(mine + i * 128 * 16, s_acc[4 * i], s_acc[4 * i + 1], s_acc[4 * i + 2], s_acc[4 * i + 3]);
            consumers_sync();
#pragma unroll
            for (int i = 0; i < BC / 8; ++i) {
                float v[4];
                lds128(other + i * 128 * 16, v);
#pragma unroll
                for (int e = 0; e < 4; ++e) s_acc[4 * i + e] += v[e];  // a + b == b + a: both hold identical S
            }
        }

        // 3. mask: keys past N, or after the row (causal); a tile that runs past the head's N
        //    rows holds the next head's keys (or TMA's zeros past the tensor): masked here.
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
        // 4. online softmax, rows r (cc = 0, 1) and r + 8 (cc = 2, 3): a row's BC keys sit in the
        //    4 lanes of a quad; O is rescaled here (P_{j-1}·V_{j-1} has finished).
        float alpha2[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;
#pragma unroll
            for (int t = 0; t < BC / 8; ++t) mx = fmaxf(mx, fmaxf(s_acc[4 * t + 2 * h], s_acc[4 * t + 2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx * scale_log2);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;  // a row with no visible key yet
            const float alpha = fast_exp2(m[h] - m_use);
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
            l[h] = l[h] * alpha + sum;  // this lane's share; the quad's shares are added at the end
            alpha2[h] = alpha;
        }
        // O *= alpha, skipped by a warp none of whose 16 rows' max grew: then alpha = exp2(0) = 1
        // exactly, and the 128 FMULs a thread would change nothing.
        if (__any_sync(0xffffffffu, alpha2[0] != 1.f || alpha2[1] != 1.f)) {
#pragma unroll
            for (int t = 0; t < DH / 8; ++t)
#pragma unroll
                for (int i = 0; i < 4; ++i) o[4 * t + i] *= alpha2[i / 2];
        }
        // 5. O += P·V: P rounded once to fp16 into A fragments (16 keys each: two 8-key accumulator
        //    blocks), all packed before the first wgmma; V N-major: +16 rows × 128 B per k16,
        //    64-column boxes KV_BOX apart (LBO), 8-row atoms 1 KB apart (SBO).
        uint32_t pf[BC / 16][4];
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i) pf[kk][i] = pack_half2(s_acc[8 * kk + 2 * i], s_acc[8 * kk + 2 * i + 1]);
        mbar_wait(&v_full[s], ph);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            wgmma_rs_n256(o, pf[kk], make_desc(vs + s * C::KV_BYTES + (dcol / 64) * C::KV_BOX + kk * 16 * 128,
                                               C::KV_BOX, 1024));
        wgmma_commit();  // runs on while the next tile's S is issued; retired by its wait
    }
    wgmma_wait0();

    // epilogue: O / l, 16-byte stores (a quad gathers the 8 columns its 4 lanes hold)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        l[h] = l[h] > 0.f ? 1.f / l[h] : 0.f;
    }
#pragma unroll
    for (int t = 0; t < DH / 8; t += 2) {
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
        const int row = r + 8 * (quad % 2), col = dcol + (t + quad / 2) * 8;
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

// [rows × cols] row-major fp16, boxes of box_rows × 64 columns, 128-byte swizzle; rows past the
// end are zero-filled.
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

static int compute_capability() {  // 90: the sm_90a kernel can run
    static int cc = -1;
    if (cc < 0) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        cc = major * 10 + minor;
    }
    return cc;
}

template <int D>
static void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    using C = Cfg<D>;
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_large_d_wgmma<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        configured = true;
    }
    CUtensorMap mq, mk, mv;
    const long long rows = (long long)BH * N;
    if (!make_map(&mq, Q, rows, D, C::BR) || !make_map(&mk, K, rows, D, C::BC) || !make_map(&mv, V, rows, D, C::BC))
        return;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);  // log2(e) / sqrt(D)
    const dim3 grid((N + C::BR - 1) / C::BR, BH);
    attn_large_d_wgmma<D><<<grid, THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (B <= 0 || H <= 0 || N <= 0 || compute_capability() != 90) return;  // wgmma and TMA: sm_90a only
    if (D == 256)
        launch<256>(Q, K, V, O, B * H, N, causal);
    else if (D == 512)
        launch<512>(Q, K, V, O, B * H, N, causal);
}
