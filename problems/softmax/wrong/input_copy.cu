// expected: WRONG_ANSWER — a copy of X: X ~ 40·randn is not a probability in [0, 1]: off by ~30 (median) on every element
#include <cuda_runtime.h>
extern "C" void solve(const float* X, float* Y, int rows, int cols) {
    cudaMemcpyAsync(Y, X, sizeof(float) * (size_t)rows * cols, cudaMemcpyDeviceToDevice, 0);
}
