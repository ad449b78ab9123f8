// expected: WRONG_ANSWER — all zeros: the exact check: n >= 1 values land in some bins, whose counts are >= 1
#include <cuda_runtime.h>
#include <cstdint>
extern "C" void solve(const int32_t* X, int32_t* counts, int n) {
    cudaMemsetAsync(counts, 0, sizeof(int32_t) * 256, 0);
}
