// expected: WRONG_ANSWER — all zeros: gelu(x) for x ~ 3·randn is below atol 1e-5 only for x < ~-4.3: ~90% of the elements fail
#include <cuda_runtime.h>
extern "C" void solve(const float* X, float* Y, int n) {
    cudaMemsetAsync(Y, 0, sizeof(float) * (size_t)n, 0);
}
