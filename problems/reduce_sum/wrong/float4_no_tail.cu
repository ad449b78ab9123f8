// expected: WRONG_ANSWER — only whole float4s are summed: the last n % 4 values are dropped, so n = 1 gives 0
// Deterministic: n = 7 drops 3 values (n = 1 drops its only one): out misses x[4] + x[5] + x[6],
// three independent uniforms in [0, 1), and passes only if they add up to less than ~4e-4
// (atol 1e-5 + rtol 1e-4·|sum|): probability ~1e-11, times ~1e-5 for n = 1 and the misses on
// n = 1025, 65537 and 1048573 (one value each).
#include <cuda_runtime.h>
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

__global__ void partial_kernel(const float4* __restrict__ x4, const float* __restrict__ x,
                               int64_t n4, int n) {
    float acc = 0.f;
    const int64_t stride = (int64_t)gridDim.x * THREADS * UNROLL;
    for (int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x; base < n4; base += stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            int64_t i = base + (int64_t)u * THREADS;
            v[u] = i < n4 ? x4[i] : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
    }
    // The n % 4 tail was forgotten.
    acc = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

__global__ void final_kernel(float* out, int blocks) {
    float acc = 0.f;
    for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partials[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) out[0] = acc;
}

extern "C" void solve(const float* X, float* out, int n) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (sms <= 0) sms = 132;
    }
    int64_t n4 = n / 4;
    int64_t per_block = (int64_t)THREADS * UNROLL;
    int64_t need = (n4 + per_block - 1) / per_block;
    int64_t cap = 4LL * sms < MAX_BLOCKS ? 4LL * sms : MAX_BLOCKS;
    int blocks = (int)(need < cap ? need : cap);
    if (blocks < 1) blocks = 1;
    partial_kernel<<<blocks, THREADS>>>(reinterpret_cast<const float4*>(X), X, n4, n);
    final_kernel<<<1, 1024>>>(out, blocks);
}
