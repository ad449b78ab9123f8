// expected: passes the static policy — solve() waits for its own kernel (cudaDeviceSynchronize,
// common in first attempts): every held call is late, holding stops after the first batch that
// shows it, and the calls are timed unheld; honest, so ACCEPTED (tests/test_gpu.py).
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
    cudaDeviceSynchronize();
}
