// expected: WRONG_ANSWER — all zeros: even rows of 32768 columns (values ~3e-5) are beyond the tolerance
#include <cuda_runtime.h>
extern "C" void solve(const float* X, float* Y, int rows, int cols) {
    cudaMemsetAsync(Y, 0, sizeof(float) * (size_t)rows * cols, 0);
}
