// expected: WRONG_ANSWER — unbiased variance Σ(x - mean)² / (cols - 1): NaN (0/0) on the cols = 1 test, 8% too small a spread at cols = 7
#include <cuda_fp16.h>

constexpr int THREADS = 256;
constexpr float EPS = 1e-5f;

__device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum one value per thread across the block; every thread gets the result.
__device__ float block_sum(float v, float* scratch) {
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < THREADS / 32 ? scratch[lane] : 0.f;
    v = warp_sum(v);
    __syncthreads();  // scratch is reused by the next reduction
    return v;
}

__global__ void layer_norm_kernel(const half* __restrict__ x, const half* __restrict__ w,
                                  const half* __restrict__ b, half* __restrict__ y, int cols) {
    __shared__ float scratch[32];
    const half* row = x + (size_t)blockIdx.x * cols;
    half* out = y + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) s += __half2float(row[j]);
    float mean = block_sum(s, scratch) / cols;
    float q = 0.f;
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        float d = __half2float(row[j]) - mean;
        q += d * d;
    }
    float rstd = rsqrtf(block_sum(q, scratch) / (cols - 1) + EPS);
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        float n = (__half2float(row[j]) - mean) * rstd;
        out[j] = __float2half(n * __half2float(w[j]) + __half2float(b[j]));
    }
}

extern "C" void solve(const half* X, const half* weight, const half* bias, half* Y, int rows, int cols) {
    layer_norm_kernel<<<rows, THREADS>>>(X, weight, bias, Y, cols);
}
