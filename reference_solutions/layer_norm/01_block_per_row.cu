// layer_norm, step 1: one block per row, two passes for the statistics, block reductions.
//
// Technique: block r owns row r. Pass 1: each thread sums a strided slice of the row in fp32; the
// block combines the 256 partial sums with __shfl_xor_sync inside each warp and one shared-memory
// step across the 8 warps, giving the mean. Pass 2: the same for Σ(x - mean)², divided by cols
// (biased variance). Pass 3: y = (x - mean) · rsqrt(var + 1e-5) · w + b, rounded once to half.
// Two-pass statistics never cancel: the variance is a sum of non-negative terms.
// What it buys: correct on any shape; three reads of X (the 2nd and 3rd mostly from L2), one write.
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
    float rstd = rsqrtf(block_sum(q, scratch) / cols + EPS);
    for (int j = threadIdx.x; j < cols; j += THREADS) {
        float n = (__half2float(row[j]) - mean) * rstd;
        out[j] = __float2half(n * __half2float(w[j]) + __half2float(b[j]));
    }
}

extern "C" void solve(const half* X, const half* weight, const half* bias, half* Y, int rows, int cols) {
    layer_norm_kernel<<<rows, THREADS>>>(X, weight, bias, Y, cols);
}
