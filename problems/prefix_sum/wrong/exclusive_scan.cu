// expected: WRONG_ANSWER — an exclusive scan (Y[i] = X[0] + ... + X[i-1]) where an inclusive one is asked: the running sum is written before the element is added
// Deterministic: Y[0] = 0 where X[0] is expected, and every Y[i] is off by X[i]; the first test
// (n = 1) passes only if X[0] = 0 (probability 1/2001) and n = 2 fails unless X[0] = X[1] = 0.
// (The tiles' carries are handled as in the three-phase scan.)
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

__global__ void __launch_bounds__(THREADS) scan_tiles(const int32_t* X, int32_t* Y, unsigned* sums, int n) {
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
        if (first + j < n) Y[first + j] = (int32_t)run;  // the bug: written before adding v[j]
        run += v[j];
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = warp_tot[31];
}

// One thread turns the tile totals into exclusive carries (slow, but this control is about the
// scan's definition, not its speed).
__global__ void carries(unsigned* sums, int tiles) {
    unsigned run = 0;
    for (int b = 0; b < tiles; ++b) {
        const unsigned t = sums[b];
        sums[b] = run;
        run += t;
    }
}

__global__ void add_carry(int32_t* Y, const unsigned* sums, int n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) Y[i] = (int32_t)((unsigned)Y[i] + sums[i / TILE]);
}

extern "C" void solve(const int32_t* X, int32_t* Y, int n) {
    static unsigned* sums = nullptr;
    static int capacity = 0;
    const int tiles = (int)(((int64_t)n + TILE - 1) / TILE);
    if (tiles > capacity) {
        if (sums) cudaFree(sums);
        cudaMalloc(&sums, (size_t)tiles * sizeof(unsigned));
        capacity = tiles;
    }
    scan_tiles<<<tiles, THREADS>>>(X, Y, sums, n);
    carries<<<1, 1>>>(sums, tiles);
    add_carry<<<(unsigned)(((int64_t)n + 255) / 256), 256>>>(Y, sums, n);
}
