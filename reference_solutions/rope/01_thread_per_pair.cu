// rope, step 1: one thread per rotated pair, scalar loads.
//
// Technique: thread p of the tokens·heads·(dim/2) pairs takes i = p % h (h = dim/2) and the row
// q = p / h (q = t·heads + head, so the token is t = q / heads), reads x1 = X[q, i] and
// x2 = X[q, i + h] and the token's cos[t, i], sin[t, i], rotates in fp32 and rounds each output
// once to bf16. Consecutive threads touch consecutive i, so every load and store coalesces (two
// 2-byte streams per row); the tables, shared by every head of a token, come mostly from L1/L2.
// 32-bit unsigned index math (tokens·heads·dim < 2^31 by the statement): a 64-bit division
// compiles to a slow subroutine call, a 32-bit one to ~20 instructions.
// What it buys: correct for every dim and alignment; limited by the number of 2-byte memory
// instructions rather than by DRAM.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>

__global__ void rope_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ cos_t,
                            const float* __restrict__ sin_t, __nv_bfloat16* __restrict__ y,
                            unsigned pairs, unsigned heads, unsigned dim) {
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    const unsigned h = dim / 2;
    const unsigned q = p / h;
    const unsigned i = p - q * h;
    const unsigned t = q / heads;
    const float c = cos_t[t * h + i], s = sin_t[t * h + i];
    const __nv_bfloat16* row = x + q * dim;
    const float x1 = __bfloat162float(row[i]), x2 = __bfloat162float(row[i + h]);
    y[q * dim + i] = __float2bfloat16(x1 * c - x2 * s);
    y[q * dim + i + h] = __float2bfloat16(x2 * c + x1 * s);
}

extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y,
                      int tokens, int heads, int dim) {
    const unsigned pairs = (unsigned)tokens * heads * (dim / 2);
    const unsigned threads = 256;
    rope_kernel<<<(pairs + threads - 1) / threads, threads>>>(X, cos, sin, Y, pairs, heads, dim);
}
