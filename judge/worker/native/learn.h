// Learning mode of the sandbox (measurement only, never a judging run): the parent sets
// JUDGE_SECCOMP_LEARN=FILE and sends the filter built with deny=USER_NOTIF; every system call the
// filter would refuse is appended to FILE ("nr a0 a1 a2 a3") by a supervisor thread, and allowed
// to go on. scripts/probes/seccomp_learn.sh runs every model answer so and prints the calls.
#pragma once
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace learn {

static int g_pipe[2] = {-1, -1};
static int g_out = -1;

// Only raw read/ioctl/write here: anything else would be refused, and notify this very thread.
static void* supervise(void*) {
    int fd = -1;
    if (syscall(SYS_read, g_pipe[0], &fd, sizeof fd) != (long)sizeof fd) return nullptr;
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    char line[160];
    for (;;) {
        memset(&req, 0, sizeof req);
        if (syscall(SYS_ioctl, fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) continue;
        int n = snprintf(line, sizeof line, "%d %llx %llx %llx %llx\n", req.data.nr,
                         (unsigned long long)req.data.args[0], (unsigned long long)req.data.args[1],
                         (unsigned long long)req.data.args[2], (unsigned long long)req.data.args[3]);
        syscall(SYS_write, g_out, line, (size_t)n);
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        syscall(SYS_ioctl, fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

// Before the filter: open FILE, start the supervisor (it waits for the listener's fd).
inline bool prepare(const char* path) {
    g_out = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (g_out < 0 || pipe2(g_pipe, O_CLOEXEC) != 0) return false;
    pthread_t t;
    return pthread_create(&t, nullptr, supervise, nullptr) == 0 && pthread_detach(t) == 0;
}

// Install the filter with a listener and hand it to the supervisor; false on failure.
inline bool install(struct sock_fprog* prog) {
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                      SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH,
                      prog);
    if (fd < 0) return false;
    int f = (int)fd;
    return syscall(SYS_write, g_pipe[1], &f, sizeof f) == (long)sizeof f;
}

}  // namespace learn
