// expected: WRONG_ANSWER — a copy of the input (x instead of x * sigmoid(x)): the tolerance must refuse it
#include <cuda_fp16.h>
#include <cuda_runtime.h>
extern "C" void solve(const half* X, half* Y, int n) {
    cudaMemcpyAsync(Y, X, sizeof(half) * (size_t)n, cudaMemcpyDeviceToDevice, 0);
}
