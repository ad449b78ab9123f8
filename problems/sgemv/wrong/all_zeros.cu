// expected: WRONG_ANSWER — all zeros: A ~ randn and x ~ randn/sqrt(K) make y ~ N(0, 1), far beyond atol 3e-4 + rtol 1e-4
#include <cuda_runtime.h>
extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    cudaMemsetAsync(y, 0, sizeof(float) * (size_t)M, 0);
}
