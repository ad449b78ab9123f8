// expected: WRONG_ANSWER — 16-byte vectors only (cols / 8 of them): the last cols % 8 columns are never written; at cols = 1 and 7, nothing is
#include <cuda_fp16.h>
#include <cstdint>

constexpr float EPS = 1e-6f;

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <int THREADS>
__device__ float block_sum(float v, float* scratch) {
    v = warp_sum(v);
    if (THREADS > 32) {
        int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        if (lane == 0) scratch[warp] = v;
        __syncthreads();
        v = lane < THREADS / 32 ? scratch[lane] : 0.f;
        v = warp_sum(v);
    }
    return v;
}

__device__ __forceinline__ void unpack8(uint4 u, float* f) {
    const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 p = __half22float2(h[k]);
        f[2 * k] = p.x;
        f[2 * k + 1] = p.y;
    }
}

// cols % 8 == 0 and cols <= 8 * THREADS * V: the row lives in registers.
template <int THREADS, int V>
__global__ void __launch_bounds__(THREADS) rms_vec8_kernel(const half* __restrict__ x, const half* __restrict__ w,
                                                           half* __restrict__ y, int cols) {
    __shared__ float scratch[32];
    const uint4* row = reinterpret_cast<const uint4*>(x + (size_t)blockIdx.x * cols);
    uint4* out = reinterpret_cast<uint4*>(y + (size_t)blockIdx.x * cols);
    const uint4* w8 = reinterpret_cast<const uint4*>(w);
    int n8 = cols / 8;
    float v[V][8];
    float q = 0.f;
#pragma unroll
    for (int u = 0; u < V; ++u) {
        int j = threadIdx.x + u * THREADS;
        if (j < n8) {
            unpack8(row[j], v[u]);
#pragma unroll
            for (int k = 0; k < 8; ++k) q += v[u][k] * v[u][k];
        }
    }
    float rstd = rsqrtf(block_sum<THREADS>(q, scratch) / cols + EPS);
#pragma unroll
    for (int u = 0; u < V; ++u) {
        int j = threadIdx.x + u * THREADS;
        if (j < n8) {
            float wf[8];
            unpack8(w8[j], wf);
            uint4 r;
            __half2* h = reinterpret_cast<__half2*>(&r);
#pragma unroll
            for (int k = 0; k < 4; ++k)
                h[k] = __floats2half2_rn(v[u][2 * k] * rstd * wf[2 * k], v[u][2 * k + 1] * rstd * wf[2 * k + 1]);
            out[j] = r;
        }
    }
}

extern "C" void solve(const half* X, const half* weight, half* Y, int rows, int cols) {
    if (cols <= 1024) rms_vec8_kernel<128, 1><<<rows, 128>>>(X, weight, Y, cols);
    else if (cols <= 4096) rms_vec8_kernel<256, 2><<<rows, 256>>>(X, weight, Y, cols);
    else if (cols <= 8192) rms_vec8_kernel<512, 2><<<rows, 512>>>(X, weight, Y, cols);
    else rms_vec8_kernel<1024, 2><<<rows, 1024>>>(X, weight, Y, cols);
}
