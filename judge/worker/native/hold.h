// The GPU-side hold before each timed call (docs/timing.md, "The hold"), for worker.cu, which
// includes this after its `cuda()` and the judge's kernels.
//
// Per call: `begin()` enqueues judge_hold (as many blocks as every SM can hold at once, of one warp
// each, sharing out the SM's shared memory) before the call's stamp and start event, then waits until every block is
// resident: from then on no kernel of any stream has room on any SM until the hold lets go. The
// caller calls solve(), records the end event and its checks, then `release()`: the GPU starts the
// call's work with all of it already queued, so the host's launch latency is outside the window.
// `crowded`: not every block became resident within ARRIVE_NS (another stream's kernels held SMs);
// `late`: the host did not let go within TIMEOUT_NS (solve() waited for the device, or took that
// long to issue its work): the parent decides what either means (judge/engine/timing.py).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "judge_protocol.h"

namespace judge_holds {

constexpr unsigned long long ARRIVE_NS = JUDGE_HOLD_ARRIVE_US * 1000, TIMEOUT_NS = JUDGE_HOLD_TIMEOUT_MS * 1000 * 1000;

class Hold {
  public:
    // After the context exists, before the sandbox (mapped host memory, the kernel's attribute).
    void setup() {
        void* host = nullptr;
        cuda(cudaHostAlloc(&host, 4 * sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc (the hold)");
        ctl_ = (volatile unsigned*)host;
        for (int i = 0; i < 4; ++i) ctl_[i] = 0;
        cuda(cudaHostGetDevicePointer((void**)&ctl_dev_, host, 0), "cudaHostGetDevicePointer (the hold)");
        cuda(cudaMalloc(&count_, 2 * sizeof(unsigned)), "cudaMalloc (the hold)");
        cuda(cudaMemset(count_, 0, 2 * sizeof(unsigned)), "cudaMemset (the hold)");
        int sms = 0, blocks = 0, per_sm = 0, reserved = 0;
        cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0), "cudaDeviceGetAttribute");
        grid_ = (unsigned)(sms * blocks);  // every block slot of every SM: no other block is resident
        smem_ = (size_t)(per_sm / blocks - reserved) / 128 * 128;  // and the shared memory with them
        cuda(cudaFuncSetAttribute((const void*)judge_hold, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_),
             "cudaFuncSetAttribute (the hold)");
        // One hold on the idle device: if its blocks cannot all be resident at once (an SM-limited
        // context), holds cannot keep other work off the SMs, and the worker never holds.
        begin();
        wait_resident();
        release();
        cuda(cudaDeviceSynchronize(), "the hold's first run");
        usable_ = crowded() == 0;
    }

    bool usable() const { return usable_; }

    // Enqueue the hold on `stream` (the caller enqueues the stamp and the start event after it), then
    // wait until its blocks are resident (or it gave up on them).
    void begin(cudaStream_t stream = 0) {
        ++number_;
        cuda(cudaMemsetAsync(count_, 0, sizeof(unsigned), stream), "cudaMemsetAsync (the hold)");
        volatile unsigned* ctl = ctl_dev_;
        unsigned* count = count_;
        unsigned number = number_;
        unsigned long long arrive = ARRIVE_NS, timeout = TIMEOUT_NS;
        void* args[] = {&ctl, &count, &number, &arrive, &timeout};
        cuda(cudaLaunchKernel((const void*)judge_hold, dim3(grid_), dim3(32), args, smem_, stream), "judge_hold");
    }

    // Wait until the hold's blocks are all resident (or block 0 gave up on them).
    void wait_resident() {
        while (ctl_[1] != number_) std::atomic_signal_fence(std::memory_order_seq_cst);
    }

    // Let go (after solve() returned and its end event and checks are enqueued).
    void release() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ctl_[0] = number_;
    }

    // Holds so far that were crowded / late (read once the device has finished them).
    unsigned crowded() const { return ctl_[2]; }
    unsigned late() const { return ctl_[3]; }

  private:
    volatile unsigned* ctl_ = nullptr;
    volatile unsigned* ctl_dev_ = nullptr;
    unsigned* count_ = nullptr;
    unsigned grid_ = 0, number_ = 0;
    size_t smem_ = 0;
    bool usable_ = false;
};

}  // namespace judge_holds
