// hgemm, step 2: shared-memory tiles (CUDA cores, fp32 accumulation), one output per thread.
//
// Count first: step 1 makes every multiply-add read one element of A and one of B from global
// memory (through L1/L2): 2 loads per 2 FLOPs. Here a 32×32 block stages a 32×32 tile of A and
// one of B in shared memory (each element read from global memory once per block), then every
// thread does 32 multiply-adds from shared memory before the next tile: global traffic drops
// 32×. The tiles are stored as float (converted once on the way in). In the inner loop a warp
// reads one element of A's row (the same address for all 32 lanes: a broadcast) and 32
// consecutive elements of B's row (32 banks): no bank conflicts. Each thread still does 2
// shared-memory loads per FMA, so shared-memory bandwidth, not the FMA units, is now the limit:
// step 3 keeps a tile of outputs in registers so that each load feeds several FMAs.
// Ragged shapes: out-of-range elements are staged as zeros, out-of-range outputs not written.
// What it buys: a few × over step 1; still two orders of magnitude short of the tensor cores.
#include <cuda_fp16.h>

constexpr int TILE = 32;

__global__ void __launch_bounds__(TILE * TILE) gemm_tiled(const half* __restrict__ A, const half* __restrict__ B,
                                                          half* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    const int tx = threadIdx.x % TILE, ty = threadIdx.x / TILE;
    const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = (row < M && k0 + tx < K) ? __half2float(A[(size_t)row * K + k0 + tx]) : 0.f;
        Bs[ty][tx] = (k0 + ty < K && col < N) ? __half2float(B[(size_t)(k0 + ty) * N + col]) : 0.f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = __float2half_rn(acc);
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    gemm_tiled<<<grid, TILE * TILE>>>(A, B, C, M, N, K);
}
