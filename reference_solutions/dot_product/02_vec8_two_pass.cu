// dot_product, step 2: 16-byte loads of 8 halves, warp shuffles, a bounded grid and a
// deterministic second pass.
//
// Technique: a grid of a few blocks per SM walks a and b with a grid-stride loop of 16-byte
// uint4 loads (8 halves each, UNROLL pairs in flight per thread). Each uint4 is read as 4
// __half2, converted with __half22float2 and multiply-added into an fp32 per-thread sum. The
// n % 8 tail goes to the first threads of block 0. Each block reduces its threads with
// __shfl_down_sync inside every warp and one shared-memory step across warps, and writes one
// partial sum to a static __device__ array; a second one-block kernel sums the partials in a
// fixed order and writes out (no memset, no atomics: the same bits on every run).
// What it buys: one read of a and b at close to the memory bandwidth, and a reproducible dot.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 512;
constexpr int UNROLL = 4;
constexpr int MAX_BLOCKS = 1024;

__device__ float partials[MAX_BLOCKS];

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block; the result is valid in thread 0.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float warps[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) warps[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warps[lane] : 0.f;
        v = warp_sum(v);
    }
    return v;
}

__device__ __forceinline__ float dot8(uint4 x, uint4 y, float acc) {
    const __half2* hx = reinterpret_cast<const __half2*>(&x);
    const __half2* hy = reinterpret_cast<const __half2*>(&y);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 fx = __half22float2(hx[k]);
        float2 fy = __half22float2(hy[k]);
        acc = fmaf(fx.x, fy.x, acc);
        acc = fmaf(fx.y, fy.y, acc);
    }
    return acc;
}

__global__ void partial_kernel(const uint4* __restrict__ a8, const uint4* __restrict__ b8,
                               const half* __restrict__ a, const half* __restrict__ b,
                               int64_t n8, int n) {
    float acc = 0.f;
    const int64_t stride = (int64_t)gridDim.x * THREADS * UNROLL;
    for (int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x; base < n8; base += stride) {
        uint4 x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int64_t i = base + (int64_t)u * THREADS;
            if (i < n8) { x[u] = a8[i]; y[u] = b8[i]; }
            else { x[u] = make_uint4(0, 0, 0, 0); y[u] = make_uint4(0, 0, 0, 0); }  // +0 products
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc = dot8(x[u], y[u], acc);
    }
    if (blockIdx.x == 0) {  // the n % 8 pairs after the last whole uint4
        int64_t i = n8 * 8 + threadIdx.x;
        if (i < n) acc = fmaf(__half2float(a[i]), __half2float(b[i]), acc);
    }
    acc = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void final_kernel(float* out, int blocks) {
    float acc = 0.f;
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partials[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[0] = acc;
}

extern "C" void solve(const half* a, const half* b, float* out, int n) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (sms <= 0) sms = 132;
    }
    int64_t n8 = n / 8;
    int64_t per_block = (int64_t)THREADS * UNROLL;
    int64_t need = (n8 + per_block - 1) / per_block;
    int64_t cap = 4LL * sms < MAX_BLOCKS ? 4LL * sms : MAX_BLOCKS;
    int blocks = (int)(need < cap ? need : cap);
    if (blocks < 1) blocks = 1;  // n < 8: block 0 still sums the tail
    partial_kernel<<<blocks, THREADS>>>(reinterpret_cast<const uint4*>(a), reinterpret_cast<const uint4*>(b),
                                        a, b, n8, n);
    final_kernel<<<1, 1024>>>(out, blocks);
}
