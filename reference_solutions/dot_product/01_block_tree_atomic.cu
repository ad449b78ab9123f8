// dot_product, step 1: one product per thread, a shared-memory tree per block, one atomicAdd per block.
//
// Technique: out is zeroed with cudaMemsetAsync (it is poisoned before every call). Each thread
// of a 1024-thread block converts its pair to float and multiplies them (exact in fp32), the
// block sums its products as a tree in shared memory (10 halving steps) and thread 0 adds the
// block's sum to out with atomicAdd. The atomics add the block sums in an unspecified order, so
// the last bits of out vary from run to run.
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
    cudaMemsetAsync(out, 0, sizeof(float), 0);
    unsigned blocks = (unsigned)(((int64_t)n + THREADS - 1) / THREADS);
    block_dot_kernel<<<blocks, THREADS>>>(a, b, out, n);
}
