// expected: WRONG_ANSWER — all zeros (a complete, well-formed, wrong output)
#include <cuda_runtime.h>
extern "C" void solve(const float* A, const float* B, float* C, int n) {
    cudaMemsetAsync(C, 0, sizeof(float) * (size_t)n, 0);
}
