// expected: WRONG_ANSWER — all zeros: X ~ U[0, 1): the sum is ~n/2 > 0 (n = 1: ~0.5), far above atol 1e-5 + rtol 1e-4
#include <cuda_runtime.h>
extern "C" void solve(const float* X, float* out, int n) {
    cudaMemsetAsync(out, 0, sizeof(float) * 1, 0);
}
