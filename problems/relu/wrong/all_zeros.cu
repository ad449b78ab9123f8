// expected: WRONG_ANSWER — all zeros: the exact check: every positive input (half of them) must be kept, and it is not zero
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* X, half* Y, int n) {
    cudaMemsetAsync(Y, 0, sizeof(half) * (size_t)n, 0);
}
