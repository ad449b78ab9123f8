// expected: WRONG_ANSWER — all zeros: swish(x) for x ~ 4·randn is below atol 1e-5 only for x < ~-15: almost every element fails
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* X, half* Y, int n) {
    cudaMemsetAsync(Y, 0, sizeof(half) * (size_t)n, 0);
}
