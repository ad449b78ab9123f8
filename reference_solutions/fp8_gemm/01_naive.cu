// fp8_gemm, step 1: one thread per output element, fp32 accumulator.
//
// Technique: thread (row, col) walks K along row `row` of A and row `col` of B (both K-major),
// converts each e4m3 value to float (exact), accumulates the products in float, and scales and
// rounds once to bf16 at the end: C = acc · (scale_a · scale_b), as the reference does.
// Consecutive threads (threadIdx.x) take consecutive columns, so the A read is a broadcast and
// each thread's B reads stream along its own row (a 32-byte sector serves 32 steps from L1).
// What it buys: correctness on every shape, and a baseline to beat: every multiply-add costs two
// loads and two conversions, far from the FP8 tensor cores.
#include <cuda_fp8.h>
#include <cuda_bf16.h>

__global__ void gemm_kernel(const __nv_fp8_e4m3* __restrict__ A, const __nv_fp8_e4m3* __restrict__ B,
                            const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                            __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    const __nv_fp8_e4m3* a = A + (size_t)row * K;
    const __nv_fp8_e4m3* b = B + (size_t)col * K;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += float(a[k]) * float(b[k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
    gemm_kernel<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
}
