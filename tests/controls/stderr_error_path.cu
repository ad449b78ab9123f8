// expected: passes the static policy — error messages on stderr and stdout.
// gcc rewrites constant-format calls: fprintf(stderr, "text\n") becomes fwrite, fputs of one
// character becomes fputc, printf("text\n") becomes puts. Writing to the already-open stdout and
// stderr is allowed; opening a file is not (tests/exploits/symbol_fopen.cu, symbol_fdopen.cu, ...).
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

static void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    fprintf(stderr, "CUDA error\n");                          // → fwrite
    fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));  // → fprintf / __fprintf_chk
    fputs("failed in solve", stderr);                          // → fwrite
    fputs("\n", stderr);                                       // → fputc
    putc('!', stderr);                                         // → putc
    fflush(stderr);
    printf("see stderr\n");                                    // → puts
    abort();
}

extern "C" void solve(const float* A, const float* B, float* C, int n) {
    if (n < 0) {
        fprintf(stdout, "negative n\n");                       // → fwrite on stdout
        return;
    }
    add<<<(n + 255) / 256, 256>>>(A, B, C, n);
    check(cudaGetLastError(), "add");
}
