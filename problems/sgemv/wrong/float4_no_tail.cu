// expected: WRONG_ANSWER — assumes K % 4 == 0: a warp per row sums only the K/4 whole float4s, so with K = 1 (the first tests) every row has no float4 at all and y = 0
// Deterministic: the first test, M = 1, K = 1, expects y = a·x with a, x ~ N(0, 1); it passes
// only if |a·x| <= 3e-4 (probability ~2e-3), and then M = 1000, K = 1 fails (all 1000 rows would
// need |a·x| <= 3e-4). The tests run in order and stop at the first failure, so the misaligned
// float4 loads this kernel would make on later tests (K = 7, rows 4·K bytes apart) never run.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;

__global__ void gemv_warp_per_row(const float* __restrict__ A, const float* __restrict__ x,
                                  float* __restrict__ y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    if (row >= M) return;
    const float4* a = reinterpret_cast<const float4*>(A + row * K);
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float acc = 0.f;
    for (int k = lane; k < K / 4; k += 32) {  // the K % 4 tail was forgotten
        const float4 av = __ldcs(a + k), xv = __ldg(x4 + k);
        acc = fmaf(av.x, xv.x, acc);
        acc = fmaf(av.y, xv.y, acc);
        acc = fmaf(av.z, xv.z, acc);
        acc = fmaf(av.w, xv.w, acc);
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    const unsigned blocks = (unsigned)(((int64_t)M + THREADS / 32 - 1) / (THREADS / 32));
    gemv_warp_per_row<<<blocks, THREADS>>>(A, x, y, M, K);
}
