// attention_large_d, step 2: tensor cores (mma.sync m16n8k16 + ldmatrix) with the output split
// along D across warps, K and V streamed through shared memory in 16 KB chunks (4-stage cp.async ring).
//
// The problem with a large D: a tile of query rows carries an fp32 output accumulator of rows × D
// (64 × 512 × 4 B = 128 KB), half the SM's register file. flash_attn's step 2 gives each warp whole
// rows (16 rows × D columns: 128 registers per thread at D = 128); at D = 512 that is 512 per thread.
// So here the rows of O are shared by all 8 warps of a 256-thread block, each owning a slice of
// columns, and the two products are computed by differently arranged warps:
//   - S = Q·Kᵀ (BR × BC, reduced over all of D) is computed ONCE per key tile, each warp a 32×32
//     tile of it: warps S_WR along rows × 8/S_WR along keys. Per 16-wide k-step a warp issues 4
//     ldmatrix.x4 (2 of Q, 2 of K) for 8 mmas.
//   - O += P·V: each warp owns 64 rows × 64 columns of O (128 fp32 registers per thread), warps
//     PV_WR along rows × 8/PV_WR along D; per k-step of 16 keys 4 ldmatrix.x4 of P and 4
//     ldmatrix.x4.trans of V feed 32 mmas.
//   Tiles: D = 512: BR = 64 query rows, BC = 128 keys, S warps 2 × 4, O warps 1 × 8.
//          D = 256: BR = 128, BC = 64, S warps 4 × 2, O warps 2 × 4 (same per-warp shapes; 128
//          query rows halve the K/V traffic per query row).
// Per key tile:
//   1. S: Q stays in shared memory for the block's lifetime (swizzled [BR][D]); K comes in chunks of
//      BC keys × KD columns (16 KB), each reduced into the S accumulators as it lands.
//   2. scale by log2(e)/sqrt(D) (exp2 with the scale folded in), mask keys >= N and, causal, keys
//      after the query; each warp's row maxima over its 32 keys go to shared memory; barrier.
//   3. the row max over the S warps of a row and the running max (m_s) give m_new; P = exp2(S - m)
//      (one MUFU.EX2 each) is rounded once to fp16 into a shared [BR][BC] tile, each warp's row sums
//      go to red_sum, and one warp per row group publishes alpha = exp2(m_old - m_new) and m_new.
//      The running max is double-buffered by key-tile parity (read by every S warp of the row while
//      the new one is written). A row whose keys are all masked so far uses 0 as its base, so no
//      exp2(-inf - -inf) = NaN; on its first visible tile alpha = exp2(-inf) = 0.
//   4. P·V: V comes in chunks of VK keys × all D columns (16 KB); after the first chunk's barrier
//      every warp rescales its O slice by its rows' alpha, one thread per row updates the running
//      sum l = alpha·l + Σ red_sum, and the mmas read P (A, ldmatrix) and V (B, ldmatrix.trans).
// m, l and O are fp32; O is divided by l once at the end and stored as half2 (rows past N are
// neither divided nor stored). The running statistics live in shared memory, not registers: O
// (128) and S (32) and their fragments take most of the 255, and m and l in registers (8 more per
// thread) left ptxas at 250-254 with no margin, a few bytes of spills after any small change.
// The ring: chunk i of every key tile (KCH K chunks, then VCH V chunks; 16 per tile at D = 512, 4 at
// D = 256) sits in slot i % 4, so with the chunk loops unrolled every shared-memory offset is a
// compile-time constant. Each chunk: wait for it (cp.async.wait_group 2), one barrier (it has
// landed for everyone, and everyone is done with the slot of the chunk before it), then refill that
// slot with the chunk three ahead, which may belong to the next key tile: loads cross tile
// boundaries, and three 16 KB chunks are always in flight.
// Swizzle: chunk c of row r of any tile is stored at chunk c ^ (r % 8) (rows of 128 B or more), so
// cp.async writes and ldmatrix reads are free of bank conflicts. With 128-byte-aligned tiles the
// k-step m of a lane's ldmatrix address is an XOR of 32·(m % 4) into its per-lane address (kstep):
// ptxas turns most K chunks into 32 HMMA, 16 LDSM and 4 LDGSTS with about 10 other instructions
// (over 150 when the ring slot and the chunk index were run-time values).
// Ragged N and causal: Q, K and V rows past N (and, causal, K and V rows after the tile's last
// query) are zero-filled by cp.async (src-size 0) and never read; their scores are -inf. Causal
// blocks stop at the key tile holding their last row, the longest blocks are launched first, a warp
// whose 32×32 scores are all masked skips its mmas, and V chunks whose keys are all masked for a
// warp's rows are skipped.
// Shared memory: Q 64 KB + ring 64 KB + P 16 KB + statistics 3-4 KB + 128 B of alignment slack =
// 147.1 KB (D = 512), 148.1 KB (D = 256): under sm_80's 163 KB per block. One block per SM is set by
// the registers anyway (256 threads × 248-252 registers is the whole register file).
// Build facts (nvcc 13.0, `judge check --arch ...`, cuobjdump -sass): sm_90a 248 registers
// (D = 512) and 251 (D = 256); sm_80 252 and 242; no spills, no stack, on either arch. SASS per
// kernel: 512 HMMA.16816.F32 at D = 512 (one key tile fully unrolled: 256 for S, 256 for P·V),
// 256 at D = 256; 192 / 96 LDSM; 18 / 6 BAR. Executed per key tile and block: 4096 mmas at D = 512
// (BR·BC·D·2 / 4096 FLOP), 2048 at D = 256.
// Where the time should go (README.md): shared memory, not the tensor cores. Per mma a block moves
// about 260 B (D = 512) or 232 B (D = 256) through shared memory (ldmatrix reads plus cp.async
// writes): ~2 cycles of the SM's 128 B/cycle against ~1.6 for an mma.sync at Hopper's rate. At
// D = 512 every block also streams all of K and V of its head from L2 (17 GB per call).
// Predicted on an H100 or H200: 1.7-2.7 ms (D = 256), 0.9-1.4 ms (D = 256, causal), 3.7-6.1 ms
// (D = 512), 1.9-3.2 ms (D = 512, causal): 1.3-2.5x SDPA's memory-efficient backend per shape,
// 1.4-2.3x on the geomean; step 1 took 16-60 ms.
// Measured (judge submit, NVIDIA H200, 2026-11-28, SDPA memory-efficient in the same run):
// 2.247 / 1.278 / 4.304 / 2.286 ms at D = 256 / 256 causal / 512 / 512 causal: 245 / 215 / 255 /
// 241 TFLOPS, 1.54× / 1.48× / 1.66× / 1.71× SDPA, 1.60× on the geomean; every shape inside its
// predicted range. Correct on every test shape at the first run.
// What is left for Hopper (step 3): wgmma reads Q, K and V from shared memory without ldmatrix
// (the shared-memory bound above), TMA instead of cp.async, warp specialisation; D = 512 would
// also want clusters with TMA multicast so that two SMs share each K/V tile from L2.
#include <cuda_fp16.h>
#include <cstdint>
#include <cmath>

namespace {

constexpr int WARPS = 8;
constexpr int THREADS = WARPS * 32;
constexpr int STAGES = 4;          // ring slots: up to three chunks in flight while a fourth is computed on
constexpr int CHUNK = 8192;        // halves per ring slot (16 KB)

// The tiles per head dim. BR query rows, BC keys per key tile; the 8 warps are arranged
// S_WR × (8 / S_WR) for S = Q·Kᵀ and PV_WR × (8 / PV_WR) for O += P·V. Both choices give every
// warp a 32×32 tile of S and a 64-row × 64-column slice of O (128 fp32 registers per thread).
template <int D> struct Tiles;
template <> struct Tiles<512> { static constexpr int BR = 64, BC = 128, S_WR = 2, PV_WR = 1; };
template <> struct Tiles<256> { static constexpr int BR = 128, BC = 64, S_WR = 4, PV_WR = 2; };

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
    // src-size 0 reads nothing and writes 16 zero bytes
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int PENDING>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory"); }

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

// Offset (in halves) of 16-byte chunk `chunk` of row `row` in a swizzled tile of W halves per row
// (W a multiple of 64): chunk c of row r is stored at chunk c ^ (r % 8), so the 8 rows that one
// ldmatrix matrix (or one wave of cp.async) touches land in 8 different 16-byte bank groups.
template <int W>
__device__ __forceinline__ int swz(int row, int chunk) {
    return row * W + ((chunk ^ (row & 7)) << 3);
}

// ldmatrix addresses. Every tile is 128-byte aligned and its rows are multiples of 128 bytes, so
// the byte address of chunk c of row r is row_base(r) + 128·(c / 8) + 16·((c % 8) ^ (r % 8)). An
// ldmatrix.x4 lane reads chunk 2m + h of a row with r % 8 = lane % 8 (h is one bit of the lane
// number), whose last term is 16·((2m + h) ^ (r % 8)) = 32·(m % 4) ^ 16·(h ^ (lane % 8)). So each
// operand keeps one per-lane address with 16·(h ^ lane % 8) in bits 4-6, and the k-step m is an
// XOR of 32·(m % 4) into bits 5-6 plus compile-time offsets: one LOP3 (or nothing) per ldmatrix.
__device__ __forceinline__ uint32_t kstep(uint32_t lane_addr, int m) { return lane_addr ^ ((m & 3) << 5); }

// cp.async rows [row0, row0 + ROWS) of one head's [N][D] matrix into a swizzled [ROWS][D] tile;
// rows at or past `limit` are zero-filled and not read.
template <int ROWS, int D>
__device__ __forceinline__ void load_rows(half* tile, const half* src, int row0, int limit) {
    constexpr int CH = D / 8;  // 16-byte chunks per row
    static_assert(ROWS * CH % THREADS == 0, "whole waves of 16-byte copies");
#pragma unroll
    for (int i = 0; i < ROWS * CH / THREADS; ++i) {
        const int c = (int)threadIdx.x + i * THREADS;
        const int r = c / CH, ch = c % CH, gr = row0 + r;
        const bool ok = gr < limit;
        cp_async16(smem_addr(tile + swz<D>(r, ch)), ok ? src + (size_t)gr * D + ch * 8 : src, ok);
    }
}

template <int D>
__global__ void __launch_bounds__(THREADS, 1) attn_large_d(const half* __restrict__ Q, const half* __restrict__ K,
                                                           const half* __restrict__ V, half* __restrict__ O,
                                                           int N, int causal, float scale_log2) {
    constexpr int BR = Tiles<D>::BR, BC = Tiles<D>::BC;
    constexpr int S_WR = Tiles<D>::S_WR, S_WK = WARPS / S_WR;      // S: warps along rows × along keys
    constexpr int PV_WR = Tiles<D>::PV_WR, PV_WD = WARPS / PV_WR;  // O: warps along rows × along D
    constexpr int SM = BR / S_WR, SN = BC / S_WK;                  // a warp's S tile: SM × SN
    constexpr int PM = BR / PV_WR, PN = D / PV_WD;                 // a warp's O slice: PM × PN
    constexpr int S_MT = SM / 16, S_NT = SN / 8;                   // its 16×8 mma tiles
    constexpr int P_MT = PM / 16, P_NT = PN / 8;
    constexpr int KD = CHUNK / BC;   // a K chunk: BC keys × KD columns of D
    constexpr int KCH = D / KD;      // K chunks per key tile
    constexpr int VK = CHUNK / D;    // a V chunk: VK keys × all D columns
    constexpr int VCH = BC / VK;     // V chunks per key tile
    constexpr int CPT = KCH + VCH;   // ring chunks per key tile
    static_assert(S_NT % 2 == 0 && P_NT == 8 && KD % 64 == 0 && VK % 16 == 0, "tile shapes");
    static_assert(CPT % STAGES == 0, "chunk i of every key tile sits in ring slot i % STAGES");
    constexpr int K_CH = KD / 8, K_RS = THREADS / K_CH;  // cp.async of a K chunk: rows kr0 + K_RS·i
    constexpr int V_CH = D / 8, V_RS = THREADS / V_CH;   // of a V chunk: rows vr0 + V_RS·i
    static_assert(K_RS % 8 == 0 && BC % K_RS == 0 && VK % V_RS == 0, "whole waves of 16-byte copies");

    extern __shared__ __align__(128) unsigned char smem_raw[];
    // kstep's XOR needs every tile 128-byte aligned in the shared window: round up (launch adds 128 B).
    half* q_s = reinterpret_cast<half*>(smem_raw + ((0u - smem_addr(smem_raw)) & 127));  // [BR][D], swizzled
    half* ring = q_s + BR * D;                               // [STAGES][CHUNK]: K chunks [BC][KD], V chunks [VK][D]
    half* p_s = ring + STAGES * CHUNK;                       // [BR][BC] fp16 probabilities, swizzled
    // Row statistics, fp32, indexed by the row within the tile:
    float* red_max = reinterpret_cast<float*>(p_s + BR * BC);  // [S_WK][BR]: each S warp's maximum of this key tile
    float* red_sum = red_max + S_WK * BR;                       // [S_WK][BR]: each S warp's sum of P of this key tile
    float* m_s = red_sum + S_WK * BR;                           // [2][BR]: running max before / after key tile j (j % 2)
    float* l_s = m_s + 2 * BR;                                  // [BR]: running sum
    float* alpha_s = l_s + BR;                                  // [BR]: rescale factor of key tile j

    const int tid = (int)threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int g = lane / 4, t = lane % 4;  // accumulator layout: rows g, g + 8; columns 2t, 2t + 1
    const int n_qtiles = (N + BR - 1) / BR;
    const int qt = causal ? n_qtiles - 1 - (int)blockIdx.x : (int)blockIdx.x;  // causal: longest first
    const int q0 = qt * BR;
    const int last_row = min(q0 + BR, N) - 1;
    // Keys at or past key_limit are invisible to every row of this tile (past N, or causal and after
    // its last row): their K and V rows are zero-filled instead of read, and their scores masked.
    const int key_limit = causal ? last_row + 1 : N;
    const int n_ktiles = (key_limit + BC - 1) / BC;
    const size_t head = (size_t)blockIdx.y * N * D;
    const half *Qh = Q + head, *Kh = K + head, *Vh = V + head;

    // S role: rows swr·SM.., keys swk·SN.. of each key tile. O role: rows pwr·PM.., columns pwd·PN..
    const int swr = warp / S_WK, swk = warp % S_WK;
    const int pwr = warp / PV_WD, pwd = warp % PV_WD;
    const int srow0 = q0 + swr * SM, prow0 = q0 + pwr * PM;  // first query row of each role

    // Per-lane ldmatrix addresses (see kstep): A operands (Q, P) and V read chunk 2m + lane / 16 of
    // row lane % 16 (V: of key lane % 8 + 8·(lane / 8 % 2)); K reads chunk 2m + lane / 8 % 2 of key
    // lane % 8 + 8·(lane / 16).
    const uint32_t ring_a = smem_addr(ring);
    const int lo = lane % 8, hi = lane / 16, mid = (lane / 8) % 2;
    const uint32_t q_lane = smem_addr(q_s) + (swr * SM + lane % 16) * (D * 2) + ((hi ^ lo) << 4);
    const uint32_t k_lane = ring_a + (swk * SN + lo + hi * 8) * (KD * 2) + ((mid ^ lo) << 4);
    const uint32_t p_lane = smem_addr(p_s) + (pwr * PM + lane % 16) * (BC * 2) + ((hi ^ lo) << 4);
    const uint32_t v_lane = ring_a + (lo + mid * 8) * (D * 2) + pwd * (PN * 2) + ((hi ^ lo) << 4);

    // Ring chunk i (0 <= i < CPT) of key tile jt goes to slot i % STAGES. Chunks 0..KCH-1 are K's
    // columns [i·KD, (i+1)·KD) of the tile's BC keys; the rest V's rows, VK keys each, all D columns.
    const int kr0 = tid / K_CH, kch = tid % K_CH, vr0 = tid / V_CH, vch = tid % V_CH;
    auto load_chunk = [&](int jt, int i) {  // i is a compile-time constant once the loops unroll
        const uint32_t slot = ring_a + (i % STAGES) * (CHUNK * 2);
        if (i < KCH) {
#pragma unroll
            for (int w = 0; w < BC / K_RS; ++w) {
                const int r = kr0 + w * K_RS, key = jt * BC + r;  // r % 8 == kr0 % 8
                const bool ok = key < key_limit;
                cp_async16(slot + r * (KD * 2) + ((kch ^ (kr0 & 7)) << 4),
                           Kh + (size_t)(ok ? key : 0) * D + i * KD + kch * 8, ok);
            }
        } else {
#pragma unroll
            for (int w = 0; w < VK / V_RS; ++w) {
                const int r = vr0 + w * V_RS, key = jt * BC + (i - KCH) * VK + r;
                const bool ok = key < key_limit;
                cp_async16(slot + r * (D * 2) + ((vch ^ (r & 7)) << 4), Vh + (size_t)(ok ? key : 0) * D + vch * 8, ok);
            }
        }
    };
    // Wait until chunk i of key tile j has landed for every thread; the barrier also frees the slot of
    // the chunk before it, which is refilled here with the chunk STAGES - 1 ahead (maybe the next tile's).
    auto next_chunk = [&](int j, int i) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int ahead = i + STAGES - 1;
        if (ahead < CPT) load_chunk(j, ahead);
        else if (j + 1 < n_ktiles) load_chunk(j + 1, ahead - CPT);
        cp_async_commit();  // possibly empty: keeps the group count uniform
    };

    load_rows<BR, D>(q_s, Qh, q0, N);  // Q joins the first group
#pragma unroll
    for (int i = 0; i < STAGES - 1; ++i) {  // CPT >= STAGES: all in key tile 0
        load_chunk(0, i);
        cp_async_commit();
    }

    float o[P_MT][P_NT][4];
#pragma unroll
    for (int mt = 0; mt < P_MT; ++mt)
#pragma unroll
        for (int i = 0; i < P_NT; ++i) o[mt][i][0] = o[mt][i][1] = o[mt][i][2] = o[mt][i][3] = 0.f;
    // The running max and sum live in shared memory, not registers (here every register is O's or
    // S's): published before the first barrier of the loop.
    for (int r = tid; r < BR; r += THREADS) m_s[r] = -INFINITY, l_s[r] = 0.f;

#pragma unroll 1
    for (int j = 0; j < n_ktiles; ++j) {
        const int k0 = j * BC;
        const int skey0 = k0 + swk * SN;  // this warp's first key
        // Every score of this warp's tile is masked: skip its mmas (it still masks and writes P = 0).
        const bool s_dead = skey0 >= key_limit || (causal && skey0 > srow0 + SM - 1);
        const bool s_mask = skey0 + SN > N || (causal && skey0 + SN - 1 > srow0);  // warp-uniform

        // 1. S = Q·Kᵀ over D, one K chunk (KD columns) at a time.
        float s[S_MT][S_NT][4];
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
            for (int i = 0; i < S_NT; ++i) s[mt][i][0] = s[mt][i][1] = s[mt][i][2] = s[mt][i][3] = 0.f;
#pragma unroll
        for (int kc = 0; kc < KCH; ++kc) {
            next_chunk(j, kc);
            if (s_dead) continue;
            const uint32_t slot = (kc % STAGES) * (CHUNK * 2);
#pragma unroll
            for (int ks = 0; ks < KD / 16; ++ks) {  // Q's chunk kc·KD/8 + 2ks + h, K's chunk 2ks + h
                uint32_t a[S_MT][4];
#pragma unroll
                for (int mt = 0; mt < S_MT; ++mt)
                    ldmatrix_x4(a[mt], kstep(q_lane, ks) + mt * 16 * (D * 2) + kc * (KD * 2) + (ks / 4) * 128);
#pragma unroll
                for (int np = 0; np < S_NT / 2; ++np) {  // 16 keys: two 8-key tiles per ldmatrix.x4
                    uint32_t b[4];
                    ldmatrix_x4(b, kstep(k_lane, ks) + slot + np * 16 * (KD * 2) + (ks / 4) * 128);
#pragma unroll
                    for (int mt = 0; mt < S_MT; ++mt) {
                        mma16816(s[mt][2 * np], a[mt], b[0], b[1]);
                        mma16816(s[mt][2 * np + 1], a[mt], b[2], b[3]);
                    }
                }
            }
        }

        // 2. Scale and mask; this warp's row maxima go to red_max[swk][row].
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt) {
#pragma unroll
            for (int i = 0; i < S_NT; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    float x = s[mt][i][e] * scale_log2;
                    if (s_mask) {
                        const int key = skey0 + i * 8 + 2 * t + (e & 1);
                        const int row = srow0 + mt * 16 + g + (e >> 1) * 8;
                        if (key >= N || (causal && key > row)) x = -INFINITY;
                    }
                    s[mt][i][e] = x;
                }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = -INFINITY;
#pragma unroll
                for (int i = 0; i < S_NT; ++i) mx = fmaxf(mx, fmaxf(s[mt][i][2 * h], s[mt][i][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                if (t == 0) red_max[swk * BR + swr * SM + mt * 16 + g + h * 8] = mx;
            }
        }
        __syncthreads();  // every warp's maxima are in red_max

        // 3. Online softmax: the row's max over all S_WK warps and the old running max give the new
        //    one (m_s[j % 2] is read by all S_WK warps while the warps with swk = 0 write the new max
        //    to m_s[(j + 1) % 2] and the rescale factor to alpha_s); P = exp2(S - m) is rounded once
        //    to fp16 into p_s, and each warp's share of the row sum goes to red_sum.
        const int par = j & 1;
#pragma unroll
        for (int mt = 0; mt < S_MT; ++mt)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = swr * SM + mt * 16 + g + h * 8;  // row within the tile
                float mx = red_max[r];
#pragma unroll
                for (int w = 1; w < S_WK; ++w) mx = fmaxf(mx, red_max[w * BR + r]);
                const float m_old = m_s[par * BR + r];
                const float m_new = fmaxf(m_old, mx);
                const float base = m_new == -INFINITY ? 0.f : m_new;  // a row with nothing visible yet
                float sum = 0.f;
#pragma unroll
                for (int i = 0; i < S_NT; ++i) {
                    const float p0 = fast_exp2(s[mt][i][2 * h] - base);
                    const float p1 = fast_exp2(s[mt][i][2 * h + 1] - base);
                    sum += p0 + p1;
                    *reinterpret_cast<uint32_t*>(p_s + swz<BC>(r, swk * (SN / 8) + i) + 2 * t) = pack_half2(p0, p1);
                }
                sum += __shfl_xor_sync(0xffffffffu, sum, 1);
                sum += __shfl_xor_sync(0xffffffffu, sum, 2);
                if (t == 0) {
                    red_sum[swk * BR + r] = sum;
                    if (swk == 0) {
                        m_s[(par ^ 1) * BR + r] = m_new;
                        alpha_s[r] = fast_exp2(m_old - base);  // 0 on the first visible tile
                    }
                }
            }

        // 4. O = alpha·O + P·V, one V chunk (VK keys × D) at a time; this warp's PM × PN slice.
#pragma unroll
        for (int vc = 0; vc < VCH; ++vc) {
            next_chunk(j, KCH + vc);  // the first one's barrier also publishes p_s and alpha_s
            if (vc == 0) {
#pragma unroll
                for (int mt = 0; mt < P_MT; ++mt)
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        const int r = pwr * PM + mt * 16 + g + h * 8;
                        const float a = alpha_s[r];
#pragma unroll
                        for (int i = 0; i < P_NT; ++i) o[mt][i][2 * h] *= a, o[mt][i][2 * h + 1] *= a;
                        if (pwd == 0 && t == 0) {  // one owner per row: l = alpha·l + this tile's sum
                            float l = l_s[r] * a;
#pragma unroll
                            for (int w = 0; w < S_WK; ++w) l += red_sum[w * BR + r];
                            l_s[r] = l;
                        }
                    }
            }
            const int vkey0 = k0 + vc * VK;
            if (vkey0 >= key_limit || (causal && vkey0 > prow0 + PM - 1)) continue;  // P = 0 on all its keys
            const uint32_t slot = ((KCH + vc) % STAGES) * (CHUNK * 2);
#pragma unroll
            for (int kk = 0; kk < VK / 16; ++kk) {
                const int m = vc * (VK / 16) + kk;  // P's chunks 2m + h
                uint32_t a[P_MT][4];
#pragma unroll
                for (int mt = 0; mt < P_MT; ++mt)
                    ldmatrix_x4(a[mt], kstep(p_lane, m) + mt * 16 * (BC * 2) + (m / 4) * 128);
#pragma unroll
                for (int dp = 0; dp < P_NT / 2; ++dp) {  // 16 columns of O: two 8-wide tiles per ldmatrix.x4
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, kstep(v_lane, dp) + slot + kk * 16 * (D * 2));
#pragma unroll
                    for (int mt = 0; mt < P_MT; ++mt) {
                        mma16816(o[mt][2 * dp], a[mt], b[0], b[1]);
                        mma16816(o[mt][2 * dp + 1], a[mt], b[2], b[3]);
                    }
                }
            }
        }
    }

    // 5. Divide by l (its owners updated it after the first V chunk of the last tile: with VCH > 1
    //    a barrier already separates that from here, but one more costs nothing) and store.
    static_assert(VCH > 1, "the l owners' last update is behind a later chunk's barrier");
    __syncthreads();
#pragma unroll
    for (int mt = 0; mt < P_MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int r = pwr * PM + mt * 16 + g + h * 8, row = q0 + r;
            if (row < N) {  // rows past N are neither divided nor stored
                const float inv = 1.f / l_s[r];
                half* dst = O + head + (size_t)row * D + pwd * PN + 2 * t;
#pragma unroll
                for (int i = 0; i < P_NT; ++i)
                    *reinterpret_cast<__half2*>(dst + i * 8) =
                        __floats2half2_rn(o[mt][i][2 * h] * inv, o[mt][i][2 * h + 1] * inv);
            }
        }
}

template <int D>
constexpr int smem_bytes() {
    return (Tiles<D>::BR * D + STAGES * CHUNK + Tiles<D>::BR * Tiles<D>::BC) * (int)sizeof(half) +
           (2 * (WARPS / Tiles<D>::S_WR) + 4) * Tiles<D>::BR * (int)sizeof(float) + 128;  // + alignment slack
}

template <int D>
void launch(const half* Q, const half* K, const half* V, half* O, int BH, int N, int causal) {
    constexpr int smem = smem_bytes<D>();  // 150,656 B (D = 512), 151,680 B (D = 256)
    static bool configured = false;
    if (!configured) {
        cudaFuncSetAttribute(attn_large_d<D>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        configured = true;
    }
    const float scale_log2 = 1.4426950408889634f / sqrtf((float)D);  // log2(e) / sqrt(D)
    const dim3 grid((N + Tiles<D>::BR - 1) / Tiles<D>::BR, BH);
    attn_large_d<D><<<grid, THREADS, smem>>>(Q, K, V, O, N, causal, scale_log2);
}

}  // namespace

extern "C" void solve(const half* Q, const half* K, const half* V, half* O, int B, int H, int N, int D,
                      int causal) {
    if (D == 256)
        launch<256>(Q, K, V, O, B * H, N, causal);
    else if (D == 512)
        launch<512>(Q, K, V, O, B * H, N, causal);
}
