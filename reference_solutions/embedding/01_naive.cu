// embedding, step 1: one thread per output element.
//
// Technique: a flat 64-bit index i over the n_tokens x dim output; t = i / dim, c = i % dim,
// out[i] = table[idx[t] * dim + c]. Consecutive threads copy consecutive halves of a row, so
// both the gathered read and the write coalesce (except where a warp straddles two rows).
// What it buys: correct on every shape, including dims that are not multiples of 8 and
// offsets beyond 2^31. It moves only 2 bytes per thread and pays a 64-bit division per element,
// so it stays well below the copy bandwidth.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

__global__ void embed_kernel(const int32_t* __restrict__ idx, const half* __restrict__ table,
                             half* __restrict__ out, int64_t total, int dim) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int64_t t = i / dim;
    int64_t c = i - t * dim;
    out[i] = table[(int64_t)idx[t] * dim + c];
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    int64_t total = (int64_t)n_tokens * dim;
    const int threads = 256;
    embed_kernel<<<(unsigned)((total + threads - 1) / threads), threads>>>(idx, table, out, total, dim);
}
