// expected: WRONG_ANSWER — tensor cores in TF32 (wmma::precision::tf32, fp32 accumulators): A and B are rounded to 10 mantissa bits, so each product errs by ~2^-11 relative and C by ~3e-4 (up to ~1.5e-3), far past the fp32 tolerance of 5e-5 + 5e-5·|C|; about 3/4 of the outputs fail on every test with K > 1
#include <mma.h>

using namespace nvcuda;

// One warp per 16×16 tile of C, m16n16k8 TF32 fragments with float accumulators. The A and B
// tiles go through shared memory, zero-filled past the edges, so every shape is handled and
// the conversion (__float_to_tf32, round to nearest) is done as the CUDA guide says: only the
// input precision is wrong.
__global__ void sgemm_kernel(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __align__(32) float as[16 * 8], bs[8 * 16], cs[16 * 16];
    const int row0 = blockIdx.y * 16, col0 = blockIdx.x * 16, lane = threadIdx.x;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> acc;
    wmma::fill_fragment(acc, 0.f);
    for (int k0 = 0; k0 < K; k0 += 8) {
        for (int e = lane; e < 128; e += 32) {
            const int ar = e / 8, ak = e % 8, bk = e / 16, bc = e % 16;
            as[e] = (row0 + ar < M && k0 + ak < K) ? A[(size_t)(row0 + ar) * K + k0 + ak] : 0.f;
            bs[e] = (k0 + bk < K && col0 + bc < N) ? B[(size_t)(k0 + bk) * N + col0 + bc] : 0.f;
        }
        __syncwarp();
        wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> b;
        wmma::load_matrix_sync(a, as, 8);
        wmma::load_matrix_sync(b, bs, 16);
        for (int i = 0; i < a.num_elements; ++i) a.x[i] = wmma::__float_to_tf32(a.x[i]);
        for (int i = 0; i < b.num_elements; ++i) b.x[i] = wmma::__float_to_tf32(b.x[i]);
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
