// expected: WRONG_ANSWER — every 4096-element tile is scanned on its own and the carry of the earlier tiles is never added: from element 4096 on, Y restarts from 0 at each tile
// Deterministic: the first test with two tiles, n = 4097, expects Y[4096] = X[0] + ... + X[4096]
// and gets X[4096]; they agree only if X[0] + ... + X[4095] = 0, a random walk of 4096 steps of
// std 577 (std ~37000): probability ~1e-5, and n = 65537 has 16 such tile starts.
#include <cuda_runtime.h>
#include <cstdint>

constexpr unsigned FULL = 0xffffffffu;
constexpr int THREADS = 1024;
constexpr int ITEMS = 4;
constexpr int TILE = THREADS * ITEMS;

__device__ __forceinline__ unsigned warp_scan(unsigned v, int lane) {
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned t = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += t;
    }
    return v;
}

__global__ void __launch_bounds__(THREADS) scan_tiles(const int32_t* X, int32_t* Y, int n) {
    __shared__ unsigned warp_tot[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int64_t first = (int64_t)blockIdx.x * TILE + threadIdx.x * ITEMS;
    unsigned v[ITEMS], sum = 0;
    for (int j = 0; j < ITEMS; ++j) {
        v[j] = first + j < n ? (unsigned)X[first + j] : 0u;
        sum += v[j];
    }
    unsigned incl = warp_scan(sum, lane);
    if (lane == 31) warp_tot[warp] = incl;
    __syncthreads();
    if (warp == 0) warp_tot[lane] = warp_scan(warp_tot[lane], lane);
    __syncthreads();
    unsigned run = incl - sum + (warp > 0 ? warp_tot[warp - 1] : 0u);
    for (int j = 0; j < ITEMS; ++j) {
        run += v[j];
        if (first + j < n) Y[first + j] = (int32_t)run;
    }
    // Missing: publish the tile total, scan the totals, add each tile's carry.
}

extern "C" void solve(const int32_t* X, int32_t* Y, int n) {
    scan_tiles<<<(unsigned)(((int64_t)n + TILE - 1) / TILE), THREADS>>>(X, Y, n);
}
