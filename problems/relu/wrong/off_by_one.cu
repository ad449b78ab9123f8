// expected: WRONG_ANSWER — Y[i] takes the relu of X[i + 1] (a 1-based index): every output is its neighbour's, and Y[n - 1] is never written
#include <cuda_fp16.h>

__global__ void relu_kernel(const half* x, half* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i + 1 < n) {
        half v = x[i + 1];  // meant x[i]
        y[i] = __hgt(v, __float2half(0.f)) ? v : __float2half(0.f);
    }
}

extern "C" void solve(const half* X, half* Y, int n) {
    relu_kernel<<<(n + 255) / 256, 256>>>(X, Y, n);
}
