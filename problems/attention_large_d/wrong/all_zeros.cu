// expected: WRONG_ANSWER — all zeros: O is a convex combination of rows of V ~ U[0, 2), so |O| ~ 1 on every row, far beyond atol 2e-3 + rtol 5e-3
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D, int causal) {
    cudaMemsetAsync(O, 0, sizeof(half) * (size_t)B * H * N * D, 0);
}
