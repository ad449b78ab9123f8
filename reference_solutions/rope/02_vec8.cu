// rope, step 2: eight pairs per thread with 128-bit loads and stores.
//
// Technique: when h = dim/2 is a multiple of 8 (and the pointers are 16-byte aligned: the judge's
// are 256), each half-row X[q, 0:h] and X[q, h:dim] starts on a 16-byte boundary, so a thread
// takes a chunk of 8 pairs: one uint4 (8 bf16) from each half, two float4 from cos[t] and two
// from sin[t], eight rotations in fp32, and two uint4 stores of bf16 pairs rounded with
// __floats2bfloat162_rn. The chunk index runs fastest, then the head, then the token, so a warp
// covers whole rows of consecutive heads of one token: its X loads are fully used 512-byte
// lines and its table loads ask for the same 256 bytes from every head (served by L1). Other
// shapes (h % 8 != 0, or unaligned pointers) take the scalar one-thread-per-pair path of step 1.
// What it buys: an eighth of the memory instructions; X is read once and Y written once, the
// tables (4·tokens·dim bytes, 1/heads of X's traffic) once from DRAM.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int MIN_BLOCKS = 8;  // 8 × 256 threads = a full SM: at most 32 registers per thread

__global__ void __launch_bounds__(THREADS, MIN_BLOCKS) rope_vec8_kernel(const __nv_bfloat16* __restrict__ x,
                                                            const float* __restrict__ cos_t,
                                                            const float* __restrict__ sin_t,
                                                            __nv_bfloat16* __restrict__ y, unsigned chunks,
                                                            unsigned heads, unsigned dim) {
    const unsigned k = blockIdx.x * THREADS + threadIdx.x;
    if (k >= chunks) return;
    const unsigned h = dim / 2, nchunk = h / 8;
    const unsigned q = k / nchunk;          // row: token·heads + head
    const unsigned c8 = (k - q * nchunk) * 8;  // first pair of this chunk
    const unsigned t = q / heads;
    const uint4 a = __ldg(reinterpret_cast<const uint4*>(x + q * dim + c8));
    const uint4 b = __ldg(reinterpret_cast<const uint4*>(x + q * dim + h + c8));
    const float4* cp = reinterpret_cast<const float4*>(cos_t + t * h + c8);
    const float4* sp = reinterpret_cast<const float4*>(sin_t + t * h + c8);
    const float4 c0 = __ldg(cp), c1 = __ldg(cp + 1), s0 = __ldg(sp), s1 = __ldg(sp + 1);
    const float cs[8] = {c0.x, c0.y, c0.z, c0.w, c1.x, c1.y, c1.z, c1.w};
    const float sn[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
    const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a);
    const __nv_bfloat162* b2 = reinterpret_cast<const __nv_bfloat162*>(&b);
    uint4 ya, yb;
    __nv_bfloat162* ya2 = reinterpret_cast<__nv_bfloat162*>(&ya);
    __nv_bfloat162* yb2 = reinterpret_cast<__nv_bfloat162*>(&yb);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        const float2 x1 = __bfloat1622float2(a2[j]), x2 = __bfloat1622float2(b2[j]);
        const float c_lo = cs[2 * j], c_hi = cs[2 * j + 1], s_lo = sn[2 * j], s_hi = sn[2 * j + 1];
        ya2[j] = __floats2bfloat162_rn(x1.x * c_lo - x2.x * s_lo, x1.y * c_hi - x2.y * s_hi);
        yb2[j] = __floats2bfloat162_rn(x2.x * c_lo + x1.x * s_lo, x2.y * c_hi + x1.y * s_hi);
    }
    *reinterpret_cast<uint4*>(y + q * dim + c8) = ya;
    *reinterpret_cast<uint4*>(y + q * dim + h + c8) = yb;
}

// Fallback: one thread per pair (step 1).
__global__ void __launch_bounds__(THREADS) rope_scalar_kernel(const __nv_bfloat16* __restrict__ x,
                                                              const float* __restrict__ cos_t,
                                                              const float* __restrict__ sin_t,
                                                              __nv_bfloat16* __restrict__ y, unsigned pairs,
                                                              unsigned heads, unsigned dim) {
    const unsigned p = blockIdx.x * THREADS + threadIdx.x;
    if (p >= pairs) return;
    const unsigned h = dim / 2;
    const unsigned q = p / h;
    const unsigned i = p - q * h;
    const unsigned t = q / heads;
    const float c = cos_t[t * h + i], s = sin_t[t * h + i];
    const float x1 = __bfloat162float(x[q * dim + i]), x2 = __bfloat162float(x[q * dim + i + h]);
    y[q * dim + i] = __float2bfloat16(x1 * c - x2 * s);
    y[q * dim + i + h] = __float2bfloat16(x2 * c + x1 * s);
}

static bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y,
                      int tokens, int heads, int dim) {
    // tokens·heads·dim < 2^31 (the statement), so every element index fits in 32 bits
    const unsigned h = dim / 2, rows = (unsigned)tokens * heads;
    if (h % 8 == 0 && aligned16(X) && aligned16(Y) && aligned16(cos) && aligned16(sin)) {
        const unsigned chunks = rows * (h / 8);
        rope_vec8_kernel<<<(chunks + THREADS - 1) / THREADS, THREADS>>>(X, cos, sin, Y, chunks, heads, dim);
    } else {
        const unsigned pairs = rows * h;
        rope_scalar_kernel<<<(pairs + THREADS - 1) / THREADS, THREADS>>>(X, cos, sin, Y, pairs, heads, dim);
    }
}
