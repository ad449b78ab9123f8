// flash_attn, step 1: readable tiled attention with online softmax (CUDA cores, fp32 math).
//
// Technique (FlashAttention's idea without the tensor cores): never build the N×N score
// matrix. A block takes 16 query rows of one (batch, head) and streams the keys and values
// through shared memory in tiles of 64. Each warp owns 4 query rows; for each row and tile:
//   1. lane l computes the scores of keys l and l+32 (dot products over D, fp32);
//   2. the warp reduces the tile's max; the running max m grows to m_new and the running
//      sum l and output acc are rescaled by exp(m - m_new) (the "online softmax");
//   3. p = exp(s - m_new) is shared through shared memory and every lane accumulates
//      Σ p·V for its D/32 output columns.
// At the end O = acc / l. Scores use exp2 with log2(e)/sqrt(D) folded into Q. Causal blocks
// stop at the diagonal tile; masked or out-of-range keys score -inf.
// K rows are padded by 2 halves so that the 32 lanes reading 32 different rows hit 32 banks.
// What it buys: O(N) memory and a single pass over K and V per query tile; it is still
// slow (all FMAs on CUDA cores, one key at a time), which the tensor-core steps fix.
#include <cuda_fp16.h>
#include <cmath>

constexpr int BR = 16, BC = 64, WARPS = 4, ROWS_PER_WARP = BR / WARPS;

template <int D>
__global__ void __launch_bounds__(WARPS * 32) attn_kernel(const half* __restrict__ Q,
                                                          const half* __restrict__ K,
                                                          const half* __restrict__ V,
                                                          half* __restrict__ O, int N, int causal) {
    constexpr int KLD = D + 2;       // padded K row (halves)
    constexpr int PER_LANE = D / 32; // output columns per lane: lane + 32*t
    __shared__ float q_s[BR][D];
    __shared__ half k_s[BC][KLD];
    __shared__ half v_s[BC][D];
    __shared__ float p_s[WARPS][BC];

    const size_t head = (size_t)blockIdx.y * N * D;
    const int q0 = blockIdx.x * BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const float qscale = 1.4426950408889634f / sqrtf((float)D);  // log2(e) / sqrt(D)

    for (int e = threadIdx.x; e < BR * D; e += blockDim.x) {
        int r = e / D, d = e % D;
        q_s[r][d] = q0 + r < N ? __half2float(Q[head + (size_t)(q0 + r) * D + d]) * qscale : 0.f;
    }
    float m[ROWS_PER_WARP], l[ROWS_PER_WARP], acc[ROWS_PER_WARP][PER_LANE];
    #pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r) {
        m[r] = -INFINITY;
        l[r] = 0.f;
        #pragma unroll
        for (int t = 0; t < PER_LANE; ++t) acc[r][t] = 0.f;
    }
    const int kv_end = causal ? min(N, q0 + BR) : N;  // keys past the block's last query are masked
    for (int k0 = 0; k0 < kv_end; k0 += BC) {
        __syncthreads();  // previous tile fully used
        for (int e = threadIdx.x; e < BC * D; e += blockDim.x) {
            int r = e / D, d = e % D;
            bool ok = k0 + r < N;
            k_s[r][d] = ok ? K[head + (size_t)(k0 + r) * D + d] : __float2half(0.f);
            v_s[r][d] = ok ? V[head + (size_t)(k0 + r) * D + d] : __float2half(0.f);
        }
        __syncthreads();
        #pragma unroll
        for (int r = 0; r < ROWS_PER_WARP; ++r) {
            const int row = warp * ROWS_PER_WARP + r, qi = q0 + row;
            if (qi >= N) break;  // warp-uniform
            float s[2];
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
                int j = lane + 32 * h, kj = k0 + j;
                float dot = 0.f;
                for (int d = 0; d < D; ++d) dot += q_s[row][d] * __half2float(k_s[j][d]);
                bool visible = kj < N && (!causal || kj <= qi);
                s[h] = visible ? dot : -INFINITY;
            }
            float tile_max = fmaxf(s[0], s[1]);
            for (int o = 16; o > 0; o /= 2) tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, o));
            float m_new = fmaxf(m[r], tile_max);
            if (m_new == -INFINITY) continue;  // nothing visible yet for this row
            float corr = exp2f(m[r] - m_new);  // 0 when m was -inf
            float p0 = exp2f(s[0] - m_new), p1 = exp2f(s[1] - m_new);
            float psum = p0 + p1;
            for (int o = 16; o > 0; o /= 2) psum += __shfl_xor_sync(0xffffffffu, psum, o);
            l[r] = l[r] * corr + psum;
            m[r] = m_new;
            p_s[warp][lane] = p0;
            p_s[warp][lane + 32] = p1;
            __syncwarp();
            #pragma unroll
            for (int t = 0; t < PER_LANE; ++t) {
                float a = acc[r][t] * corr;
                for (int j = 0; j < BC; ++j) a += p_s[warp][j] * __half2float(v_s[j][lane + 32 * t]);
                acc[r][t] = a;
            }
            __syncwarp();  // p_s is rewritten by the next row
        }
    }
    #pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r) {
        int qi = q0 + warp * ROWS_PER_WARP + r;
        if (qi >= N) break;
        float inv = 1.f / l[r];
        #pragma unroll
        for (int t = 0; t < PER_LANE; ++t)
            O[head + (size_t)qi * D + lane + 32 * t] = __float2half(acc[r][t] * inv);
    }
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N,
                      int D, int causal) {
    dim3 grid((N + BR - 1) / BR, B * H);
    if (D == 64) attn_kernel<64><<<grid, WARPS * 32>>>(Q, K, V, O, N, causal);
    else attn_kernel<128><<<grid, WARPS * 32>>>(Q, K, V, O, N, causal);
}
