// swish, step 1: one thread per element, fp32 math inside.
//
// Technique: the global index i = blockIdx.x * blockDim.x + threadIdx.x, a grid rounded up to
// cover n, a guard `i < n`; each thread converts its half to float, computes x / (1 + expf(-x))
// and rounds once back to half (__float2half: round to nearest). In fp32, exp(-x) stays finite
// for every fp16 input above -88, and at -88 and below x / Inf = -0 is within atol anyway.
// What it buys: correct on every n and already most of the bandwidth; each thread moves only
// 2 bytes per load, so the number of memory requests, not DRAM, caps it a little below the
// copy bandwidth.
#include <cuda_fp16.h>

__global__ void swish_kernel(const half* __restrict__ x, half* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = __half2float(x[i]);
        y[i] = __float2half(v / (1.f + expf(-v)));
    }
}

extern "C" void solve(const half* X, half* Y, int n) {
    const int threads = 256;
    swish_kernel<<<(n + threads - 1) / threads, threads>>>(X, Y, n);
}
