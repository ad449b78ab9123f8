// flash_attn, step 2: tensor cores (mma.sync m16n8k16 + ldmatrix), online softmax in registers.
//
// Technique (FlashAttention-2's forward pass, sm_80+): a block of 4 warps owns BR = 128 query
// rows of one (batch, head); each warp owns 32 of them as two 16-row m-tiles, so every K or V
// fragment it loads from shared memory feeds two mmas (half the ldmatrix traffic per FLOP of
// 16 rows per warp: +25% at D = 128). The Q tile is copied to shared memory once and re-read
// with ldmatrix.x4 as A fragments at each k-step (keeping it in registers would spill).
// Keys and values stream through shared memory in tiles of BC = 64 rows, double-buffered with
// 16-byte cp.async: the next tile is in flight while the tensor cores work on this one.
// Per key tile, each warp
//   1. computes S = Q·Kᵀ (32×64, fp32 accumulators) with mma.m16n8k16; K is stored [key][d],
//      which is exactly the "col" B operand, so plain ldmatrix loads it;
//   2. scales S by log2(e)/sqrt(D), masks keys >= N (and keys > query when causal), takes the
//      row max across the 4 lanes that share a row (two shuffles), rescales the running sum l
//      and the running output O by exp2(m_old - m_new), and computes P = exp2(S - m_new) with
//      one MUFU.EX2 each (ex2.approx.ftz: exp2f's extra range handling costs ~5-10% here);
//   3. converts P to half in registers: the accumulator layout of two adjacent 16×8 S tiles is
//      the A-operand layout of one 16×16 tile, so P never touches shared memory;
//   4. computes O += P·V with mma; V is [key][d] and the B operand wants [d][key], so it is
//      loaded with ldmatrix.trans.
// l is kept per lane (fp32, from P before rounding) and summed across the 4 lanes at the end,
// where O is divided by l and written as half2.
// Registers: at D = 128 a lane holds 128 O and 64 S accumulators; the Q·Kᵀ k-loop is kept
// rolled there (#pragma unroll 1), which is what keeps ptxas at 255 registers with no spills.
// Shared memory rows are 128 or 256 bytes, so ldmatrix's 8 row addresses would all hit the same
// banks; the 16-byte chunk c of row r is stored at chunk c ^ (r % 8) instead (an XOR swizzle),
// which spreads any 8 consecutive rows over all 32 banks, for the cp.async writes and the
// ldmatrix reads alike.
// Ragged N: Q, K and V rows past N are zero-filled by cp.async (src-size 0), keys past N score
// -inf, and rows past N are not stored. Causal: a query tile stops at its diagonal key tile,
// only tiles crossing a warp's diagonal are masked, and the longest query tiles run first.
// What it buys: all the FLOPs run on the tensor cores and S and P live only in registers:
// ~10× step 1, and on an H100 about 80% of FlashAttention-2 (which is also mma.sync code).
// What is left for Hopper: wgmma, TMA, warp specialisation.
#include <cuda_fp16.h>
#include <cstdint>
#include <cmath>

namespace {

constexpr int WARPS = 4;
constexpr int THREADS = WARPS * 32;
constexpr int MT = 2;                // 16-row m-tiles per warp: 32 query rows
constexpr int BR = 16 * MT * WARPS;  // query rows per block (128)
constexpr int BC = 64;               // keys per tile

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    // src-size 0 reads nothing and writes 16 zero bytes
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// c += a (16×16, row-major) · b (16×8, "col": b0/b1 hold k 0-7 / 8-15), fp16 inputs, fp32 accumulate.
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ float fast_exp2(float x) {  // one MUFU.EX2; exp2(-inf) = 0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);  // lo in the low 16 bits: the lower column index
    return *reinterpret_cast<uint32_t*>(&h);
}

// Offset (in halves) of 16-byte chunk `chunk` of row `row` in a swizzled [rows][D] tile.
template <int D>
__device__ __forceinline__ int swz(int row, int chunk) {
    return row * D + ((chunk ^ (row & 7)) << 3);
}

// Copy rows [row0, row0 + ROWS) of one head's [N][D] matrix into a swizzled tile (zeros past N).
template <int D, int ROWS>
__device__ __forceinline__ void load_tile(half* tile, const half* src, int row0, int N) {
    constexpr int CHUNKS = D / 8;
    for (int c = threadIdx.x; c < ROWS * CHUNKS; c += THREADS) {
        const int r = c / CHUNKS, ch = c % CHUNKS, gr = row0 + r;
        const bool ok = gr < N;
        cp_async16(smem_addr(tile + swz<D>(r, ch)), src + (size_t)(ok ? gr : 0) * D + ch * 8, ok);
    }
}

template <int D>
__global__ void __launch_bounds__(THREADS) attn_kernel(const half* __restrict__ Q, const half* __restrict__ K,
                                                       const half* __restrict__ V, half* __restrict__ O, int N,
                                                       int causal, float scale_log2) {
    constexpr int KSTEPS = D / 16;  // k-steps of Q·Kᵀ
    constexpr int KS_UNROLL = D == 128 ? 1 : KSTEPS;
    constexpr int ST = BC / 8;      // 8-wide column tiles of S
    constexpr int OT = D / 8;       // 8-wide column tiles of O
    extern __shared__ __align__(128) unsigned char smem_raw[];
    half* q_s = reinterpret_cast<half*>(smem_raw);  // [BR][D]
    half* k_s = q_s + BR * D;                        // [2][BC][D]
    half* v_s = k_s + 2 * BC * D;                    // [2][BC][D]

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;  // accumulator layout: rows g, g+8; columns 2t, 2t+1
    const int n_qtiles = (N + BR - 1) / BR;
    const int qt = causal ? n_qtiles - 1 - (int)blockIdx.x : (int)blockIdx.x;  // longest first
    const int q0 = qt * BR;
    const size_t head = (size_t)blockIdx.y * N * D;
    const half *Qh = Q + head, *Kh = K + head, *Vh = V + head;
    const int last_row = min(q0 + BR, N) - 1;
    const int n_ktiles = causal ? last_row / BC + 1 : (N + BC - 1) / BC;

    load_tile<D, BR>(q_s, Qh, q0, N);
    load_tile<D, BC>(k_s, Kh, 0, N);
    load_tile<D, BC>(v_s, Vh, 0, N);
    cp_async_commit();
    cp_async_wait_all();
    __syncthreads();

    float o[MT][OT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int i = 0; i < OT; ++i) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.f;
    float m[MT][2], l[MT][2];  // running max (log2 units) and this lane's part of the running sum
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.f;
    const int warp_row0 = q0 + warp * 16 * MT;  // this warp's rows: warp_row0 + 16·mt + g (+8)

    for (int j = 0; j < n_ktiles; ++j) {
        const int k0 = j * BC;
        const half* ks_t = k_s + (j & 1) * BC * D;
        const half* vs_t = v_s + (j & 1) * BC * D;
        if (j + 1 < n_ktiles) {  // the buffer it fills was last read before the previous barrier
            load_tile<D, BC>(k_s + ((j + 1) & 1) * BC * D, Kh, k0 + BC, N);
            load_tile<D, BC>(v_s + ((j + 1) & 1) * BC * D, Vh, k0 + BC, N);
        }
        cp_async_commit();

        // 1. S = Q·Kᵀ
        float s[MT][ST][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int i = 0; i < ST; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll KS_UNROLL  // rolled at D = 128: no spills
        for (int ks = 0; ks < KSTEPS; ++ks) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
                ldmatrix_x4(a[mt], smem_addr(q_s + swz<D>(warp * 16 * MT + mt * 16 + (lane % 16), ks * 2 + lane / 16)));
#pragma unroll
            for (int np = 0; np < ST / 2; ++np) {  // 16 keys: two 8-wide tiles per ldmatrix.x4
                const int key = np * 16 + (lane % 8) + (lane / 16) * 8, ch = ks * 2 + (lane / 8) % 2;
                uint32_t b[4];
                ldmatrix_x4(b, smem_addr(ks_t + swz<D>(key, ch)));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816(s[mt][2 * np], a[mt], b[0], b[1]);
                    mma16816(s[mt][2 * np + 1], a[mt], b[2], b[3]);
                }
            }
        }

        // 2. scale, mask, online softmax
        const bool mask = k0 + BC > N || (causal && k0 + BC - 1 > warp_row0);  // warp-uniform
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
            for (int i = 0; i < ST; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float x = s[mt][i][e] * scale_log2;
                    if (mask) {
                        const int key = k0 + i * 8 + 2 * t + (e & 1), row = warp_row0 + mt * 16 + g + (e >> 1) * 8;
                        if (key >= N || (causal && key > row)) x = -INFINITY;
                    }
                    s[mt][i][e] = x;
                }
#pragma unroll
            for (int h = 0; h < 2; ++h) {  // h = 0: row g, h = 1: row g + 8
                float mx = -INFINITY;
#pragma unroll
                for (int i = 0; i < ST; ++i) mx = fmaxf(mx, fmaxf(s[mt][i][2 * h], s[mt][i][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float m_new = fmaxf(m[mt][h], mx);
                const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
                const float corr = fast_exp2(m[mt][h] - base);        // 0 on the first visible tile
                m[mt][h] = m_new;
                l[mt][h] *= corr;
#pragma unroll
                for (int i = 0; i < OT; ++i) o[mt][i][2 * h] *= corr, o[mt][i][2 * h + 1] *= corr;
                float sum = 0.f;
#pragma unroll
                for (int i = 0; i < ST; ++i) {
                    s[mt][i][2 * h] = fast_exp2(s[mt][i][2 * h] - base);
                    s[mt][i][2 * h + 1] = fast_exp2(s[mt][i][2 * h + 1] - base);
                    sum += s[mt][i][2 * h] + s[mt][i][2 * h + 1];
                }
                l[mt][h] += sum;  // this lane's share; the 4 lanes of a row are summed at the end
            }
        }

        // 3-4. O += P·V, P packed from the S accumulators into A fragments
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                a[mt][0] = pack_half2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                a[mt][1] = pack_half2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                a[mt][2] = pack_half2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                a[mt][3] = pack_half2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
            }
#pragma unroll
            for (int dp = 0; dp < OT / 2; ++dp) {  // 16 columns of O: two 8-wide tiles per ldmatrix.x4
                const int key = kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, ch = dp * 2 + lane / 16;
                uint32_t b[4];
                ldmatrix_x4_trans(b, smem_addr(vs_t + swz<D>(key, ch)));
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    mma16816(o[mt][2 * dp], a[mt], b[0], b[1]);
                    mma16816(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
                }
            }
        }
        cp_async_wait_all();  // the next tile has landed ...
        __syncthreads();      // ... for everyone, and nobody reads this tile any more
    }

#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float sum = l[mt][h];
            sum += __shfl_xor_sync(0xffffffffu, sum, 1);
            sum += __shfl_xor_sync(0xffffffffu, sum, 2);
            const float inv = 1.f / sum;
            const int row = warp_row0 + mt * 16 + g + h * 8;
            if (row < N) {
                half* dst = O + head + (size_t)row * D + 2 * t;
#pragma unroll
                for (int i = 0; i < OT; ++i)
                    *reinterpret_cast<__half2*>(dst + i * 8) =
                        __floats2half2_rn(o[mt][i][2 * h] * inv, o[mt][i][2 * h + 1] * inv);
            }
        }
}

template <int D>
void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    constexpr int smem = (BR * D + 4 * BC * D) * (int)sizeof(half);  // D = 128: 96 KB
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_kernel<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        configured = true;
    }
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);  // log2(e) / sqrt(D)
    dim3 grid((N + BR - 1) / BR, BH);
    attn_kernel<D><<<grid, THREADS, smem>>>(Q, K, V, O, N, causal, scale_log2);
}

}  // namespace

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (D == 64)
        launch<64>(Q, K, V, O, B * H, N, causal);
    else
        launch<128>(Q, K, V, O, B * H, N, causal);
}
