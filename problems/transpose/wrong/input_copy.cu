// expected: WRONG_ANSWER — a copy of A: a flat copy is a transpose only for 1×n and n×1; from 65×33 on values land in the wrong places (exact check)
#include <cuda_runtime.h>
extern "C" void solve(const float* A, float* B, int rows, int cols) {
    cudaMemcpyAsync(B, A, sizeof(float) * (size_t)rows * cols, cudaMemcpyDeviceToDevice, 0);
}
