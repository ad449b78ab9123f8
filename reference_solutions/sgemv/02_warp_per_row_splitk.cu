// sgemv, step 2: coalesced float4 loads, with the thread layout chosen by the shape.
//
// Technique: a GEMV reads every byte of A once, so it is memory-bound; the work is to keep
// enough loads in flight on every SM whatever M and K are. Three kernels:
//  - warp per row (the general case, e.g. 16384x16384): lane l reads float4 l, l+32, ... of
//    its row (every warp load is 512 contiguous bytes), 4 independent float4 loads per lane per
//    iteration, then 5 __shfl_xor_sync steps add the 32 lane sums.
//  - several rows per warp (tiny K, e.g. K = 16): G = 4 lanes per row read its 4 float4s, 8
//    rows per warp, and each lane handles 4 rows of the warp's 32 so 4 loads are in flight; the
//    group reduces with log2(G) shuffle steps. A warp per row would leave 28 lanes idle.
//  - split-K (few rows, long K, e.g. 128 x 2^20): 128 warps cannot fill 132 SMs, so each row is
//    cut into chunks of 16384 floats, one 256-thread block per (chunk, row) writes a partial
//    sum to a static __device__ array, and a second small kernel adds each row's partials in a
//    fixed order (no atomics: the same bits on every run).
// A is read with __ldcs (streamed, evict first) and x with __ldg (kept in L1/L2: every row
// reuses it). Float4 needs K % 4 == 0 (every row then starts 16-byte aligned, pointers are
// 256-byte aligned); otherwise each kernel uses scalar loads with the same layout.
#include <cuda_runtime.h>
#include <cstdint>

constexpr unsigned FULL = 0xffffffffu;
constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int STEPS = 4;         // rows per lane in the several-rows-per-warp kernel
constexpr int CHUNK = 16384;     // floats of a row per block in split-K (a multiple of 4)
constexpr int MAX_PARTIALS = 1 << 18;

__device__ float g_partial[MAX_PARTIALS];

__device__ __forceinline__ float dot4(float4 a, float4 b, float acc) {
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
    acc = fmaf(a.z, b.z, acc);
    return fmaf(a.w, b.w, acc);
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL, v, o);
    return v;
}

// ---- tiny K: G lanes per row, 32/G rows per warp ------------------------------------------
// VEC: K % 4 == 0 and K/4 <= G (one float4 per lane per row); else K <= G (one float per lane).
template <int G, bool VEC>
__global__ void __launch_bounds__(THREADS) gemv_rows_per_warp(const float* __restrict__ A,
                                                              const float* __restrict__ x,
                                                              float* __restrict__ y, int M, int K) {
    constexpr int RPW = 32 / G;  // rows per warp per step
    const int lane = threadIdx.x & 31, l = lane % G;
    const int64_t warp = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    const int64_t first = warp * (RPW * STEPS) + lane / G;  // this group's row in step 0
    float acc[STEPS];
    if (VEC) {
        const bool on = l < (K >> 2);
        const float4 xv = on ? __ldg(reinterpret_cast<const float4*>(x) + l) : make_float4(0.f, 0.f, 0.f, 0.f);
        float4 av[STEPS];
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {  // all loads first: STEPS in flight per lane
            const int64_t row = first + s * RPW;
            av[s] = on && row < M ? __ldcs(reinterpret_cast<const float4*>(A + row * K) + l)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
        }
#pragma unroll
        for (int s = 0; s < STEPS; ++s) acc[s] = dot4(av[s], xv, 0.f);
    } else {
        const bool on = l < K;
        const float xs = on ? __ldg(x + l) : 0.f;
        float as[STEPS];
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
            const int64_t row = first + s * RPW;
            as[s] = on && row < M ? __ldcs(A + row * K + l) : 0.f;
        }
#pragma unroll
        for (int s = 0; s < STEPS; ++s) acc[s] = as[s] * xs;
    }
#pragma unroll
    for (int o = G / 2; o > 0; o >>= 1) {  // xor within aligned groups of G lanes
#pragma unroll
        for (int s = 0; s < STEPS; ++s) acc[s] += __shfl_xor_sync(FULL, acc[s], o);
    }
    if (l == 0) {
#pragma unroll
        for (int s = 0; s < STEPS; ++s) {
            const int64_t row = first + s * RPW;
            if (row < M) y[row] = acc[s];
        }
    }
}

// ---- general case: one warp per row ----------------------------------------------------------
template <bool VEC>
__global__ void __launch_bounds__(THREADS) gemv_warp_per_row(const float* __restrict__ A,
                                                             const float* __restrict__ x,
                                                             float* __restrict__ y, int M, int K) {
    const int lane = threadIdx.x & 31;
    const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    if (row >= M) return;  // warp-uniform
    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    if (VEC) {
        const float4* a = reinterpret_cast<const float4*>(A + row * K);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int n4 = K >> 2;
        int k = lane;
        for (; k + 96 < n4; k += 128) {
            const float4 a0 = __ldcs(a + k), a1 = __ldcs(a + k + 32), a2 = __ldcs(a + k + 64), a3 = __ldcs(a + k + 96);
            const float4 x0 = __ldg(x4 + k), x1 = __ldg(x4 + k + 32), x2 = __ldg(x4 + k + 64), x3 = __ldg(x4 + k + 96);
            acc0 = dot4(a0, x0, acc0);
            acc1 = dot4(a1, x1, acc1);
            acc2 = dot4(a2, x2, acc2);
            acc3 = dot4(a3, x3, acc3);
        }
        for (; k < n4; k += 32) acc0 = dot4(__ldcs(a + k), __ldg(x4 + k), acc0);
    } else {
        const float* a = A + row * K;
        int k = lane;
        for (; k + 96 < K; k += 128) {
            const float a0 = __ldcs(a + k), a1 = __ldcs(a + k + 32), a2 = __ldcs(a + k + 64), a3 = __ldcs(a + k + 96);
            acc0 = fmaf(a0, __ldg(x + k), acc0);
            acc1 = fmaf(a1, __ldg(x + k + 32), acc1);
            acc2 = fmaf(a2, __ldg(x + k + 64), acc2);
            acc3 = fmaf(a3, __ldg(x + k + 96), acc3);
        }
        for (; k < K; k += 32) acc0 = fmaf(__ldcs(a + k), __ldg(x + k), acc0);
    }
    const float acc = warp_sum((acc0 + acc1) + (acc2 + acc3));
    if (lane == 0) y[row] = acc;
}

// ---- few rows, long K: split K across blocks -------------------------------------------------
template <bool VEC>
__global__ void __launch_bounds__(THREADS) gemv_split(const float* __restrict__ A,
                                                      const float* __restrict__ x, int K, int splits) {
    __shared__ float warp_sums[WARPS];
    const int64_t row = blockIdx.y;
    const int s = blockIdx.x;
    const int k0 = s * CHUNK, k1 = min(K, k0 + CHUNK);
    float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;
    if (VEC) {
        const float4* a = reinterpret_cast<const float4*>(A + row * K);
        const float4* x4 = reinterpret_cast<const float4*>(x);
        const int end = k1 >> 2;
        int k = (k0 >> 2) + threadIdx.x;
        for (; k + 3 * THREADS < end; k += 4 * THREADS) {
            const float4 a0 = __ldcs(a + k), a1 = __ldcs(a + k + THREADS), a2 = __ldcs(a + k + 2 * THREADS),
                         a3 = __ldcs(a + k + 3 * THREADS);
            const float4 x0 = __ldg(x4 + k), x1 = __ldg(x4 + k + THREADS), x2 = __ldg(x4 + k + 2 * THREADS),
                         x3 = __ldg(x4 + k + 3 * THREADS);
            acc0 = dot4(a0, x0, acc0);
            acc1 = dot4(a1, x1, acc1);
            acc2 = dot4(a2, x2, acc2);
            acc3 = dot4(a3, x3, acc3);
        }
        for (; k < end; k += THREADS) acc0 = dot4(__ldcs(a + k), __ldg(x4 + k), acc0);
    } else {
        const float* a = A + row * K;
        int k = k0 + threadIdx.x;
        for (; k + 3 * THREADS < k1; k += 4 * THREADS) {
            const float a0 = __ldcs(a + k), a1 = __ldcs(a + k + THREADS), a2 = __ldcs(a + k + 2 * THREADS),
                        a3 = __ldcs(a + k + 3 * THREADS);
            acc0 = fmaf(a0, __ldg(x + k), acc0);
            acc1 = fmaf(a1, __ldg(x + k + THREADS), acc1);
            acc2 = fmaf(a2, __ldg(x + k + 2 * THREADS), acc2);
            acc3 = fmaf(a3, __ldg(x + k + 3 * THREADS), acc3);
        }
        for (; k < k1; k += THREADS) acc0 = fmaf(__ldcs(a + k), __ldg(x + k), acc0);
    }
    float v = warp_sum((acc0 + acc1) + (acc2 + acc3));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(lane < WARPS ? warp_sums[lane] : 0.f);
        if (lane == 0) g_partial[row * splits + s] = v;
    }
}

// One warp per row adds the row's partial sums in a fixed order.
__global__ void __launch_bounds__(THREADS) gemv_split_finish(float* __restrict__ y, int M, int splits) {
    const int lane = threadIdx.x & 31;
    const int64_t row = ((int64_t)blockIdx.x * THREADS + threadIdx.x) >> 5;
    if (row >= M) return;
    float acc = 0.f;
    for (int s = lane; s < splits; s += 32) acc += g_partial[row * splits + s];
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

template <int G>
static void launch_rows_per_warp(bool vec, const float* A, const float* x, float* y, int M, int K) {
    constexpr int rows_per_block = (32 / G) * STEPS * WARPS;
    const unsigned blocks = (unsigned)(((int64_t)M + rows_per_block - 1) / rows_per_block);
    if (vec) gemv_rows_per_warp<G, true><<<blocks, THREADS>>>(A, x, y, M, K);
    else gemv_rows_per_warp<G, false><<<blocks, THREADS>>>(A, x, y, M, K);
}

extern "C" void solve(const float* A, const float* x, float* y, int M, int K) {
    static int sms = 0;
    if (!sms) {
        int dev = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (sms <= 0) sms = 132;
    }
    const bool vec = K % 4 == 0;
    const int lanes = vec ? K / 4 : K;  // float4s (or floats) per row
    if (lanes <= 32) {  // tiny K: the smallest power-of-two group of lanes that covers a row
        const int G = lanes <= 1 ? 1 : lanes <= 2 ? 2 : lanes <= 4 ? 4 : lanes <= 8 ? 8 : lanes <= 16 ? 16 : 32;
        switch (G) {
            case 1: launch_rows_per_warp<1>(vec, A, x, y, M, K); break;
            case 2: launch_rows_per_warp<2>(vec, A, x, y, M, K); break;
            case 4: launch_rows_per_warp<4>(vec, A, x, y, M, K); break;
            case 8: launch_rows_per_warp<8>(vec, A, x, y, M, K); break;
            case 16: launch_rows_per_warp<16>(vec, A, x, y, M, K); break;
            default: launch_rows_per_warp<32>(vec, A, x, y, M, K); break;
        }
        return;
    }
    const int splits = (K + CHUNK - 1) / CHUNK;
    // Fewer rows than ~16 warps per SM and at least two chunks per row: split K.
    if (M < 16 * sms && splits >= 2 && (int64_t)M * splits <= MAX_PARTIALS) {
        dim3 grid(splits, M);
        if (vec) gemv_split<true><<<grid, THREADS>>>(A, x, K, splits);
        else gemv_split<false><<<grid, THREADS>>>(A, x, K, splits);
        gemv_split_finish<<<(M + WARPS - 1) / WARPS, THREADS>>>(y, M, splits);
        return;
    }
    const unsigned blocks = (unsigned)(((int64_t)M + WARPS - 1) / WARPS);
    if (vec) gemv_warp_per_row<true><<<blocks, THREADS>>>(A, x, y, M, K);
    else gemv_warp_per_row<false><<<blocks, THREADS>>>(A, x, y, M, K);
}
