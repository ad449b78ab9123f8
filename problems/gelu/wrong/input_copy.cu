// expected: WRONG_ANSWER — a copy of X: Y = X misses gelu(x) = x·Φ(x) by x·Φ(-x), ~0.2 at |x| ~ 1; only x > ~4.3 is within tolerance, so most elements fail
#include <cuda_runtime.h>
extern "C" void solve(const float* X, float* Y, int n) {
    cudaMemcpyAsync(Y, X, sizeof(float) * (size_t)n, cudaMemcpyDeviceToDevice, 0);
}
