// expected: WRONG_ANSWER — a copy of X: Y = X is the scan only at n = 1; from n = 2 on the running sums differ (exact check)
#include <cuda_runtime.h>
#include <cstdint>
extern "C" void solve(const int32_t* X, int32_t* Y, int n) {
    cudaMemcpyAsync(Y, X, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToDevice, 0);
}
