// gelu, step 1: one thread per element, the exact erf formula in fp32.
//
// Technique: the global index i = blockIdx.x * blockDim.x + threadIdx.x, a grid rounded up to
// cover n, a guard `i < n`, and y = 0.5·x·(1 + erff(x·√½)). erff (CUDA math library, <= 2 ulp)
// is a short polynomial/exp evaluation: a few dozen instructions, hidden behind the memory time.
// Consecutive threads touch consecutive floats, so every warp's loads coalesce into 128-byte
// transactions.
// What it buys: correct on every n, and ~90% of the copy bandwidth on large n already: the
// problem moves 8 bytes per element and the memory system, not erff, is the limit.
#include <cuda_runtime.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
    }
}

extern "C" void solve(const float* X, float* Y, int n) {
    const int threads = 256;
    gelu_kernel<<<(n + threads - 1) / threads, threads>>>(X, Y, n);
}
