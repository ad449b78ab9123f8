// expected: WRONG_ANSWER — a copy of A: C = A misses B ~ randn on every element, far beyond atol 1e-6 + rtol 1e-6
#include <cuda_runtime.h>
extern "C" void solve(const float* A, const float* B, float* C, int n) {
    cudaMemcpyAsync(C, A, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, 0);
}
