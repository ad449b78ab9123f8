// expected: WRONG_ANSWER — tensor cores with a half accumulator: C is rounded to fp16 after every 16-deep mma, so the K = 16384 test misses by up to ~0.03
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// One warp per 16×16 tile of C. The A and B tiles go through shared memory, zero-filled past
// the edges, so every shape is handled; only the accumulator type is wrong.
__global__ void gemm_kernel(const half* A, const half* B, half* C, int M, int N, int K) {
    __shared__ __align__(32) half as[16 * 16], bs[16 * 16], cs[16 * 16];
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16, lane = threadIdx.x;
    const half zero = __float2half(0.f);
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> acc;  // BUG: should be float
    wmma::fill_fragment(acc, zero);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = lane; e < 256; e += 32) {
            int r = e / 16, c = e % 16;
            as[e] = (row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : zero;
            bs[e] = (k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : zero;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
        wmma::load_matrix_sync(a, as, 16);
        wmma::load_matrix_sync(b, bs, 16);
        wmma::mma_sync(acc, a, b, acc);
        __syncwarp();
    }
    wmma::store_matrix_sync(cs, acc, 16, wmma::mem_row_major);
    __syncwarp();
    for (int e = lane; e < 256; e += 32) {
        int r = e / 16, c = e % 16;
        if (row0 + r < M && col0 + c < N) C[(size_t)(row0 + r) * N + col0 + c] = cs[e];
    }
}

extern "C" void solve(const half* A, const half* B, half* C, int M, int N, int K) {
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    gemm_kernel<<<grid, 32>>>(A, B, C, M, N, K);
}
