// expected: WRONG_ANSWER — one thread per chunk of 8 pairs, h / 8 chunks per row (rounded down): when h = dim/2 is not a multiple of 8 the last h % 8 pairs of every row are never written (dim = 2 and 14: nothing is)
#include <cuda_runtime.h>
#include <cuda_bf16.h>

__global__ void rope_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ cos_t,
                            const float* __restrict__ sin_t, __nv_bfloat16* __restrict__ y,
                            unsigned chunks, unsigned heads, unsigned dim) {
    const unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= chunks) return;
    const unsigned h = dim / 2, nchunk = h / 8;  // BUG: should be (h + 7) / 8 with a bound check
    const unsigned q = k / nchunk, c8 = (k - q * nchunk) * 8, t = q / heads;
#pragma unroll
    for (unsigned i = c8; i < c8 + 8; ++i) {
        const float c = cos_t[t * h + i], s = sin_t[t * h + i];
        const float x1 = __bfloat162float(x[q * dim + i]), x2 = __bfloat162float(x[q * dim + i + h]);
        y[q * dim + i] = __float2bfloat16(x1 * c - x2 * s);
        y[q * dim + i + h] = __float2bfloat16(x2 * c + x1 * s);
    }
}

extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y,
                      int tokens, int heads, int dim) {
    const unsigned chunks = (unsigned)tokens * heads * (dim / 2 / 8);
    if (chunks == 0) return;
    rope_kernel<<<(chunks + 255) / 256, 256>>>(X, cos, sin, Y, chunks, heads, dim);
}
