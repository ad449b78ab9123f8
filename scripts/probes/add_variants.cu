// Variants of a streaming add for the probe: what moves a pure stream on an H100?
#include <cuda_runtime.h>
#include <cstdint>
template <int UNROLL>
__global__ void __launch_bounds__(256) add_unroll(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, int64_t n4) {
    int64_t base = (int64_t)blockIdx.x * 256 * UNROLL + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) { x[u] = a[i]; y[u] = b[i]; } }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) c[i] = make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w); }
}
template <int UNROLL>
__global__ void __launch_bounds__(256) add_persistent(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, int64_t n4) {
    for (int64_t base = (int64_t)blockIdx.x * 256 * UNROLL + threadIdx.x; base < n4; base += (int64_t)gridDim.x * 256 * UNROLL) {
        float4 x[UNROLL], y[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) { x[u] = a[i]; y[u] = b[i]; } }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) c[i] = make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w); }
    }
}
template <int UNROLL>
__global__ void __launch_bounds__(256) add_stcs(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c, int64_t n4) {
    int64_t base = (int64_t)blockIdx.x * 256 * UNROLL + threadIdx.x;
    float4 x[UNROLL], y[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) { x[u] = __ldcs(a + i); y[u] = __ldcs(b + i); } }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) { int64_t i = base + (int64_t)u * 256; if (i < n4) __stcs(c + i, make_float4(x[u].x + y[u].x, x[u].y + y[u].y, x[u].z + y[u].z, x[u].w + y[u].w)); }
}
extern "C" void add_u2(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_unroll<2><<<(n4 + 511) / 512, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
extern "C" void add_u4(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_unroll<4><<<(n4 + 1023) / 1024, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
extern "C" void add_u8(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_unroll<8><<<(n4 + 2047) / 2048, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
extern "C" void add_p4(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_persistent<4><<<132 * 8, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
extern "C" void add_p2(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_persistent<2><<<132 * 8, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
extern "C" void add_cs4(const float* A, const float* B, float* C, int64_t n) { int64_t n4 = n / 4; add_stcs<4><<<(n4 + 1023) / 1024, 256>>>((const float4*)A, (const float4*)B, (float4*)C, n4); }
