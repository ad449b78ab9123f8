// expected: WRONG_ANSWER — all zeros: the exact check: the running sums of randint(-1000, 1001) values are nonzero almost everywhere
#include <cuda_runtime.h>
#include <cstdint>
extern "C" void solve(const int32_t* X, int32_t* Y, int n) {
    cudaMemsetAsync(Y, 0, sizeof(int32_t) * (size_t)n, 0);
}
