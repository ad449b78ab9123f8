// expected: WRONG_ANSWER — reads K 32 values at a time (two 16-byte loads) and drops the last K % 32: the tests with K % 32 = 16 (K = 16, 80, 144, 1008) miss those products
#include <cuda_fp8.h>
#include <cuda_bf16.h>
#include <cstdint>

// Vectorised loads of 32 e4m3 values (two uint4) per step, with the loop bound rounded down to a
// multiple of 32 "because K is a multiple of 16": half a step is never read. Every index stays
// inside the rows, so nothing faults; the answer is just short of K % 32 products.
__device__ float dot16(uint4 a, uint4 b) {
    const __nv_fp8_e4m3* x = reinterpret_cast<const __nv_fp8_e4m3*>(&a);
    const __nv_fp8_e4m3* y = reinterpret_cast<const __nv_fp8_e4m3*>(&b);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 16; ++i) s += float(x[i]) * float(y[i]);
    return s;
}

__global__ void gemm_kernel(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                            const float* scale_b, __nv_bfloat16* C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const uint4* a = reinterpret_cast<const uint4*>(A + (size_t)m * K);  // 16-byte rows: K % 16 == 0
    const uint4* b = reinterpret_cast<const uint4*>(B + (size_t)n * K);
    float acc = 0.f;
    for (int k = 0; k < K / 32 * 2; k += 2)  // BUG: K / 32 rounds down; K % 32 == 16 is dropped
        acc += dot16(a[k], b[k]) + dot16(a[k + 1], b[k + 1]);
    C[(size_t)m * N + n] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
}
