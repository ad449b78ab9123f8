// hgemm, step 3: shared-memory tiles and an 8×8 register tile per thread (CUDA cores, fp32).
//
// Technique: a 256-thread block computes a 128×128 tile of C. The K loop walks 16-wide slices:
// the block copies A[128×16] (transposed, so a column of A is contiguous) and B[16×128] into
// shared memory as floats, and each thread accumulates an 8×8 register tile of C: per k it
// reads 8 values of A and 8 of B from shared memory (four float4 loads) and does 64 FMAs.
// The thread's rows are {4ty..4ty+3} ∪ {64+4ty..} and its columns {4tx..} ∪ {64+4tx..}, so a
// warp's float4 loads are broadcasts (A) or one contiguous 256-byte run (B): no bank conflicts.
// Shared memory is double-buffered and the next slice's global loads are issued before the
// math on the current one, so their latency hides behind 1024 FMAs per thread.
// Ragged shapes: when K and N are multiples of 8, each thread loads its 8 halves of A and of B
// with one 16-byte load (whole vectors are either inside or outside the matrix; outside ones
// are zeros); otherwise the same kernel loads element by element with bounds checks.
// What it buys: every value fetched from global memory is reused 128 times and every value
// read from shared memory 8 times, so the CUDA cores, not memory, become the limit: a few
// tens of TFLOPS of fp32 FMA, ~10× the naive kernel, and still ~20× short of the tensor cores.
#include <cuda_fp16.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 16, THREADS = 256;

template <bool VEC>
__global__ void __launch_bounds__(THREADS, 2) gemm_kernel(const half* __restrict__ A,
                                                       const half* __restrict__ B,
                                                       half* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[2][BK][BM];  // As[s][k][m] = A[row0 + m][k0 + k]
    __shared__ __align__(16) float Bs[2][BK][BN];  // Bs[s][k][n] = B[k0 + k][col0 + n]
    const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // What this thread copies: 8 consecutive halves of an A row and of a B row.
    const int a_r = tid / 2, a_k = (tid % 2) * 8;
    const int b_k = tid / 16, b_c = (tid % 16) * 8;
    float ra[8], rb[8];

    auto fetch = [&](int k0) {
        const int gr = row0 + a_r, gka = k0 + a_k, gkb = k0 + b_k, gc = col0 + b_c;
        if (VEC) {
            uint4 va = make_uint4(0, 0, 0, 0), vb = make_uint4(0, 0, 0, 0);
            if (gr < M && gka < K) va = *reinterpret_cast<const uint4*>(A + (size_t)gr * K + gka);
            if (gkb < K && gc < N) vb = *reinterpret_cast<const uint4*>(B + (size_t)gkb * N + gc);
            const __half2* ha = reinterpret_cast<const __half2*>(&va);
            const __half2* hb = reinterpret_cast<const __half2*>(&vb);
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                float2 fa = __half22float2(ha[i]), fb = __half22float2(hb[i]);
                ra[2 * i] = fa.x, ra[2 * i + 1] = fa.y;
                rb[2 * i] = fb.x, rb[2 * i + 1] = fb.y;
            }
        } else {
#pragma unroll
            for (int i = 0; i < 8; ++i) {
                ra[i] = (gr < M && gka + i < K) ? __half2float(A[(size_t)gr * K + gka + i]) : 0.f;
                rb[i] = (gkb < K && gc + i < N) ? __half2float(B[(size_t)gkb * N + gc + i]) : 0.f;
            }
        }
    };
    auto stash = [&](int s) {
#pragma unroll
        for (int i = 0; i < 8; ++i) As[s][a_k + i][a_r] = ra[i];
        *reinterpret_cast<float4*>(&Bs[s][b_k][b_c]) = make_float4(rb[0], rb[1], rb[2], rb[3]);
        *reinterpret_cast<float4*>(&Bs[s][b_k][b_c + 4]) = make_float4(rb[4], rb[5], rb[6], rb[7]);
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    const int tiles = (K + BK - 1) / BK;
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

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
        if (r >= M) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = col0 + (j < 4 ? 4 * tx + j : 64 + 4 * tx + j - 4);
            if (c < N) C[(size_t)r * N + c] = __float2half(acc[i][j]);
        }
    }
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (K % 8 == 0 && N % 8 == 0)
        gemm_kernel<true><<<grid, THREADS>>>(A, B, C, M, N, K);
    else
        gemm_kernel<false><<<grid, THREADS>>>(A, B, C, M, N, K);
}
