// expected: WRONG_ANSWER — only whole 8-half vectors are summed: the last n % 8 products are dropped, so any n < 8 gives 0
// Deterministic: n = 7 has no whole vector, so out = 0 while the dot is the sum of 7 products of
// independent uniforms in [0, 1) (~1.75); it passes only if that sum is below ~1e-5: probability
// far below 1e-20. n = 1, 1025, 65537, 1048573 and 100000007 drop 1, 1, 1, 5 and 7 products too.
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
    // The n % 8 tail was forgotten.
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
    if (blocks < 1) blocks = 1;
    partial_kernel<<<blocks, THREADS>>>(reinterpret_cast<const uint4*>(a), reinterpret_cast<const uint4*>(b),
                                        a, b, n8, n);
    final_kernel<<<1, 1024>>>(out, blocks);
}
