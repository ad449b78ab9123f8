// expected: WRONG_ANSWER — the target logit is gathered as logits[targets[r]], without the row offset r·vocab: every row but row 0 subtracts a logit of row 0
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cmath>

constexpr int THREADS = 256;

__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void cross_entropy_kernel(const __nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                     float* __restrict__ loss, int vocab) {
    __shared__ float scratch[2][THREADS / 32];
    const __nv_bfloat16* row = logits + (size_t)blockIdx.x * vocab;
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    float m = -INFINITY;
    for (int j = threadIdx.x; j < vocab; j += THREADS) m = fmaxf(m, __bfloat162float(row[j]));
    m = warp_max(m);
    if (lane == 0) scratch[0][warp] = m;
    __syncthreads();
    m = warp_max(lane < THREADS / 32 ? scratch[0][lane] : -INFINITY);
    float s = 0.f;
    for (int j = threadIdx.x; j < vocab; j += THREADS) s += expf(__bfloat162float(row[j]) - m);
    s = warp_sum(s);
    if (lane == 0) scratch[1][warp] = s;
    __syncthreads();
    s = warp_sum(lane < THREADS / 32 ? scratch[1][lane] : 0.f);
    if (threadIdx.x == 0) {
        float xt = __bfloat162float(logits[targets[blockIdx.x]]);  // BUG: row 0, not row r
        loss[blockIdx.x] = (m - xt) + logf(s);
    }
}

extern "C" void solve(const __nv_bfloat16* logits, const int64_t* targets, float* loss, int rows, int vocab) {
    cross_entropy_kernel<<<rows, THREADS>>>(logits, targets, loss, vocab);
}
