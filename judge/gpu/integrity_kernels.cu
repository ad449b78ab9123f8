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
//   judge_crypt       XOR of a buffer with the judge's keystream (Philox4x32-10 of the 16-byte block's
//                     index, the buffer's place among its call's inputs and a key): the parent seals
//                     a timed call's inputs with it, and the hold opens them (docs/security.md, "Sealed
//                     inputs"). `judge_keystream` is its block function; judge/gpu/seal.py has its
//                     reference on the CPU;
//   judge_hold        the gate before a timed call (docs/timing.md, "The hold"): as many one-warp
//                     blocks as every SM can hold at once, sharing out its shared memory, so that
//                     while it holds no block of any other kernel of the context has room on any SM.
//                     Once every block is resident it opens the call's sealed inputs (with the key
//                     the host gives it then), flushes L2 (judge_read's reads), and, with `wait`,
//                     keeps its stream waiting until the host lets go, once solve() has issued its
//                     work, so that the host's launch latency is not inside the timed window; last,
//                     it stamps the call's start. The start event follows it directly: no kernel
//                     stands between the gate and the timed window for another stream's blocks to
//                     overtake.
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
// The XOR of this thread's share of the 16-byte words p[0..n) (every `threads`-th from `t`): a read
// of all of them that the compiler must keep when the caller stores the result where `never` says.
// UNROLL loads in flight a thread: 4 for the gate's flush, 1 (a loop as written) elsewhere, where
// more would cost judge_hold registers it does not have (64 at most: see judge_hold).
template <int UNROLL>
__device__ __forceinline__ unsigned judge_xor(const uint4* p, uint64_t n, uint64_t t, uint64_t threads) {
    unsigned acc = 0;
#pragma unroll UNROLL
    for (uint64_t i = t; i < n; i += threads) {
        const uint4 w = p[i];
        acc ^= w.x ^ w.y ^ w.z ^ w.w;
    }
    return acc;
}
extern "C" __global__ void judge_read(const uint4* p, uint64_t n, unsigned never, unsigned* sink) {
    const unsigned acc = judge_xor<1>(p, n, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, (uint64_t)gridDim.x * blockDim.x);
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

// judge_hold's modes (bits).
#define JUDGE_GATE_WAIT 1u
#define JUDGE_GATE_TOUCH 2u

// The judge's keystream: Philox4x32-10 (Salmon et al., SC'11) of the counter (block, job, k2) under
// the key (k0, k1), in place: c becomes the 16 bytes of keystream (little-endian words) for 16-byte
// block `block` of input `job`.
__host__ __device__ __forceinline__ void judge_keystream(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; ++r) {
        if (r) {
            k0 += 0x9E3779B9u;
            k1 += 0xBB67AE85u;
        }
        const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1;
        c[3] = (uint32_t)p0;
        c[0] = n0;
        c[2] = n2;
    }
}

// XOR `nbytes` at p (16-byte aligned) with input `job`'s keystream under (k0, k1, k2), thread `t` of
// `threads`: four blocks of 16 bytes in flight per thread, a trailing partial block by thread 0.
__device__ void judge_crypt_part(uint8_t* p, uint64_t nbytes, uint32_t job, uint32_t k0, uint32_t k1, uint32_t k2,
                                 uint64_t t, uint64_t threads) {
    uint4* q = (uint4*)p;
    const uint64_t blocks = nbytes / 16;
    for (uint64_t b0 = t; b0 < blocks; b0 += 4 * threads) {
        uint4 v[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
            if (b0 + u * threads < blocks) v[u] = q[b0 + u * threads];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const uint64_t b = b0 + u * threads;
            if (b >= blocks) break;
            uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), job, k2};
            judge_keystream(c, k0, k1);
            v[u].x ^= c[0];
            v[u].y ^= c[1];
            v[u].z ^= c[2];
            v[u].w ^= c[3];
            q[b] = v[u];
        }
    }
    const uint64_t tail = nbytes - blocks * 16;
    if (tail && t == 0) {
        uint32_t c[4] = {(uint32_t)blocks, (uint32_t)(blocks >> 32), job, k2};
        judge_keystream(c, k0, k1);
        for (uint64_t i = 0; i < tail; ++i) p[blocks * 16 + i] ^= (uint8_t)(c[i / 4] >> (8 * (i % 4)));
    }
}

extern "C" __global__ void judge_crypt(uint8_t* p, uint64_t nbytes, uint32_t job, uint32_t k0, uint32_t k1,
                                       uint32_t k2) {
    judge_crypt_part(p, nbytes, job, k0, k1, k2, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x,
                     (uint64_t)gridDim.x * blockDim.x);
}

// ctl: host memory mapped into the device, written by the host or by block 0 as gate `number` goes:
// ctl[0] go (the host: solve() has been called), ctl[1] resident (every block resident, or given up
// on for a call without sealed inputs), ctl[2] crowded gates so far (not every block was resident
// within arrive_ns of block 0's start: another stream's kernels held SMs), ctl[3] late gates so far
// (the host did not let go within release_ns: solve() waited for the device), ctl[4] the key's gate
// number, written by the host after the key itself, ctl[5..7]. Gates run one after the other: only
// block 0 writes ctl.
// count: device memory. count[0] blocks arrived, count[1] blocks done opening the inputs, count[2]
// blocks (but block 0) done flushing (all three zeroed before each gate, in stream order), count[3]
// the last gate number let go, count[4] the last gate number whose key is in count[5..7].
// jobs: `njobs` pairs (pointer, bytes): the call's inputs, input j opened with the keystream of job
// j (sealed), or only read (`mode` JUDGE_GATE_TOUCH: a baseline's, whose inputs are never sealed, so
// that both leave the inputs' pages just as recently used: a kernel that misses the TLB often, like
// a naive add over 3 GiB, is ~10% faster after it on an H100). flush / flush_n / never / sink:
// judge_read's arguments. stamp: where the call's start stamp goes (none: no stamp). mode
// JUDGE_GATE_WAIT: keep the stream until the host lets go (the hold); without it the gate ends once
// every block has flushed. Either way its blocks end together, when block 0 lets them go: no block
// of another stream's kernel finds room on an SM while some of the gate's blocks still work, ahead
// of the start event that follows the gate.
// Launch bounds: 32 one-warp blocks on every SM at once (the most an SM holds), so at most 64
// registers a thread: with more, fewer blocks fit, the gate could never hold every SM and the worker
// would not use it (tests/test_seal.py reads ptxas's count).
extern "C" __global__ void __launch_bounds__(32, 32) judge_hold(volatile unsigned* ctl, unsigned* count, unsigned number,
                                      unsigned long long arrive_ns, unsigned long long release_ns,
                                      const unsigned long long* jobs, unsigned njobs, const uint4* flush,
                                      unsigned long long flush_n, unsigned never, unsigned* sink,
                                      unsigned long long* stamp, unsigned mode) {
    volatile unsigned* v = count;
    const bool lead = threadIdx.x == 0;
    const bool touch = mode & JUDGE_GATE_TOUCH, sealed = njobs && !touch;
    bool crowded = false;
    if (lead) atomicAdd(count, 1u);
    if (blockIdx.x == 0 && lead) {
        const unsigned long long t0 = judge_now();
        while (v[0] < gridDim.x) {
            if (!crowded && judge_now() - t0 > arrive_ns) {
                ctl[2] = ctl[2] + 1;
                crowded = true;
                if (!sealed) break;  // sealed inputs are opened only once no other kernel has a block resident
            }
            __nanosleep(128);
        }
        __threadfence_system();
        ctl[1] = number;
        if (sealed) {
            while (ctl[4] != number) __nanosleep(256);
            __threadfence_system();
            v[5] = ctl[5];
            v[6] = ctl[6];
            v[7] = ctl[7];
            __threadfence();
            v[4] = number;
        }
    }
    if (njobs) {
        const uint64_t t = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x, threads = (uint64_t)gridDim.x * blockDim.x;
        if (sealed) {
            if (lead)
                while (v[4] != number) __nanosleep(256);
            __syncwarp();
            __threadfence();
            const uint32_t k0 = v[5], k1 = v[6], k2 = v[7];
            for (unsigned j = 0; j < njobs; ++j)
                judge_crypt_part((uint8_t*)jobs[2 * j], jobs[2 * j + 1], j, k0, k1, k2, t, threads);
        } else {
            unsigned acc = 0;
            for (unsigned j = 0; j < njobs; ++j)
                acc ^= judge_xor<1>((const uint4*)jobs[2 * j], jobs[2 * j + 1] / 16, t, threads);
            if (acc == never) *sink = acc;
        }
        __threadfence();
        __syncwarp();
        if (lead) {  // every block has done its part before any reads the flush: no line of the inputs is left
            atomicAdd(count + 1, 1u);  // in L2 (dirty, for the timed call to write back) after the flush
            const unsigned long long t0 = judge_now();  // (a crowded gate that only reads gives up: its
            while (v[1] < gridDim.x && (sealed || judge_now() - t0 <= arrive_ns))  // missing blocks may come
                __nanosleep(128);  // only once the resident ones end)
        }
        __syncwarp();
    }
    if (flush) {
        const unsigned acc = judge_xor<4>(flush, flush_n, (uint64_t)blockIdx.x * blockDim.x + threadIdx.x,
                                       (uint64_t)gridDim.x * blockDim.x);
        if (acc == never) *sink = acc;
    }
    __syncwarp();
    if (!lead) return;
    if (blockIdx.x == 0) {
        if (!crowded || sealed)  // a crowded gate's missing blocks may only come once the resident ones end
            while (v[2] < gridDim.x - 1) __nanosleep(128);
        if (mode & JUDGE_GATE_WAIT) {
            const unsigned long long t0 = judge_now();
            while (ctl[0] != number) {
                if (judge_now() - t0 > release_ns) {
                    ctl[3] = ctl[3] + 1;
                    break;
                }
                __nanosleep(256);
            }
        }
        if (stamp) *stamp = judge_now();
        __threadfence();
        v[3] = number;
        return;
    }
    atomicAdd(count + 2, 1u);
    while (v[3] != number) __nanosleep(256);
}
