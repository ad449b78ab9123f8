// embedding, step 3: copy the rows in order of their id, so a repeated id is read from L2.
//
// Count first (65536 tokens, dim 4096, vocab 32000): the output is 537 MB; the ids pick
// ~27,900 distinct rows (1 - e^-2.05 of 32000), 229 MB of table, each wanted ~2.3 times. The
// table (262 MB) is 5× the 50 MB L2, so in token order a repeated row has long left L2 when it
// comes back: step 2 reads ~537 MB of table, moves ~1.07 GB for 766 MB counted, and measured
// 73% of the copy bandwidth, i.e. it ran at the copy speed on the bytes it really moved.
// Here a counting sort of the token positions by id (a histogram, the start of each id's run,
// a scatter: three small kernels over the 256 KB of ids) puts the tokens that share a row next
// to each other, and the copy kernel walks them in that order: the first copy of a row misses,
// the others hit L2 a few microseconds later. DRAM then moves each distinct row once (ncu:
// 229 MB read, 513 MB written by the copy kernel, against 507 MB and 517 MB for step 2).
// The scratch (counts and the sorted positions) is static device memory; shapes it cannot hold,
// and tables that fit in L2 anyway (where token order already reuses rows), take step 2's path.
// What it buys: ~1.02 GB → ~0.75 GB moved at the largest shape; predicted 73% → ~90% of copy,
// measured 90.4% (1.24× torch), 1.35× torch at 262144×1024. What is left: the copy kernel runs
// at 2.7 TB/s on the bytes it moves (275 µs), the sort adds ~10 µs and three launches.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;
constexpr int MAX_VOCAB = 1 << 17;
constexpr int MAX_TOKENS = 1 << 22;
constexpr long long L2_BYTES = 50ll << 20;  // an H100's L2

// Per id: a count, then (after run_starts) a write cursor. Zero between calls: static memory
// starts zeroed, and the copy kernel zeroes what the sort used, so no extra launch clears it.
__device__ int g_start[MAX_VOCAB + 1];  // [MAX_VOCAB]: the cursor of run_starts
__device__ int2 g_order[MAX_TOKENS];  // (token position, id), sorted by id

__global__ void count_ids(const int32_t* __restrict__ idx, int n_tokens) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n_tokens) atomicAdd(&g_start[idx[t]], 1);
}

// Where each id's run of positions starts. The copy needs equal ids next to each other, not
// in id order, so the runs may come in any order: each warp scans its 32 counts with shuffles
// and takes room for their sum with one atomicAdd on a global cursor (g_start[MAX_VOCAB]).
// (Two earlier versions did an exact exclusive scan in one block of 1024 threads: 40 µs with a
// loop per thread, 10 µs with coalesced steps; the copy itself takes ~275 µs.)
__global__ void run_starts(int vocab) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
    const int c = i < vocab ? g_start[i] : 0;
    int incl = c;
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        int n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
    }
    int base = 0;
    if (lane == 31 && incl > 0) base = atomicAdd(&g_start[MAX_VOCAB], incl);
    base = __shfl_sync(0xffffffffu, base, 31);
    if (i < vocab) g_start[i] = base + incl - c;
}

__global__ void scatter_positions(const int32_t* __restrict__ idx, int n_tokens) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n_tokens) { int id = idx[t]; g_order[atomicAdd(&g_start[id], 1)] = make_int2(t, id); }
}

// Step 2's copy, TOK rows per group of 2^log_group threads: each thread issues TOK loads
// before its TOK stores, so more bytes are in flight than with one row. `order` (when given)
// gives the k-th row copied as (token position, id), one load instead of two dependent ones
// (worth ~0.5%), and the kernel then zeroes the first `vocab` counts for the next call.
constexpr int TOK = 4;

template <typename V>
__global__ void __launch_bounds__(THREADS) embed_rows(const int32_t* __restrict__ idx, const int2* __restrict__ order,
                                                      const V* __restrict__ table, V* __restrict__ out,
                                                      int n_tokens, int row_len, int log_group, int vocab) {
    if (order)
        for (int i = blockIdx.x * THREADS + threadIdx.x; i < vocab; i += gridDim.x * THREADS) g_start[i] = 0;
    if (order && blockIdx.x == 0 && threadIdx.x == 0) g_start[MAX_VOCAB] = 0;
    const int group = 1 << log_group;
    const int lane = threadIdx.x & (group - 1);
    const int64_t k0 = ((int64_t)blockIdx.x * (THREADS >> log_group) + (threadIdx.x >> log_group)) * TOK;
    if (k0 >= n_tokens) return;
    const int n = n_tokens - k0 < TOK ? (int)(n_tokens - k0) : TOK;
    const V* src[TOK];
    V* dst[TOK];
#pragma unroll
    for (int j = 0; j < TOK; ++j) {
        int64_t t = 0, row = 0;
        if (j < n) {
            if (order) { int2 o = order[k0 + j]; t = o.x; row = o.y; }
            else { t = k0 + j; row = idx[t]; }
        }
        src[j] = table + row * row_len;
        dst[j] = out + t * row_len;
    }
    for (int c = lane; c < row_len; c += group) {
        V v[TOK];
#pragma unroll
        for (int j = 0; j < TOK; ++j)
            if (j < n) v[j] = src[j][c];
#pragma unroll
        for (int j = 0; j < TOK; ++j)
            if (j < n) __stcs(dst[j] + c, v[j]);
    }
}

static int log_group_for(int row_len) {
    int lg = 0;
    while ((1 << lg) < row_len && (1 << lg) < THREADS) ++lg;
    return lg;
}

template <typename V>
static void copy_rows(const int32_t* idx, const int2* order, const V* table, V* out, int n_tokens, int row_len,
                      int vocab) {
    int lg = log_group_for(row_len);
    int64_t rows_per_block = (int64_t)(THREADS >> lg) * TOK;
    unsigned blocks = (unsigned)((n_tokens + rows_per_block - 1) / rows_per_block);
    embed_rows<V><<<blocks, THREADS>>>(idx, order, table, out, n_tokens, row_len, lg, vocab);
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    if (n_tokens <= 0 || dim <= 0) return;
    const bool aligned = dim % 8 == 0 &&
        ((reinterpret_cast<uintptr_t>(table) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    const long long table_bytes = 2ll * vocab * dim;
    const bool sort = aligned && vocab <= MAX_VOCAB && n_tokens <= MAX_TOKENS && n_tokens > vocab / 4 &&
                      table_bytes > L2_BYTES / 2;
    const int2* order = nullptr;
    if (sort) {
        const unsigned token_blocks = (unsigned)((n_tokens + THREADS - 1) / THREADS);
        count_ids<<<token_blocks, THREADS>>>(idx, n_tokens);
        run_starts<<<(vocab + THREADS - 1) / THREADS, THREADS>>>(vocab);
        scatter_positions<<<token_blocks, THREADS>>>(idx, n_tokens);
        cudaGetSymbolAddress((void**)&order, g_order);
    }
    if (aligned)
        copy_rows(idx, order, reinterpret_cast<const uint4*>(table), reinterpret_cast<uint4*>(out), n_tokens, dim / 8,
                  vocab);
    else
        copy_rows(idx, order, table, out, n_tokens, dim, vocab);
}
