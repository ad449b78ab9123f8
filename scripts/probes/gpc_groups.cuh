// Which SMs share a GPC: for fp8_gemm step 9's schedule (reference_solutions/fp8_gemm/09_gpc_bands.cu,
// which inlines this file) and the probes (lrc_gpc.cu, fp8_coalescing.py's GPC variants).
//
// The CTAs of a thread-block cluster always run in one GPC. Clusters of one-SM CTAs (200 KB of
// shared memory each) of 16, 14, 12, 10 and 8, launched 16 times each in grids larger than the GPU
// holds at once, land on many subsets of each GPC's SMs; SMs that ran one cluster are joined, and
// the joined groups are GPCs or parts of one (never two GPCs together). An SM that never ran a
// cluster of 8 or more with another is its own group.
#pragma once
#include <cuda_runtime.h>

__global__ void gpc_where_sm(int* out) {
    extern __shared__ char gpc_pad[];  // one CTA an SM: a cluster of c takes c SMs
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    gpc_pad[threadIdx.x] = 0;
    if (threadIdx.x == 0) out[blockIdx.x] = (int)sm;
}

static int gpc_root(int* parent, int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
}

// group[sm] for sm < max_sm: the smallest SM id of its group. Returns the number of groups, or -1
// where no cluster of 8 or more could launch (or a CUDA call failed).
extern "C" int gpc_groups(int* group, int max_sm) {
    if (max_sm <= 0 || max_sm > 1024) return -1;
    const int smem = 200 * 1024, sizes[5] = {16, 14, 12, 10, 8};
    if (cudaFuncSetAttribute(gpc_where_sm, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) != cudaSuccess ||
        cudaFuncSetAttribute(gpc_where_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) != cudaSuccess)
        return -1;
    int* d = nullptr;
    if (cudaMalloc(&d, 16 * 16 * sizeof(int)) != cudaSuccess) return -1;
    int parent[1024], sms[16 * 16], launched = 0;
    for (int i = 0; i < max_sm; ++i) parent[i] = i;
    for (int size : sizes) {
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = size;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(16 * size);
        cfg.blockDim = dim3(32);
        cfg.dynamicSmemBytes = smem;
        cfg.attrs = attr;
        cfg.numAttrs = 1;
        for (int rep = 0; rep < 16; ++rep) {
            if (cudaLaunchKernelEx(&cfg, gpc_where_sm, d) != cudaSuccess ||
                cudaMemcpy(sms, d, sizeof(int) * 16 * size, cudaMemcpyDeviceToHost) != cudaSuccess) {
                (void)cudaGetLastError();  // this size does not launch here: try the next
                break;
            }
            ++launched;
            for (int i = 0; i < 16 * size; ++i) {
                const int lead = sms[i - i % size];
                if (sms[i] < max_sm && lead < max_sm) parent[gpc_root(parent, sms[i])] = gpc_root(parent, lead);
            }
        }
    }
    cudaFree(d);
    if (launched == 0) return -1;
    int groups = 0;
    for (int i = 0; i < max_sm; ++i) {
        const int r = gpc_root(parent, i);
        group[i] = max_sm;
        for (int j = 0; j < max_sm; ++j)  // label by the smallest member
            if (gpc_root(parent, j) == r && j < group[i]) group[i] = j;
        groups += group[i] == i;
    }
    return groups;
}
