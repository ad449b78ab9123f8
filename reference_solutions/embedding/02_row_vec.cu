// embedding, step 2: a group of threads per row, 128-bit copies when rows are aligned.
//
// Technique: each row is copied by a group of G consecutive threads (G a power of two, up to
// the whole 256-thread block, sized to the row), so a long row gets many threads and a short
// row does not leave most of a block idle. The group reads idx[t] once and copies the row with
// consecutive threads on consecutive 16-byte chunks. When dim % 8 == 0 (and the base pointers
// are 16-byte aligned, as cudaMalloc's are) every row starts on a 16-byte boundary, so the row
// is copied as uint4: 8 halves per load and per store. Otherwise rows are misaligned and the
// kernel falls back to scalar half copies (still coalesced).
// What it buys: an eighth of the memory instructions of step 1 and no per-element
// division: close to the copy bandwidth on the benchmark shapes.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdint>

constexpr int THREADS = 256;

template <typename V>
__global__ void embed_rows(const int32_t* __restrict__ idx, const V* __restrict__ table,
                           V* __restrict__ out, int n_tokens, int row_len, int log_group) {
    // row_len: the row's length in V units; 2^log_group threads per row.
    const int group = 1 << log_group;
    const int lane = threadIdx.x & (group - 1);
    const int64_t t = (int64_t)blockIdx.x * (THREADS >> log_group) + (threadIdx.x >> log_group);
    if (t >= n_tokens) return;
    const V* src = table + (int64_t)idx[t] * row_len;
    V* dst = out + t * row_len;
    for (int c = lane; c < row_len; c += group) dst[c] = src[c];
}

static int log_group_for(int row_len) {
    int lg = 0;
    while ((1 << lg) < row_len && (1 << lg) < THREADS) ++lg;
    return lg;
}

template <typename V>
static void launch(const int32_t* idx, const V* table, V* out, int n_tokens, int row_len) {
    int lg = log_group_for(row_len);
    int rows_per_block = THREADS >> lg;
    unsigned blocks = (unsigned)((n_tokens + rows_per_block - 1) / rows_per_block);
    embed_rows<V><<<blocks, THREADS>>>(idx, table, out, n_tokens, row_len, lg);
}

extern "C" void solve(const int32_t* idx, const half* table, half* out, int n_tokens, int vocab, int dim) {
    bool aligned = dim % 8 == 0 && ((reinterpret_cast<uintptr_t>(table) | reinterpret_cast<uintptr_t>(out)) & 15) == 0;
    if (aligned)
        launch(idx, reinterpret_cast<const uint4*>(table), reinterpret_cast<uint4*>(out), n_tokens, dim / 8);
    else
        launch(idx, table, out, n_tokens, dim);
}
