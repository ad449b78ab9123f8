// expected: WRONG_ANSWER — assumes M, N and K are multiples of 16: the grid and the K loop round down, so edge outputs stay unwritten and the last K % 16 products are dropped
#include <cuda_fp16.h>

constexpr int T = 16;

// The textbook shared-memory tiled kernel without bounds checks. Every index it forms stays
// inside the matrices (it only ever rounds down), so it never faults: it is simply incomplete.
__global__ void gemm_kernel(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ float as[T][T], bs[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 + T <= K; k0 += T) {
        as[ty][tx] = __half2float(A[(size_t)row * K + k0 + tx]);
        bs[ty][tx] = __half2float(B[(size_t)(k0 + ty) * N + col]);
        __syncthreads();
        for (int k = 0; k < T; ++k) acc += as[ty][k] * bs[k][tx];
        __syncthreads();
    }
    C[(size_t)row * N + col] = __float2half(acc);
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 block(T, T), grid(N / T, M / T);
    if (grid.x && grid.y) gemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
