// prefix_sum, step 2: single-pass scan with decoupled look-back, 32 elements per thread.
//
// Technique: one pass over memory, 8 bytes per element (read X, write Y), with the carry
// between tiles passed through per-tile status words instead of a second pass.
//  - Tiles of 8192 elements, one per 256-thread block. A block takes its tile index from a
//    global atomicAdd counter, not from blockIdx: tiles then start in index order, so every
//    tile a block waits on is already running (or done) and never waits on a later one: no
//    deadlock whatever order the hardware schedules blocks in.
//  - Loads: each warp owns 1024 consecutive elements as 8 rows of 32 int4; lane l holds int4 l of
//    every row (every load instruction reads 512 contiguous bytes, streamed with __ldcs). The
//    warp scans row by row: the thread's 4 values, a 5-step __shfl_up_sync scan of the 32
//    thread sums, and a carry of earlier rows (row totals broadcast from lane 31). Warp totals
//    go through shared memory; each thread adds the totals of earlier warps.
//  - Status word of tile t, 64 bits: flag in the high half (0 = not ready, 1 = aggregate only,
//    2 = inclusive prefix), value in the low half. Packing makes each publication a single
//    64-bit store, so a reader never sees a flag with a stale value.
//  - Warp 0 of tile t publishes the tile's aggregate (flag 1) at once, then looks back: its 32
//    lanes read the status of tiles t-1 .. t-32, spin until none is 0, find the nearest tile
//    holding an inclusive prefix with __ballot_sync, and add the values up to it (if none, add
//    all 32 aggregates and step 32 tiles back). Then it publishes its own inclusive prefix
//    (flag 2) and broadcasts the exclusive prefix to the block through shared memory.
//  - Memory model: status words are written with st.release.gpu and read with ld.acquire.gpu
//    (PTX, sm_70+): morally strong accesses at GPU scope, never served stale from L1. Since the
//    value travels inside the flag's own word, relaxed would already be enough; release/acquire
//    costs little and keeps the code correct if more data is ever published with the flag.
//  - Scratch (counter + one status word per tile) is a static cudaMalloc'd buffer, grown when n
//    needs more tiles, and zeroed by one cudaMemsetAsync on the default stream before every
//    scan (8 bytes per 8192 elements: 0.1% of the traffic).
//  - Tile size, measured on an H100 (judge submit, n = 2^28): 4 int4 per thread (4096-element
//    tiles, 40 registers) 2.08 TB/s = 0.99x torch.cumsum (CUB); 8 int4 (8192, 64 registers)
//    2.34 TB/s = 1.11x; 16 int4 (16384, 106 registers) 2.40 TB/s but slower than 8 at 2^25.
//    Twice the bytes in flight per thread, and half the tiles to look back over.
// Sums are unsigned: int32 addition wrapping modulo 2^32 without signed-overflow UB.
#include <cuda_runtime.h>
#include <cstdint>

constexpr unsigned FULL = 0xffffffffu;
constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int ROWS = 8;                    // int4 per thread
constexpr int TILE = THREADS * ROWS * 4;   // 8192 elements
constexpr size_t STATUS_OFFSET = 256;      // bytes: the counter, then the status words
constexpr unsigned long long FLAG_AGGREGATE = 1ull << 32, FLAG_PREFIX = 2ull << 32;

__device__ __forceinline__ void store_release(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned long long load_acquire(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.acquire.gpu.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned warp_sum(unsigned v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

// Run by all 32 lanes of warp 0 of tile `tile` >= 1: the sum of every element before the tile.
__device__ unsigned look_back(const unsigned long long* status, unsigned tile, int lane) {
    unsigned exclusive = 0;
    int64_t i = (int64_t)tile - 1 - lane;  // lane 0 reads the nearest predecessor
    while (true) {
        unsigned long long s;
        do {  // before tile 0 there is nothing: an inclusive prefix of 0
            s = i >= 0 ? load_acquire(status + i) : FLAG_PREFIX;
        } while (__any_sync(FULL, (s >> 32) == 0));
        const unsigned value = (unsigned)s;
        const unsigned prefixes = __ballot_sync(FULL, (s >> 32) == 2);
        if (prefixes) {
            const int nearest = __ffs(prefixes) - 1;
            return exclusive + warp_sum(lane <= nearest ? value : 0u);
        }
        exclusive += warp_sum(value);  // 32 aggregates, no prefix yet: keep walking back
        i -= 32;
    }
}

__global__ void __launch_bounds__(THREADS) scan_kernel(const int32_t* __restrict__ X, int32_t* __restrict__ Y,
                                                       int n, unsigned* counter, unsigned long long* status) {
    __shared__ unsigned s_tile, s_exclusive;
    __shared__ unsigned s_warp_total[WARPS];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) s_tile = atomicAdd(counter, 1u);
    __syncthreads();
    const unsigned tile = s_tile;
    const int64_t base = (int64_t)tile * TILE;
    const bool full = base + TILE <= n;
    const int64_t first4 = base / 4 + warp * (ROWS * 32) + lane;  // int4 index of row 0

    unsigned v[ROWS][4];
    if (full) {
        const int4* x4 = reinterpret_cast<const int4*>(X);
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const int4 q = __ldcs(x4 + first4 + r * 32);
            v[r][0] = q.x; v[r][1] = q.y; v[r][2] = q.z; v[r][3] = q.w;
        }
    } else {  // the last tile: element by element, zeros past n
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int64_t e = (first4 + r * 32) * 4 + c;
                v[r][c] = e < n ? (unsigned)X[e] : 0u;
            }
    }

    // Scan the warp's rows; the ROWS shuffle scans are independent, so they interleave.
    unsigned sum[ROWS], incl[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        sum[r] = v[r][0] + v[r][1] + v[r][2] + v[r][3];
        incl[r] = sum[r];
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
            const unsigned t = __shfl_up_sync(FULL, incl[r], d);
            if (lane >= d) incl[r] += t;
        }
    }
    unsigned carry = 0;  // sum of the warp's earlier rows (the same in every lane)
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        unsigned run = carry + incl[r] - sum[r];  // everything in the warp before v[r][0]
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            run += v[r][c];
            v[r][c] = run;
        }
        carry += __shfl_sync(FULL, incl[r], 31);
    }
    if (lane == 0) s_warp_total[warp] = carry;
    __syncthreads();
    unsigned before_warp = 0, aggregate = 0;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) {
        const unsigned t = s_warp_total[w];
        before_warp += w < warp ? t : 0u;
        aggregate += t;
    }

    if (warp == 0) {
        unsigned exclusive = 0;
        if (tile == 0) {
            if (lane == 0) store_release(status, FLAG_PREFIX | aggregate);
        } else {
            if (lane == 0) store_release(status + tile, FLAG_AGGREGATE | aggregate);
            exclusive = look_back(status, tile, lane);
            if (lane == 0) store_release(status + tile, FLAG_PREFIX | (unsigned)(exclusive + aggregate));
        }
        if (lane == 0) s_exclusive = exclusive;
    }
    __syncthreads();
    const unsigned offset = s_exclusive + before_warp;

    if (full) {
        int4* y4 = reinterpret_cast<int4*>(Y);
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
            __stcs(y4 + first4 + r * 32, make_int4((int)(v[r][0] + offset), (int)(v[r][1] + offset),
                                                   (int)(v[r][2] + offset), (int)(v[r][3] + offset)));
    } else {
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                const int64_t e = (first4 + r * 32) * 4 + c;
                if (e < n) Y[e] = (int32_t)(v[r][c] + offset);
            }
    }
}

extern "C" void solve(const int32_t* X, int32_t* Y, int n) {
    static unsigned char* scratch = nullptr;
    static size_t capacity = 0;
    const unsigned tiles = (unsigned)(((int64_t)n + TILE - 1) / TILE);
    const size_t bytes = STATUS_OFFSET + (size_t)tiles * sizeof(unsigned long long);
    if (bytes > capacity) {
        if (scratch) cudaFree(scratch);
        cudaMalloc(&scratch, bytes);
        capacity = bytes;
    }
    cudaMemsetAsync(scratch, 0, bytes, 0);  // counter = 0, every status "not ready"
    scan_kernel<<<tiles, THREADS>>>(X, Y, n, reinterpret_cast<unsigned*>(scratch),
                                    reinterpret_cast<unsigned long long*>(scratch + STATUS_OFFSET));
}
