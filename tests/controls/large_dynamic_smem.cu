// expected: passes the static policy — more than 48 KB of dynamic shared memory.
// Above 48 KB a kernel must opt in with cudaFuncSetAttribute(MaxDynamicSharedMemorySize).
#include <cuda_runtime.h>

constexpr int TILE = 16384;  // floats: 64 KB of shared memory per block

__global__ void add_staged(const float* a, const float* b, float* c, int n) {
    extern __shared__ float stage[];
    int base = blockIdx.x * TILE;
    for (int j = threadIdx.x; j < TILE && base + j < n; j += blockDim.x) stage[j] = a[base + j];
    __syncthreads();
    for (int j = threadIdx.x; j < TILE && base + j < n; j += blockDim.x) c[base + j] = stage[j] + b[base + j];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    const int bytes = TILE * sizeof(float);
    cudaFuncSetAttribute(add_staged, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    add_staged<<<(n + TILE - 1) / TILE, 256, bytes>>>(A, B, C, n);
}
