// expected: WRONG_ANSWER — GPT-J (interleaved) pairing: rotates (x[2i], x[2i+1]) instead of this problem's rotate-half pairs (x[i], x[i + dim/2]); only dim = 2 agrees
#include <cuda_runtime.h>
#include <cuda_bf16.h>

__global__ void rope_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ cos_t,
                            const float* __restrict__ sin_t, __nv_bfloat16* __restrict__ y,
                            unsigned pairs, unsigned heads, unsigned dim) {
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    const unsigned h = dim / 2;
    const unsigned q = p / h, i = p - q * h, t = q / heads;
    const float c = cos_t[t * h + i], s = sin_t[t * h + i];
    const float x1 = __bfloat162float(x[q * dim + 2 * i]), x2 = __bfloat162float(x[q * dim + 2 * i + 1]);
    y[q * dim + 2 * i] = __float2bfloat16(x1 * c - x2 * s);
    y[q * dim + 2 * i + 1] = __float2bfloat16(x2 * c + x1 * s);
}

extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y,
                      int tokens, int heads, int dim) {
    const unsigned pairs = (unsigned)tokens * heads * (dim / 2);
    rope_kernel<<<(pairs + 255) / 256, 256>>>(X, cos, sin, Y, pairs, heads, dim);
}
