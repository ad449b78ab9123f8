// expected: WRONG_ANSWER — rows are copied in whole 8-half (16-byte) chunks only: the last dim % 8 elements of every row are never written
// Deterministic: the first test has dim = 1 (no whole chunk), so its output stays as the
// judge poisoned it (|x| >= 2 or NaN), which is not the table's value.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

__global__ void embed_kernel(const int32_t* __restrict__ idx, const half* __restrict__ table,
                             half* __restrict__ out, int dim) {
    int t = blockIdx.x;
    const half* src = table + (int64_t)idx[t] * dim;
    half* dst = out + (int64_t)t * dim;
    int chunks = dim / 8;  // the dim % 8 tail is forgotten
    bool aligned = dim % 8 == 0;
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
        if (aligned) {
            reinterpret_cast<uint4*>(dst)[c] = reinterpret_cast<const uint4*>(src)[c];
        } else {  // misaligned rows: the same 8-half chunk with scalar accesses
#pragma unroll
            for (int k = 0; k < 8; ++k) dst[8 * c + k] = src[8 * c + k];
        }
    }
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    embed_kernel<<<n_tokens, 128>>>(idx, table, out, dim);
}
