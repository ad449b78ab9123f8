// expected: WRONG_ANSWER — a copy of X: X ~ U[4, 8) is not x̂·w + b (|y| ~ 1): off by ~5 on every element
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* X, const half* weight, const half* bias, half* Y, int rows, int cols) {
    cudaMemcpyAsync(Y, X, sizeof(half) * (size_t)rows * cols, cudaMemcpyDeviceToDevice, 0);
}
