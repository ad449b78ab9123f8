// expected: WRONG_ANSWER — all zeros: the exact check: the gathered table rows are randn values, not zeros
#include <cuda_runtime.h>
#include <cstdint>
#include <cuda_fp16.h>
extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    cudaMemsetAsync(out, 0, sizeof(half) * (size_t)n_tokens * dim, 0);
}
