// Probe (docs/timing.md, "Before every timed call"): does the L2 state a flush leaves slow a
// streaming kernel? A float4 add at n = 2^25 and 2^28, timed with CUDA events after four flushes:
// a write of 2 x L2 (the judge's flush until 2026-11-24), that write then a read of a buffer set
// once, the read alone (the judge's flush since), and a poison fill of the output before the read.
//   nvcc -O2 -arch=sm_90 -o /tmp/fp scripts/probes/flush_dirty_lines.cu && /tmp/fp
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>
#include <algorithm>
__global__ void add4(const float4* a, const float4* b, float4* c, size_t n4) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x) {
        float4 x = a[i], y = b[i];
        c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
    }
}
__global__ void readall(const int4* p, size_t n, int* sink) {
    int4 acc = make_int4(0, 0, 0, 0);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        int4 v = p[i]; acc.x ^= v.x; acc.y ^= v.y; acc.z ^= v.z; acc.w ^= v.w;
    }
    if ((acc.x ^ acc.y ^ acc.z ^ acc.w) == 0x12345678) *sink = 1;
}
int main() {
    int l2 = 0, sms = 0; cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0); cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    size_t fb = std::max<size_t>(2 * (size_t)l2, 64 << 20);
    void *F, *R; int* sink; cudaMalloc(&F, fb); cudaMalloc(&R, fb); cudaMalloc(&sink, 4); cudaMemset(R, 1, fb);
    for (size_t n : {size_t(1) << 25, size_t(1) << 28}) {
        float *A, *B, *C; cudaMalloc(&A, 4 * n); cudaMalloc(&B, 4 * n); cudaMalloc(&C, 4 * n);
        cudaMemset(A, 0, 4 * n); cudaMemset(B, 0, 4 * n);
        cudaEvent_t s, e; cudaEventCreate(&s); cudaEventCreate(&e);
        const char* names[] = {"memset flush (the judge)", "memset + read a clean 2xL2", "read a clean 2xL2 only", "memset + poison C + read clean"};
        for (int mode = 0; mode < 4; ++mode) {
            std::vector<float> t;
            for (int it = 0; it < 300; ++it) {
                if (mode == 3) cudaMemsetAsync(C, 0x7f, 4 * n);
                if (mode != 2) cudaMemsetAsync(F, 0x55 + (it & 1), fb);
                if (mode >= 1) readall<<<sms * 8, 512>>>((const int4*)R, fb / 16, sink);
                cudaEventRecord(s);
                add4<<<sms * 8, 512>>>((const float4*)A, (const float4*)B, (float4*)C, n / 4);
                cudaEventRecord(e);
                cudaEventSynchronize(e);
                float ms; cudaEventElapsedTime(&ms, s, e); if (it >= 20) t.push_back(ms);
            }
            std::sort(t.begin(), t.end());
            printf("n=2^%d %-32s median %.4f ms  p10 %.4f  p90 %.4f\n", n == (size_t(1) << 25) ? 25 : 28, names[mode], t[t.size() / 2], t[t.size() / 10], t[t.size() * 9 / 10]);
        }
        cudaFree(A); cudaFree(B); cudaFree(C);
    }
    printf("err=%s\n", cudaGetErrorString(cudaGetLastError()));
}
