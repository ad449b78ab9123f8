// expected: passes the static policy — CUB's BlockReduce.
// <cub/cub.cuh> pulls in NVTX, whose loader imports dlopen, getenv and sched_yield; the build
// defines NVTX_DISABLE (judge/build/nvcc.py), which compiles NVTX out, so the library imports
// none of them and dlopen stays refused (tests/exploits/symbol_dlopen.cu).
#include <cub/cub.cuh>

constexpr int THREADS = 256;

__global__ void sum_blocks(const float* a, const float* b, float* c, int n) {
    using Reduce = cub::BlockReduce<float, THREADS>;
    __shared__ typename Reduce::TempStorage tmp;
    int i = blockIdx.x * THREADS + threadIdx.x;
    float v = i < n ? a[i] + b[i] : 0.0f;
    float total = Reduce(tmp).Sum(v);
    if (i < n) c[i] = a[i] + b[i] + 0.0f * total;
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    sum_blocks<<<(n + THREADS - 1) / THREADS, THREADS>>>(A, B, C, n);
}
