// expected: WRONG_ANSWER — the merge adds bin threadIdx.x only: with 128-thread blocks, bins 128..255 are never added to counts
// Deterministic: every value >= 128 goes uncounted, so counts[128..255] stay 0. Half the
// values are >= 128: n = 1 fails with probability 1/2, n = 7 with 1 - 2^-7, and n = 1000
// with certainty (1 - 2^-1000).
#include <cuda_runtime.h>
#include <cstdint>

__global__ void hist_kernel(const int32_t* __restrict__ x, int32_t* counts, int n) {
    __shared__ int h[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;  // zeroed correctly
    __syncthreads();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&h[x[i]], 1);
    __syncthreads();
    int b = threadIdx.x;  // assumes blockDim.x >= 256 bins
    if (h[b]) atomicAdd(&counts[b], h[b]);
}

extern "C" void solve(const int32_t* X, int32_t* counts, int n) {
    cudaMemsetAsync(counts, 0, 256 * sizeof(int32_t), 0);
    int blocks = (n + 127) / 128;
    if (blocks > 1056) blocks = 1056;
    hist_kernel<<<blocks, 128>>>(X, counts, n);
}
