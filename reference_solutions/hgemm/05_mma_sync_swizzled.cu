// hgemm, step 5: mma.sync in PTX, ldmatrix from XOR-swizzled shared memory, a 4-stage cp.async
// pipeline.
//
// Count first: per k16 step a warp's 64×32 tile needs 16 mma.m16n8k16 (tensor-core work) and
// only 6 ldmatrix.x4 (4 for its four 16-row slices of A, 2 for its four 8-column slices of B),
// so each fragment loaded from shared memory feeds 2.7 mmas. WMMA (step 4) hides this behind
// an API that loads whole 16×16 fragments per warp and pads shared memory; here each piece is
// explicit:
// - cp.async.cg copies 16-byte chunks global → shared without passing through registers,
//   4 stages deep, so three K-slices are in flight while the tensor cores work on the fourth.
//   Out-of-range chunks are zero-filled by the copy itself (src-size 0): ragged M, N and K
//   need no other code as long as K % 8 == 0 and N % 8 == 0 (whole 16-byte chunks).
// - Shared memory is not padded but XOR-swizzled: in A's 64-byte rows chunk c of row r lives at
//   chunk c ^ ((r >> 1) & 3), in B's 256-byte rows at chunk c ^ (r & 7), so the 8 rows an
//   ldmatrix reads always hit 8 different 16-byte bank groups (no conflicts, no wasted bytes).
// - ldmatrix.x4 loads A fragments and ldmatrix.x4.trans B fragments (B is row-major K×N, the
//   mma wants it column-major: .trans transposes each 8×8 block on the way).
// - mma.sync.m16n8k16.row.col.f32.f16.f16.f32 accumulates in fp32 registers.
// A 256-thread CTA computes 128×128 of C with 8 warps of 64×32. Shapes with K or N not a
// multiple of 8 take a simple shared-memory kernel in the same file.
// What it buys: the fragment traffic of WMMA without its padding and API overheads; on an H100
// still bounded by mma.sync's issue rate (wgmma, step 6, is what reaches cuBLAS).
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 4, THREADS = 256;
constexpr int A_STAGE = BM * BK, B_STAGE = BK * BN;  // halves
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * 2;

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

__device__ __forceinline__ void mma16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Swizzled element offsets of chunk `c` (8 halves) of row `r` in a stage's A and B tiles.
__device__ __forceinline__ int a_off(int r, int c) { return r * BK + ((c ^ ((r >> 1) & 3)) << 3); }
__device__ __forceinline__ int b_off(int r, int c) { return r * BN + ((c ^ (r & 7)) << 3); }

__global__ void __launch_bounds__(THREADS) hgemm_mma(const half* __restrict__ A, const half* __restrict__ B,
                                                    half* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) half smem[];
    half* As = smem;                      // [STAGES][BM][BK]
    half* Bs = smem + STAGES * A_STAGE;   // [STAGES][BK][BN]
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;  // the warp's 64×32 piece of the tile
    const int k_tiles = (K + BK - 1) / BK;

    // Each thread copies 2 chunks of A (rows tid/4 and 64 + tid/4, chunk tid%4) and 2 of B
    // (rows tid/16 and 16 + tid/16, chunk tid%16) per stage.
    auto load = [&](int stage, int kt) {
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = tid / 4 + i * 64, c = tid % 4;
            const int gr = m0 + r, gk = k0 + c * 8;
            const bool ok = gr < M && gk < K;
            cp_async16(As + stage * A_STAGE + a_off(r, c), ok ? A + (size_t)gr * K + gk : A, ok);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = tid / 16 + i * 16, c = tid % 16;
            const int gk = k0 + r, gn = n0 + c * 8;
            const bool ok = gk < K && gn < N;
            cp_async16(Bs + stage * B_STAGE + b_off(r, c), ok ? B + (size_t)gk * N + gn : B, ok);
        }
    };

    float acc[4][4][4] = {};  // [m16 slice][n8 slice][fragment]
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();  // stage kt landed for everyone; stage kt - 1 is free to overwrite
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load(next % STAGES, next);
        asm volatile("cp.async.commit_group;" ::: "memory");

        const half* as = As + (kt % STAGES) * A_STAGE;
        const half* bs = Bs + (kt % STAGES) * B_STAGE;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t a[4][4], b[2][4];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)  // lanes 0-15: rows 0-15 at k chunk 2kk; 16-31: chunk 2kk+1
                ldmatrix_x4(a[mi], as + a_off(wm + mi * 16 + lane % 16, 2 * kk + lane / 16));
#pragma unroll
            for (int nj = 0; nj < 2; ++nj)  // lanes 0-15: k rows 16kk + 0..15 at n chunk; 16-31: next chunk
                ldmatrix_x4_trans(b[nj], bs + b_off(16 * kk + lane % 16, (wn + nj * 16) / 8 + lane / 16));
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni)
                    mma16816(acc[mi][ni], a[mi], b[ni / 2][(ni % 2) * 2], b[ni / 2][(ni % 2) * 2 + 1]);
        }
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    // acc[mi][ni]: rows wm + 16mi + lane/4 (+8), columns wn + 8ni + 2(lane%4) (+1).
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            const int r = m0 + wm + mi * 16 + lane / 4, c = n0 + wn + ni * 8 + (lane % 4) * 2;
            if (c < N) {  // N % 8 == 0 here: c + 1 < N too
                if (r < M) *reinterpret_cast<__half2*>(C + (size_t)r * N + c) =
                    __floats2half2_rn(acc[mi][ni][0], acc[mi][ni][1]);
                if (r + 8 < M) *reinterpret_cast<__half2*>(C + (size_t)(r + 8) * N + c) =
                    __floats2half2_rn(acc[mi][ni][2], acc[mi][ni][3]);
            }
        }
    }
}

// Shapes without whole 16-byte chunks (K or N not a multiple of 8): 32×32 tiles, fp32.
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

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    if (K % 8 == 0 && N % 8 == 0 && K > 0) {
        static bool configured = false;
        if (!configured) {
            cudaFuncSetAttribute(hgemm_mma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
            configured = true;
        }
        dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
        hgemm_mma<<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
    } else {
        dim3 grid((N + 31) / 32, (M + 31) / 32);
        hgemm_fallback<<<grid, 256>>>(A, B, C, M, N, K);
    }
}
