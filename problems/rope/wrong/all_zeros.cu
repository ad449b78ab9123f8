// expected: WRONG_ANSWER — all zeros: the rotated X ~ randn has |y| ~ 0.5, far beyond atol 1e-5 + rtol 1e-2
#include <cuda_runtime.h>
#include <cuda_bf16.h>
extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y, int tokens, int heads, int dim) {
    cudaMemsetAsync(Y, 0, sizeof(__nv_bfloat16) * (size_t)tokens * heads * dim, 0);
}
