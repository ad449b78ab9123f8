// expected: WRONG_ANSWER — P·V accumulated in half (one __hfma rounding per key): at N = 1000 the running sum (~l·|V| up to tens) loses the small p·v terms, and 45-95% of the outputs miss by up to ~4e-2 (tolerance 2e-3 + 5e-3·|O|)
// Everything else is right: the scores, their max and Σp are fp32 (two passes, no online rescale),
// every key up to the diagonal is visited, the output is divided by l once. Simulated on CPU in
// tests/test_classic_wrong.py (attention_half_pv): N <= 64 passes, N = 127-129 fails a few dozen
// outputs, N >= 1000 fails a third or more.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <math.h>

constexpr int THREADS = 256, WARPS = THREADS / 32;

__device__ float block_max(float v, float* red) {
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < WARPS; ++w) v = fmaxf(v, red[w]);
    __syncthreads();  // red is reused by the next reduction
    return v;
}

__device__ float block_sum(float v, float* red) {
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    v = 0.f;
    for (int w = 0; w < WARPS; ++w) v += red[w];
    __syncthreads();
    return v;
}

// One block per (query row, batch·head); p holds the row's N scores, then exp(s - max).
template <int D>
__global__ void __launch_bounds__(THREADS) attention(const half* __restrict__ Q, const half* __restrict__ K,
                                                     const half* __restrict__ V, half* __restrict__ O,
                                                     int N, int causal, float scale) {
    extern __shared__ float p[];
    __shared__ float red[WARPS];
    constexpr int PER_LANE = D / 32, PER_THREAD = D / THREADS;
    const int i = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const size_t head = (size_t)blockIdx.y * N * D;
    const int keys = causal ? i + 1 : N;

    float q[PER_LANE];
    #pragma unroll
    for (int t = 0; t < PER_LANE; ++t) q[t] = __half2float(Q[head + (size_t)i * D + lane + 32 * t]) * scale;
    for (int j = warp; j < keys; j += WARPS) {  // a warp per key: lanes split D, then a shuffle sum
        const half* k = K + head + (size_t)j * D;
        float dot = 0.f;
        #pragma unroll
        for (int t = 0; t < PER_LANE; ++t) dot += q[t] * __half2float(k[lane + 32 * t]);
        for (int o = 16; o > 0; o /= 2) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        if (lane == 0) p[j] = dot;
    }
    __syncthreads();
    float m = -INFINITY;
    for (int j = threadIdx.x; j < keys; j += THREADS) m = fmaxf(m, p[j]);
    m = block_max(m, red);
    float l = 0.f;
    for (int j = threadIdx.x; j < keys; j += THREADS) {
        float e = expf(p[j] - m);
        p[j] = e;
        l += e;
    }
    l = block_sum(l, red);  // its __syncthreads also publishes p

    half acc[PER_THREAD];  // BUG: the P·V accumulator is half
    #pragma unroll
    for (int t = 0; t < PER_THREAD; ++t) acc[t] = __float2half(0.f);
    for (int j = 0; j < keys; ++j) {
        const half pj = __float2half(p[j]);
        const half* v = V + head + (size_t)j * D;
        #pragma unroll
        for (int t = 0; t < PER_THREAD; ++t) acc[t] = __hfma(pj, v[threadIdx.x + THREADS * t], acc[t]);
    }
    #pragma unroll
    for (int t = 0; t < PER_THREAD; ++t)
        O[head + (size_t)i * D + threadIdx.x + THREADS * t] = __float2half(__half2float(acc[t]) / l);
}

template <int D>
void launch(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int causal) {
    size_t smem = sizeof(float) * (size_t)N;
    if (smem > 48 * 1024) cudaFuncSetAttribute(attention<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    attention<D><<<dim3(N, B * H), THREADS, smem>>>(Q, K, V, O, N, causal, 1.f / sqrtf((float)D));
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N,
                      int D, int causal) {
    if (D == 256) launch<256>(Q, K, V, O, B, H, N, causal);
    else launch<512>(Q, K, V, O, B, H, N, causal);
}
