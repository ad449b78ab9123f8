// expected: WRONG_ANSWER — the table row is located at idx[t] * n_tokens instead of idx[t] * dim: every token but those of id 0 reads the wrong elements once n_tokens != dim
// Deterministic: the first test (n_tokens = dim = 1) passes; the second (n_tokens 5, dim 7)
// reads table[idx * 5 + c] instead of table[idx * 7 + c] (in bounds, since n_tokens < dim):
// wrong unless all 5 ids are 0 (probability 32000^-5).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

__global__ void embed_kernel(const int32_t* __restrict__ idx, const half* __restrict__ table,
                             half* __restrict__ out, int n_tokens, int dim) {
    int t = blockIdx.x;
    const half* src = table + (int64_t)idx[t] * n_tokens;  // should be * dim
    for (int c = threadIdx.x; c < dim; c += blockDim.x) out[(int64_t)t * dim + c] = src[c];
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    embed_kernel<<<n_tokens, 128>>>(idx, table, out, n_tokens, dim);
}
