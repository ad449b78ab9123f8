// hgemm, step 4: tensor cores through WMMA, shared-memory tiles, a 3-stage cp.async pipeline.
//
// Technique: a 256-thread block computes a 128×128 tile of C; its 8 warps form a 2×4 grid and
// each owns 64×32 outputs = 4×2 WMMA 16×16×16 fragments with fp32 accumulators. The K loop
// walks 32-wide slices: A[128×32] and B[32×128] are copied to shared memory with 16-byte
// cp.async (bypassing registers) three stages ahead, so global-memory latency hides behind
// the tensor-core math of the current stage. Rows are padded by 8 halves (16 bytes) so the
// fragment loads of neighbouring rows fall in different banks.
// Ragged shapes: when K and N are multiples of 8 every 16-byte chunk is either fully inside or
// fully outside the matrix, and cp.async zero-fills the outside ones; otherwise the same loop
// loads the tiles element by element with bounds checks (slower, always correct). The
// epilogue stages each fragment through shared memory and writes only in-bounds elements.
// What it buys: each element loaded from global memory is reused 128 times from shared memory,
// and the FMAs run on the tensor cores (HMMA in SASS). It cannot reach cuBLAS on Hopper:
// mma.sync-class instructions top out well below wgmma's rate (see later steps).
#include <cuda_fp16.h>
#include <mma.h>
#include <cstdint>

using namespace nvcuda;

constexpr int BM = 128, BN = 128, BK = 32, STAGES = 3, THREADS = 256;
constexpr int WM = 64, WN = 32;              // per-warp tile: 2 warps down M, 4 across N
constexpr int LDA = BK + 8, LDB = BN + 8;    // padded shared-memory row lengths (halves)
constexpr int A_STAGE = BM * LDA, B_STAGE = BK * LDB;
constexpr int SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * (int)sizeof(half);

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    unsigned dst = (unsigned)__cvta_generic_to_shared(smem);
    int src_size = valid ? 16 : 0;  // 0: write 16 zero bytes, read nothing
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(gmem), "r"(src_size));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Load the k-th 32-wide slice of A (128×32) and B (32×128) into one pipeline stage.
template <bool VEC>
__device__ void load_stage(half* As, half* Bs, const half* A, const half* B, int M, int N, int K,
                           int row0, int col0, int k0) {
    if (VEC) {
        for (int c = threadIdx.x; c < BM * BK / 8; c += THREADS) {  // A: 4 chunks of 8 per row
            int r = c / (BK / 8), kc = (c % (BK / 8)) * 8;
            int gr = row0 + r, gk = k0 + kc;
            bool ok = gr < M && gk < K;
            cp_async16(As + r * LDA + kc, ok ? A + (size_t)gr * K + gk : A, ok);
        }
        for (int c = threadIdx.x; c < BK * BN / 8; c += THREADS) {  // B: 16 chunks of 8 per row
            int r = c / (BN / 8), nc = (c % (BN / 8)) * 8;
            int gk = k0 + r, gn = col0 + nc;
            bool ok = gk < K && gn < N;
            cp_async16(Bs + r * LDB + nc, ok ? B + (size_t)gk * N + gn : B, ok);
        }
    } else {
        const half zero = __float2half(0.f);
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            int r = e / BK, k = e % BK, gr = row0 + r, gk = k0 + k;
            As[r * LDA + k] = (gr < M && gk < K) ? A[(size_t)gr * K + gk] : zero;
        }
        for (int e = threadIdx.x; e < BK * BN; e += THREADS) {
            int r = e / BN, n = e % BN, gk = k0 + r, gn = col0 + n;
            Bs[r * LDB + n] = (gk < K && gn < N) ? B[(size_t)gk * N + gn] : zero;
        }
    }
}

template <bool VEC>
__global__ void __launch_bounds__(THREADS) hgemm_kernel(const half* __restrict__ A,
                                                        const half* __restrict__ B,
                                                        half* __restrict__ C, int M, int N, int K) {
    extern __shared__ __align__(128) half smem[];
    half* As = smem;
    half* Bs = smem + STAGES * A_STAGE;
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int wm = warp / 4, wn = warp % 4;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[WM / 16][WN / 16];
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) wmma::fill_fragment(acc[i][j], 0.f);

    int tiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < tiles) load_stage<VEC>(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, row0, col0, s * BK);
        cp_async_commit();
    }
    for (int t = 0; t < tiles; ++t) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();  // stage t is in shared memory; stage t-1 is no longer read by anyone
        int next = t + STAGES - 1;
        if (next < tiles) {
            int s = next % STAGES;
            load_stage<VEC>(As + s * A_STAGE, Bs + s * B_STAGE, A, B, M, N, K, row0, col0, next * BK);
        }
        cp_async_commit();
        const half* as = As + (t % STAGES) * A_STAGE + wm * WM * LDA;
        const half* bs = Bs + (t % STAGES) * B_STAGE + wn * WN;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a[WM / 16];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b[WN / 16];
#pragma unroll
            for (int i = 0; i < WM / 16; ++i) wmma::load_matrix_sync(a[i], as + i * 16 * LDA + kk, LDA);
#pragma unroll
            for (int j = 0; j < WN / 16; ++j) wmma::load_matrix_sync(b[j], bs + kk * LDB + j * 16, LDB);
#pragma unroll
            for (int i = 0; i < WM / 16; ++i)
#pragma unroll
                for (int j = 0; j < WN / 16; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        }
    }
    cp_async_wait<0>();
    __syncthreads();  // the pipeline's shared memory becomes the epilogue's staging area

    float* stage = reinterpret_cast<float*>(smem) + warp * 16 * 16;
#pragma unroll
    for (int i = 0; i < WM / 16; ++i)
#pragma unroll
        for (int j = 0; j < WN / 16; ++j) {
            wmma::store_matrix_sync(stage, acc[i][j], 16, wmma::mem_row_major);
            __syncwarp();
            int r = lane / 2, c = (lane % 2) * 8;
            int gr = row0 + wm * WM + i * 16 + r, gc = col0 + wn * WN + j * 16 + c;
            if (gr < M) {
#pragma unroll
                for (int e = 0; e < 8; ++e)
                    if (gc + e < N) C[(size_t)gr * N + gc + e] = __float2half(stage[r * 16 + c + e]);
            }
            __syncwarp();
        }
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    static bool configured = false;  // raise the 48 KB dynamic shared-memory limit once
    if (!configured) {
        cudaFuncSetAttribute(hgemm_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        cudaFuncSetAttribute(hgemm_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
        configured = true;
    }
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    if (K % 8 == 0 && N % 8 == 0)  // every 16-byte chunk is 16-byte aligned and wholly in or out
        hgemm_kernel<true><<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
    else
        hgemm_kernel<false><<<grid, THREADS, SMEM_BYTES>>>(A, B, C, M, N, K);
}
