// expected: WRONG_ANSWER — packs A and x into __half2 to multiply with __hmul2 (twice the rate): each product carries three half roundings (~2^-11 relative each), ~3e-4 of error on y ~ N(0, 1), and about one output in four fails
// Deterministic in effect: simulated on CPU with the judge's input generator and check (A and
// x rounded to half, products in half, fp32 sums), over 5 seeds the second test (M = 1000,
// K = 1: one shared x, so the count varies from 4 to 281 rows) always fails, and every later
// test with >= 100 rows fails 20-45% of its rows (e.g. 1202/4099 at 4099x1023). The sum stays in
// fp32: this is the subtle variant of "half precision", and it still fails by a wide margin.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;

__global__ void gemv_half2(const float* __restrict__ A, const float* __restrict__ x,
                           float* __restrict__ y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    if (row >= M) return;
    const float* a = A + row * K;
    float acc = 0.f;
    for (int k = 2 * lane; k + 1 < K; k += 64) {
        const __half2 p = __hmul2(__floats2half2_rn(a[k], a[k + 1]), __floats2half2_rn(x[k], x[k + 1]));
        const float2 f = __half22float2(p);
        acc += f.x + f.y;
    }
    if (K % 2 == 1 && lane == 0)  // odd K: the last product alone
        acc += __half2float(__hmul(__float2half(a[K - 1]), __float2half(x[K - 1])));
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) y[row] = acc;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    const unsigned blocks = (unsigned)(((int64_t)M + THREADS / 32 - 1) / (THREADS / 32));
    gemv_half2<<<blocks, THREADS>>>(A, x, y, M, K);
}
