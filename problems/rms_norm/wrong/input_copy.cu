// expected: WRONG_ANSWER — a copy of X: X ~ 4·randn is not x/rms(x)·w (|y| ~ 1): off by O(1) on almost every element
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* X, const half* weight, half* Y, int rows, int cols) {
    cudaMemcpyAsync(Y, X, sizeof(half) * (size_t)rows * cols, cudaMemcpyDeviceToDevice, 0);
}
