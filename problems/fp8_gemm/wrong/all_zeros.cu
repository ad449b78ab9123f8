// expected: WRONG_ANSWER — all zeros: |C| ~ 0.25-1 on almost every element, far beyond atol 1e-3 + rtol 1e-2
#include <cuda_runtime.h>
#include <cuda_fp8.h>
#include <cuda_bf16.h>
extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    cudaMemsetAsync(C, 0, sizeof(__nv_bfloat16) * (size_t)M * N, 0);
}
