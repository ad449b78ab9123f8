// expected: passes the static policy — an unused `#include <iostream>`.
// With gcc <= 12 the header defines a static std::ios_base::Init object in every file that
// includes it, so the library imports its constructor and destructor and registers the
// destructor with __cxa_atexit, even when nothing is printed. Nothing here touches a file.
#include <iostream>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
}
