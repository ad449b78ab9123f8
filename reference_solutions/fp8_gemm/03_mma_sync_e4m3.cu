// fp8_gemm, step 3: FP8 tensor cores through mma.sync.m16n8k32 (e4m3), ldmatrix from XOR-swizzled
// shared memory, a 4-stage cp.async pipeline, and the partial sums promoted into fp32 every
// 64 products.
//
// Count first: per k32 step a warp's 64×32 tile of C needs 16 mma.m16n8k32 (each 16·8·32 = 4096
// multiply-adds, twice hgemm's m16n8k16) and 6 ldmatrix.x4 (4 for its four 16-row slices of A, 2
// for its four 8-column slices of B). Both operands are K-major (A [M, K], B [N, K]): exactly the
// layout the e4m3 mma wants for A (row) and B (col), so A and B tiles are stored alike, 64 bytes
// (64 e4m3 values) of K per row, and both load with plain ldmatrix (no .trans: an 8-bit
// fragment is 4 consecutive K values of one row per register, which is what ldmatrix's "8 rows of
// 16 bytes" gives each lane).
// - cp.async.cg copies 16-byte chunks (16 e4m3 values) global → shared, 4 stages deep;
//   out-of-range chunks are zero-filled by the copy itself (src-size 0). K % 16 == 0 (the
//   problem's rule) makes every chunk whole, so ragged M, N and K need no other code.
// - Shared memory is XOR-swizzled, not padded: chunk c of row r lives at chunk c ^ ((r >> 1) & 3)
//   of its 64-byte row, so the 8 rows an ldmatrix reads hit 8 different 16-byte bank groups.
// - The accumulator: Hopper's FP8 tensor-core accumulation is reported to keep fewer bits than
//   fp32, and the Triton step was WRONG_ANSWER at K = 16384 for that reason (README.md). So each
//   64-wide K slice is accumulated by the mma into `part` (from zero) and then added into the fp32
//   `acc` with ordinary FADDs: 64 FADDs per thread per slice against 32 mmas per warp.
// - Epilogue: C = acc · (scale_a · scale_b), rounded once to bf16; pairs of columns stored as
//   one 4-byte bf16x2 where N is even, single values otherwise.
// A 256-thread CTA computes 128×128 of C with 8 warps of 64×32. The mma needs sm_89 or newer: an
// older build keeps an empty kernel that solve() never launches there, and uses step 1's loop.
//
// What the SASS says (`judge check --arch ...`, nvcc 13.0; 179 registers on sm_90a, no spills): an
// sm_89 build has 32 QMMA.16832.F32.E4M3.E4M3 per 64-wide K slice, Ada's native FP8 mma. An
// sm_90a build has none: Hopper has no FP8 mma.sync, and ptxas turns each one into F2FP
// conversions of the fragments to fp16 (exact for e4m3) and two HMMA.16816.F32: 64 HMMA and 96
// F2FP per slice. So on an H100 this step runs on the fp16 tensor cores at mma.sync's rate, with
// the conversions on top: hgemm's mma.sync step (05) is its ceiling, and only wgmma (QGMMA) reaches
// the FP8 rate. What it buys there: the tensor cores at all (the CUDA-core steps stop near
// 47 TFLOPS), and the lesson that on Hopper FP8 means wgmma.
// Measured (H200, 2026-11-28, `judge verify --table`): ACCEPTED, 265.2 TFLOPS at 8192³ (0.18×
// cuBLAS FP8; predicted 250–330), 225.4 at the decode shape, M=128 (0.25×), geomean 0.21×.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 64, STAGES = 4, THREADS = 256;
constexpr int A_STAGE = BM * BK, B_STAGE = BN * BK;  // bytes
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE);

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Swizzled byte offset of 16-byte chunk `c` (0..3) of row `r` in a stage's A or B tile.
__device__ __forceinline__ int tile_off(int r, int c) { return r * BK + ((c ^ ((r >> 1) & 3)) << 4); }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
__device__ __forceinline__ void cp_async16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(smem_u32(dst)), "l"(src),
                 "r"(valid ? 16 : 0) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}

// d += a · b for one m16n8k32 e4m3 tile, fp32 accumulator.
__device__ __forceinline__ void mma_e4m3(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

__global__ void __launch_bounds__(THREADS) gemm_mma(const __nv_fp8_e4m3* __restrict__ A,
                                                   const __nv_fp8_e4m3* __restrict__ B,
                                                   const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                                                   __nv_bfloat16* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    extern __shared__ __align__(128) uint8_t smem[];
    uint8_t* As = smem;                      // [STAGES][BM][BK]
    uint8_t* Bs = smem + STAGES * A_STAGE;   // [STAGES][BN][BK]
    const uint8_t* a_g = reinterpret_cast<const uint8_t*>(A);
    const uint8_t* b_g = reinterpret_cast<const uint8_t*>(B);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int wm = (warp / 4) * 64, wn = (warp % 4) * 32;  // the warp's 64×32 piece of the tile
    const int k_tiles = (K + BK - 1) / BK;

    // Each thread copies 2 chunks of A and 2 of B per stage: rows tid/4 and 64 + tid/4, chunk tid%4.
    auto load = [&](int stage, int kt) {
        const int k0 = kt * BK;
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const int r = tid / 4 + i * 64, c = tid % 4, gk = k0 + c * 16;
            const bool a_ok = m0 + r < M && gk < K, b_ok = n0 + r < N && gk < K;
            cp_async16(As + stage * A_STAGE + tile_off(r, c), a_ok ? a_g + (size_t)(m0 + r) * K + gk : a_g, a_ok);
            cp_async16(Bs + stage * B_STAGE + tile_off(r, c), b_ok ? b_g + (size_t)(n0 + r) * K + gk : b_g, b_ok);
        }
    };

    float acc[4][4][4] = {};  // [m16 slice][n8 slice][fragment], fp32 for the whole K
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < k_tiles) load(s, s);
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    for (int kt = 0; kt < k_tiles; ++kt) {
        asm volatile("cp.async.wait_group %0;" :: "n"(STAGES - 2) : "memory");
        __syncthreads();  // stage kt landed for everyone; stage kt - 1 is free to overwrite
        const int next = kt + STAGES - 1;
        if (next < k_tiles) load(next % STAGES, next);
        asm volatile("cp.async.commit_group;" ::: "memory");

        const uint8_t* as = As + (kt % STAGES) * A_STAGE;
        const uint8_t* bs = Bs + (kt % STAGES) * B_STAGE;
        float part[4][4][4] = {};  // this K slice's 64 products, then promoted into acc
#pragma unroll
        for (int kk = 0; kk < BK / 32; ++kk) {
            uint32_t a[4][4], b[2][4];
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)  // lanes 0-15: rows 0-15 at chunk 2kk; 16-31: chunk 2kk+1
                ldmatrix_x4(a[mi], as + tile_off(wm + mi * 16 + lane % 16, 2 * kk + lane / 16));
#pragma unroll
            for (int nj = 0; nj < 2; ++nj)  // matrices: (n 0-7, chunk 2kk), (n 0-7, 2kk+1), (n 8-15, ...)
                ldmatrix_x4(b[nj], bs + tile_off(wn + nj * 16 + (lane / 16) * 8 + lane % 8, 2 * kk + (lane / 8) % 2));
#pragma unroll
            for (int mi = 0; mi < 4; ++mi)
#pragma unroll
                for (int ni = 0; ni < 4; ++ni)
                    mma_e4m3(part[mi][ni], a[mi], b[ni / 2][(ni % 2) * 2], b[ni / 2][(ni % 2) * 2 + 1]);
        }
#pragma unroll
        for (int mi = 0; mi < 4; ++mi)
#pragma unroll
            for (int ni = 0; ni < 4; ++ni)
#pragma unroll
                for (int f = 0; f < 4; ++f) acc[mi][ni][f] += part[mi][ni][f];
    }
    asm volatile("cp.async.wait_group 0;" ::: "memory");

    // acc[mi][ni]: rows wm + 16mi + lane/4 (+8), columns wn + 8ni + 2(lane%4) (+1).
    const float s = *scale_a * *scale_b;
    const bool pairs = N % 2 == 0;  // then a column pair starts 4-byte aligned
#pragma unroll
    for (int mi = 0; mi < 4; ++mi) {
#pragma unroll
        for (int ni = 0; ni < 4; ++ni) {
            const int c = n0 + wn + ni * 8 + (lane % 4) * 2;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = m0 + wm + mi * 16 + lane / 4 + h * 8;
                if (r >= M || c >= N) continue;
                const float v0 = acc[mi][ni][2 * h] * s, v1 = acc[mi][ni][2 * h + 1] * s;
                __nv_bfloat16* out = C + (size_t)r * N + c;
                if (pairs) {  // N even: c + 1 < N as well
                    *reinterpret_cast<__nv_bfloat162*>(out) = __floats2bfloat162_rn(v0, v1);
                } else {
                    out[0] = __float2bfloat16(v0);
                    if (c + 1 < N) out[1] = __float2bfloat16(v1);
                }
            }
        }
    }
#endif
}

// GPUs without FP8 tensor cores (before sm_89): step 1's loop, one thread per output.
__global__ void gemm_fallback(const __nv_fp8_e4m3* __restrict__ A, const __nv_fp8_e4m3* __restrict__ B,
                              const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                              __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += float(A[(size_t)row * K + k]) * float(B[(size_t)col * K + k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    static int cc = -1;
    if (cc < 0) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        cc = major * 10 + minor;
        if (cc >= 89) cudaFuncSetAttribute(gemm_mma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
    }
    if (cc >= 89) {
        dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
        gemm_mma<<<grid, THREADS, SMEM_BYTES>>>(A, B, scale_a, scale_b, C, M, N, K);
    } else {
        dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
        gemm_fallback<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
    }
}
