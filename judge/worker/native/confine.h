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
// Before all of it, at start-up and before any CUDA call, the worker moves into a pid namespace of
// its own, with a /proc of its own, where the OS allows one (`own_pid_namespace`, below).
// Nothing here needs CUDA: tests/worker/native/host_test.cc and the self-test use it with g++.
#pragma once

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <initializer_list>

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

// The default action for `sig`, unblocked, so that raising it ends the process (async-signal-safe).
inline void default_action(int sig) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
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
    default_action(SIGSYS);
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

// -- a pid namespace of its own -------------------------------------------------------------------
// Ends this process as a child whose wait status was `status` ended: the same exit code, or death
// by the same signal (in a namespace's pid 1, which cannot die by a signal of its own: 128 + it).
[[noreturn]] inline void exit_like(int status) {
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        default_action(sig);
        raise(sig);
        _exit(128 + sig);  // reached in init only: a namespace's pid 1 cannot raise on itself
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

inline void close_all(std::initializer_list<int> fds) {
    for (int fd : fds)
        if (fd >= 0) close(fd);
}

// The namespace's own /proc, mounted by its init before the worker exists (as util-linux's
// `unshare --pid --fork --mount-proc` does). The CUDA driver reads /proc for the process it runs
// in: the judge's /proc shows the host's pids, where pid 2 is another process, and its first call
// fails (cudaErrorOperatingSystem, measured on the H100 machine). The mount namespace is a copy
// of the judge's made private first, so nothing mounted in it reaches the host's mount tree.
// Returns the failure; an empty `text` when both mounts succeeded.
inline OsError mount_own_proc() {
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return os_error("making the mounts private for the pid namespace's /proc");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
        return os_error("mounting /proc for the pid namespace");
    return {};
}

// Where the OS allows it (root, or CAP_SYS_ADMIN: the GPU machine runs the judge as root), the
// worker runs as pid 2 of a new pid namespace whose pid 1 does nothing but wait for it:
//
//   the judge ── outer: the process the judge started (its pid, its process group); waits
//                  └── init: pid 1 of the new namespace; waits; PR_SET_PDEATHSIG SIGKILL
//                        └── the worker: pid 2; everything else (CUDA, the channel, the library)
//
// - The three share a new mount namespace, where init mounts the pid namespace's /proc before it
//   starts the worker (`mount_own_proc`): /proc/self is the worker's own, pid 2.
// - When init ends, the kernel kills every process left in the namespace: nothing the worker
//   starts can outlive it (under the filter it can start nothing; unconfined it could).
// - All three stay in the judge's process group, so its killpg(SIGKILL) ends them together; the
//   outer process dying any other way kills init (PR_SET_PDEATHSIG), and with it the namespace.
// - Inside the namespace no other process is visible: kill() finds no judge, no baseline.
// - The worker's wait status goes back up: init writes it on a pipe that only the outer process
//   reads, and the outer exits with the same code or dies by the same signal, so the judge reads
//   a worker's end as it did without the namespace ("killed by SIGSYS", "... by SIGXFSZ").
// - Why not the worker as pid 1: the kernel drops every signal sent to a namespace's init that has
//   no handler for it unless the signal comes from an ancestor namespace or is a fault. A pid-1
//   worker would survive the SIGXFSZ of its log's cap (writes fail with EFBIG instead) and the
//   SIGSYS its handler re-raises after a refused call. Pid 2 is an ordinary process.
// `close_in_waiters`: descriptors the outer process and init close (the request pipe, the
// channel): only the worker holds them. Returns true in the worker, in its namespace; false where
// the OS refused the namespaces (`why` says why: not root, a container without CAP_SYS_ADMIN): the
// process carries on as it was, alone. Throws OsError in the worker where init could not mount its
// /proc: CUDA would fail there, and the caller reports it as a start-up failure. Never returns in
// the outer process nor in init.
inline bool own_pid_namespace(std::string& why, std::initializer_list<int> close_in_waiters) {
    int status_pipe[2];
    if (pipe2(status_pipe, O_CLOEXEC) != 0) {
        why = os_error("pipe2").text;
        return false;
    }
    // To undo the unshare if the fork fails: after it, this process cannot even start a thread.
    int ours = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
    int our_mounts = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
        why = os_error("unshare(CLONE_NEWPID | CLONE_NEWNS)").text;
        close_all({status_pipe[0], status_pipe[1], ours, our_mounts});
        return false;
    }
    pid_t init = fork();
    if (init < 0) {
        why = os_error("fork after unshare(CLONE_NEWPID | CLONE_NEWNS)").text;
        if (ours < 0 || our_mounts < 0 || setns(ours, CLONE_NEWPID) != 0 || setns(our_mounts, CLONE_NEWNS) != 0) {
            fprintf(stderr, "judge-worker: %s, and the namespaces could not be undone\n", why.c_str());
            _exit(2);
        }
        close_all({status_pipe[0], status_pipe[1], ours, our_mounts});
        return false;
    }
    close_all({ours, our_mounts});
    if (init > 0) {  // the outer process: waits for init, then ends as the worker did
        close_all({status_pipe[1]});
        for (int fd : close_in_waiters) close(fd);
        int status = 0;
        while (waitpid(init, &status, 0) < 0)
            if (errno != EINTR) _exit(2);
        int worker = 0;
        ssize_t n;
        while ((n = read(status_pipe[0], &worker, sizeof worker)) < 0 && errno == EINTR) {
        }
        exit_like(n == (ssize_t)sizeof worker ? worker : status);  // init killed: as init ended
    }
    // init, pid 1 of the new namespace
    close_all({status_pipe[0]});
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) _exit(2);
    // The outer process may have died before that: then the status pipe has no reader left.
    struct pollfd pfd = {status_pipe[1], 0, 0};
    if (poll(&pfd, 1, 0) < 0 || (pfd.revents & POLLERR)) _exit(2);
    // Its /proc before the worker exists; a failure goes to the worker, which reports it.
    OsError no_proc = mount_own_proc();
    pid_t worker = fork();
    if (worker < 0) {
        fprintf(stderr, "judge-worker: fork in its pid namespace: %s\n", strerror(errno));
        _exit(2);
    }
    if (worker == 0) {  // the worker, pid 2
        close_all({status_pipe[1]});
        if (!no_proc.text.empty()) throw no_proc;
        return true;
    }
    for (int fd : close_in_waiters) close(fd);
    int status = 0;
    for (;;) {  // reap whatever ends in the namespace, until the worker does
        pid_t r = waitpid(-1, &status, 0);
        if (r == worker) break;
        if (r < 0 && errno != EINTR) _exit(2);
    }
    ssize_t n;
    while ((n = write(status_pipe[1], &status, sizeof status)) < 0 && errno == EINTR) {
    }
    exit_like(status);  // init exits 128 + the signal; the outer process reads the status above
}

}  // namespace judge_confine
