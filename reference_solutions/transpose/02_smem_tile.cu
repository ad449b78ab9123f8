// transpose, step 2: a 32x32 tile through shared memory, padded to 33 columns.
//
// Technique: a 32x8 block moves one 32x32 tile, 4 rows per thread. It reads the tile from A
// with each warp on one row (coalesced 128-byte reads), stores it in shared memory, and after
// __syncthreads() reads it back by columns to write the transposed tile to B, again one row of
// B per warp (coalesced writes). The tile is declared [32][33]: the extra column shifts each
// row by one bank, so the column reads of the write phase hit 32 different banks instead of
// one (no 32-way bank conflict). Both phases check the matrix edges, so partial tiles work.
// What it buys: both global reads and writes are fully coalesced; close to the copy bandwidth.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE = 32;
constexpr int ROWS_PER_PASS = 8;  // blockDim.y: each thread moves TILE / ROWS_PER_PASS = 4 elements

__global__ void transpose_kernel(const float* __restrict__ a, float* __restrict__ b, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;

    int c = c0 + threadIdx.x;
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int r = r0 + threadIdx.y + k;
        if (r < rows && c < cols) tile[threadIdx.y + k][threadIdx.x] = a[(int64_t)r * cols + c];
    }
    __syncthreads();

    int r = r0 + threadIdx.x;  // B's column index is A's row index
#pragma unroll
    for (int k = 0; k < TILE; k += ROWS_PER_PASS) {
        int cc = c0 + threadIdx.y + k;  // B's row index is A's column index
        if (cc < cols && r < rows) b[(int64_t)cc * rows + r] = tile[threadIdx.x][threadIdx.y + k];
    }
}

extern "C" void solve(const float* A, float* B, int rows, int cols) {
    dim3 block(TILE, ROWS_PER_PASS);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_kernel<<<grid, block>>>(A, B, rows, cols);
}
