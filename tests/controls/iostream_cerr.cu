// expected: passes the static policy — an error message through std::cerr.
// The ostream operators and std::cerr are the C++ runtime's console output (imported as _ZSt...).
#include <iostream>
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) std::cerr << "add failed: " << cudaGetErrorString(e) << " (n=" << n << ")" << std::endl;
}
