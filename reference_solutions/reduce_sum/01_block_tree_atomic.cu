// reduce_sum, step 1: a shared-memory tree per block, one atomicAdd per block.
//
// Technique: out is zeroed with cudaMemsetAsync (it is poisoned before every call). Each block
// of 1024 threads loads one element per thread into shared memory (0 past the end) and halves
// the active threads each step, adding pairs of partial sums: after log2(1024) = 10 steps
// sdata[0] holds the block's sum, which thread 0 adds to out with atomicAdd. Every addition in
// the tree adds numbers of similar size, so the fp32 rounding error stays tiny; the atomics add
// the block sums in an unspecified order, so the last bits of out vary from run to run.
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
    cudaMemsetAsync(out, 0, sizeof(float), 0);
    unsigned blocks = (unsigned)(((int64_t)n + THREADS - 1) / THREADS);
    block_sum_kernel<<<blocks, THREADS>>>(X, out, n);
}
