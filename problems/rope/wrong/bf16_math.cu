// expected: WRONG_ANSWER — rotation in bf16 arithmetic (tables rounded to bf16, __hmul/__hsub): the two products are rounded to 8 bits before they cancel, so outputs near zero miss by far more than the 1e-2 relative tolerance (~6% of them)
#include <cuda_runtime.h>
#include <cuda_bf16.h>

__global__ void rope_kernel(const __nv_bfloat16* __restrict__ x, const float* __restrict__ cos_t,
                            const float* __restrict__ sin_t, __nv_bfloat16* __restrict__ y,
                            unsigned pairs, unsigned heads, unsigned dim) {
    const unsigned p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= pairs) return;
    const unsigned h = dim / 2;
    const unsigned q = p / h, i = p - q * h, t = q / heads;
    const __nv_bfloat16 c = __float2bfloat16(cos_t[t * h + i]), s = __float2bfloat16(sin_t[t * h + i]);
    const __nv_bfloat16 x1 = x[q * dim + i], x2 = x[q * dim + i + h];
    y[q * dim + i] = __hsub(__hmul(x1, c), __hmul(x2, s));
    y[q * dim + i + h] = __hadd(__hmul(x2, c), __hmul(x1, s));
}

extern "C" void solve(const __nv_bfloat16* X, const float* cos, const float* sin, __nv_bfloat16* Y,
                      int tokens, int heads, int dim) {
    const unsigned pairs = (unsigned)tokens * heads * (dim / 2);
    rope_kernel<<<(pairs + 255) / 256, 256>>>(X, cos, sin, Y, pairs, heads, dim);
}
