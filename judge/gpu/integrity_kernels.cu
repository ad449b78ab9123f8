// The judge's own kernels (judge/gpu/integrity.py embeds their PTX:
// nvcc -arch=compute_80 -ptx integrity_kernels.cu, then `.version` lowered to 7.0).
// The native worker (judge/worker/native/) compiles this file into itself; the parent loads the PTX.
//
//   judge_fill16/32   the poison pattern in every word of an output, before a call;
//   judge_check16/32  right after a call's end event: out[0] += the words still holding the poison,
//                     out[1] += the output's fingerprint (a sum over its words of mix(word, index,
//                     salt), wrapping: independent of the order the threads run in). The parent
//                     recomputes the fingerprint on the final outputs: work finished after the
//                     end event changes it;
//   judge_stamp       *out = the GPU's %globaltimer (ns, one clock for every context on the device);
//   judge_read        the L2 flush before a timed call: reads every 16 bytes of a buffer of 2 x L2
//                     that nothing writes after it was set once, so that L2 is left holding only
//                     clean lines of it (a write flush leaves dirty lines, whose write-back to memory
//                     then lands inside the timed call: ~10 µs of a streaming kernel's time on an
//                     H100, docs/timing.md); *sink is written only if the words XOR to `never`;
//   judge_hold        the GPU-side hold before a timed call (docs/timing.md, "The hold"): its stream
//                     waits until the host lets go, once solve() has issued its work, so that the
//                     host's launch latency is not inside the timed window. As many one-warp blocks
//                     as every SM can hold at once, sharing out its shared memory, so that while it
//                     holds no block of any other kernel of the context has room on any SM.
#include <cstdint>

template <typename T>
__device__ void fill(T* p, T v, uint64_t n) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x)
        p[i] = v;
}

// splitmix64's finaliser over the word, its index and the output's salt.
__device__ __forceinline__ uint64_t judge_mix(uint64_t word, uint64_t i, uint64_t salt) {
    uint64_t x = word ^ (i * 0x9E3779B97F4A7C15ull) ^ (salt << 56);
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Block-wide sums of the count and the fingerprint, then one atomic per block (blockDim: 256).
template <typename T>
__device__ void check(const volatile T* p, T v, uint64_t n, uint64_t salt, unsigned long long* out) {
    __shared__ unsigned long long part[2][32];
    unsigned long long c = 0, f = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        T w = p[i];
        c += w == v;
        f += judge_mix((uint64_t)w, i, salt);
    }
    for (int o = 16; o > 0; o >>= 1) {
        c += __shfl_down_sync(0xffffffffu, c, o);
        f += __shfl_down_sync(0xffffffffu, f, o);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        part[0][warp] = c;
        part[1][warp] = f;
    }
    __syncthreads();
    if (warp == 0) {
        const int warps = (blockDim.x + 31) >> 5;
        c = lane < warps ? part[0][lane] : 0;
        f = lane < warps ? part[1][lane] : 0;
        for (int o = 16; o > 0; o >>= 1) {
            c += __shfl_down_sync(0xffffffffu, c, o);
            f += __shfl_down_sync(0xffffffffu, f, o);
        }
        if (lane == 0) {
            if (c) atomicAdd(out, c);
            atomicAdd(out + 1, f);
        }
    }
}

extern "C" __global__ void judge_fill16(uint16_t* p, uint16_t v, uint64_t n) { fill(p, v, n); }
extern "C" __global__ void judge_fill32(uint32_t* p, uint32_t v, uint64_t n) { fill(p, v, n); }
extern "C" __global__ void judge_check16(const volatile uint16_t* p, uint16_t v, uint64_t n, uint64_t salt,
                                         unsigned long long* out) {
    check(p, v, n, salt, out);
}
extern "C" __global__ void judge_check32(const volatile uint32_t* p, uint32_t v, uint64_t n, uint64_t salt,
                                         unsigned long long* out) {
    check(p, v, n, salt, out);
}
extern "C" __global__ void judge_read(const uint4* p, uint64_t n, unsigned never, unsigned* sink) {
    unsigned acc = 0;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (uint64_t)gridDim.x * blockDim.x) {
        const uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == never) *sink = acc;
}
extern "C" __global__ void judge_stamp(unsigned long long* out) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    *out = t;
}

__device__ __forceinline__ unsigned long long judge_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// ctl: host memory mapped into the device, written by the host or by block 0 as hold `number` goes:
// ctl[0] go (the host: solve() has been called), ctl[1] arrived (every block resident, or given up
// on), ctl[2] crowded holds so far (not every block was resident within arrive_ns of block 0's start:
// another stream's kernels held SMs), ctl[3] late holds so far (the host did not let go within
// release_ns: solve() waited for the device). Holds run one after the other: only block 0 writes ctl.
// count: device memory, count[0] the blocks arrived (zeroed before each hold, in stream order),
// count[1] the last hold number let go.
extern "C" __global__ void judge_hold(volatile unsigned* ctl, unsigned* count, unsigned number,
                                      unsigned long long arrive_ns, unsigned long long release_ns) {
    if (threadIdx.x != 0) return;
    volatile unsigned* arrived = count;
    volatile unsigned* released = count + 1;
    atomicAdd(count, 1u);
    if (blockIdx.x == 0) {
        unsigned long long t0 = judge_now();
        while (*arrived < gridDim.x) {
            if (judge_now() - t0 > arrive_ns) {
                ctl[2] = ctl[2] + 1;
                break;
            }
            __nanosleep(128);
        }
        __threadfence_system();
        ctl[1] = number;
        t0 = judge_now();
        while (ctl[0] != number) {
            if (judge_now() - t0 > release_ns) {
                ctl[3] = ctl[3] + 1;
                break;
            }
            __nanosleep(256);
        }
        *released = number;
        __threadfence();
        return;
    }
    while (*released != number) __nanosleep(256);
}
