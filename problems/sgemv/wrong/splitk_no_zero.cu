// expected: WRONG_ANSWER — split-K with atomicAdd into y, but y is never zeroed: every row's partial sums are added to the garbage the judge poisoned y with
// Deterministic: the poison is a repeated byte whose float is |p| >= 2 or NaN, so on the first
// test (M = 1, K = 1) y = p + a·x is NaN or off by >= 2, far beyond 3e-4 + 1e-4·|y|.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int CHUNK = 4096;  // floats of a row per block

__global__ void gemv_split_atomic(const float* __restrict__ A, const float* __restrict__ x,
                                  float* __restrict__ y, int K) {
    __shared__ float warp_sums[THREADS / 32];
    const int64_t row = blockIdx.x;
    const int k0 = blockIdx.y * CHUNK, k1 = min(K, k0 + CHUNK);
    const float* a = A + row * K;
    float acc = 0.f;
    for (int k = k0 + threadIdx.x; k < k1; k += THREADS) acc = fmaf(a[k], x[k], acc);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int w = 0; w < THREADS / 32; ++w) s += warp_sums[w];
        atomicAdd(&y[row], s);
    }
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    // The cudaMemsetAsync(y, 0, M * sizeof(float), 0) was forgotten.
    dim3 grid(M, (K + CHUNK - 1) / CHUNK);
    gemv_split_atomic<<<grid, THREADS>>>(A, x, y, K);
}
