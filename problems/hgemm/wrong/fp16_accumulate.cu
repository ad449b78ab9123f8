// expected: WRONG_ANSWER — the dot product is accumulated in half: the rounding error grows with K
#include <cuda_fp16.h>

__global__ void gemm_kernel(const half* A, const half* B, half* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    half acc = __float2half(0.f);
    for (int k = 0; k < K; ++k) acc = __hfma(A[(size_t)row * K + k], B[(size_t)k * N + col], acc);
    C[(size_t)row * N + col] = acc;
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 block(16, 16), grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
