// expected: WRONG_ANSWER — the grid covers only whole 32x32 tiles (rows / 32 by cols / 32) and skips the partial ones: edge elements of B are never written
// Deterministic: the first test is 1x1, where there is no whole tile at all: nothing is
// launched and B keeps the judge's poison (|x| >= 2 or NaN). Skipping (rather than reading
// past the edge without a check) keeps every access in bounds, so it is never a crash.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void transpose_kernel(const float* __restrict__ a, float* __restrict__ b, int rows, int cols) {
    __shared__ float tile[32][33];
    int c = blockIdx.x * 32 + threadIdx.x;
    for (int k = 0; k < 32; k += 8) {
        int r = blockIdx.y * 32 + threadIdx.y + k;
        tile[threadIdx.y + k][threadIdx.x] = a[(int64_t)r * cols + c];  // no edge check: whole tiles only
    }
    __syncthreads();
    int r = blockIdx.y * 32 + threadIdx.x;
    for (int k = 0; k < 32; k += 8) {
        int cc = blockIdx.x * 32 + threadIdx.y + k;
        b[(int64_t)cc * rows + r] = tile[threadIdx.x][threadIdx.y + k];
    }
}

extern "C" void solve(const float* A, float* B, int rows, int cols) {
    dim3 grid(cols / 32, rows / 32);  // rounds down: the partial edge tiles are dropped
    if (grid.x > 0 && grid.y > 0) transpose_kernel<<<grid, dim3(32, 8)>>>(A, B, rows, cols);
}
