// relu, step 3: step 2 plus cache hints that say "streamed once".
//
// Count first: 4 bytes per fp16 element (read 2, write 2), no reuse; step 2 and torch both run
// at the copy bandwidth on the largest shape. Loads are issued as
// ld.global.nc.L1::no_allocate.L2::256B (read-only path, not kept in L1, the L2 fetching whole
// 256-byte blocks from DRAM) and stores as st.global.cs (evict-first), so the written stream
// leaves L2 first and does not push out lines still being read.
// What it buys: a few percent at most (predicted 0-3%); measured in reference_solutions/README.md.
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int UNROLL = 4;

__device__ __forceinline__ uint4 relu8(uint4 v) {
    __half2* h = reinterpret_cast<__half2*>(&v);
    const __half2 zero = __float2half2_rn(0.f);
#pragma unroll
    for (int k = 0; k < 4; ++k) h[k] = __hmax2(h[k], zero);
    return v;
}

__device__ __forceinline__ uint4 load_stream(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ void store_stream(uint4* p, uint4 v) {
    asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
                 : "memory");
}

__global__ void relu8_kernel(const uint4* __restrict__ x, uint4* __restrict__ y, int64_t n8) {
    int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x;
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n8) v[u] = load_stream(x + i);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n8) store_stream(y + i, relu8(v[u]));
    }
}

__global__ void tail_kernel(const half* x, half* y, int64_t start, int64_t n) {
    int64_t i = start + threadIdx.x;
    if (i < n) y[i] = __hmax(x[i], __float2half(0.f));
}

extern "C" void solve(const half* X, half* Y, int n) {
    int64_t n8 = n / 8;
    if (n8 > 0) {
        int64_t per_block = (int64_t)THREADS * UNROLL;
        unsigned blocks = (unsigned)((n8 + per_block - 1) / per_block);
        relu8_kernel<<<blocks, THREADS>>>(reinterpret_cast<const uint4*>(X),
                                          reinterpret_cast<uint4*>(Y), n8);
    }
    if (n % 8) tail_kernel<<<1, 8>>>(X, Y, n8 * 8, n);
}
