// expected: WRONG_ANSWER — no max subtraction: exp overflows to Inf on large logits, Inf/Inf = NaN
#include <cuda_runtime.h>

__global__ void softmax_kernel(const float* x, float* y, int cols) {
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    __shared__ float partial[256];
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) s += expf(row[j]);
    partial[threadIdx.x] = s;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    float total = partial[0];
    for (int j = threadIdx.x; j < cols; j += blockDim.x) out[j] = expf(row[j]) / total;
}

extern "C" void solve(const float* X, float* Y, int rows, int cols) {
    softmax_kernel<<<rows, 256>>>(X, Y, cols);
}
