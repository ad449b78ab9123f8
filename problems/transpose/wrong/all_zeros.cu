// expected: WRONG_ANSWER — all zeros: the exact check: B must hold A's randn values
#include <cuda_runtime.h>
extern "C" void solve(const float* A, float* B, int rows, int cols) {
    cudaMemsetAsync(B, 0, sizeof(float) * (size_t)rows * cols, 0);
}
