// expected: WRONG_ANSWER — one thread per column in a 1024-thread block: columns past 1024 are never read nor written
#include <cuda_runtime.h>

__global__ void softmax_kernel(const float* x, float* y, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    __shared__ float red[1024];
    int j = threadIdx.x;
    float v = j < cols ? row[j] : -INFINITY;
    red[j] = v;
    __syncthreads();
    for (int stride = 512; stride > 0; stride /= 2) {
        if (j < stride) red[j] = fmaxf(red[j], red[j + stride]);
        __syncthreads();
    }
    float m = red[0];
    __syncthreads();
    float e = j < cols ? expf(v - m) : 0.f;
    red[j] = e;
    __syncthreads();
    for (int stride = 512; stride > 0; stride /= 2) {
        if (j < stride) red[j] += red[j + stride];
        __syncthreads();
    }
    if (j < cols) out[j] = e / red[0];
}

extern "C" void solve(const float* X, float* Y, int rows, int cols) {
    softmax_kernel<<<rows, 1024>>>(X, Y, cols);
}
