// hgemm, step 1: one thread per output element, fp32 accumulator.
//
// Technique: thread (row, col) walks K, reading a row of A and a column of B from global
// memory, accumulating in float and rounding once to half at the end. Consecutive threads
// (threadIdx.x) take consecutive columns, so the B reads coalesce and the A read is a broadcast.
// What it buys: correctness on every shape, and a baseline: every FMA costs two global loads
// (served mostly by L1/L2), so it runs at a few TFLOPS, about 1% of the tensor cores.
#include <cuda_fp16.h>

__global__ void gemm_kernel(const half* __restrict__ A, const half* __restrict__ B,
                            half* __restrict__ C, int M, int N, int K) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const half* a = A + (size_t)row * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += __half2float(a[k]) * __half2float(B[(size_t)k * N + col]);
    C[(size_t)row * N + col] = __float2half(acc);
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    gemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
