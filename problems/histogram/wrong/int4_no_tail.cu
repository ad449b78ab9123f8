// expected: WRONG_ANSWER — only whole int4s are counted: the last n % 4 values are dropped, so n = 1 gives all-zero counts
// Deterministic: the first test has n = 1 (n / 4 = 0 int4s), so its one value is never
// counted and its bin reads 0 instead of 1.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void hist_kernel(const int4* __restrict__ x4, int32_t* counts, int64_t n4) {
    __shared__ int h[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) h[b] = 0;
    __syncthreads();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        int4 v = x4[i];
        atomicAdd(&h[v.x], 1);
        atomicAdd(&h[v.y], 1);
        atomicAdd(&h[v.z], 1);
        atomicAdd(&h[v.w], 1);
    }
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (h[b]) atomicAdd(&counts[b], h[b]);
    // The n % 4 tail was forgotten.
}

extern "C" void solve(const int32_t* X, int32_t* counts, int n) {
    cudaMemsetAsync(counts, 0, 256 * sizeof(int32_t), 0);
    int64_t n4 = n / 4;
    int blocks = (int)((n4 + 255) / 256);
    if (blocks > 528) blocks = 528;
    if (blocks > 0) hist_kernel<<<blocks, 256>>>(reinterpret_cast<const int4*>(X), counts, n4);
}
