// fp8_gemm, step 5: step 4 with each warpgroup's promotion overlapped with its next stage's
// wgmmas: two sets of stage accumulators, and the registers to hold them moved from the producer
// to the consumers with `setmaxnreg`.
//
// What step 4 left (README.md, "Still to write"): per 128-product stage a consumer warpgroup issued
// four m64n128k32 wgmmas into `part`, waited for all of them (`wgmma.wait_group 0`), then added
// `part` into the fp32 `acc` with 64 FADDs per thread. While it added, its wgmmas had stopped: the
// tensor cores were busy only with the other warpgroup's work, and when the two ran in phase they
// idled. Counted: ~256 tensor-core cycles of wgmma per stage against ~64 of FADDs, the ~20% that
// step 4 stood short of cuBLAS (0.78× at 4096³ and 8192³ on an H200).
//
// Here a consumer keeps two stage accumulators, p0 and p1, and takes the stages two at a time:
//   issue stage k into p1; add stage k - 1 (p0, done) into acc; issue stage k + 1 into p0;
//   `wgmma.wait_group 1` (stage k done); add p1 into acc; `wgmma.wait_group 0`.
// Each promotion runs while the other accumulator's wgmmas do, and each stage is given back to
// the producer once its promotion starts. The loop is unrolled by two so that p0 and p1 stay
// registers (an array indexed by a run-time parity would go to local memory). `fence_operand`
// after each wait ties the FADDs' reads to it: a wgmma writes its registers asynchronously, so
// without it the compiler could read an accumulator before the wait that makes it valid.
// What ptxas insists on: no wgmma group in flight across the loop's back edge whose registers
// are read later. A first draft carried stage k + 1's group into the next iteration; ptxas
// serialised every wgmma for it (C7514). And where the FADDs land is ptxas's choice, not the
// source's: a second draft (issue k, add k - 1, wait 0, per stage) had half of its FADDs
// scheduled after their wait, overlapping nothing. Here each stage's FADDs must come before the
// wgmma that overwrites its accumulator, and the SASS shows both promotions under wgmmas.
//
// Registers: acc, p0 and p1 are 192 floats a thread, more than the 168 that 384 threads may each
// have on one SM (65,536 / 384). The producer needs few (one thread issues TMA), so at the start
// it gives registers back (`setmaxnreg.dec` to 40) and the consumers take them
// (`setmaxnreg.inc` to 232): 128 × 40 + 256 × 232 = 64,512 of 65,536.
//
// Prediction: the promotion hidden under the next stage's wgmmas, the tensor cores busy from one
// stage to the next: 0.9–1.0× cuBLAS on the square shapes (the 20% of step 4's gap less what the
// second wait and the added register pressure cost); the decode shape, bound by reading B, about
// as step 4 (0.89×).
// Measured (H200, 2026-11-28): the second draft (above) at 10:53 UTC, ACCEPTED, 1,176 TFLOPS at
// 8192³ and 1,079 at 4096³ (0.81× cuBLAS FP8 on both), and 0.954× / 0.946× / 0.972× of step 4's
// time at 8192³ / 4096³ / decode in one `judge compare`. This order, at 10:58 UTC: 0.966× the second
// draft's time at 4096³ and 8192³ (`judge compare`, FASTER; the decode shape SAME), then `judge
// submit`: ACCEPTED, 1,224 TFLOPS at 8192³ and 1,120 at 4096³, 0.83× and 0.84× cuBLAS FP8 (0.91× at
// the decode shape; geomean 0.86×). Predicted 0.9–1.0×: the rest of the gap is not the promotion.
// SASS: 16 QGMMA, registers up to R226 in the consumers (USETMAXREG), no local memory; ptxas
// reports 168 (the kernel's launch-time count).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <cstdint>

constexpr int BM = 128, BN = 128, BK = 128, STAGES = 6;  // BK in e4m3 values = bytes
constexpr int THREADS = 384;  // producer warpgroup + 2 consumer warpgroups
constexpr int A_BYTES = BM * BK, B_BYTES = BN * BK, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024;  // + alignment slack (barriers are static)

// wgmma and the TMA instructions exist only on sm_90a: the device code below is compiled for
// that target alone.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}

__device__ __forceinline__ void mbar_expect_tx(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "WAIT_%=:\n"
        "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        "@!p bra WAIT_%=;\n"
        "}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}

__device__ __forceinline__ void tma_load_2d(void* dst, const CUtensorMap* map, uint64_t* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
        :: "r"(smem_addr(dst)), "l"(map), "r"(smem_addr(bar)), "r"(c0), "r"(c1) : "memory");
}

// A shared-memory matrix descriptor for wgmma: 128-byte swizzle, byte offsets >> 4. For K-major
// operands with 128-byte rows the leading offset is unused and the stride offset is the 1024 B
// between 8-row swizzle atoms.
__device__ __forceinline__ uint64_t make_desc(const void* base) {
    uint64_t d = 0;
    d |= (uint64_t)((smem_addr(base) & 0x3FFFF) >> 4);
    d |= (uint64_t)(16 >> 4) << 16;
    d |= (uint64_t)(1024 >> 4) << 32;
    d |= (uint64_t)1 << 62;  // SWIZZLE_128B
    return d;
}

// D[64×128] (+)= A[64×32] · B[32×128] in e4m3 with fp32 accumulators; A and B both K-major (FP8
// wgmma has no transpose). accumulate = 0 starts D from zero (scale-d): no instruction zeroes it.
__device__ __forceinline__ void wgmma_m64n128k32(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n"
        ".reg .pred p;\n"
        "setp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1;\n"
        "}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

// Tile t in groups of GROUP_M tile-rows, column by column inside a group, so that the tiles
// running at the same time share their B rows (and A rows) in L2.
constexpr int GROUP_M = 16;

__device__ __forceinline__ void tile_origin(int t, int tiles_m, int tiles_n, int& m0, int& n0) {
    const int group = t / (GROUP_M * tiles_n), first_m = group * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M), in_group = t % (GROUP_M * tiles_n);
    m0 = (first_m + in_group % rows) * BM;
    n0 = (in_group / rows) * BN;
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_one() { asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }

// After a wait, the registers a wgmma wrote are read by ordinary instructions: this makes each
// of them an output of an asm statement that cannot move above the (volatile) wait.
__device__ __forceinline__ void fence_operand(float (&d)[64]) {
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

template <int N>
__device__ __forceinline__ void setmaxnreg_dec() { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" :: "n"(N)); }
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" :: "n"(N)); }

__device__ __forceinline__ uint32_t bf16x2(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
#endif  // __CUDA_ARCH_FEAT_SM90_ALL

__global__ void __launch_bounds__(THREADS, 1)
gemm_wgmma(const __grid_constant__ CUtensorMap tma_a, const __grid_constant__ CUtensorMap tma_b,
           const float* __restrict__ scale_a, const float* __restrict__ scale_b,
           __nv_bfloat16* __restrict__ C, int M, int N, int K) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ uint8_t smem_raw[];
    __shared__ __align__(8) uint64_t full[STAGES], empty[STAGES];
    uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t(1023));

    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, tiles = tiles_m * tiles_n;
    const int k_tiles = (K + BK - 1) / BK;
    const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 2 * 128);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    // Persistent: CTA b takes tiles b, b + gridDim.x, ... The k-step counter `it` runs on across
    // tiles, so the producer fills the next tile's stages while the consumers store this one.
    if (wg == 0) {  // producer
        setmaxnreg_dec<40>();
        if (tid == 0) {
            int it = 0;
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                int m0, n0;
                tile_origin(t, tiles_m, tiles_n, m0, n0);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES) mbar_wait(&empty[s], ((it / STAGES) - 1) & 1);
                    uint8_t* a = smem + s * STAGE_BYTES;
                    mbar_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(a, &tma_a, &full[s], kt * BK, m0);
                    tma_load_2d(a + A_BYTES, &tma_b, &full[s], kt * BK, n0);
                }
            }
        }
        return;
    }

    // consumers: warpgroup 1 → rows m0 + [0, 64), warpgroup 2 → rows m0 + [64, 128)
    setmaxnreg_inc<232>();
    const int row_off = (wg - 1) * 64;
    const int warp = tid / 32, lane = tid % 32;
    const float scale = *scale_a * *scale_b;
    int it = 0;  // the ring position of this tile's first stage
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, it += k_tiles) {
        int m0, n0;
        tile_origin(t, tiles_m, tiles_n, m0, n0);
        float acc[64], p0[64], p1[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) acc[i] = 0.f;
        // stage kt's four wgmmas into `part`, from zero, as one commit group
        auto issue = [&](float (&part)[64], int kt) {
            const int s = (it + kt) % STAGES;
            mbar_wait(&full[s], ((it + kt) / STAGES) & 1);
            const uint8_t* a = smem + s * STAGE_BYTES + row_off * BK;
            const uint8_t* b = smem + s * STAGE_BYTES + A_BYTES;
            wgmma_fence();
#pragma unroll
            for (int k = 0; k < BK / 32; ++k)
                wgmma_m64n128k32(part, make_desc(a + k * 32), make_desc(b + k * 32), k);
            wgmma_commit();
        };
        // every group done: `part` may be read (and its stage given back)
        auto wait = [&](float (&part)[64]) {
            wgmma_wait_all();
            fence_operand(part);
        };
        // stage kt, done, given back to the producer and added into acc
        auto retire = [&](float (&part)[64], int kt) {
            mbar_arrive(&empty[(it + kt) % STAGES]);
#pragma unroll
            for (int i = 0; i < 64; ++i) acc[i] += part[i];  // at most 128 products in `part`
        };
        // Stages in pairs after the first (the header gives the order and why); nothing is in
        // flight at the loop's back edge. An even count leaves one stage after the loop (the branch
        // depends on K alone, the same for every thread).
        issue(p0, 0);
        wait(p0);
        int kt = 1;
        for (; kt + 1 < k_tiles; kt += 2) {
            issue(p1, kt);
            retire(p0, kt - 1);
            issue(p0, kt + 1);
            wgmma_wait_one();
            fence_operand(p1);
            retire(p1, kt);
            wait(p0);
        }
        if (kt < k_tiles) {  // kt = k_tiles - 1
            issue(p1, kt);
            retire(p0, kt - 1);
            wait(p1);
            retire(p1, kt);
        } else {
            retire(p0, kt - 1);
        }

        // acc[4j .. 4j+3]: rows r (+8), columns n0 + 8j + 2q (+1), with r the lane's row and q = lane % 4.
        const int q = lane % 4, r = m0 + row_off + warp * 16 + lane / 4;
        if (N % 8 == 0) {
            // A quad of lanes holds two 8-column blocks j, j+1 of rows r and r+8. Four shuffles give
            // lane q of the quad the whole 16 bytes of one (block, row): q = 2·(block - j) + (row is r+8).
#pragma unroll
            for (int j = 0; j < BN / 8; j += 2) {
                uint32_t mine[4];  // what this lane holds, indexed like q
#pragma unroll
                for (int v = 0; v < 4; ++v) {
                    const int i = 4 * (j + v / 2) + 2 * (v % 2);
                    mine[v] = bf16x2(acc[i] * scale, acc[i + 1] * scale);
                }
                uint32_t got[4] = {0, 0, 0, 0};  // got[p]: lane p's pair for this lane's (block, row)
#pragma unroll
                for (int k = 0; k < 4; ++k) {  // round k: read lane q^k, which sends what lane (its q)^k = q needs
                    const int p = q ^ k;
                    const uint32_t send = p == 0 ? mine[0] : p == 1 ? mine[1] : p == 2 ? mine[2] : mine[3];
                    const uint32_t v = __shfl_sync(0xffffffffu, send, (lane & ~3) | p);
#pragma unroll
                    for (int i = 0; i < 4; ++i) got[i] = p == i ? v : got[i];
                }
                const int row = r + 8 * (q % 2), col = n0 + (j + q / 2) * 8;
                if (row < M && col < N)  // N % 8 == 0: the 8 columns are inside or outside together
                    *reinterpret_cast<uint4*>(C + (size_t)row * N + col) = make_uint4(got[0], got[1], got[2], got[3]);
            }
        } else {
#pragma unroll
            for (int j = 0; j < BN / 8; ++j) {
#pragma unroll
                for (int v = 0; v < 4; ++v) {
                    const int row = r + 8 * (v / 2), col = n0 + 8 * j + 2 * q + v % 2;
                    if (row < M && col < N) C[(size_t)row * N + col] = __float2bfloat16(acc[4 * j + v] * scale);
                }
            }
        }
    }
#endif  // __CUDA_ARCH_FEAT_SM90_ALL
}

// GPUs other than sm_90 (and shapes TMA cannot describe): step 1's loop, one thread per output.
__global__ void gemm_fallback(const __nv_fp8_e4m3* __restrict__ A, const __nv_fp8_e4m3* __restrict__ B,
                              const float* __restrict__ scale_a, const float* __restrict__ scale_b,
                              __nv_bfloat16* __restrict__ C, int M, int N, int K) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x, row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= M || col >= N) return;
    float acc = 0.f;
    for (int k = 0; k < K; ++k) acc += float(A[(size_t)row * K + k]) * float(B[(size_t)col * K + k]);
    C[(size_t)row * N + col] = __float2bfloat16(acc * (*scale_a * *scale_b));
}

static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled() {
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        cudaDriverEntryPointQueryResult q;
        cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", reinterpret_cast<void**>(&fn), 12000,
                                         cudaEnableDefault, &q);
    }
    return fn;
}

// A 2-D row-major e4m3 matrix rows×K (K-major), boxes of box_rows × 128 bytes, 128-byte swizzle.
static bool make_map(CUtensorMap* map, const __nv_fp8_e4m3* base, int rows, int K, int box_rows) {
    const cuuint64_t dims[2] = {(cuuint64_t)K, (cuuint64_t)rows};
    const cuuint64_t strides[1] = {(cuuint64_t)K};  // bytes; K % 16 == 0
    const cuuint32_t box[2] = {(cuuint32_t)BK, (cuuint32_t)box_rows};
    const cuuint32_t elem_strides[2] = {1, 1};
    auto fn = encode_tiled();
    return fn && fn(map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, const_cast<__nv_fp8_e4m3*>(base), dims, strides, box,
                    elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

struct Device { int cc, sms; };
static Device device() {  // compute capability (9.0: the sm_90a kernel can run) and SM count
    static Device d{-1, 0};
    if (d.cc < 0) {
        int dev = 0, major = 0, minor = 0;
        cudaGetDevice(&dev);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
        cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
        d.cc = major * 10 + minor;
    }
    return d;
}

extern "C" void solve(const __nv_fp8_e4m3* A, const __nv_fp8_e4m3* B, const float* scale_a, const float* scale_b,
                      __nv_bfloat16* C, int M, int N, int K) {
    if (M <= 0 || N <= 0) return;
    CUtensorMap ma, mb;
    if (device().cc == 90 && K % 16 == 0 && K > 0 && make_map(&ma, A, M, K, BM) && make_map(&mb, B, N, K, BN)) {
        static bool configured = false;
        if (!configured) {
            cudaFuncSetAttribute(gemm_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES);
            configured = true;
        }
        const int tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN);
        const int ctas = tiles < device().sms ? tiles : device().sms;
        gemm_wgmma<<<ctas, THREADS, SMEM_BYTES>>>(ma, mb, scale_a, scale_b, C, M, N, K);
    } else {
        dim3 block(32, 8), grid((N + 31) / 32, (M + 7) / 8);
        gemm_fallback<<<grid, block>>>(A, B, scale_a, scale_b, C, M, N, K);
    }
}
