// expected: WRONG_ANSWER — all zeros: A, B ~ randn·K^-0.25 make |C| ~ 1, far beyond atol 2e-3 + rtol 2e-3 on almost every element
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    cudaMemsetAsync(C, 0, sizeof(half) * (size_t)M * N, 0);
}
