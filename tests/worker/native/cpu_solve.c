/* solve() of tests/worker/test_native_worker.py's CPU runs of the native worker (with
 * fake_cudart.c): out[i] = a[i] * scale on host memory, and a line saying what it got and who it
 * runs as. n == -1: a system call the sandbox refuses (ptrace); n == -2: exit by itself; n == -3:
 * signal 0 to itself (allowed); n == -4: signal 0 to pid 1 (refused: not itself). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

void solve(const float* a, float* out, int n, float scale) {
    if (n == -1) syscall(SYS_ptrace, 0, 0, 0, 0);
    if (n == -2) _exit(0);
    if (n == -3 && kill(getpid(), 0) != 0) _exit(3);
    if (n == -4) kill(1, 0);
    if (n < 0) return;
    for (int i = 0; i < n; ++i) out[i] = a[i] * scale + 1.0f;
    fprintf(stderr, "solve: a=%p out=%p n=%d scale=%g uid=%d dumpable=%d no_new_privs=%d seccomp=%d\n",
            (const void*)a, (void*)out, n, scale, (int)getuid(), prctl(PR_GET_DUMPABLE, 0, 0, 0, 0),
            prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    fflush(stderr);
}
