// softmax, step 3: the row stays in registers, so X is read from DRAM exactly once.
//
// Count first: softmax must read X once and write Y once, 8 bytes per element. Step 2 reads X
// twice (statistics, then output); the second read hits L2 only while the row is still there,
// and at 65536×4096 it mostly is not: 12 bytes per element moved for 8 counted, so step 2 sat
// at ~77% of the copy bandwidth. Here each thread loads its share of the row into registers
// (NV float4 per thread, NV ≤ 8 chosen at run time from cols), reduces the row's (max, Σexp)
// pair across the group with warp shuffles (and one shared-memory step when the group is more
// than a warp), then writes exp(x - max)/Σ from the same registers. Group size by row length:
// a warp per row up to 1024 columns (several rows per block), 256 threads up to 8192, 1024 up
// to 32768. Loads use the streaming hint (__ldcs: read once, evict first) and stores __stcs,
// so neither pollutes L2 for the rows still being read.
// Rows that are not a multiple of 4 floats, or longer than 32768, take step 2's two-pass path.
// What it buys: 12 → 8 bytes per element at 65536×4096: predicted ~77% → ~95% of copy, measured
// 97.9% (2.55× torch.softmax); 97.6% on 32768-float rows, 93.6% on 1024-float rows.
#include <cuda_runtime.h>
#include <cmath>

struct MS { float m, s; };

__device__ __forceinline__ MS combine(MS a, MS b) {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.f};
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

__device__ __forceinline__ MS push(MS a, float v) {
    if (v > a.m) return {v, a.s * __expf(a.m - v) + 1.f};
    return {a.m, a.s + __expf(v - a.m)};
}

__device__ __forceinline__ MS warp_reduce(MS v) {
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
        MS other{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)};
        v = combine(v, other);
    }
    return v;
}

// G threads per row (G = 32, 256 or 1024); a block of max(G, 256) threads holds 256/G rows
// when G < 256. NV: float4 per thread; the row has cols4 ≤ G·NV float4.
template <int G, int NV>
__global__ void __launch_bounds__(G < 256 ? 256 : G)
softmax_regs(const float* __restrict__ x, float* __restrict__ y, int rows, int cols4) {
    constexpr int BLOCK = G < 256 ? 256 : G;
    constexpr int WARPS_PER_ROW = G / 32;
    __shared__ MS scratch[BLOCK / 32];
    const int lane = threadIdx.x % G;
    const long long row = (long long)blockIdx.x * (BLOCK / G) + threadIdx.x / G;
    const bool live = row < rows;  // no early return: the block may synchronise below
    const float4* in = reinterpret_cast<const float4*>(x) + row * cols4;
    float4* out = reinterpret_cast<float4*>(y) + row * cols4;

    float4 v[NV];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        int j = lane + k * G;
        if (live && j < cols4) {
            v[k] = __ldcs(in + j);
            m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        } else {
            v[k] = make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
        }
    }
    float s = 0.f;
    if (m != -INFINITY) {
#pragma unroll
        for (int k = 0; k < NV; ++k)
            s += __expf(v[k].x - m) + __expf(v[k].y - m) + __expf(v[k].z - m) + __expf(v[k].w - m);
    }
    MS t = warp_reduce(MS{m, s});
    if (WARPS_PER_ROW > 1) {
        const int warp = threadIdx.x / 32, first = (threadIdx.x / G) * WARPS_PER_ROW;
        if (threadIdx.x % 32 == 0) scratch[warp] = t;
        __syncthreads();
        t = threadIdx.x % 32 < WARPS_PER_ROW ? scratch[first + threadIdx.x % 32] : MS{-INFINITY, 0.f};
        t = warp_reduce(t);
    }
    if (!live) return;
    const float inv = 1.f / t.s;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        int j = lane + k * G;
        if (j < cols4)
            __stcs(out + j, make_float4(__expf(v[k].x - t.m) * inv, __expf(v[k].y - t.m) * inv,
                                        __expf(v[k].z - t.m) * inv, __expf(v[k].w - t.m) * inv));
    }
}

template <int G, int NV>
static void launch_regs(const float* X, float* Y, int rows, int cols4) {
    constexpr int BLOCK = G < 256 ? 256 : G;
    unsigned blocks = (unsigned)((rows + BLOCK / G - 1) / (BLOCK / G));
    softmax_regs<G, NV><<<blocks, BLOCK>>>(X, Y, rows, cols4);
}

template <int G>
static void dispatch_nv(const float* X, float* Y, int rows, int cols4) {
    switch ((cols4 + G - 1) / G) {
        case 1: launch_regs<G, 1>(X, Y, rows, cols4); break;
        case 2: launch_regs<G, 2>(X, Y, rows, cols4); break;
        case 3: launch_regs<G, 3>(X, Y, rows, cols4); break;
        case 4: launch_regs<G, 4>(X, Y, rows, cols4); break;
        case 5: launch_regs<G, 5>(X, Y, rows, cols4); break;
        case 6: launch_regs<G, 6>(X, Y, rows, cols4); break;
        case 7: launch_regs<G, 7>(X, Y, rows, cols4); break;
        default: launch_regs<G, 8>(X, Y, rows, cols4); break;
    }
}

// Step 2's path, for rows of any length: online (max, Σexp) in one read, a second read to write.
template <int THREADS>
__global__ void __launch_bounds__(THREADS) softmax_two_pass(const float* __restrict__ x,
                                                            float* __restrict__ y, int cols) {
    __shared__ MS scratch[32];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    MS acc{-INFINITY, 0.f};
    for (int j = threadIdx.x; j < cols; j += THREADS) acc = push(acc, row[j]);
    MS t = warp_reduce(acc);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = t;
    __syncthreads();
    t = threadIdx.x % 32 < THREADS / 32 ? scratch[threadIdx.x % 32] : MS{-INFINITY, 0.f};
    t = warp_reduce(t);
    const float inv = 1.f / t.s;
    for (int j = threadIdx.x; j < cols; j += THREADS) out[j] = __expf(row[j] - t.m) * inv;
}

extern "C" void solve(const float* X, float* Y, int rows, int cols) {
    if (rows <= 0 || cols <= 0) return;
    const int cols4 = cols / 4;
    if (cols % 4 != 0 || cols4 > 1024 * 8) {
        if (cols <= 1024) softmax_two_pass<128><<<rows, 128>>>(X, Y, cols);
        else softmax_two_pass<512><<<rows, 512>>>(X, Y, cols);
    } else if (cols4 <= 32 * 8) {
        dispatch_nv<32>(X, Y, rows, cols4);
    } else if (cols4 <= 256 * 8) {
        dispatch_nv<256>(X, Y, rows, cols4);
    } else {
        dispatch_nv<1024>(X, Y, rows, cols4);
    }
}
