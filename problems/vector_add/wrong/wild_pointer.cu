// expected: RUNTIME_ERROR — the index is scaled by a stride far beyond the buffer: an illegal address
#include <cuda_runtime.h>
#include <cstdint>

__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int64_t i = blockIdx.x * blockDim.x + threadIdx.x;
    // Meant to be i, written as a row-major index with a bogus row length of 2^36 floats.
    if (i < n) c[i << 36] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add_kernel<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
