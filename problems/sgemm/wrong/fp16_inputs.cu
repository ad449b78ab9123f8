// expected: WRONG_ANSWER — converts A and B to half for the fp16 tensor cores (fp32 accumulators): 10 mantissa bits per input, the same ~3e-4 error on C as TF32, past the fp32 tolerance of 5e-5 + 5e-5·|C| on about 3/4 of the outputs
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// One warp per 16×16 tile of C with m16n16k16 half fragments and float accumulators: the
// hgemm recipe applied to fp32 data by rounding each element to half on its way into shared
// memory (zero-filled past the edges, so every shape is handled).
__global__ void sgemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(32) half as[16 * 16], bs[16 * 16];
    __shared__ __align__(32) float cs[16 * 16];
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16, lane = threadIdx.x;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.f);
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = lane; e < 256; e += 32) {
            const int r = e / 16, c = e % 16;
            as[e] = __float2half((row0 + r < M && k0 + c < K) ? A[(size_t)(row0 + r) * K + k0 + c] : 0.f);
            bs[e] = __float2half((k0 + r < K && col0 + c < N) ? B[(size_t)(k0 + r) * N + col0 + c] : 0.f);
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
        const int r = e / 16, c = e % 16;
        if (row0 + r < M && col0 + c < N) C[(size_t)(row0 + r) * N + col0 + c] = cs[e];
    }
}

extern "C" void solve(const float* A, const float* B, float* C, int M, int N, int K) {
    dim3 grid((N + 15) / 16, (M + 15) / 16);
    sgemm_kernel<<<grid, 32>>>(A, B, C, M, N, K);
}
