// expected: WRONG_ANSWER — float4 only: the last n % 4 elements are never written (with n = 1, none)
#include <cuda_runtime.h>
#include <cstdint>

__device__ __forceinline__ float gelu(float v) { return 0.5f * v * (1.f + erff(v * 0.70710678f)); }

__global__ void gelu4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n4) {
        float4 v = x[i];
        y[i] = make_float4(gelu(v.x), gelu(v.y), gelu(v.z), gelu(v.w));
    }
}

extern "C" void solve(const float* X, float* Y, int n) {
    int64_t n4 = n / 4;  // the tail n % 4 was forgotten
    if (n4 > 0)
        gelu4_kernel<<<(unsigned)((n4 + 255) / 256), 256>>>(reinterpret_cast<const float4*>(X),
                                                             reinterpret_cast<float4*>(Y), n4);
}
