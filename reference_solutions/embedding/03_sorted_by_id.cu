// embedding, step 3: copy the rows in order of their id, so a repeated id is read from L2.
//
// Count first (65536 tokens, dim 4096, vocab 32000): the output is 537 MB; the ids pick
// ~27,900 distinct rows (1 - e^-2.05 of 32000), 229 MB of table, each wanted ~2.3 times. The
// table (262 MB) is 5× the 50 MB L2, so in token order a repeated row has long left L2 when it
// comes back: step 2 reads ~537 MB of table, moves ~1.07 GB for 766 MB counted, and measured
// 73% of the copy bandwidth, i.e. it ran at the copy speed on the bytes it really moved.
// Here a counting sort of the token positions by id (a histogram, one scan, a scatter: four
// small kernels over the 256 KB of ids) puts the tokens that share a row next to each other,
// and the copy kernel walks them in that order: the first copy of a row misses, the others
// hit L2 a few microseconds later. DRAM then moves each distinct row once.
// The scratch (counts and the sorted positions) is static device memory; shapes it cannot hold,
// and tables that fit in L2 anyway (where token order already reuses rows), take step 2's path.
// What it buys: ~1.07 GB → ~0.77 GB moved at the largest shape (predicted 73% → ~90% of copy).
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int MAX_VOCAB = 1 << 17;
constexpr int MAX_TOKENS = 1 << 22;
constexpr long long L2_BYTES = 50ll << 20;  // an H100's L2

__device__ int g_start[MAX_VOCAB];   // per id: a count, then (after the scan) a write cursor
__device__ int g_order[MAX_TOKENS];  // token positions, sorted by id

__global__ void zero_counts(int vocab) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < vocab; i += gridDim.x * blockDim.x) g_start[i] = 0;
}

__global__ void count_ids(const int32_t* __restrict__ idx, int n_tokens) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n_tokens) atomicAdd(&g_start[idx[t]], 1);
}

// One block of 1024 threads: an exclusive scan of g_start[0, vocab), in place.
__global__ void __launch_bounds__(1024) scan_counts(int vocab) {
    __shared__ int warp_sums[32];
    const int per = (vocab + 1023) / 1024, lo = threadIdx.x * per, hi = min(lo + per, vocab);
    int sum = 0;
    for (int i = lo; i < hi; ++i) sum += g_start[i];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int incl = sum;  // inclusive scan of the threads' sums: within the warp, then across warps
    for (int o = 1; o < 32; o *= 2) {
        int n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        int w = warp_sums[lane];
        for (int o = 1; o < 32; o *= 2) {
            int n = __shfl_up_sync(0xffffffffu, w, o);
            if (lane >= o) w += n;
        }
        warp_sums[lane] = w;
    }
    __syncthreads();
    int run = incl - sum + (warp > 0 ? warp_sums[warp - 1] : 0);
    for (int i = lo; i < hi; ++i) {
        int c = g_start[i];
        g_start[i] = run;
        run += c;
    }
}

__global__ void scatter_positions(const int32_t* __restrict__ idx, int n_tokens) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n_tokens) g_order[atomicAdd(&g_start[idx[t]], 1)] = t;
}

// Step 2's copy: 2^log_group threads per row; `order` (when given) maps the k-th row copied to
// its token position.
template <typename V>
__global__ void embed_rows(const int32_t* __restrict__ idx, const int* __restrict__ order,
                           const V* __restrict__ table, V* __restrict__ out, int n_tokens, int row_len,
                           int log_group) {
    const int group = 1 << log_group;
    const int lane = threadIdx.x & (group - 1);
    const int64_t k = (int64_t)blockIdx.x * (THREADS >> log_group) + (threadIdx.x >> log_group);
    if (k >= n_tokens) return;
    const int64_t t = order ? order[k] : k;
    const V* src = table + (int64_t)idx[t] * row_len;
    V* dst = out + t * row_len;
    for (int c = lane; c < row_len; c += group) __stcs(dst + c, src[c]);
}

static int log_group_for(int row_len) {
    int lg = 0;
    while ((1 << lg) < row_len && (1 << lg) < THREADS) ++lg;
    return lg;
}

template <typename V>
static void copy_rows(const int32_t* idx, const int* order, const V* table, V* out, int n_tokens, int row_len) {
    int lg = log_group_for(row_len);
    int rows_per_block = THREADS >> lg;
    unsigned blocks = (unsigned)((n_tokens + rows_per_block - 1) / rows_per_block);
    embed_rows<V><<<blocks, THREADS>>>(idx, order, table, out, n_tokens, row_len, lg);
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    if (n_tokens <= 0 || dim <= 0) return;
    const bool aligned = dim % 8 == 0 &&
        ((reinterpret_cast<uintptr_t>(table) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    const long long table_bytes = 2ll * vocab * dim;
    const bool sort = aligned && vocab <= MAX_VOCAB && n_tokens <= MAX_TOKENS && n_tokens > vocab / 4 &&
                      table_bytes > L2_BYTES / 2;
    const int* order = nullptr;
    if (sort) {
        const unsigned token_blocks = (unsigned)((n_tokens + THREADS - 1) / THREADS);
        zero_counts<<<(vocab + THREADS - 1) / THREADS, THREADS>>>(vocab);
        count_ids<<<token_blocks, THREADS>>>(idx, n_tokens);
        scan_counts<<<1, 1024>>>(vocab);
        scatter_positions<<<token_blocks, THREADS>>>(idx, n_tokens);
        cudaGetSymbolAddress((void**)&order, g_order);
    }
    if (aligned)
        copy_rows(idx, order, reinterpret_cast<const uint4*>(table), reinterpret_cast<uint4*>(out), n_tokens, dim / 8);
    else
        copy_rows(idx, order, table, out, n_tokens, dim);
}
