// histogram, step 1: one global atomicAdd per element.
//
// Technique: zero counts with cudaMemsetAsync (the judge poisons it before every call), then
// one thread per element does atomicAdd(&counts[X[i]], 1). The atomics are resolved in the L2
// cache, so concurrent increments of the same bin never lose an update.
// What it buys: correct on every n with the simplest possible code. It is slow: all n atomics
// land on only 256 addresses, and the L2 serializes the updates of each address.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BINS = 256;

__global__ void hist_kernel(const int32_t* __restrict__ x, int32_t* counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&counts[x[i]], 1);
}

extern "C" void solve(const int32_t* X, int32_t* counts, int n) {
    cudaMemsetAsync(counts, 0, BINS * sizeof(int32_t), 0);
    const int threads = 256;
    hist_kernel<<<(n + threads - 1) / threads, threads>>>(X, counts, n);
}
