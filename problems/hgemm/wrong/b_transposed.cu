// expected: WRONG_ANSWER — reads B as if it were stored [N, K] (B[col * K + k]) instead of [K, N]
#include <cuda_fp16.h>

__global__ void gemm_kernel(const half* A, const half* B, half* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) {
        size_t b = (size_t)col * K + k;
        if (b < (size_t)K * N) acc += __half2float(A[(size_t)row * K + k]) * __half2float(B[b]);
    }
    C[(size_t)row * N + col] = __float2half(acc);
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
