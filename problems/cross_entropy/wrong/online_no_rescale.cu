// expected: WRONG_ANSWER — online update that raises the running max without rescaling the running sum by exp(m_old - m_new): terms summed before a new max stay too large, so Σ and the loss come out too big (by ~0.1-2 on long rows)
// The step-2 kernel (reference_solutions/cross_entropy/02_online_vec8.cu) with that one line changed.
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cmath>

struct MS { float m, s; };

__device__ __forceinline__ MS combine(MS a, MS b) {
    float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.f};  // two empty pairs (threads that saw no element)
    return {m, a.s * __expf(a.m - m) + b.s * __expf(b.m - m)};
}

// One value (finite): exp(-inf) = 0 covers the first one, when m is still -inf.
__device__ __forceinline__ void push1(float& m, float& s, float v) {
    if (v > m) {
        s = s * __expf(m - v) + 1.f;
        m = v;
    } else {
        s += __expf(v - m);
    }
}

__device__ __forceinline__ void push8(float& m, float& s, uint4 u) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
    float v[8];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        float2 p = __bfloat1622float2(h[k]);
        v[2 * k] = p.x;
        v[2 * k + 1] = p.y;
    }
    float vm = fmaxf(fmaxf(fmaxf(v[0], v[1]), fmaxf(v[2], v[3])), fmaxf(fmaxf(v[4], v[5]), fmaxf(v[6], v[7])));
    m = fmaxf(m, vm);  // BUG: s still holds Σ exp(x - m_old) and is not rescaled by exp(m_old - m)
#pragma unroll
    for (int k = 0; k < 8; ++k) s += __expf(v[k] - m);
}

template <int THREADS>
__device__ MS block_reduce(MS v, MS* scratch) {
    for (int o = 16; o > 0; o /= 2)
        v = combine(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    if (THREADS > 32) {
        int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        if (lane == 0) scratch[warp] = v;
        __syncthreads();
        v = lane < THREADS / 32 ? scratch[lane] : MS{-INFINITY, 0.f};
        for (int o = 16; o > 0; o /= 2)
            v = combine(v, MS{__shfl_xor_sync(0xffffffffu, v.m, o), __shfl_xor_sync(0xffffffffu, v.s, o)});
    }
    return v;
}

template <int THREADS>
__global__ void __launch_bounds__(THREADS) cross_entropy_kernel(const __nv_bfloat16* __restrict__ logits,
                                                                const int64_t* __restrict__ targets,
                                                                float* __restrict__ loss, int vocab) {
    __shared__ MS scratch[32];
    const int t = threadIdx.x;
    const __nv_bfloat16* row = logits + (size_t)blockIdx.x * vocab;
    float xt = 0.f;
    if (t == 0) xt = __bfloat162float(row[targets[blockIdx.x]]);

    float m = -INFINITY, s = 0.f;
    // head: scalars up to the first 16-byte boundary (bf16 pointers are always 2-byte aligned)
    int head = min((int)((16 - (reinterpret_cast<uintptr_t>(row) & 15)) & 15) / 2, vocab);
    if (t < head) push1(m, s, __bfloat162float(row[t]));
    // body: aligned uint4 vectors, four in flight per thread
    const uint4* body = reinterpret_cast<const uint4*>(row + head);
    const int nvec = (vocab - head) / 8;
    int j = t;
    for (; j + 3 * THREADS < nvec; j += 4 * THREADS) {
        uint4 a = __ldg(body + j), b = __ldg(body + j + THREADS);
        uint4 c = __ldg(body + j + 2 * THREADS), d = __ldg(body + j + 3 * THREADS);
        push8(m, s, a);
        push8(m, s, b);
        push8(m, s, c);
        push8(m, s, d);
    }
    for (; j < nvec; j += THREADS) push8(m, s, __ldg(body + j));
    // tail: the last (vocab - head) % 8 scalars
    const int tail = head + nvec * 8;
    if (t < vocab - tail) push1(m, s, __bfloat162float(row[tail + t]));

    MS r = block_reduce<THREADS>(MS{m, s}, scratch);
    if (t == 0) loss[blockIdx.x] = (r.m - xt) + logf(r.s);
}

extern "C" void solve(const __nv_bfloat16* logits, const int64_t* targets, float* loss, int rows, int vocab) {
    if (vocab <= 4096) cross_entropy_kernel<128><<<rows, 128>>>(logits, targets, loss, vocab);
    else if (vocab <= 65536) cross_entropy_kernel<256><<<rows, 256>>>(logits, targets, loss, vocab);
    else cross_entropy_kernel<512><<<rows, 512>>>(logits, targets, loss, vocab);
}
