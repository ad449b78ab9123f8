// sgemm, step 3: 128×128 block tiles, an 8×8 register tile per thread, a 3-stage cp.async pipeline.
//
// Technique: a 256-thread block computes a 128×128 tile of C and walks K in 16-wide slices.
// Each thread owns an 8×8 tile of C in 64 registers: per k it reads 8 values of A and 8 of B
// from shared memory (four 16-byte loads) and does their 64-FMA outer product, so each shared
// load feeds 16 FMAs (the 02 kernel: one). Per slice, A[128×16] and B[16×128] go from global
// to shared memory with cp.async (no registers in between), two slices ahead of the math:
// global latency hides behind ~8000 cycles of FMAs, and the pipeline costs no registers.
//  - A is stored transposed (As[k][m]) so a thread's 4+4 values of A at one k are two float4s.
//    The copy does the transpose: one 4-byte cp.async per element (always aligned, any K).
//    Rows of As are padded to 132 floats, so the 32 lanes of a warp (k = 0..7 × 4 consecutive
//    m) write banks (4k + m) mod 32, all different: no store conflicts.
//  - The thread's rows are {4ty..4ty+3} ∪ {64+4ty..} and its columns {4tx..} ∪ {64+4tx..};
//    a warp is 4 (ty) × 8 (tx) threads, so each float4 load of a warp touches 64 bytes of A or
//    128 bytes of B (one shared-memory wavefront), and its C stores fill whole 128-byte lines.
//  - One __syncthreads per slice: it publishes slice t (after cp.async.wait_group) and proves
//    every warp is done with slice t-1, whose stage the copies issued next overwrite.
// Ragged shapes: out-of-range elements are copied as zeros (cp.async with src-size 0 reads
// nothing and zero-fills), so edge tiles and the K tail need no other code; the epilogue stores
// only in-range elements. B moves in 16-byte chunks when N % 4 == 0 (each chunk is aligned and
// wholly in or out of the matrix), else element by element.
// What it buys: the main loop is 1024 FFMA in 1174 instructions (87%), and a block reads 16 KB
// from L2 per 0.5 MFLOP, so the FP32 pipes, not memory, are the limit. Prediction on an H100
// SXM: ~42-48 TFLOPS at 8192³, 80-90% of cuBLAS fp32 (FFMA peak: 132 SMs × 128 lanes × 2 ×
// 1.98 GHz ≈ 67 TFLOPS). ptxas (sm_90a): 120 registers (121 with scalar B), 0 spills, 49,920 B
// of shared memory per block; __launch_bounds__(256, 2) keeps two blocks (16 warps) on each SM.
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 16, STAGES = 3, THREADS = 256;
constexpr int LDA = BM + 4;  // As[k][m] row length: +4 floats staggers the transposing stores across banks
constexpr int A_STAGE = BK * LDA, B_STAGE = BK * BN;  // floats
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * (int)sizeof(float);  // 49,920: above 48 KB

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
// src-size 0: nothing is read and the destination is zero-filled.
__device__ __forceinline__ void cp_async4(uint32_t dst, const float* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const float* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

template <bool VEC>
__global__ void __launch_bounds__(THREADS, 2) sgemm_kernel(const float* __restrict__ A,
                                                         const float* __restrict__ B,
                                                         float* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(16) float smem[];
    float* As = smem;                     // [STAGES][BK][LDA]: As[s][k][m] = A[row0 + m][k0 + k]
    float* Bs = smem + STAGES * A_STAGE;  // [STAGES][BK][BN]:  Bs[s][k][n] = B[k0 + k][col0 + n]
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ty = (warp / 2) * 4 + lane / 8;  // 0..15: rows 4ty.. and 64+4ty..
    const int tx = (warp % 2) * 8 + lane % 8;  // 0..15: columns 4tx.. and 64+4tx..
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    // What this thread copies per slice. A: columns a_k and a_k + 8 of rows a_m + 32i (i < 4).
    const int a_k = tid % 8, a_m = tid / 8;
    const int a_rows = min(max(M - row0 - a_m, 0), BM);               // row a_m + 32i exists iff 32i < a_rows
    const float* a_src = A + (size_t)min(row0 + a_m, M - 1) * K + a_k;  // advances BK columns per slice
    const size_t a_step = (size_t)32 * K;
    int a_kk = a_k;  // the global column of a_src
    const uint32_t as0 = smem_addr(As + a_k * LDA + a_m);
    // B, VEC: a float4 at rows b_k and b_k + 8, columns b_n..b_n+3. Scalar: rows b_k + 2i (i < 8), column b_n.
    const int b_k = VEC ? tid / 32 : tid / 128, b_n = VEC ? (tid % 32) * 4 : tid % 128;
    const bool b_col_ok = col0 + b_n < N;
    const float* b_src = B + (size_t)b_k * N + (b_col_ok ? col0 + b_n : 0);  // advances BK rows per slice
    const size_t b_step = (size_t)BK * N;
    int b_kk = b_col_ok ? b_k : K;  // the global row of b_src (K: the column is out, copy nothing)
    const uint32_t bs0 = smem_addr(Bs + b_k * BN + b_n);

    auto load_next_slice = [&](int stage) {
        const uint32_t ad = as0 + stage * (A_STAGE * 4);
#pragma unroll
        for (int j = 0; j < BK / 8; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const bool ok = a_kk + 8 * j < K && 32 * i < a_rows;
                cp_async4(ad + (8 * j * LDA + 32 * i) * 4, ok ? a_src + 8 * j + i * a_step : A, ok);
            }
        const uint32_t bd = bs0 + stage * (B_STAGE * 4);
        if (VEC) {
#pragma unroll
            for (int j = 0; j < BK / 8; ++j) {
                const bool ok = b_kk + 8 * j < K;
                cp_async16(bd + 8 * j * BN * 4, ok ? b_src + (size_t)(8 * j) * N : B, ok);
            }
        } else {
#pragma unroll
            for (int i = 0; i < BK / 2; ++i) {
                const bool ok = b_kk + 2 * i < K;
                cp_async4(bd + 2 * i * BN * 4, ok ? b_src + (size_t)(2 * i) * N : B, ok);
            }
        }
        a_src += BK, a_kk += BK, b_src += b_step, b_kk += BK;
    };

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.f;

    const int slices = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) load_next_slice(s);
        cp_async_commit();  // one group per slice, empty past the end, so the wait count below holds
    }
    for (int t = 0; t < slices; ++t) {
        cp_async_wait<STAGES - 2>();  // this thread's copies of slice t have landed
        __syncthreads();              // everyone's have, and nobody reads slice t-1's stage any more
        if (t + STAGES - 1 < slices) load_next_slice((t + STAGES - 1) % STAGES);
        cp_async_commit();
        const float* as = As + (t % STAGES) * A_STAGE + 4 * ty;
        const float* bs = Bs + (t % STAGES) * B_STAGE + 4 * tx;
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(as + k * LDA);
            const float4 a1 = *reinterpret_cast<const float4*>(as + k * LDA + 64);
            const float4 b0 = *reinterpret_cast<const float4*>(bs + k * BN);
            const float4 b1 = *reinterpret_cast<const float4*>(bs + k * BN + 64);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
    }
    // The groups still open are empty (slices past the end): no copy is in flight at exit.

#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int r = row0 + (i < 4 ? 4 * ty + i : 64 + 4 * ty + i - 4);
        if (r >= M) continue;
        float* c = C + (size_t)r * N;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int col = col0 + 64 * h + 4 * tx;
            if (VEC) {  // N % 4 == 0: the float4 is aligned and wholly in or out
                if (col < N)
                    *reinterpret_cast<float4*>(c + col) =
                        make_float4(acc[i][4 * h], acc[i][4 * h + 1], acc[i][4 * h + 2], acc[i][4 * h + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    if (col + j < N) c[col + j] = acc[i][4 * h + j];
            }
        }
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    static bool configured = false;  // raise the 48 KB dynamic shared-memory limit once
    if (!configured) {
        cudaFuncSetAttribute(sgemm_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        cudaFuncSetAttribute(sgemm_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        configured = true;
    }
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (N % 4 == 0)
        sgemm_kernel<true><<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
    else
        sgemm_kernel<false><<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
}
