// sgemv, step 1: one thread per row, a sequential fp32 dot product.
//
// Technique: thread i walks row i of A from left to right and accumulates A[i,k]·x[k] with fmaf
// into one float, then writes y[i]. Correct for every shape and simple.
// Why it is slow: the 32 threads of a warp read 32 different rows, 4·K bytes apart, so one load
// instruction touches 32 separate cache lines (uncoalesced); each thread then waits a full
// memory latency every 32 floats, when its next line arrives. Few rows (M = 128) means only
// 128 threads on one SM for the whole 512 MB.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;

__global__ void gemv_thread_per_row(const float* __restrict__ A, const float* __restrict__ x,
                                    float* __restrict__ y, int M, int K) {
    int row = blockIdx.x * THREADS + threadIdx.x;
    if (row >= M) return;
    const float* a = A + (int64_t)row * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc = fmaf(a[k], x[k], acc);
    y[row] = acc;
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    gemv_thread_per_row<<<(M + THREADS - 1) / THREADS, THREADS>>>(A, x, y, M, K);
}
