// expected: passes the static policy — `throw std::runtime_error` on an error path.
// Throwing imports the C++ runtime's exception machinery (__cxa_allocate_exception, __cxa_throw,
// __cxa_free_exception, typeinfo _ZTISt13runtime_error, the std::runtime_error constructor and
// destructor) and the personality routine; catching adds __cxa_begin_catch/__cxa_end_catch.
#include <stdexcept>
#include <string>
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static void check(cudaError_t e) {
    if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + cudaGetErrorString(e));
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    try {
        if (n < 0) throw std::invalid_argument("n < 0");
        add<<<(n + 255) / 256, 256>>>(A, B, C, n);
        check(cudaGetLastError());
    } catch (const std::exception& e) {
        (void)e.what();  // never let an exception cross the C ABI
    }
}
