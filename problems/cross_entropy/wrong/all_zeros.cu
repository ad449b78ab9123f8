// expected: WRONG_ANSWER — all zeros: the loss log Σ exp(x) - x[target] is exactly 0 only at vocab = 1; with logits ~ 32·randn it is ~10-200 on almost every row from vocab = 1000 on, far beyond atol 1e-4
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
extern "C" void solve(const __nv_bfloat16* logits, const int64_t* targets, float* loss, int rows, int vocab) {
    cudaMemsetAsync(loss, 0, sizeof(float) * (size_t)rows, 0);
}
