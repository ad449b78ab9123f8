// expected: WRONG_ANSWER — out is never zeroed: the block sums are atomically added to the garbage the judge poisoned it with
// Deterministic: the poison is a repeated byte whose float is |p| >= 2 or NaN (never a value
// near 0), so on the first test (n = 1, dot in [0, 1)) out = p + a·b is NaN or off by >= 2,
// far beyond atol 1e-5 + rtol 1e-4·|dot|.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 1024;

__global__ void block_dot_kernel(const half* __restrict__ a, const half* __restrict__ b,
                                 float* out, int n) {
    __shared__ float sdata[THREADS];
    int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x;
    sdata[threadIdx.x] = i < n ? __half2float(a[i]) * __half2float(b[i]) : 0.f;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, sdata[0]);
}

extern "C" void solve(const half* a, const half* b, float* out, int n) {
    // The cudaMemsetAsync(out, 0, sizeof(float), 0) was forgotten.
    unsigned blocks = (unsigned)(((int64_t)n + THREADS - 1) / THREADS);
    block_dot_kernel<<<blocks, THREADS>>>(a, b, out, n);
}
