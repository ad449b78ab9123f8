// expected: WRONG_ANSWER — the output row stride is cols instead of rows (B[c * cols + r]): right only when rows == cols (or cols == 1)
// Deterministic: tests 1x1 and 7x1 pass (cols == 1 makes both strides irrelevant); the next,
// 65x33, is non-square with rows > cols, so every write stays inside B (c * 33 + r < 65 * 33)
// but lands in the wrong place, and some elements are never written.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void transpose_kernel(const float* __restrict__ a, float* __restrict__ b,
                                 int rows, int cols, int64_t total) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int64_t r = i / cols;
    int64_t c = i - r * cols;
    b[c * cols + r] = a[i];  // should be c * rows + r
}

extern "C" void solve(const float* A, float* B, int rows, int cols) {
    int64_t total = (int64_t)rows * cols;
    transpose_kernel<<<(unsigned)((total + 255) / 256), 256>>>(A, B, rows, cols, total);
}
