// fp8_gemm, step 2: shared-memory tiles and an 8×8 register tile per thread (CUDA cores, fp32).
//
// Technique: a 256-thread block computes a 128×128 tile of C. The K loop walks 16-wide slices,
// one 16-byte load per row: threads 0-127 each load 16 e4m3 values of a row of A, threads
// 128-255 of a row of B (both operands are K-major, and K % 16 == 0 keeps every such load inside
// its row and 16-byte aligned; rows past M or N load zeros). Each thread converts its 16 values to
// float and stores them transposed (As[k][m], Bs[k][n]), then accumulates an 8×8 register tile
// of C: per k, four float4 reads from shared memory and 64 FMAs. The thread's rows are
// {4ty..4ty+3} ∪ {64+4ty..} and its columns {4tx..} ∪ {64+4tx..}, so a warp's float4 reads are
// broadcasts (A) or one contiguous 256-byte run (B). Shared memory is double-buffered and the
// next slice's loads are issued before the math on the current one.
// What it buys: every e4m3 value loaded and converted once per block is reused 128 times, so the
// fp32 FMA units become the limit (tens of TFLOPS); the FP8 tensor cores are ~20-30× faster still.
#include <cuda_fp8.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 16, THREADS = 256;

__global__ void __launch_bounds__(THREADS, 2) gemm_kernel(const __nv_fp8_e4m3* __restrict__ A,
                                                       const __nv_fp8_e4m3* __restrict__ B,
                                                       const float* __restrict__ scale_a,
                                                       const float* __restrict__ scale_b,
                                                       __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK][BM];  // As[s][k][m] = A[row0 + m][k0 + k]
    __shared__ __align__(16) float Bs[2][BK][BN];  // Bs[s][k][n] = B[col0 + n][k0 + k]
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // What this thread copies: 16 consecutive K values of one row of A (tid < 128) or of B.
    const bool loads_a = tid < BM;
    const int r = loads_a ? tid : tid - BM;
    const int grow = loads_a ? row0 + r : col0 + r;
    const __nv_fp8_e4m3* src = (loads_a ? A : B) + (size_t)grow * K;
    const bool inside = grow < (loads_a ? M : N);
    float (*dst)[BK][BM] = loads_a ? As : Bs;
    uint4 raw;

    auto fetch = [&](int k0) { raw = inside ? *reinterpret_cast<const uint4*>(src + k0) : make_uint4(0, 0, 0, 0); };
    auto stash = [&](int s) {
        const __nv_fp8_e4m3* v = reinterpret_cast<const __nv_fp8_e4m3*>(&raw);
#pragma unroll
        for (int i = 0; i < BK; ++i) dst[s][i][r] = float(v[i]);  // a warp writes 32 consecutive floats
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    const int tiles = K / BK;
    fetch(0);
    stash(0);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int s = t & 1;
        if (t + 1 < tiles) fetch((t + 1) * BK);  // in flight during the math below
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[s][k][4 * ty]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[s][k][64 + 4 * ty]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[s][k][4 * tx]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[s][k][64 + 4 * tx]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        if (t + 1 < tiles) stash(s ^ 1);  // buffer s^1 was last read before the previous barrier
        __syncthreads();
    }

    const float scale = *scale_a * *scale_b;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = row0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
        if (row >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int col = col0 + (j < 4 ? 4 * tx + j : 64 + 4 * tx + j - 4);
            if (col < N) C[(size_t)row * N + col] = __float2bfloat16(acc[i][j] * scale);
        }
    }
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    gemm_kernel<<<grid, THREADS>>>(A, B, scale_a, scale_b, C, M, N, K);
}
