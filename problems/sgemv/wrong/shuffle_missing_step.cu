// expected: WRONG_ANSWER — the warp reduction stops one step early (o > 1): lane 0 ends with the sum of the even lanes only, so every element read by an odd lane is lost
// Deterministic: lane l sums elements l, l+32, ...; xor steps 16, 8, 4, 2 combine lanes that
// differ in bits 4..1, so lane 0 gets lanes 0, 2, ..., 30 and drops every odd lane's share. The
// K = 1 tests pass (only lane 0 has data); M = 1, K = 7 drops elements 1, 3 and 5, three terms of
// ~N(0, 1/7) each: the error is ~N(0, 3/7), above 3e-4 with probability > 0.999, and M = 3,
// K = 1000 drops half of every row (error ~N(0, 1/2) on each of 3 rows).
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;

__global__ void gemv_warp_per_row(const float* __restrict__ A, const float* __restrict__ x,
                                  float* __restrict__ y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    if (row >= M) return;
    const float* a = A + row * K;
    float acc = 0.f;
    for (int k = lane; k < K; k += 32) acc = fmaf(a[k], x[k], acc);
    for (int o = 16; o > 1; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);  // o = 1 is missing
    if (lane == 0) y[row] = acc;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    const unsigned blocks = (unsigned)(((int64_t)M + THREADS / 32 - 1) / (THREADS / 32));
    gemv_warp_per_row<<<blocks, THREADS>>>(A, x, y, M, K);
}
