// expected: WRONG_ANSWER — the tanh approximation of GELU: it errs by up to 4.7e-4 (|x| ≈ 2.7), far beyond atol 1e-5
#include <cuda_runtime.h>

__global__ void gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        const float k = 0.7978845608f;  // sqrt(2 / pi)
        y[i] = 0.5f * v * (1.f + tanhf(k * (v + 0.044715f * v * v * v)));
    }
}

extern "C" void solve(const float* X, float* Y, int n) {
    gelu_kernel<<<(n + 255) / 256, 256>>>(X, Y, n);
}
