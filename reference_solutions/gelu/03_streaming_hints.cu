// gelu, step 3: step 2 plus cache hints that say "streamed once".
//
// Count first: 8 bytes per fp32 element (read 4, write 4) and ~30 instructions of erff, far
// under the memory time; step 2 and torch both run at the copy bandwidth on the largest shape.
// Loads are issued as ld.global.nc.L1::no_allocate.L2::256B (read-only path, not kept in L1,
// the L2 fetching whole 256-byte blocks from DRAM) and stores as st.global.cs (evict-first), so
// the written stream leaves L2 first and does not push out lines still being read.
// What it buys: a few percent at most (predicted 0-3%); measured in reference_solutions/README.md.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int UNROLL = 4;

__device__ __forceinline__ float gelu(float v) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

__device__ __forceinline__ float4 load_stream(const float4* p) {
    float4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ void store_stream(float4* p, float4 v) {
    asm volatile("st.global.cs.v4.f32 [%0], {%1, %2, %3, %4};" :: "l"(p), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
                 : "memory");
}

__global__ void gelu4_kernel(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4) {
    int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x;
    float4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n4) v[u] = load_stream(x + i);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n4) store_stream(y + i, make_float4(gelu(v[u].x), gelu(v[u].y), gelu(v[u].z), gelu(v[u].w)));
    }
}

__global__ void tail_kernel(const float* x, float* y, int64_t start, int64_t n) {
    int64_t i = start + threadIdx.x;
    if (i < n) y[i] = gelu(x[i]);
}

extern "C" void solve(const float* X, float* Y, int n) {
    int64_t n4 = n / 4;
    if (n4 > 0) {
        int64_t per_block = (int64_t)THREADS * UNROLL;
        unsigned blocks = (unsigned)((n4 + per_block - 1) / per_block);
        gelu4_kernel<<<blocks, THREADS>>>(reinterpret_cast<const float4*>(X),
                                          reinterpret_cast<float4*>(Y), n4);
    }
    if (n % 4) tail_kernel<<<1, 4>>>(X, Y, n4 * 4, n);
}
