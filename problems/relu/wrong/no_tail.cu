// expected: WRONG_ANSWER — 16-byte vectors only: the last n % 8 elements are never written (with n = 7, none)
#include <cuda_fp16.h>
#include <cstdint>

__global__ void relu8_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n8) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n8) return;
    uint4 v = x[i];
    __half2* h = reinterpret_cast<__half2*>(&v);
    const __half2 zero = __float2half2_rn(0.f);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __hmax2(h[k], zero);
    y[i] = v;
}

extern "C" void solve(const half* X, half* Y, int n) {
    int64_t n8 = n / 8;  // the tail n % 8 was forgotten
    if (n8 > 0)
        relu8_kernel<<<(unsigned)((n8 + 255) / 256), 256>>>(reinterpret_cast<const uint4*>(X),
                                                             reinterpret_cast<uint4*>(Y), n8);
}
