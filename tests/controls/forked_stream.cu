// expected: passes the static policy — a second stream forked from the default stream and joined
// back to it with events, so the judge's synchronization on the default stream still covers it.
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int lo, int hi) {
    int i = lo + blockIdx.x * blockDim.x + threadIdx.x;
    if (i < hi) c[i] = a[i] + b[i];
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    static cudaStream_t side = nullptr;
    static cudaEvent_t forked = nullptr, joined = nullptr;
    if (!side) {
        cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
        cudaEventCreateWithFlags(&forked, cudaEventDisableTiming);
        cudaEventCreateWithFlags(&joined, cudaEventDisableTiming);
    }
    int half = n / 2;
    cudaEventRecord(forked, 0);            // fork: the side stream waits for the default stream
    cudaStreamWaitEvent(side, forked, 0);
    if (half > 0) add<<<(half + 255) / 256, 256, 0, side>>>(A, B, C, 0, half);
    if (n > half) add<<<(n - half + 255) / 256, 256>>>(A, B, C, half, n);
    cudaEventRecord(joined, side);         // join: the default stream waits for the side stream
    cudaStreamWaitEvent(0, joined, 0);
}
