/* A CPU stand-in for the CUDA runtime calls of the native worker, preloaded (LD_PRELOAD) by
 * tests/worker/test_native_worker.py so that the real worker binary runs its whole protocol on a
 * machine without a GPU: every call succeeds and is logged on stderr (the worker's log), in order.
 * IPC handles map to zeroed host memory, so a CPU solve() can read and write its buffers; a kernel
 * launch is logged with its arguments (a stamp: 1 thread; a check: on the checks' stream; a fill:
 * 256 threads on the default stream; the flush's read: 512 threads; the gate: the only launch with
 * dynamic shared memory). The gate is resident at once;
 * once the host has given it a key, the next event record opens its sealed inputs on the host
 * with the judge's keystream (Philox4x32-10, as judge/gpu/seal.py) and logs their first bytes.
 * Small allocations are host memory (the gate's words, the sealed inputs' table); the flush
 * buffer is an address never touched. FAKE_CUDART_FAIL=<function> makes that call fail with
 * cudaErrorIllegalAddress (700). cudaSetDevice also logs what /proc/self names and the pid, which
 * the real driver needs to agree. Only what the worker imports is here. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int cudaError_t;
typedef struct { unsigned x, y, z; } dim3;
typedef struct { unsigned char reserved[64]; } cudaIpcMemHandle_t;
#define CHECK_STREAM ((void*)0x5157)

static cudaError_t ok(const char* name) {
    const char* fail = getenv("FAKE_CUDART_FAIL");
    return fail && strcmp(fail, name) == 0 ? 700 : 0;
}

cudaError_t cudaSetDevice(int device) {
    /* What the worker did before it touched CUDA: the channel variable gone, no fd inheritable. */
    char inheritable[256] = "";
    for (int fd = 3; fd < 256; ++fd) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0 && !(flags & FD_CLOEXEC)) snprintf(inheritable + strlen(inheritable), 16, " %d", fd);
    }
    const char* env = getenv("JUDGE_WORKER_FD");
    fprintf(stderr, "fake: cudaSetDevice %d env=%s inheritable=[%s]\n", device, env ? env : "unset", inheritable);
    /* What the real driver needs (cudaErrorOperatingSystem without it): /proc/self is this process. */
    char self[32] = "?";
    ssize_t n = readlink("/proc/self", self, sizeof self - 1);
    self[n > 0 ? n : 1] = '\0';
    fprintf(stderr, "fake: proc_self=%s pid=%d\n", self, (int)getpid());
    return ok("cudaSetDevice");
}
cudaError_t cudaFree(void* p) { fprintf(stderr, "fake: cudaFree\n"); return ok("cudaFree"); }
cudaError_t cudaDeviceGetAttribute(int* v, int attr, int device) {
    // SMs, resident blocks per SM, shared memory per SM, reserved per block (the hold's shape); else the L2 size
    *v = attr == 16 ? 4 : attr == 106 ? 32 : attr == 81 ? 233472 : attr == 111 ? 1024 : 50 << 20;
    return ok("cudaDeviceGetAttribute");
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned flags) {
    *p = calloc(1, n);
    return ok("cudaHostAlloc");
}
cudaError_t cudaHostGetDevicePointer(void** d, void* h, unsigned flags) { *d = h; return ok("cudaHostGetDevicePointer"); }
cudaError_t cudaFuncSetAttribute(const void* fn, int attr, int value) { return ok("cudaFuncSetAttribute"); }
cudaError_t cudaMemset(void* p, int value, size_t n) { return ok("cudaMemset"); }
cudaError_t cudaMalloc(void** p, size_t n) {
    *p = n > 4096 ? (void*)0x10000000 : calloc(1, n);  /* the flush buffer: never touched on the host */
    fprintf(stderr, "fake: cudaMalloc %zu\n", n);
    return ok("cudaMalloc");
}
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, int kind) {
    memcpy(d, s, n);
    return ok("cudaMemcpy");
}

/* The last gate with sealed inputs, until its key came and they were opened. */
static struct {
    volatile unsigned* ctl;
    unsigned number, njobs;
    const unsigned long long* jobs;
} gate;

static void keystream(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int r = 0; r < 10; ++r) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[1] = (uint32_t)p1; c[3] = (uint32_t)p0; c[0] = n0; c[2] = n2;
    }
}

static void open_sealed(void) {
    if (!gate.njobs || gate.ctl[4] != gate.number) return;
    uint32_t k0 = gate.ctl[5], k1 = gate.ctl[6], k2 = gate.ctl[7];
    for (unsigned j = 0; j < gate.njobs; ++j) {
        uint8_t* p = (uint8_t*)(uintptr_t)gate.jobs[2 * j];
        unsigned long long n = gate.jobs[2 * j + 1];
        for (unsigned long long i = 0; i < n; ++i) {
            uint32_t c[4] = {(uint32_t)(i / 16), (uint32_t)((i / 16) >> 32), j, k2};
            keystream(c, k0, k1);
            p[i] ^= (uint8_t)(c[(i % 16) / 4] >> (8 * (i % 4)));
        }
        fprintf(stderr, "fake: open %u %p %llu key=%u,%u,%u first=", j, (void*)p, n, k0, k1, k2);
        for (unsigned long long i = 0; i < n && i < 8; ++i) fprintf(stderr, "%02x", p[i]);
        fprintf(stderr, "\n");
    }
    gate.njobs = 0;
}
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) { *least = 0; *greatest = -5; return 0; }
cudaError_t cudaStreamCreateWithPriority(void** s, unsigned flags, int priority) {
    *s = CHECK_STREAM;
    fprintf(stderr, "fake: stream flags=%u priority=%d\n", flags, priority);
    return ok("cudaStreamCreateWithPriority");
}
cudaError_t cudaFuncGetAttributes(void* attr, const void* fn) { return ok("cudaFuncGetAttributes"); }
cudaError_t cudaDeviceSynchronize(void) { fprintf(stderr, "fake: sync\n"); return ok("cudaDeviceSynchronize"); }
cudaError_t cudaGetLastError(void) { return ok("cudaGetLastError"); }
cudaError_t cudaIpcOpenMemHandle(void** p, cudaIpcMemHandle_t h, unsigned flags) {
    *p = calloc(1, 1 << 20);
    fprintf(stderr, "fake: ipc %02x%02x -> %p\n", h.reserved[0], h.reserved[1], *p);
    return ok("cudaIpcOpenMemHandle");
}
cudaError_t cudaIpcCloseMemHandle(void* p) { fprintf(stderr, "fake: ipc close %p\n", p); return ok("cudaIpcCloseMemHandle"); }
static int events;
cudaError_t cudaEventCreate(void** e) { *e = (void*)(intptr_t)(0x1000 + ++events); return ok("cudaEventCreate"); }
cudaError_t cudaEventRecord(void* e, void* stream) {
    open_sealed();
    fprintf(stderr, "fake: record %ld stream=%p\n", (long)((intptr_t)e - 0x1000), stream);
    return ok("cudaEventRecord");
}
cudaError_t cudaEventSynchronize(void* e) { fprintf(stderr, "fake: event sync\n"); return ok("cudaEventSynchronize"); }
cudaError_t cudaEventElapsedTime(float* ms, void* start, void* end) { *ms = 1.25f; return ok("cudaEventElapsedTime"); }
cudaError_t cudaCtxResetPersistingL2Cache(void) { fprintf(stderr, "fake: l2 reset\n"); return ok("cudaCtxResetPersistingL2Cache"); }
cudaError_t cudaStreamSetAttribute(void* s, int attr, const void* v) {
    fprintf(stderr, "fake: window stream=%p attr=%d\n", s, attr);
    return ok("cudaStreamSetAttribute");
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t n, void* stream) {
    fprintf(stderr, "fake: memset %p 0x%02x %zu\n", p, value, n);
    return ok("cudaMemsetAsync");
}
cudaError_t cudaLaunchKernel(const void* fn, dim3 grid, dim3 block, void** args, size_t shared, void* stream) {
    if (shared > 0) {  // judge_hold (the only launch with dynamic shared memory): every block resident at once,
        volatile unsigned* ctl = *(volatile unsigned**)args[0];  // the host lets go whenever it likes
        unsigned number = *(unsigned*)args[2];
        const unsigned long long* jobs = *(const unsigned long long**)args[5];
        unsigned njobs = *(unsigned*)args[6];
        fprintf(stderr, "fake: hold %u grid=%u smem=%zu jobs=%u flush=%p %llu stamp=%p wait=%u\n", number, grid.x,
                shared, njobs, *(void**)args[7], *(unsigned long long*)args[8], *(void**)args[11], *(unsigned*)args[12]);
        ctl[1] = number;
        gate.ctl = ctl, gate.number = number, gate.jobs = jobs, gate.njobs = njobs;
    } else if (block.x == 512) {  // judge_read (the L2 flush: the only launch of 512 threads)
        fprintf(stderr, "fake: read %p %llu\n", *(void**)args[0], *(unsigned long long*)args[1]);
    } else if (block.x == 1) {
        fprintf(stderr, "fake: stamp %p\n", *(void**)args[0]);
    } else if (stream == CHECK_STREAM) {
        fprintf(stderr, "fake: check %p 0x%08x %llu salt=%llu out=%p grid=%u block=%u\n", *(void**)args[0],
                *(uint32_t*)args[1], *(unsigned long long*)args[2], *(unsigned long long*)args[3],
                *(void**)args[4], grid.x, block.x);
    } else {
        fprintf(stderr, "fake: fill %p 0x%08x %llu grid=%u block=%u stream=%p\n", *(void**)args[0],
                *(uint32_t*)args[1], *(unsigned long long*)args[2], grid.x, block.x, stream);
    }
    return ok("cudaLaunchKernel");
}
