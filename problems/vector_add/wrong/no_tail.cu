// expected: WRONG_ANSWER — the grid is n / 256 blocks, so the last n % 256 elements are never written
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    if (n / 256 > 0) add_kernel<<<n / 256, 256>>>(A, B, C, n);
}
