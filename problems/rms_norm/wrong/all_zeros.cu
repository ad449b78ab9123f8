// expected: WRONG_ANSWER — all zeros: y = x/rms(x)·w with w ~ randn: |y| ~ 1, far beyond atol 1e-4 + rtol 2e-3
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* X, const half* weight, half* Y, int rows, int cols) {
    cudaMemsetAsync(Y, 0, sizeof(half) * (size_t)rows * cols, 0);
}
