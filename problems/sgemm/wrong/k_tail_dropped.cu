// expected: WRONG_ANSWER — the K loop runs K / 32 whole slices and drops the last K % 32 products (M and N edges are handled): K = 1 gives C = 0, K = 131 misses 3 of 131 terms
constexpr int T = 32;

// The 32×32 shared-memory tiled kernel with bounds checks on rows and columns only: it was
// written for K a multiple of the tile. Every index it forms stays inside the matrices (the
// loop rounds down), so it never faults: it is simply incomplete.
__global__ void __launch_bounds__(T * T) sgemm_kernel(const float* __restrict__ A,
                                                     const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[T][T], Bs[T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 + T <= K; k0 += T) {  // BUG: the last partial slice is never visited
        As[ty][tx] = row < M ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[ty][tx] = col < N ? B[(size_t)(k0 + ty) * N + col] : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < T; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    sgemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
