// expected: WRONG_ANSWER — all zeros: a, b ~ U[0, 1): the dot is ~n/4 > 0 (n = 1: ~0.25), far above atol 1e-5 + rtol 1e-4
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* a, const half* b, float* out, int n) {
    cudaMemsetAsync(out, 0, sizeof(float) * 1, 0);
}
