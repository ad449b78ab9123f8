// expected: WRONG_ANSWER — all in half: hexp(-x) overflows to Inf for x < -11.09, so y = x / Inf = 0 where it should be ~ -1.7e-4
#include <cuda_fp16.h>

__global__ void swish_kernel(const half* __restrict__ x, half* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        half v = x[i];
        half one = __float2half(1.f);
        y[i] = __hdiv(v, __hadd(one, hexp(__hneg(v))));  // should convert to float first
    }
}

extern "C" void solve(const half* X, half* Y, int n) {
    swish_kernel<<<(n + 255) / 256, 256>>>(X, Y, n);
}
