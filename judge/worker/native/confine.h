// Confining the worker before the submission's library is loaded, and loading it (worker.cu's
// `init`, and the `--selftest-sandbox` mode that tests/worker/test_native_worker.py runs on a CPU).
//
// Order matters, and each step is checked:
//   1. open the library (as the judge's user: a root judge's cache may be unreadable to nobody);
//   2. a SIGSYS handler: a refused system call (SECCOMP_RET_TRAP) says which one in the log, then
//      the process dies by SIGSYS as if the handler were not there;
//   3. root gives up root for nobody (65534, the container runner's user) with every group dropped;
//   4. not dumpable: no ptrace and no /proc/PID/mem from the other workers running as nobody;
//   5. no_new_privs (an unprivileged process may install a filter only with it), then the filter,
//      with TSYNC: the CUDA runtime's threads exist by now, and a filter on one thread only would
//      leave them free;
//   6. dlopen the library through /proc/self/fd (its path may be closed to nobody), dlsym solve.
// Nothing here needs CUDA: tests/worker/native/host_test.cc and the self-test use it with g++.
#pragma once

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "learn.h"

namespace judge_confine {

constexpr uid_t NOBODY = 65534;
constexpr size_t MAX_FILTER_INSTRUCTIONS = 4096;  // BPF_MAXINSNS

// A failed system call: `name` is the errno's name ("EPERM"), `text` says what failed and why.
struct OsError {
    std::string name, text;
};

inline OsError os_error(const std::string& what, int err = errno) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    const char* name = strerrorname_np(err);
#else
    const char* name = nullptr;
#endif
    return {name ? name : "errno " + std::to_string(err), what + ": " + strerror(err)};
}

// Async-signal-safe: raw system calls and a fixed buffer only.
inline void on_sigsys(int, siginfo_t* info, void*) {
    static const char head[] = "judge-worker: the sandbox refused system call ";
    char line[sizeof head + 24];
    memcpy(line, head, sizeof head - 1);
    size_t n = sizeof head - 1;
    char digits[20];
    int d = 0;
    unsigned nr = (unsigned)info->si_syscall;
    do {
        digits[d++] = (char)('0' + nr % 10);
        nr /= 10;
    } while (nr && d < 20);
    while (d) line[n++] = digits[--d];
    line[n++] = '\n';
    syscall(SYS_write, 2, line, n);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGSYS, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGSYS);
    syscall(SYS_exit_group, 128 + SIGSYS);  // not reached: the signal's default action ends the process
}

// The filter as the parent sent it: `struct sock_filter[]`, 8 bytes per instruction.
inline std::vector<sock_filter> filter_from_bytes(const std::vector<uint8_t>& bytes) {
    if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0 ||
        bytes.size() / sizeof(sock_filter) > MAX_FILTER_INSTRUCTIONS)
        throw OsError{"EINVAL", "the seccomp program is " + std::to_string(bytes.size()) +
                                    " bytes: expected 1 to 4096 instructions of 8 bytes"};
    std::vector<sock_filter> prog(bytes.size() / sizeof(sock_filter));
    memcpy(prog.data(), bytes.data(), bytes.size());
    return prog;
}

inline void drop_root() {
    uid_t ruid, euid, suid;
    gid_t rgid, egid, sgid;
    if (getresuid(&ruid, &euid, &suid) != 0) throw os_error("getresuid");
    if (ruid != 0 && euid != 0 && suid != 0) return;  // not root: nothing to give up
    // glibc applies each of these to every thread of the process (the CUDA runtime's too).
    if (setgroups(0, nullptr) != 0) throw os_error("setgroups(0)");
    if (setresgid(NOBODY, NOBODY, NOBODY) != 0) throw os_error("setresgid(65534)");
    if (setresuid(NOBODY, NOBODY, NOBODY) != 0) throw os_error("setresuid(65534)");
    if (getresuid(&ruid, &euid, &suid) != 0 || getresgid(&rgid, &egid, &sgid) != 0)
        throw os_error("reading the ids back");
    if (ruid != NOBODY || euid != NOBODY || suid != NOBODY || rgid != NOBODY || egid != NOBODY ||
        sgid != NOBODY || getgroups(0, nullptr) != 0 || setuid(0) == 0)
        throw OsError{"EPERM", "root was not given up: the ids or groups did not change"};
}

// Steps 2 to 5 of the header's list. With `learn_log` (JUDGE_SECCOMP_LEARN, measuring the list:
// learn.h) the filter's refusals are notifications that a supervisor thread logs and lets run.
inline void confine(const std::vector<uint8_t>& program, const char* learn_log = nullptr) {
    std::vector<sock_filter> prog = filter_from_bytes(program);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSYS, &sa, nullptr) != 0) throw os_error("sigaction(SIGSYS)");
    drop_root();
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) throw os_error("prctl(PR_SET_DUMPABLE, 0)");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) throw os_error("prctl(PR_SET_NO_NEW_PRIVS, 1)");
    sock_fprog fprog;
    fprog.len = (unsigned short)prog.size();
    fprog.filter = prog.data();
    if (learn_log) {
        if (!learn::prepare(learn_log) || !learn::install(&fprog)) throw os_error("the learning filter");
        return;
    }
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
    if (r < 0) throw os_error("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC)");
    if (r > 0)
        throw OsError{"ESRCH", "seccomp(TSYNC): thread " + std::to_string(r) + " could not take the filter"};
}

// Step 1: an fd of the library, opened while the judge's user can still read its path.
inline int open_library(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw os_error("opening " + path);
    return fd;
}

// Step 6: solve() of the library open on `fd` (closed here); `path` names it in messages. The
// library's constructors run here, after the filter: whatever they do is confined.
inline void* load_solve(int fd, const std::string& path, std::string& error) {
    std::string proc = "/proc/self/fd/" + std::to_string(fd);
    void* lib = dlopen(proc.c_str(), RTLD_NOW | RTLD_LOCAL);
    close(fd);
    if (!lib) {
        const char* e = dlerror();
        std::string text = e ? e : "dlopen failed";
        if (text.compare(0, proc.size(), proc) == 0) text = path + text.substr(proc.size());
        error = text;
        return nullptr;
    }
    void* fn = dlsym(lib, "solve");
    if (!fn) error = path + ": the library has no symbol `solve`";
    return fn;
}

}  // namespace judge_confine
