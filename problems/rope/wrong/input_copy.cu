// expected: WRONG_ANSWER — a copy of X: cos, sin ~ U[-1, 1) rotate and scale every pair: X misses Y by O(1) on almost every element (rtol 1e-2)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y, int tokens, int heads, int dim) {
    cudaMemcpyAsync(Y, X, sizeof(__nv_bfloat16) * (size_t)tokens * heads * dim, cudaMemcpyDeviceToDevice, 0);
}
