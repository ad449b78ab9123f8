// expected: WRONG_ANSWER — counts[x]++ in global memory is a read-modify-write race: threads that increment the same bin at once lose updates
// Deterministic: with 256 bins, a warp of 32 uniform values repeats a bin with probability
// ~86%, and the duplicate lanes of one store instruction write the same old + 1, so one
// increment is lost per duplicate. By n = 1000 (31 warps) a lost count is certain (the
// chance of no duplicate anywhere is ~1e-26); on n >= 1e6, thousands are lost between warps too.
#include <cuda_runtime.h>
#include <cstdint>

__global__ void hist_kernel(const int32_t* x, int32_t* counts, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) counts[x[i]]++;  // should be atomicAdd(&counts[x[i]], 1)
}

extern "C" void solve(const int32_t* X, int32_t* counts, int n) {
    cudaMemsetAsync(counts, 0, 256 * sizeof(int32_t), 0);
    hist_kernel<<<(n + 255) / 256, 256>>>(X, counts, n);
}
