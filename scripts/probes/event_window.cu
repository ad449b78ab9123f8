// What a CUDA-event window holds beyond the kernel between its events (scripts/probes/event_window.py):
// a copy kernel stamps %globaltimer when its first block starts and when its last block ends, and the
// window is timed three ways: right after the host records the start event (`plain`: the host's
// launch latency falls inside), behind a hold that fills every SM until the host has queued the
// start event, the kernel and the end event (`held`: the judge's way, docs/timing.md "The hold"; a
// stand-in for judge/worker/native/hold.h's gate, without its sealed inputs, stamps and checks), and
// the same held call replayed from a CUDA graph (`graph`). Build:
//   nvcc -O3 -std=c++17 -arch=sm_90a -shared -Xcompiler -fPIC scripts/probes/event_window.cu -o event_window.so
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

namespace {

__device__ unsigned long long g_first, g_last;

__device__ __forceinline__ unsigned long long now_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void reset_stamps() {
    g_first = ~0ull;
    g_last = 0;
}

// out = in, float4 per thread per step; block 0 .. grid-1 each stamp their start and end
__global__ void copy(const float4* __restrict__ in, float4* __restrict__ out, size_t n4) {
    if (threadIdx.x == 0) atomicMin(&g_first, now_ns());
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
    __syncthreads();
    if (threadIdx.x == 0) atomicMax(&g_last, now_ns());
}

// every block slot of every SM, one warp each, spinning until the host writes *go (mapped memory)
__global__ void hold(volatile unsigned* go, unsigned ticket) {
    if (threadIdx.x == 0)
        while (*go != ticket) __nanosleep(200);
    __syncwarp();
}

// L2 out of the way before each call: a read of a buffer twice L2's size (its sum kept, so it is not dropped)
__global__ void flush_read(const float4* __restrict__ buf, size_t n4, float* sink) {
    float s = 0.f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4; i += (size_t)gridDim.x * blockDim.x)
        s += buf[i].x;
    if (s == 12345.f) *sink = s;
}

// the smallest step %globaltimer takes, in ns (its resolution bounds what `span` can tell)
__global__ void timer_steps(unsigned long long* step) {
    unsigned long long best = ~0ull, t0 = now_ns();
    for (int i = 0; i < 4096; ++i) {
        const unsigned long long t = now_ns();
        if (t != t0) {
            best = t - t0 < best ? t - t0 : best;
            t0 = t;
        }
    }
    *step = best;
}

bool ok(cudaError_t e) { return e == cudaSuccess; }

}  // namespace

// Times `calls` calls of the copy of `bytes` bytes in `mode` (0 plain, 1 held, 2 held graph replay):
// window_us[i] (the events') and span_us[i] (first block start to last block end). Returns 0, or the
// CUDA error's number.
extern "C" int event_window(int mode, size_t bytes, int calls, double* window_us, double* span_us) {
    int sms = 0, blocks_per_sm = 0, l2 = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaDeviceGetAttribute(&blocks_per_sm, cudaDevAttrMaxBlocksPerMultiprocessor, 0);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0);
    const size_t n4 = std::max<size_t>(bytes / 16, 1), flush_n4 = std::max<size_t>(2 * (size_t)l2 / 16, 1 << 20);
    float4 *in = nullptr, *out = nullptr, *fbuf = nullptr;
    float* sink = nullptr;
    unsigned* go = nullptr;
    unsigned* go_dev = nullptr;
    cudaEvent_t start, end;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    if (!ok(cudaMalloc(&in, n4 * 16)) || !ok(cudaMalloc(&out, n4 * 16)) || !ok(cudaMalloc(&fbuf, flush_n4 * 16)) ||
        !ok(cudaMalloc(&sink, 4)) || !ok(cudaHostAlloc(&go, 4, cudaHostAllocMapped)) ||
        !ok(cudaHostGetDevicePointer(reinterpret_cast<void**>(&go_dev), go, 0)))
        return (int)cudaGetLastError();
    cudaMemset(in, 0, n4 * 16);
    cudaMemset(fbuf, 0, flush_n4 * 16);
    *go = 0;
    cudaEventCreate(&start);
    cudaEventCreate(&end);
    const unsigned copy_grid = (unsigned)std::min<size_t>((n4 + 255) / 256, (size_t)sms * 8);
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (mode == 2) {  // the call alone, captured once
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        copy<<<copy_grid, 256, 0, s>>>(in, out, n4);
        cudaStreamEndCapture(s, &graph);
        if (!graph || !ok(cudaGraphInstantiate(&exec, graph, 0))) return (int)cudaGetLastError();
    }
    for (int i = -3; i < calls; ++i) {  // three warm-up calls
        reset_stamps<<<1, 1, 0, s>>>();
        flush_read<<<sms * 4, 256, 0, s>>>(fbuf, flush_n4, sink);
        const unsigned ticket = (unsigned)(i + 4);
        if (mode != 0) hold<<<sms * blocks_per_sm, 32, 0, s>>>(go_dev, ticket);
        cudaEventRecord(start, s);
        if (mode == 2) cudaGraphLaunch(exec, s);
        else copy<<<copy_grid, 256, 0, s>>>(in, out, n4);
        cudaEventRecord(end, s);
        if (mode != 0) *reinterpret_cast<volatile unsigned*>(go) = ticket;  // all of the call is queued
        if (!ok(cudaEventSynchronize(end))) return (int)cudaGetLastError();
        if (i < 0) continue;
        float ms = 0.f;
        unsigned long long first = 0, last = 0;
        cudaEventElapsedTime(&ms, start, end);
        cudaMemcpyFromSymbol(&first, g_first, sizeof first);
        cudaMemcpyFromSymbol(&last, g_last, sizeof last);
        window_us[i] = 1000.0 * ms;
        span_us[i] = (double)(last - first) / 1000.0;
    }
    const int err = (int)cudaGetLastError();
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaStreamDestroy(s);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
    cudaFree(in);
    cudaFree(out);
    cudaFree(fbuf);
    cudaFree(sink);
    cudaFreeHost(go);
    return err;
}

// %globaltimer's smallest step in ns (0: it did not move in 4,096 reads), or -1 on a CUDA error.
extern "C" double timer_step_ns() {
    unsigned long long* d = nullptr;
    unsigned long long h = 0;
    if (!ok(cudaMalloc(&d, sizeof h))) return -1.0;
    timer_steps<<<1, 1>>>(d);
    const bool fine = ok(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    cudaFree(d);
    return fine ? (h == ~0ull ? 0.0 : (double)h) : -1.0;
}
