// flash_attn, step 4: Hopper, as step 3 (wgmma for Q·Kᵀ and P·V, TMA, a producer warpgroup and
// two consumer warpgroups), plus the two overlaps FlashAttention-3 describes, and a third stage.
//
// Where step 3 loses time: a consumer warpgroup alternates between its matrix products and its
// softmax, and nothing makes the two consumers alternate in opposite phases, so both often do
// softmax while the tensor cores idle. At D = 64 the softmax of a 64×128 tile is as long as its
// two products: per thread 64 exponentials (MUFU, 4 lanes/clk per SM sub-partition: 512 cycles
// per warp) and ~5 instructions per score, against ~490 cycles of wgmma for the two products.
//
// 1. Ping-pong between the consumers: consumer c issues its wgmmas only after the other has
//    issued its own (named barrier 1 + c over the 256 consumer threads: its 128 threads wait,
//    the other consumer's 128 arrive), so one's softmax runs under the other's products.
// 2. Within a consumer, the softmax of tile j overlaps P_{j-1}·V_{j-1}: one turn issues
//    S_j = Q·K_jᵀ, commits, issues P_{j-1}·V_{j-1}, commits; `wgmma.wait_group 1` then returns
//    once S_j is done and the softmax runs while P·V finishes. Only after `wait_group 0` are O
//    rescaled and P_j packed into the A fragments: those registers belong to the running P·V,
//    and touching them before makes ptxas serialise every wgmma (C7514, which sank step 3's
//    first attempt at this to 0.88× FA2). Each turn's wgmmas are issued unconditionally (the
//    first and last tiles are peeled): a wgmma on a divergent path is serialised too (C7520).
// 3. Three K/V stages: with the consumers half a turn apart they hold different stages, and two
//    left the producer no room to run ahead (measured: 2 stages 1.04–1.47× FA2, 3: 1.23–1.70×).
//
// Everything else (tiles, masking, causal order, ragged N, the epilogue) is step 3's. Only
// sm_90a builds have this kernel (an sm_80 build compiles to an empty kernel and leaves O
// unwritten: the judge builds for the GPU it runs on).
//
// Measured by judge submit on an H100 (2026-11-23, --budget 1; README.md has every shape): 1.23–1.48×
// FA2 at N = 1024, 1.54–1.69× at N = 4096 and 16384; against cuDNN 1.00–1.07× at D = 64 (N >= 4096),
// 0.86–0.92× at D = 128.
//
// Tried and not kept (scripts/probes/flash_attn_variants.py, same session, H100):
//   - Half (or a quarter) of the exponentials as a cubic on the FMA pipe, to unload MUFU at
//     D = 64: slower everywhere (-3% to -12%): the softmax is bound by issue slots as much as by
//     MUFU, and the polynomial costs ~9 instructions per exponential.
//   - Four stages: within noise at D = 64, -3% to +5% at D = 128.
//   - A persistent grid (one CTA per SM walking tiles b, b + #SMs, ...; Q reloaded once both
//     consumers are past their last Q·Kᵀ): -3% to -20%, worst on causal shapes. Not understood;
//     it used 166-168 registers against 153-157 here.
//   - A tile order that runs the longest causal query tiles of a group of heads first (the
//     group's K and V sized to 12, 24 or 48 MB of L2): no gain at N = 4096, -3% to -8% at 1k;
//     one group for all heads (no L2 reuse): -15% to -40%.
//   - 64-key tiles at D = 64 (114 registers instead of 153): -15% to -25%.
// The first S wgmma of a tile runs with scale-d = 0 (D = A·B, not += ), so S is never zeroed:
// +3% at D = 64 non-causal, within noise elsewhere.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BR = 128, STAGES = 3, THREADS = 384;

template <int D> struct Cfg {
    static constexpr int BC = D == 64 ? 128 : 64;     // keys per tile
    static constexpr int BOXES = D / 64;              // 64-column TMA boxes per row
    static constexpr int Q_BYTES = BR * D * 2, KV_BYTES = BC * D * 2;
    static constexpr int Q_BOX = BR * 128, KV_BOX = BC * 128;  // bytes of one 64-column box
    static constexpr int SMEM = Q_BYTES + STAGES * 2 * KV_BYTES + 1024;
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
// named barriers 1 and 2 over the 256 consumer threads (0 is __syncthreads)
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
    if constexpr (D == 64) wgmma_ss_n128(s, dq, dk, accumulate); else wgmma_ss_n64(s, dq, dk, accumulate);
}
template <int D>
__device__ __forceinline__ void pv(float (&o)[D / 2], const uint32_t (&p)[4], uint64_t dv) {
    if constexpr (D == 64) wgmma_rs_n64(o, p, dv); else wgmma_rs_n128(o, p, dv);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <int D>
__global__ void __launch_bounds__(THREADS, 1)
attn_fwd(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
         const __grid_constant__ CUtensorMap tv, half* __restrict__ O, int N, int causal, float scale_log2) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using C = Cfg<D>;
    constexpr int BC = C::BC;
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t q_full, full[STAGES], empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));
    uint8_t* qs = smem;
    uint8_t* ks = smem + C::Q_BYTES;                  // [STAGES][KV_BYTES]
    uint8_t* vs = ks + STAGES * C::KV_BYTES;          // [STAGES][KV_BYTES]

    const int n_qtiles = (N + BR - 1) / BR;
    const int qt = causal ? n_qtiles - 1 - blockIdx.x : blockIdx.x;  // causal: longest tiles first
    const int q0 = qt * BR, bh = blockIdx.y, row0 = bh * N;           // row0: the head's first row
    const int kv_end = causal ? min(N, q0 + BR) : N;
    const int n_kv = (kv_end + BC - 1) / BC;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        mbar_init(&q_full, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 256);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    if (wg == 0) {  // producer
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
    if (c == 1) named_arrive(1);  // consumer 0 goes first
    uint32_t pf[BC / 16][4];
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
    // once P_{j-1}·V_{j-1} has finished: O *= alpha, and P_j into the A fragments
    auto rescale_pack = [&]() {
#pragma unroll
        for (int t = 0; t < D / 8; ++t) {
#pragma unroll
            for (int i = 0; i < 4; ++i) o[4 * t + i] *= alpha[i / 2];
        }
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
#pragma unroll
            for (int i = 0; i < 4; ++i) pf[kk][i] = pack_half2(s_acc[8 * kk + 2 * i], s_acc[8 * kk + 2 * i + 1]);
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
    auto issue_pv = [&](int j) {
        const int s = j % STAGES;
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk)
            pv<D>(o, pf[kk], make_desc(vs + s * C::KV_BYTES + kk * 16 * 128, C::KV_BOX, 1024));
    };

    // tile 0: S only
    mbar_wait(&full[0], 0);
    named_sync(1 + c);
    wgmma_fence();
    issue_qk(0);
    wgmma_commit();
    named_arrive(2 - c);
    wgmma_wait<0>();
    softmax(0);
    rescale_pack();
    // tiles 1 .. n_kv-1: issue S_j, then P_{j-1}·V_{j-1}; the softmax of S_j runs while P·V does
    for (int j = 1; j < n_kv; ++j) {
        mbar_wait(&full[j % STAGES], (j / STAGES) & 1);
        named_sync(1 + c);
        wgmma_fence();
        issue_qk(j);
        wgmma_commit();
        issue_pv(j - 1);
        wgmma_commit();
        named_arrive(2 - c);
        wgmma_wait<1>();   // S_j is ready
        softmax(j);
        wgmma_wait<0>();   // P_{j-1}·V_{j-1} too: its stage is free, O and the fragments may change
        mbar_arrive(&empty[(j - 1) % STAGES]);
        rescale_pack();
    }
    // the last P·V
    named_sync(1 + c);
    wgmma_fence();
    issue_pv(n_kv - 1);
    wgmma_commit();
    if (c == 0) named_arrive(2);
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

template <int D>
static void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    using C = Cfg<D>;
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_fwd<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, C::SMEM);
        configured = true;
    }
    CUtensorMap mq, mk, mv;
    const long long rows = (long long)BH * N;
    if (!make_map(&mq, Q, rows, D, BR) || !make_map(&mk, K, rows, D, C::BC) || !make_map(&mv, V, rows, D, C::BC))
        return;
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);
    dim3 grid((N + BR - 1) / BR, BH);
    attn_fwd<D><<<grid, THREADS, C::SMEM>>>(mq, mk, mv, O, N, causal, scale_log2);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (B <= 0 || H <= 0 || N <= 0) return;
    if (D == 64) launch<64>(Q, K, V, O, B * H, N, causal);
    else launch<128>(Q, K, V, O, B * H, N, causal);
}
