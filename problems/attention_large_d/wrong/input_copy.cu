// expected: WRONG_ANSWER — a copy of V: O = V is right only with one key (N = 1); from N = 17 on O averages many rows of V ~ U[0, 2) and misses V by ~0.5, far beyond atol 2e-3 + rtol 5e-3
#include <cuda_runtime.h>
#include <cuda_fp16.h>
extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D, int causal) {
    cudaMemcpyAsync(O, V, sizeof(half) * (size_t)B * H * N * D, cudaMemcpyDeviceToDevice, 0);
}
