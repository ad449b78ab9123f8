// expected: WRONG_ANSWER — each thread accumulates with __hfma into a half: once its running sum reaches 2048 (ulp 2) adding any product < 1 rounds back to the same value, so at n = 2^28 the result is ~0.5x the dot
// Deterministic: 64 x 256 threads each add 16384 products of mean 0.25 (~4096); every thread
// passes 2048 after ~8200 of them and stays there (round to nearest, no randomness to average
// out), so out ≈ 16384 · 2048 = 3.4e7 instead of 6.7e7: 5000x over rtol 1e-4. Smaller tests
// can pass; the n = 2^28 test never does.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int BLOCKS = 64;

__global__ void dot_kernel(const half* __restrict__ a, const half* __restrict__ b, float* out, int n) {
    __shared__ float sdata[THREADS];
    __half acc = __float2half(0.f);
    for (int64_t i = (int64_t)blockIdx.x * THREADS + threadIdx.x; i < n; i += (int64_t)BLOCKS * THREADS)
        acc = __hfma(a[i], b[i], acc);  // the bug: a 16-bit accumulator
    sdata[threadIdx.x] = __half2float(acc);
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(out, sdata[0]);
}

extern "C" void solve(const half* a, const half* b, float* out, int n) {
    cudaMemsetAsync(out, 0, sizeof(float), 0);
    dot_kernel<<<BLOCKS, THREADS>>>(a, b, out, n);
}
