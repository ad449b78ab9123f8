// expected: WRONG_ANSWER — "double-buffered" tiles with one __syncthreads per slice, but the next slice is staged into the buffer being read (t & 1 instead of (t + 1) & 1): nothing separates reading slice t from overwriting it, and each thread reads elements of slice t+1 that it has just written itself, so every test with K > 32 fails on every run, not only when warps drift apart
constexpr int T = 32;

// Double buffering done right needs one barrier per slice: slice t+1 goes into the other
// buffer, which nobody has read since the previous barrier. Here both indices are t & 1, so
// the "other" buffer is the one about to be read: the missing barrier is the one that would
// have separated the reads of slice t from the stores of slice t+1. The bug is not a timing
// accident: thread (ty, tx) stores As[.][ty][tx] and Bs[.][ty][tx] of slice t+1 and then reads
// both itself (k = tx and k = ty) as if they were slice t.
__global__ void __launch_bounds__(T * T) sgemm_kernel(const float* __restrict__ A,
                                                     const float* __restrict__ B,
                                                     float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[2][T][T], Bs[2][T][T];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    auto stage = [&](int buf, int k0) {
        As[buf][ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * K + k0 + tx] : 0.f;
        Bs[buf][ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.f;
    };
    const int tiles = (K + T - 1) / T;
    stage(0, 0);
    __syncthreads();
    float acc = 0.f;
    for (int t = 0; t < tiles; ++t) {
        const int cur = t & 1;
        if (t + 1 < tiles) stage(t & 1, (t + 1) * T);  // BUG: should be (t + 1) & 1
#pragma unroll
        for (int k = 0; k < T; ++k) acc = fmaf(As[cur][ty][k], Bs[cur][k][tx], acc);
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 block(T, T), grid((N + T - 1) / T, (M + T - 1) / T);
    sgemm_kernel<<<grid, block>>>(A, B, C, M, N, K);
}
