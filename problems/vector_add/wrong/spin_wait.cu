// expected: TIMEOUT — block 0 waits for a "done" flag that no block ever sets
#include <cuda_runtime.h>

__device__ int done = 0;

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        while (*(volatile int*)&done == 0) { }  // the increment of `done` was forgotten
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
