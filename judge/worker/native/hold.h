// The gate before each timed call (docs/timing.md, "The hold"; docs/security.md, "Sealed inputs"),
// for worker.cu, which includes this after its `cuda()` and the judge's kernels, which it uses.
//
// Per call: `begin()` enqueues judge_hold (as many blocks as every SM can hold at once, of one warp
// each, sharing out the SM's shared memory) right before the call's start event, then the caller
// waits until every block is resident (`wait_resident`): from then on no kernel of any stream has
// room on any SM until the gate ends. If the call's inputs are sealed, the caller asks the parent
// for the call's key then and gives it to the gate (`open`), which opens the inputs with it. The
// gate flushes L2, then (with `wait`) holds until the caller lets go (`release`: after solve()
// has issued its work and the end event and checks are queued), stamps the call's start and ends:
// the start event follows at once, so the GPU starts the call's work with all of it queued and the
// host's launch latency is outside the window. Without `wait` it ends after the flush.
// `crowded`: not every block became resident within ARRIVE_NS (another stream's kernels held SMs;
// a sealed call's gate then goes on waiting for them before it reports resident); `late`: the host
// did not let go within TIMEOUT_NS (solve() waited for the device, or took that long to issue its
// work): the parent decides what either means (judge/engine/timing.py).
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>

#include "judge_protocol.h"

namespace judge_holds {

constexpr unsigned long long ARRIVE_NS = JUDGE_HOLD_ARRIVE_US * 1000, TIMEOUT_NS = JUDGE_HOLD_TIMEOUT_MS * 1000 * 1000;

// The L2 flush the gate does once resident: judge_read's buffer, of `bytes`, its sink after it.
struct Flush {
    const void* buffer;
    size_t bytes;
};

class Hold {
  public:
    // After the context exists, before the sandbox (mapped host memory, the kernel's attribute).
    void setup(Flush flush) {
        flush_ = flush;
        void* host = nullptr;
        cuda(cudaHostAlloc(&host, JUDGE_HOLD_CTL_WORDS * sizeof(unsigned), cudaHostAllocMapped), "cudaHostAlloc (the hold)");
        ctl_ = (volatile unsigned*)host;
        for (int i = 0; i < JUDGE_HOLD_CTL_WORDS; ++i) ctl_[i] = 0;
        cuda(cudaHostGetDevicePointer((void**)&ctl_dev_, host, 0), "cudaHostGetDevicePointer (the hold)");
        cuda(cudaMalloc(&count_, JUDGE_HOLD_COUNT_WORDS * sizeof(unsigned)), "cudaMalloc (the hold)");
        cuda(cudaMemset(count_, 0, JUDGE_HOLD_COUNT_WORDS * sizeof(unsigned)), "cudaMemset (the hold)");
        int sms = 0, blocks = 0, per_sm = 0, reserved = 0;
        cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&blocks, cudaDevAttrMaxBlocksPerMultiprocessor, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0), "cudaDeviceGetAttribute");
        cuda(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, 0), "cudaDeviceGetAttribute");
        grid_ = (unsigned)(sms * blocks);  // every block slot of every SM: no other block is resident
        smem_ = (size_t)(per_sm / blocks - reserved) / 128 * 128;  // and the shared memory with them
        cuda(cudaFuncSetAttribute((const void*)judge_hold, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_),
             "cudaFuncSetAttribute (the hold)");
        // One gate on the idle device: if its blocks cannot all be resident at once (an SM-limited
        // context), gates cannot keep other work off the SMs, and the worker never uses them.
        begin(nullptr, 0, nullptr, true);
        wait_resident();
        release();
        cuda(cudaDeviceSynchronize(), "the hold's first run");
        usable_ = crowded() == 0;
    }

    bool usable() const { return usable_; }

    // Enqueue the gate on the legacy default stream (the caller records the start event right after
    // it): `jobs` (device memory: `njobs` pairs of pointer and bytes) are the call's sealed inputs,
    // none if they are not sealed; `stamp` gets the call's start stamp (none: no stamp); with `wait`
    // it holds until `release()`.
    void begin(const unsigned long long* jobs, unsigned njobs, unsigned long long* stamp, bool wait) {
        ++number_;
        cuda(cudaMemsetAsync(count_, 0, 3 * sizeof(unsigned), 0), "cudaMemsetAsync (the hold)");
        volatile unsigned* ctl = ctl_dev_;
        unsigned* count = count_;
        unsigned number = number_, mode = wait ? JUDGE_GATE_WAIT : 0u, never = JUDGE_FLUSH_NEVER;
        unsigned long long arrive = ARRIVE_NS, timeout = TIMEOUT_NS, flush_n = flush_.bytes / 16;
        const void* flush = flush_.buffer;
        void* sink = flush ? (char*)flush + flush_.bytes : nullptr;
        void* args[] = {&ctl, &count, &number, &arrive, &timeout, &jobs, &njobs, &flush, &flush_n, &never, &sink,
                        &stamp, &mode};
        cuda(cudaLaunchKernel((const void*)judge_hold, dim3(grid_), dim3(32), args, smem_, 0), "judge_hold");
    }

    // Wait until the gate's blocks are all resident (or, for a call without sealed inputs, block 0
    // gave up on them).
    void wait_resident() {
        while (ctl_[1] != number_) std::atomic_signal_fence(std::memory_order_seq_cst);
    }

    // The call's key, once resident: the gate opens the sealed inputs with it.
    void open(uint32_t k0, uint32_t k1, uint32_t k2) {
        ctl_[5] = k0;
        ctl_[6] = k1;
        ctl_[7] = k2;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ctl_[4] = number_;
    }

    // Let go (after solve() returned and its end event and checks are enqueued).
    void release() {
        std::atomic_thread_fence(std::memory_order_seq_cst);
        ctl_[0] = number_;
    }

    // Gates so far that were crowded / late (read once the device has finished them).
    unsigned crowded() const { return ctl_[2]; }
    unsigned late() const { return ctl_[3]; }

  private:
    volatile unsigned* ctl_ = nullptr;
    volatile unsigned* ctl_dev_ = nullptr;
    unsigned* count_ = nullptr;
    unsigned grid_ = 0, number_ = 0;
    size_t smem_ = 0;
    bool usable_ = false;
    Flush flush_ = {nullptr, 0};
};

}  // namespace judge_holds
