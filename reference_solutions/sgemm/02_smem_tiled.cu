// sgemm, step 2: 32×32 shared-memory tiles, one output per thread.
//
// Technique: a 32×32-thread block computes a 32×32 tile of C. The K loop walks 32-wide
// slices: each thread copies one element of A[32×32] and one of B[32×32] into shared memory
// (coalesced: a warp copies one 128-byte row of each), the block synchronizes, and each
// thread does 32 FMAs from shared memory. A warp shares its row (ty), so As[ty][k] is a
// broadcast and Bs[k][tx] hits 32 different banks: no bank conflicts. The second
// __syncthreads keeps fast warps from overwriting the tiles while slow warps still read them.
// Ragged shapes: elements past the edges (rows ≥ M, columns ≥ N, the K tail) are stored as
// zeros, which add nothing, and only in-range outputs are written.
// What it buys: each element fetched from global memory is reused 32 times, so global traffic
// drops 32×; the limit moves to shared memory, still two loads per FMA (the A broadcast can
// be vectorized into one 16-byte load per 4 k): ~8-12 TFLOPS on an H100, ~20% of cuBLAS,
// 3-4× the naive kernel.
constexpr int T = 32;

__global__ void __launch_bounds__(T * T) sgemm_kernel(const float* __restrict__ A,
                                                     const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ __align__(16) float As[T][T];  // As[r][k] = A[row0 + r][k0 + k]
    __shared__ __align__(16) float Bs[T][T];  // Bs[k][c] = B[k0 + k][col0 + c]
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += T) {
        As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.f;
        __syncthreads();  // the tiles are complete
#pragma unroll
        for (int k = 0; k < T; ++k) acc = fmaf(As[ty][k], Bs[k][tx], acc);
        __syncthreads();  // everyone is done reading before the next slice overwrites them
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    sgemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
