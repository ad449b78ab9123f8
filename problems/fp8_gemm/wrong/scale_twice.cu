// expected: WRONG_ANSWER — the scales applied twice (once to the inputs, once more to the sum): C is off by a factor scale_a·scale_b ≈ K^-1/2/256
#include <cuda_fp8.h>
#include <cuda_bf16.h>

// Dequantises each input (x · scale) and then also scales the sum, as if the scales were the
// output's: the products are already (A·sa)(B·sb), so the second multiply is one too many.
__global__ void gemm_kernel(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a,
                            const float* scale_b, __nv_bfloat16* C, int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    const float sa = *scale_a, sb = *scale_b;
    const __nv_fp8_e4m3* a = A + (size_t)m * K;
    const __nv_fp8_e4m3* b = B + (size_t)n * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += (float(a[k]) * sa) * (float(b[k]) * sb);
    C[(size_t)m * N + n] = __float2bfloat16(acc * sa * sb);  // BUG: already scaled
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
}
