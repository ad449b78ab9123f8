// expected: WRONG_ANSWER — Σ exp(x - m) accumulated in bf16 (8 significant bits): Σ lies in [1, 2) on most rows, where bf16 steps by 2^-7, so log Σ is off by ~2e-3 (up to 7e-3), above the 1e-4 + 1e-6·|loss| tolerance
// Everything else is right: the max is subtracted, the statistics are reduced per block.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cmath>

constexpr int THREADS = 256;

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ __nv_bfloat16 warp_sum(__nv_bfloat16 v) {
    for (int o = 16; o > 0; o /= 2) v = __hadd(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__global__ void cross_entropy_kernel(const __nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                     float* __restrict__ loss, int vocab) {
    __shared__ float mx[THREADS / 32];
    __shared__ __nv_bfloat16 sm[THREADS / 32];
    const __nv_bfloat16* row = logits + (size_t)blockIdx.x * vocab;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < vocab; j += THREADS) m = fmaxf(m, __bfloat162float(row[j]));
    m = warp_max(m);
    if (lane == 0) mx[warp] = m;
    __syncthreads();
    m = warp_max(lane < THREADS / 32 ? mx[lane] : -INFINITY);
    __nv_bfloat16 s = __float2bfloat16(0.f);
    for (int j = threadIdx.x; j < vocab; j += THREADS)
        s = __hadd(s, __float2bfloat16(expf(__bfloat162float(row[j]) - m)));
    s = warp_sum(s);
    if (lane == 0) sm[warp] = s;
    __syncthreads();
    s = warp_sum(lane < THREADS / 32 ? sm[lane] : __float2bfloat16(0.f));
    if (threadIdx.x == 0)
        loss[blockIdx.x] = (m - __bfloat162float(row[targets[blockIdx.x]])) + logf(__bfloat162float(s));
}

extern "C" void solve(const __nv_bfloat16* logits, const int64_t* targets, float* loss, int rows, int vocab) {
    cross_entropy_kernel<<<rows, THREADS>>>(logits, targets, loss, vocab);
}
