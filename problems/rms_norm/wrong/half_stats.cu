// expected: WRONG_ANSWER — Σx² accumulated in half: ≈ 131072 at cols = 8192 overflows 65504 to Inf, rsqrt(Inf) = 0, so Y = 0 on every row
#include <cuda_fp16.h>

constexpr int THREADS = 256;

__device__ half warp_sum(half v) {
    for (int o = 16; o > 0; o /= 2) v = __hadd(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ half block_sum(half v, half* scratch) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < THREADS / 32 ? scratch[lane] : __float2half(0.f);
    return warp_sum(v);
}

__global__ void rms_norm_kernel(const half* __restrict__ x, const half* __restrict__ w,
                                half* __restrict__ y, int cols) {
    __shared__ half scratch[32];
    const half* row = x + (size_t)blockIdx.x * cols;
    half* out = y + (size_t)blockIdx.x * cols;
    half q = __float2half(0.f);
    for (int j = threadIdx.x; j < cols; j += THREADS) q = __hfma(row[j], row[j], q);
    float rstd = rsqrtf(__half2float(block_sum(q, scratch)) / cols + 1e-6f);
    for (int j = threadIdx.x; j < cols; j += THREADS)
        out[j] = __float2half(__half2float(row[j]) * rstd * __half2float(w[j]));
}

extern "C" void solve(const half* X, const half* weight, half* Y, int rows, int cols) {
    rms_norm_kernel<<<rows, THREADS>>>(X, weight, Y, cols);
}
