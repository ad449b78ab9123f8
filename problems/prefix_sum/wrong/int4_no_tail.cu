// expected: WRONG_ANSWER — each thread loads and stores its 4 elements as one 16-byte uint4 only when all 4 are in range: the last n % 4 elements are never read nor written, so they keep the judge's poison
// Deterministic: n = 1 has no whole uint4, so Y[0] stays poisoned (a repeated byte, e.g.
// 0x40404040 = 1077952576, never a prefix sum of these inputs: |Y| < 2^31 / 10). The totals
// scan reuses the same routine, so with more than one partial tile total its carries are wrong
// too. Everything else is the three-phase scan of reference_solutions/prefix_sum/01_three_phase.cu.
#include <cuda_runtime.h>
#include <cstdint>

constexpr unsigned FULL = 0xffffffffu;
constexpr int THREADS = 1024;
constexpr int ITEMS = 4;
constexpr int TILE = THREADS * ITEMS;
static_assert(THREADS == 1024, "block_scan assumes 32 full warps");

__device__ __forceinline__ unsigned warp_scan(unsigned v, int lane) {
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned t = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += t;
    }
    return v;
}

// Inclusive scan of one value per thread across the block; *total gets the block's sum.
__device__ unsigned block_scan(unsigned v, unsigned* total) {
    __shared__ unsigned warp_tot[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_scan(v, lane);
    if (lane == 31) warp_tot[warp] = v;
    __syncthreads();
    if (warp == 0) warp_tot[lane] = warp_scan(warp_tot[lane], lane);
    __syncthreads();
    if (warp > 0) v += warp_tot[warp - 1];
    *total = warp_tot[31];
    __syncthreads();  // warp_tot is reused by the next call
    return v;
}

// Scan `count` (<= TILE) elements of in[] into out[], adding `carry`; returns the tile's total.
__device__ unsigned scan_tile(const unsigned* in, unsigned* out, int count, unsigned carry) {
    const int first = threadIdx.x * ITEMS;
    unsigned v[ITEMS], sum = 0;
    if (first + ITEMS <= count) {  // the bug: a partial int4 (the count % 4 tail) is skipped
        const uint4 q = *reinterpret_cast<const uint4*>(in + first);
        v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
    } else {
        v[0] = v[1] = v[2] = v[3] = 0u;
    }
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) sum += v[j];
    unsigned total;
    unsigned run = block_scan(sum, &total) - sum + carry;  // exclusive prefix of this thread
#pragma unroll
    for (int j = 0; j < ITEMS; ++j) v[j] = run += v[j];
    if (first + ITEMS <= count) *reinterpret_cast<uint4*>(out + first) = make_uint4(v[0], v[1], v[2], v[3]);
    return total;
}

__global__ void __launch_bounds__(THREADS) scan_tiles(const int32_t* X, int32_t* Y, unsigned* sums, int n) {
    const int64_t base = (int64_t)blockIdx.x * TILE;
    const int count = (int)(n - base < TILE ? n - base : TILE);
    const unsigned total = scan_tile(reinterpret_cast<const unsigned*>(X) + base,
                                     reinterpret_cast<unsigned*>(Y) + base, count, 0u);
    if (threadIdx.x == 0) sums[blockIdx.x] = total;
}

__global__ void __launch_bounds__(THREADS) scan_totals(unsigned* sums, int tiles) {
    unsigned carry = 0;
    for (int base = 0; base < tiles; base += TILE) {
        const int count = tiles - base < TILE ? tiles - base : TILE;
        carry += scan_tile(sums + base, sums + base, count, carry);
    }
}

__global__ void add_carry(int32_t* Y, const unsigned* sums, int n) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x + TILE;  // tile 0 has no carry
    if (i < n) Y[i] = (int32_t)((unsigned)Y[i] + sums[i / TILE - 1]);
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
    if (tiles > 1) {
        scan_totals<<<1, THREADS>>>(sums, tiles);
        const int64_t rest = (int64_t)n - TILE;
        add_carry<<<(unsigned)((rest + 255) / 256), 256>>>(Y, sums, n);
    }
}
