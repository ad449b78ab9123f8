// expected: WRONG_ANSWER — out is never zeroed: the block sums are atomically added to the garbage the judge poisoned it with
// Deterministic: the poison is a repeated byte whose float is |p| >= 2 or NaN (never a value
// near 0), so on the first test (n = 1, sum in [0, 1)) out = p + x is NaN or off by >= 2,
// far beyond atol 1e-5 + rtol 1e-4·|x|.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 1024;

__global__ void block_sum_kernel(const float* __restrict__ x, float* out, int n) {
    __shared__ float sdata[THREADS];
    int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    sdata[threadIdx.x] = i < n ? x[i] : 0.f;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, sdata[0]);
}

extern "C" void solve(const float* X, float* out, int n) {
    // The cudaMemsetAsync(out, 0, sizeof(float), 0) was forgotten.
    unsigned blocks = (unsigned)(((int64_t)n + THREADS - 1) / THREADS);
    block_sum_kernel<<<blocks, THREADS>>>(X, out, n);
}
