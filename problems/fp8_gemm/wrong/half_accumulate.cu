// expected: WRONG_ANSWER — a half accumulator (e4m3 → half is exact, then __hfma): every test from K = 80 on misses the tolerance, and at K = 16384 its raw sums pass fp16's 65,504 and C holds ±inf
#include <cuda_fp8.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// The naive kernel with the accumulator in half, as if the e4m3 inputs made half "precise
// enough": every __hfma rounds the running sum to 11 bits, and the sum of raw products
// (~256·sqrt(K)) leaves fp16's range before the scales bring it back.
__global__ void gemm_kernel(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                            const float* scale_b, __nv_bfloat16* C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const __nv_fp8_e4m3* a = A + (size_t)m * K;
    const __nv_fp8_e4m3* b = B + (size_t)n * K;
    half acc = __float2half(0.f);  // BUG: should be float
    for (int k = 0; k < K; ++k) acc = __hfma(__float2half(float(a[k])), __float2half(float(b[k])), acc);
    C[(size_t)m * N + n] = __float2bfloat16(__half2float(acc) * (*scale_a * *scale_b));
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
}
