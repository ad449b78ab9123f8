// expected: WRONG_ANSWER — Σx and Σ(x - mean)² accumulated in half: Σx ≈ 98304 overflows 65504 at cols = 16384 (mean = Inf, Y = NaN); shorter rows round the mean off by ~1e-3
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
    v = warp_sum(v);
    __syncthreads();
    return v;
}

__global__ void layer_norm_kernel(const half* __restrict__ x, const half* __restrict__ w,
                                  const half* __restrict__ b, half* __restrict__ y, int cols) {
    __shared__ half scratch[32];
    const half* row = x + (size_t)blockIdx.x * cols;
    half* out = y + (size_t)blockIdx.x * cols;
    half n = __int2half_rn(cols);
    half s = __float2half(0.f);
    for (int j = threadIdx.x; j < cols; j += THREADS) s = __hadd(s, row[j]);
    half mean = __hdiv(block_sum(s, scratch), n);
    half q = __float2half(0.f);
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        half d = __hsub(row[j], mean);
        q = __hfma(d, d, q);
    }
    half var = __hdiv(block_sum(q, scratch), n);
    float m = __half2float(mean), rstd = rsqrtf(__half2float(var) + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += THREADS)
        out[j] = __float2half((__half2float(row[j]) - m) * rstd * __half2float(w[j]) + __half2float(b[j]));
}

extern "C" void solve(const half* X, const half* weight, const half* bias, half* Y, int rows, int cols) {
    layer_norm_kernel<<<rows, THREADS>>>(X, weight, bias, Y, cols);
}
