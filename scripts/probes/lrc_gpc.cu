// Does the L2 request coalescer merge requests for the same sectors only from SMs of one GPC?
// (issue 21; lrc_gpc.py runs it, the fp8_gemm README has what it showed.)
//
// One CTA per SM (150 KB of shared memory each, so the grid of one CTA per SM is resident at once);
// thread 0 of each runs `steps` steps: each loads 64 KB (four bulk copies of 16 KB, as TMA loads a
// stage) of step j's block of its region, region_of[its SM], into shared memory and waits for it.
// SMs given one region ask for the same sectors at each step. With `aligned`, every step starts at
// one moment: a grid barrier, whose last arrival sets a start time 2 µs ahead (%globaltimer) that
// every CTA spins until. lrc_gpc.py chooses the regions: SMs of one GPC together, SMs of different
// GPCs together, or each SM its own; Nsight Compute's lrc__ counters say what was merged.
//
//   nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -gencode arch=compute_90a,code=sm_90a lrc_gpc.cu -o lrc_gpc.so
#include <cstdint>

#include "gpc_groups.cuh"

constexpr int CHUNK = 16384, CHUNKS = 4, MAX_STEPS = 1024, SMEM = 150 * 1024;

__device__ unsigned int g_arrived;
__device__ unsigned long long g_go[MAX_STEPS];

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void __launch_bounds__(32) lrc_load(const uint8_t* src, const int* region_of, int steps, int aligned) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) uint8_t buf[];
    __shared__ __align__(8) uint64_t bar;
    if (threadIdx.x != 0) return;
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const size_t region = (size_t)region_of[sm];
    const uint32_t b = (uint32_t)__cvta_generic_to_shared(&bar);
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int j = 0; j < steps; ++j) {
        if (aligned) {
            const unsigned before = atomicAdd(&g_arrived, 1u);
            if (before == (unsigned)(j + 1) * gridDim.x - 1u) {
                const unsigned long long go = global_ns() + 2000;
                asm volatile("st.release.gpu.global.u64 [%0], %1;" :: "l"(&g_go[j]), "l"(go) : "memory");
            }
            unsigned long long go = 0;
            while (go == 0) asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(go) : "l"(&g_go[j]) : "memory");
            while (global_ns() < go) {
            }
        }
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(CHUNK * CHUNKS) : "memory");
        for (int c = 0; c < CHUNKS; ++c) {
            const uint8_t* from = src + ((region * steps + j) * CHUNKS + c) * CHUNK;
            const uint32_t to = (uint32_t)__cvta_generic_to_shared(buf + c * CHUNK);
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(to), "l"(from), "r"(CHUNK), "r"(b) : "memory");
        }
        uint32_t done = 0;
        while (!done)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(b), "r"((uint32_t)(j & 1)) : "memory");
    }
#endif
}

// One launch over `sms` CTAs: src holds (max region + 1) × steps × 64 KB; region_of (on the GPU) one
// region per SM id. 0, or -1 for a bad argument or a CUDA error.
extern "C" int lrc_gpc_run(const void* src, const int* region_of, int sms, int steps, int aligned) {
    if (sms <= 0 || steps <= 0 || steps > MAX_STEPS) return -1;
    void* arrived = nullptr;
    void* go = nullptr;
    if (cudaGetSymbolAddress(&arrived, g_arrived) != cudaSuccess || cudaGetSymbolAddress(&go, g_go) != cudaSuccess ||
        cudaFuncSetAttribute(lrc_load, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM) != cudaSuccess)
        return -1;
    cudaMemsetAsync(arrived, 0, sizeof(unsigned), 0);
    cudaMemsetAsync(go, 0, sizeof(unsigned long long) * MAX_STEPS, 0);
    lrc_load<<<sms, 32, SMEM>>>(static_cast<const uint8_t*>(src), region_of, steps, aligned);
    return cudaGetLastError() == cudaSuccess && cudaDeviceSynchronize() == cudaSuccess ? 0 : -1;
}
