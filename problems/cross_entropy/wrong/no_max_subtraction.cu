// expected: WRONG_ANSWER — log Σ exp(x) without subtracting the max: logits reach ~130 (std 32), exp overflows fp32 above 88.7, so Σ = Inf and the loss is Inf
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int THREADS = 256;

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void cross_entropy_kernel(const __nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                     float* __restrict__ loss, int vocab) {
    __shared__ float scratch[THREADS / 32];
    const __nv_bfloat16* row = logits + (size_t)blockIdx.x * vocab;
    float s = 0.f;
    for (int j = threadIdx.x; j < vocab; j += THREADS) s += expf(__bfloat162float(row[j]));
    s = warp_sum(s);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        float total = 0.f;
        for (int w = 0; w < THREADS / 32; ++w) total += scratch[w];
        loss[blockIdx.x] = logf(total) - __bfloat162float(row[targets[blockIdx.x]]);
    }
}

extern "C" void solve(const __nv_bfloat16* logits, const int64_t* targets, float* loss, int rows, int vocab) {
    cross_entropy_kernel<<<rows, THREADS>>>(logits, targets, loss, vocab);
}
