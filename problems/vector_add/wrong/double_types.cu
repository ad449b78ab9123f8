// expected: COMPILE_ERROR — solve() takes double* where the problem's signature says float*
#include <cuda_runtime.h>

__global__ void add_kernel(const double* a, const double* b, double* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const double* A, const double* B, double* C, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
