// expected: WRONG_ANSWER — erf(x) instead of erf(x / sqrt 2): the CDF of N(0, 1/2), not N(0, 1); off by up to 0.084 (at |x| ≈ 1.2)
#include <cuda_runtime.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = 0.5f * v * (1.f + erff(v));  // the 1/sqrt(2) scaling was dropped
    }
}

extern "C" void solve(const float* X, float* Y, int n) {
    gelu_kernel<<<(n + 255) / 256, 256>>>(X, Y, n);
}
