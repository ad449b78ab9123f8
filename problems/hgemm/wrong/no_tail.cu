// expected: WRONG_ANSWER — assumes M and N are multiples of 16: the grid rounds down, edge outputs stay unwritten
#include <cuda_fp16.h>

__global__ void gemm_kernel(const half* A, const half* B, half* C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    float acc = 0.f;
    for (int k = 0; k < K; ++k)
        acc += __half2float(A[(size_t)row * K + k]) * __half2float(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = __float2half(acc);
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 block(16, 16), grid(N / 16, M / 16);
    if (grid.x && grid.y) gemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
