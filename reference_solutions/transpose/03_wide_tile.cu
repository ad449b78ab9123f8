// transpose, step 3: 64×64 tiles, 8 elements per thread, streaming cache hints.
//
// Count first: a transpose reads each element once and writes it once (8 bytes per fp32
// element), like a copy; step 2 reached ~91% of the copy bandwidth. Two things keep it from the
// last few percent: each thread has only 4 loads in flight (16 bytes), and every 32×32 tile is
// a separate block with its own start-up and barrier. Here a 32×16 block moves a 64×64 tile:
// each thread issues 8 independent loads before the barrier, so twice the bytes are in flight
// per thread, and a quarter as many blocks are scheduled. The tile is padded to 65 columns so
// the column reads of the write phase still hit 32 different banks. Loads are marked streaming
// (__ldcs: used once) and stores too (__stcs), so the write stream does not evict lines that
// other blocks are still reading from L2.
// What it buys: predicted a few percent (91% → ~95% of copy) at 8192×8192.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int TILE = 64;
constexpr int BX = 32, BY = 16;  // threads; each moves (TILE / BX) × (TILE / BY) = 8 elements

__global__ void __launch_bounds__(BX * BY) transpose_kernel(const float* __restrict__ a, float* __restrict__ b,
                                                            int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    const int c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;

#pragma unroll
    for (int dc = 0; dc < TILE; dc += BX) {
#pragma unroll
        for (int dr = 0; dr < TILE; dr += BY) {
            int r = r0 + threadIdx.y + dr, c = c0 + threadIdx.x + dc;
            if (r < rows && c < cols) tile[threadIdx.y + dr][threadIdx.x + dc] = __ldcs(a + (int64_t)r * cols + c);
        }
    }
    __syncthreads();
#pragma unroll
    for (int dr = 0; dr < TILE; dr += BX) {
#pragma unroll
        for (int dc = 0; dc < TILE; dc += BY) {
            int r = r0 + threadIdx.x + dr;   // B's column is A's row
            int c = c0 + threadIdx.y + dc;   // B's row is A's column
            if (c < cols && r < rows) __stcs(b + (int64_t)c * rows + r, tile[threadIdx.x + dr][threadIdx.y + dc]);
        }
    }
}

extern "C" void solve(const float* A, float* B, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    dim3 block(BX, BY);
    dim3 grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    transpose_kernel<<<grid, block>>>(A, B, rows, cols);
}
