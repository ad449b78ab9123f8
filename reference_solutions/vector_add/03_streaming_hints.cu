// vector_add, step 3: step 2 plus cache hints that say "streamed once".
//
// Count first: 12 bytes per element (two reads, one write), no reuse. Step 2 already runs at
// the copy bandwidth on the largest shape, as does torch.add: what is left is how the memory
// system handles a pure stream. Loads are issued as ld.global.nc.L1::no_allocate.L2::256B:
// through the read-only path, not kept in L1, and with a hint that the L2 fetches the whole
// 256-byte block from DRAM (fewer, larger DRAM bursts). Stores are st.global.cs (evict-first),
// so written lines leave L2 first and do not push out lines still being read. Eight float4 per
// thread (four from each input) are in flight before the first add.
// What it buys: a few percent at most (predicted 0-3%); measured in reference_solutions/README.md.
#include <cuda_runtime.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int UNROLL = 4;

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

__global__ void __launch_bounds__(THREADS) add4_kernel(const float4* __restrict__ a, const float4* __restrict__ b,
                                                       float4* __restrict__ c, int64_t n4) {
    int64_t base = (int64_t)blockIdx.x * THREADS * UNROLL + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n4) { x[u] = load_stream(a + i); y[u] = load_stream(b + i); }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
        int64_t i = base + (int64_t)u * THREADS;
        if (i < n4) store_stream(c + i, make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w));
    }
}

__global__ void tail_kernel(const float* a, const float* b, float* c, int64_t start, int64_t n) {
    int64_t i = start + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    int64_t n4 = n / 4;
    if (n4 > 0) {
        int64_t per_block = (int64_t)THREADS * UNROLL;
        unsigned blocks = (unsigned)((n4 + per_block - 1) / per_block);
        add4_kernel<<<blocks, THREADS>>>(reinterpret_cast<const float4*>(A), reinterpret_cast<const float4*>(B),
                                         reinterpret_cast<float4*>(C), n4);
    }
    if (n % 4) tail_kernel<<<1, 4>>>(A, B, C, n4 * 4, n);
}
