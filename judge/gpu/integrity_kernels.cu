// The judge's own fill and completeness-count kernels (judge/gpu/integrity.py embeds their PTX:
// nvcc -arch=compute_80 -ptx integrity_kernels.cu, then `.version` lowered to 7.0).
#include <cstdint>

template <typename T>
__device__ void fill(T* p, T v, uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

template <typename T>
__device__ void count(const volatile T* p, T v, uint64_t n, unsigned long long* counter) {
    unsigned long long c = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        c += p[i] == v;
    if (c) atomicAdd(counter, c);
}

extern "C" __global__ void judge_fill16(uint16_t* p, uint16_t v, uint64_t n) { fill(p, v, n); }
extern "C" __global__ void judge_fill32(uint32_t* p, uint32_t v, uint64_t n) { fill(p, v, n); }
extern "C" __global__ void judge_count16(const volatile uint16_t* p, uint16_t v, uint64_t n, unsigned long long* c) {
    count(p, v, n, c);
}
extern "C" __global__ void judge_count32(const volatile uint32_t* p, uint32_t v, uint64_t n, unsigned long long* c) {
    count(p, v, n, c);
}
