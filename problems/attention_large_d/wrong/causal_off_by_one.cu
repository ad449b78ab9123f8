// expected: WRONG_ANSWER — the causal mask hides the diagonal (key < query instead of key <= query):
// query 0 sees no key at all and gets 0/0 = NaN, every other row misses its own key.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <math.h>

constexpr int BR = 32, BC = 32, THREADS = 256, PAD = 8;

template <int D>
__global__ void __launch_bounds__(THREADS) attention(const half* __restrict__ Q, const half* __restrict__ K,
                                                     const half* __restrict__ V, half* __restrict__ O,
                                                     int N, int causal, float scale_log2) {
    constexpr int LD = D + PAD;  // halves per shared-memory row
    extern __shared__ __align__(16) unsigned char smem[];
    half* Qs = reinterpret_cast<half*>(smem);
    half* Ks = Qs + BR * LD;
    half* Vs = Ks + BC * LD;
    float* S = reinterpret_cast<float*>(Vs + BC * LD);  // BR × (BC + 1)
    float* alpha_s = S + BR * (BC + 1);
    float* l_s = alpha_s + BR;

    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int q0 = blockIdx.x * BR;
    const size_t head = (size_t)blockIdx.y * N * D;
    const half *q = Q + head, *k = K + head, *v = V + head;

    // Load a 32-row tile of a [N, D] matrix into shared memory, 16 bytes at a time; rows past N are 0.
    auto load_tile = [&](half* dst, const half* src, int row0) {
        for (int i = tid; i < 32 * (D / 8); i += THREADS) {
            const int r = i / (D / 8), c = (i % (D / 8)) * 8;
            uint4 val = make_uint4(0, 0, 0, 0);
            if (row0 + r < N) val = *reinterpret_cast<const uint4*>(src + (size_t)(row0 + r) * D + c);
            *reinterpret_cast<uint4*>(dst + r * LD + c) = val;
        }
    };
    load_tile(Qs, q, q0);

    // Step 3's ownership: row orow, half2 columns ocol + 8j.
    const int orow = tid / 8, ocol = tid % 8;
    constexpr int OWN = D / 16;  // half2 pairs per thread
    float2 acc[OWN];
#pragma unroll
    for (int j = 0; j < OWN; ++j) acc[j] = make_float2(0.f, 0.f);
    float m_row = -INFINITY, l_row = 0.f;  // kept by the warp that owns the row (steps 2)

    const int k_end = causal ? min(N, q0 + BR) : N;
    for (int k0 = 0; k0 < k_end; k0 += BC) {
        __syncthreads();  // the previous tile's K, V and P are no longer read
        load_tile(Ks, k, k0);
        load_tile(Vs, v, k0);
        __syncthreads();

        // 1. Scores: thread (r = tid / 8, c = tid % 8 + 8i) for i < 4.
        {
            const int r = tid / 8;
            float s[4] = {0.f, 0.f, 0.f, 0.f};
            const half2* qr = reinterpret_cast<const half2*>(Qs + r * LD);
            for (int d = 0; d < D / 2; ++d) {
                const float2 qv = __half22float2(qr[d]);
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const float2 kv = __half22float2(reinterpret_cast<const half2*>(Ks + (tid % 8 + 8 * i) * LD)[d]);
                    s[i] = fmaf(qv.x, kv.x, fmaf(qv.y, kv.y, s[i]));
                }
            }
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int c = tid % 8 + 8 * i, key = k0 + c, query = q0 + r;
                const bool visible = key < N && (!causal || key < query);
                S[r * (BC + 1) + c] = visible ? s[i] * scale_log2 : -INFINITY;
            }
        }
        __syncthreads();

        // 2. Online softmax, one warp per 4 rows, lane = key within the tile.
#pragma unroll
        for (int rr = 0; rr < BR / 8; ++rr) {
            const int r = warp * (BR / 8) + rr;
            const float sv = S[r * (BC + 1) + lane];
            float mx = sv;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
            const float m_old = __shfl_sync(0xffffffffu, m_row, rr);  // lane rr keeps row rr's stats
            const float l_old = __shfl_sync(0xffffffffu, l_row, rr);
            const float m_new = fmaxf(m_old, mx);
            const float p = m_new == -INFINITY ? 0.f : exp2f(sv - m_new);
            float sum = p;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
            const float alpha = m_old == -INFINITY ? 0.f : exp2f(m_old - m_new);
            S[r * (BC + 1) + lane] = p;
            if (lane == rr) {
                m_row = m_new;
                l_row = l_old * alpha + sum;
            }
            if (lane == 0) alpha_s[r] = alpha;
        }
        __syncthreads();

        // 3. O = alpha·O + P·V on this thread's columns.
        {
            const float a = alpha_s[orow];
#pragma unroll
            for (int j = 0; j < OWN; ++j) acc[j] = make_float2(acc[j].x * a, acc[j].y * a);
            const int kmax = min(BC, k_end - k0);
            for (int kk = 0; kk < kmax; ++kk) {
                const float p = S[orow * (BC + 1) + kk];
                const half2* vr = reinterpret_cast<const half2*>(Vs + kk * LD);
#pragma unroll
                for (int j = 0; j < OWN; ++j) {
                    const float2 vv = __half22float2(vr[ocol + 8 * j]);
                    acc[j].x = fmaf(p, vv.x, acc[j].x);
                    acc[j].y = fmaf(p, vv.y, acc[j].y);
                }
            }
        }
    }
    // Publish l per row (lane rr of warp w holds row 4w + rr), then normalize and store.
    if (lane < BR / 8) l_s[warp * (BR / 8) + lane] = l_row;
    __syncthreads();
    const int query = q0 + orow;
    if (query < N) {
        const float inv = 1.f / l_s[orow];
        half2* out = reinterpret_cast<half2*>(O + head + (size_t)query * D);
#pragma unroll
        for (int j = 0; j < OWN; ++j) out[ocol + 8 * j] = __floats2half2_rn(acc[j].x * inv, acc[j].y * inv);
    }
}

template <int D>
static void launch(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int causal) {
    constexpr int LD = D + PAD;
    const size_t smem = (size_t)(BR + 2 * BC) * LD * sizeof(half) + (BR * (BC + 1) + 2 * BR) * sizeof(float);
    cudaFuncSetAttribute(attention<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    const dim3 grid((N + BR - 1) / BR, B * H);
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);
    attention<D><<<grid, THREADS, smem>>>(Q, K, V, O, N, causal, scale_log2);
}

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (D == 256) launch<256>(Q, K, V, O, B, H, N, causal);
    else if (D == 512) launch<512>(Q, K, V, O, B, H, N, causal);
}
