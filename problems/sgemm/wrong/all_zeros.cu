// expected: WRONG_ANSWER — all zeros: A, B ~ randn·K^-0.25 make |C| ~ 1, far beyond atol 5e-5 + rtol 5e-5
#include <cuda_runtime.h>
extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    cudaMemsetAsync(C, 0, sizeof(float) * (size_t)M * N, 0);
}
