"""The candidate worker's seccomp filter: the OS wall around a submission's native code (issue 16).

A submission's library runs inside the candidate worker, and a static list of forbidden names
cannot see machine code that makes its own system calls (bytes placed in an executable section by
an attribute: no `asm`, no imported symbol; tests/exploits/sandbox/raw_syscall_attr.c). The native
worker therefore creates its CUDA context, then installs this filter on every thread
(SECCOMP_FILTER_FLAG_TSYNC: the CUDA runtime's threads exist already), then dlopens the submission.
From then on the kernel refuses every system call the filter does not allow, whoever makes it.

`program(worker_pid)` is an allow-list for x86_64, as a classic BPF program (`struct sock_filter[]`):

- **First** the architecture must be x86_64 (a 32-bit call through `int 0x80` is checked against
  another table: it kills the process) and the number below the x32 bit (x32 calls: killed too).
- **Allowed plainly** (`rules()`, each with its reason): what a process that already holds a CUDA
  context needs to run kernels (ioctl on the driver's files, futex, poll/epoll, eventfd, memory
  mapping, clocks, sleeping, threads' own bookkeeping), what glibc's dlopen and a library's C++
  static initialisers need (opening and reading files, fstat, mmap of the file, mprotect,
  readlink), and what the worker does itself (read and write on the descriptors it holds, signals
  to itself, exit).
- **Allowed with argument rules**: `open`/`openat` only without O_WRONLY, O_RDWR, O_CREAT, O_TRUNC
  or O_APPEND (`write_opens=True` lets O_RDWR through, for a driver that opens its device files
  after the context exists: to be decided on the GPU); `clone` only with CLONE_THREAD (threads,
  never processes); `clone3` and `openat2` fail with ENOSYS (their arguments are behind a pointer;
  glibc falls back to `clone`/`openat`); `mmap` executable only from a file, never anonymous nor
  writable; `mprotect`/`pkey_mprotect` never executable; `kill`/`tgkill`/`tkill`/`rt_sigqueueinfo`/
  `rt_tgsigqueueinfo` only to the worker itself; `fcntl` without setting a signal owner, a lease
  or a lock; `ioctl` without the terminal's input injection and owner requests; `prctl` with a few
  harmless options; `prlimit64` only on itself.
- **Everything else** returns SECCOMP_RET_TRAP: the kernel sends SIGSYS, the worker's handler
  writes `judge-worker: the sandbox refused system call NR` (`REFUSED_LINE`, `describe_refusal`)
  and the worker dies by SIGSYS. Refused, among others: execve/execveat, fork/vfork, sockets,
  ptrace, process_vm_readv/writev, every change to the file system (unlink, rename, mkdir, ...),
  write-opens, setsid/setpgid, mount/unshare/setns, perf_event_open, bpf, io_uring, userfaultfd,
  kcmp, pidfd_*, personality, memfd_create (writable and executable memory through a file) and
  pipe2 (nothing after the context needs a new pipe; the runtime makes its own during init).

What it cannot do:

- **ioctl is open.** The driver's interface is ioctl on /dev/nvidia*, with request numbers that
  cannot be listed usefully; the driver is the wall there (out of scope: docs/security.md).
- **Reading is allowed.** Any file the worker's user can read (the problem's reference.py, the
  judge's source) can be opened read-only and read; the filter stops writing, not reading. That
  includes /proc/PID/mem of a process of the same user that is dumpable, where no Yama
  ptrace_scope forbids it: the parent's memory, secret included. The container runner's file
  system, another user, or a parent that makes itself non-dumpable, is what hides them.
- **Executable memory is not the wall.** The submission already brings native code; the mmap and
  mprotect rules only make code written at run time harder (W^X): a file it can write, such as
  its log, reopened read-only through /proc/self/fd and mapped, still gets round them. A library
  that asks for an executable stack dies at dlopen (glibc mprotects the stacks executable).
- **The driver API is in-process.** Whatever the CUDA driver can do without a new system call
  (another context's memory is the driver's business), the filter does not see.
- **Descriptors held before install stay usable**: read and write work on every descriptor the
  worker holds, so the worker must hold only its pipes, its log and the driver's files.

The list was written from knowledge of glibc, the CUDA runtime and the worker, not measured: it is
to be confirmed on the GPU by running every model answer under the filter (a refusal names the
call). Adding an entry is one line in `rules()`.
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import re
import struct
import sys
from dataclasses import dataclass

# -- x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl, 64-bit and common) -----
SYSCALLS: dict[int, str] = {
    0: "read", 1: "write", 2: "open", 3: "close", 4: "stat", 5: "fstat", 6: "lstat", 7: "poll", 8: "lseek", 9: "mmap",
    10: "mprotect", 11: "munmap", 12: "brk", 13: "rt_sigaction", 14: "rt_sigprocmask", 15: "rt_sigreturn",
    16: "ioctl", 17: "pread64", 18: "pwrite64", 19: "readv", 20: "writev", 21: "access", 22: "pipe", 23: "select",
    24: "sched_yield", 25: "mremap", 26: "msync", 27: "mincore", 28: "madvise", 29: "shmget", 30: "shmat",
    31: "shmctl", 32: "dup", 33: "dup2", 34: "pause", 35: "nanosleep", 36: "getitimer", 37: "alarm", 38: "setitimer",
    39: "getpid", 40: "sendfile", 41: "socket", 42: "connect", 43: "accept", 44: "sendto", 45: "recvfrom",
    46: "sendmsg", 47: "recvmsg", 48: "shutdown", 49: "bind", 50: "listen", 51: "getsockname", 52: "getpeername",
    53: "socketpair", 54: "setsockopt", 55: "getsockopt", 56: "clone", 57: "fork", 58: "vfork", 59: "execve",
    60: "exit", 61: "wait4", 62: "kill", 63: "uname", 64: "semget", 65: "semop", 66: "semctl", 67: "shmdt",
    68: "msgget", 69: "msgsnd", 70: "msgrcv", 71: "msgctl", 72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync",
    76: "truncate", 77: "ftruncate", 78: "getdents", 79: "getcwd", 80: "chdir", 81: "fchdir", 82: "rename",
    83: "mkdir", 84: "rmdir", 85: "creat", 86: "link", 87: "unlink", 88: "symlink", 89: "readlink", 90: "chmod",
    91: "fchmod", 92: "chown", 93: "fchown", 94: "lchown", 95: "umask", 96: "gettimeofday", 97: "getrlimit",
    98: "getrusage", 99: "sysinfo", 100: "times", 101: "ptrace", 102: "getuid", 103: "syslog", 104: "getgid",
    105: "setuid", 106: "setgid", 107: "geteuid", 108: "getegid", 109: "setpgid", 110: "getppid", 111: "getpgrp",
    112: "setsid", 113: "setreuid", 114: "setregid", 115: "getgroups", 116: "setgroups", 117: "setresuid",
    118: "getresuid", 119: "setresgid", 120: "getresgid", 121: "getpgid", 122: "setfsuid", 123: "setfsgid",
    124: "getsid", 125: "capget", 126: "capset", 127: "rt_sigpending", 128: "rt_sigtimedwait", 129: "rt_sigqueueinfo",
    130: "rt_sigsuspend", 131: "sigaltstack", 132: "utime", 133: "mknod", 134: "uselib", 135: "personality",
    136: "ustat", 137: "statfs", 138: "fstatfs", 139: "sysfs", 140: "getpriority", 141: "setpriority",
    142: "sched_setparam", 143: "sched_getparam", 144: "sched_setscheduler", 145: "sched_getscheduler",
    146: "sched_get_priority_max", 147: "sched_get_priority_min", 148: "sched_rr_get_interval", 149: "mlock",
    150: "munlock", 151: "mlockall", 152: "munlockall", 153: "vhangup", 154: "modify_ldt", 155: "pivot_root",
    156: "_sysctl", 157: "prctl", 158: "arch_prctl", 159: "adjtimex", 160: "setrlimit", 161: "chroot", 162: "sync",
    163: "acct", 164: "settimeofday", 165: "mount", 166: "umount2", 167: "swapon", 168: "swapoff", 169: "reboot",
    170: "sethostname", 171: "setdomainname", 172: "iopl", 173: "ioperm", 174: "create_module", 175: "init_module",
    176: "delete_module", 177: "get_kernel_syms", 178: "query_module", 179: "quotactl", 180: "nfsservctl",
    181: "getpmsg", 182: "putpmsg", 183: "afs_syscall", 184: "tuxcall", 185: "security", 186: "gettid",
    187: "readahead", 188: "setxattr", 189: "lsetxattr", 190: "fsetxattr", 191: "getxattr", 192: "lgetxattr",
    193: "fgetxattr", 194: "listxattr", 195: "llistxattr", 196: "flistxattr", 197: "removexattr", 198: "lremovexattr",
    199: "fremovexattr", 200: "tkill", 201: "time", 202: "futex", 203: "sched_setaffinity", 204: "sched_getaffinity",
    205: "set_thread_area", 206: "io_setup", 207: "io_destroy", 208: "io_getevents", 209: "io_submit",
    210: "io_cancel", 211: "get_thread_area", 212: "lookup_dcookie", 213: "epoll_create", 214: "epoll_ctl_old",
    215: "epoll_wait_old", 216: "remap_file_pages", 217: "getdents64", 218: "set_tid_address", 219: "restart_syscall",
    220: "semtimedop", 221: "fadvise64", 222: "timer_create", 223: "timer_settime", 224: "timer_gettime",
    225: "timer_getoverrun", 226: "timer_delete", 227: "clock_settime", 228: "clock_gettime", 229: "clock_getres",
    230: "clock_nanosleep", 231: "exit_group", 232: "epoll_wait", 233: "epoll_ctl", 234: "tgkill", 235: "utimes",
    236: "vserver", 237: "mbind", 238: "set_mempolicy", 239: "get_mempolicy", 240: "mq_open", 241: "mq_unlink",
    242: "mq_timedsend", 243: "mq_timedreceive", 244: "mq_notify", 245: "mq_getsetattr", 246: "kexec_load",
    247: "waitid", 248: "add_key", 249: "request_key", 250: "keyctl", 251: "ioprio_set", 252: "ioprio_get",
    253: "inotify_init", 254: "inotify_add_watch", 255: "inotify_rm_watch", 256: "migrate_pages", 257: "openat",
    258: "mkdirat", 259: "mknodat", 260: "fchownat", 261: "futimesat", 262: "newfstatat", 263: "unlinkat",
    264: "renameat", 265: "linkat", 266: "symlinkat", 267: "readlinkat", 268: "fchmodat", 269: "faccessat",
    270: "pselect6", 271: "ppoll", 272: "unshare", 273: "set_robust_list", 274: "get_robust_list", 275: "splice",
    276: "tee", 277: "sync_file_range", 278: "vmsplice", 279: "move_pages", 280: "utimensat", 281: "epoll_pwait",
    282: "signalfd", 283: "timerfd_create", 284: "eventfd", 285: "fallocate", 286: "timerfd_settime",
    287: "timerfd_gettime", 288: "accept4", 289: "signalfd4", 290: "eventfd2", 291: "epoll_create1", 292: "dup3",
    293: "pipe2", 294: "inotify_init1", 295: "preadv", 296: "pwritev", 297: "rt_tgsigqueueinfo",
    298: "perf_event_open", 299: "recvmmsg", 300: "fanotify_init", 301: "fanotify_mark", 302: "prlimit64",
    303: "name_to_handle_at", 304: "open_by_handle_at", 305: "clock_adjtime", 306: "syncfs", 307: "sendmmsg",
    308: "setns", 309: "getcpu", 310: "process_vm_readv", 311: "process_vm_writev", 312: "kcmp", 313: "finit_module",
    314: "sched_setattr", 315: "sched_getattr", 316: "renameat2", 317: "seccomp", 318: "getrandom",
    319: "memfd_create", 320: "kexec_file_load", 321: "bpf", 322: "execveat", 323: "userfaultfd", 324: "membarrier",
    325: "mlock2", 326: "copy_file_range", 327: "preadv2", 328: "pwritev2", 329: "pkey_mprotect", 330: "pkey_alloc",
    331: "pkey_free", 332: "statx", 333: "io_pgetevents", 334: "rseq", 424: "pidfd_send_signal",
    425: "io_uring_setup", 426: "io_uring_enter", 427: "io_uring_register", 428: "open_tree", 429: "move_mount",
    430: "fsopen", 431: "fsconfig", 432: "fsmount", 433: "fspick", 434: "pidfd_open", 435: "clone3",
    436: "close_range", 437: "openat2", 438: "pidfd_getfd", 439: "faccessat2", 440: "process_madvise",
    441: "epoll_pwait2", 442: "mount_setattr", 443: "quotactl_fd", 444: "landlock_create_ruleset",
    445: "landlock_add_rule", 446: "landlock_restrict_self", 447: "memfd_secret", 448: "process_mrelease",
    449: "futex_waitv", 450: "set_mempolicy_home_node", 451: "cachestat", 452: "fchmodat2", 453: "map_shadow_stack",
    454: "futex_wake", 455: "futex_wait", 456: "futex_requeue", 457: "statmount", 458: "listmount",
    459: "lsm_get_self_attr", 460: "lsm_set_self_attr", 461: "lsm_list_modules", 462: "mseal", 463: "setxattrat",
    464: "getxattrat", 465: "listxattrat", 466: "removexattrat", 467: "open_tree_attr", 468: "file_getattr",
    469: "file_setattr", 470: "listns",
}
NUMBERS: dict[str, int] = {name: nr for nr, name in SYSCALLS.items()}


def syscall_name(nr: int) -> str:
    """62 → "kill"; a number not in the table → "syscall NR"."""
    return SYSCALLS.get(nr, f"syscall {nr}")


# -- the worker's report of a refusal ---------------------------------------------------------------
REFUSED_LINE = re.compile(r"judge-worker: the sandbox refused system call (\d+)")


def describe_refusal(log_text: str) -> str | None:
    """The first refusal in a worker's log, named: "the sandbox refused system call 62 (kill)"."""
    m = REFUSED_LINE.search(log_text)
    if m is None:
        return None
    nr = int(m.group(1))
    return f"the sandbox refused system call {nr} ({syscall_name(nr)})"


# -- the kernel's constants -------------------------------------------------------------------------
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
RET_KILL_PROCESS = 0x80000000
RET_TRAP = 0x00030000
RET_USER_NOTIF = 0x7FC00000  # learning mode only: a supervisor logs the call and lets it run
RET_ERRNO = 0x00050000  # | errno
RET_ALLOW = 0x7FFF0000

O_WRONLY, O_RDWR, O_CREAT, O_TRUNC, O_APPEND = 0o1, 0o2, 0o100, 0o1000, 0o2000
PROT_WRITE, PROT_EXEC = 0x2, 0x4
MAP_ANONYMOUS = 0x20
CLONE_THREAD = 0x10000
F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK = 0, 1, 2, 3, 4, 5
F_GETOWN, F_GETSIG, F_GETOWN_EX, F_OFD_GETLK = 9, 11, 16, 36
F_DUPFD_CLOEXEC, F_GETPIPE_SZ, F_GET_SEALS = 1030, 1032, 1034
TIOCSCTTY, TIOCSTI, TIOCLINUX, TIOCCONS, FIOSETOWN, SIOCSPGRP = 0x540E, 0x5412, 0x541C, 0x541D, 0x8901, 0x8902
PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_GET_SECCOMP, PR_CAPBSET_READ = 3, 15, 16, 21, 23
PR_GET_NO_NEW_PRIVS, PR_SET_VMA = 39, 0x53564D41

# -- the rules --------------------------------------------------------------------------------------
# A test on one argument: (argument index, test, values). Every argument ruled on here is an int,
# a pid_t or flags held in an int (or, for mmap, mprotect and clone, flags the kernel reads from the
# low 32 bits), so a test reads the argument's low 32 bits, exactly what the kernel uses.
Test = tuple[int, str, tuple[int, ...]]


def has_any(arg: int, mask: int) -> Test:
    return (arg, "any", (mask,))


def has_all(arg: int, mask: int) -> Test:
    return (arg, "all", (mask,))


def lacks(arg: int, mask: int) -> Test:
    return (arg, "none", (mask,))


def one_of(arg: int, *values: int) -> Test:
    return (arg, "in", values)


def none_of(arg: int, *values: int) -> Test:
    return (arg, "not in", values)


@dataclass(frozen=True)
class Rule:
    """How one system call is treated: allowed, unless one of `refuse_if`'s clauses (tests that must
    all hold) matches, which traps; or, with `errno`, never run and failed with that error."""
    why: str
    refuse_if: tuple[tuple[Test, ...], ...] = ()
    errno: int | None = None


def rules(worker_pid: int, *, write_opens: bool = False) -> dict[str, Rule]:
    """The allow-list, by name, in the order the filter checks it (the busiest calls first). A call
    not named here traps. `worker_pid` is the worker's pid as it sees it (its getpid())."""
    pid = worker_pid & 0xFFFFFFFF
    write_flags = O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | (0 if write_opens else O_RDWR)
    to_itself = (none_of(0, pid),)
    return {
        # the CUDA driver, threads, waiting
        "ioctl": Rule("the driver's interface (/dev/nvidia*); not the terminal's input injection, "
                      "controlling-terminal or signal-owner requests",
                      ((one_of(1, TIOCSTI, TIOCSCTTY, TIOCLINUX, TIOCCONS, FIOSETOWN, SIOCSPGRP),),)),
        "futex": Rule("locks, condition variables, thread joins"),
        "read": Rule("descriptors the worker holds: its request pipe, files it opened to read"),
        "write": Rule("descriptors the worker holds: its reply pipe and its log (capped by RLIMIT_FSIZE)"),
        "poll": Rule("waiting on descriptors (the runtime's event threads)"),
        "ppoll": Rule("waiting on descriptors"),
        "epoll_wait": Rule("the CUDA runtime's event handling"),
        "epoll_pwait": Rule("the CUDA runtime's event handling"),
        "epoll_pwait2": Rule("the CUDA runtime's event handling"),
        "epoll_ctl": Rule("the CUDA runtime's event handling"),
        "epoll_create1": Rule("the CUDA runtime's event handling"),
        "eventfd2": Rule("the CUDA runtime's wake-ups"),
        "select": Rule("waiting on descriptors"),
        "pselect6": Rule("waiting on descriptors"),
        "clock_gettime": Rule("the vDSO's fallback"),
        "gettimeofday": Rule("the vDSO's fallback"),
        "time": Rule("the vDSO's fallback"),
        "clock_getres": Rule("the vDSO's fallback"),
        "getcpu": Rule("the vDSO's fallback"),
        "nanosleep": Rule("sleeping"),
        "clock_nanosleep": Rule("sleeping"),
        "sched_yield": Rule("spin-then-yield waits (cudaDeviceScheduleYield)"),
        "restart_syscall": Rule("the kernel's restart of a sleep or wait interrupted by a signal"),
        # memory
        "mmap": Rule("memory and dlopen's mapping of the library; executable only from a file, never "
                     "anonymous (MAP_ANONYMOUS ignores the fd) nor writable (a private map of /dev/zero)",
                     ((has_all(2, PROT_WRITE | PROT_EXEC),), (has_any(2, PROT_EXEC), has_any(3, MAP_ANONYMOUS)))),
        "mprotect": Rule("RELRO and guard pages; never executable (no code written at run time)",
                         ((has_any(2, PROT_EXEC),),)),
        "pkey_mprotect": Rule("as mprotect", ((has_any(2, PROT_EXEC),),)),
        "munmap": Rule("memory"),
        "mremap": Rule("realloc of large blocks (keeps a mapping's protection)"),
        "madvise": Rule("the allocator returning memory; thread stacks"),
        "brk": Rule("the allocator"),
        "mlock": Rule("pinned host memory (bounded by RLIMIT_MEMLOCK)"),
        "munlock": Rule("pinned host memory"),
        "get_mempolicy": Rule("NUMA placement of pinned host memory (this process only)"),
        "mbind": Rule("NUMA placement of pinned host memory (this process only)"),
        "set_mempolicy": Rule("NUMA placement (this process only)"),
        "membarrier": Rule("runtimes that order memory across their own threads"),
        # files: open to read, never to write
        "openat": Rule("dlopen and the C++ runtime read files; never for writing, creating, truncating "
                       "or appending", ((has_any(2, write_flags),),)),
        "open": Rule("as openat (the legacy call)", ((has_any(1, write_flags),),)),
        "openat2": Rule("its flags are behind a pointer: ENOSYS, callers fall back to openat",
                        errno=errno.ENOSYS),
        "close": Rule("descriptors"),
        "fstat": Rule("dlopen: the library's size"),
        "newfstatat": Rule("glibc's stat and fstat"),
        "stat": Rule("the legacy stat"),
        "lstat": Rule("the legacy lstat"),
        "statx": Rule("stat, newer callers"),
        "statfs": Rule("file system facts (shared memory checks)"),
        "fstatfs": Rule("file system facts"),
        "lseek": Rule("reading files"),
        "pread64": Rule("dlopen reads ELF headers at an offset"),
        "readv": Rule("reading"),
        "preadv": Rule("reading"),
        "writev": Rule("stdio and the C++ runtime write to the log with writev"),
        "access": Rule("probing files (read-only facts)"),
        "faccessat": Rule("probing files"),
        "faccessat2": Rule("probing files"),
        "readlink": Rule("dlopen's $ORIGIN: /proc/self/exe"),
        "readlinkat": Rule("as readlink"),
        "getcwd": Rule("relative paths"),
        "getdents64": Rule("listing a directory (reading, which the OS allows anyway)"),
        "dup": Rule("the worker's own descriptors"),
        "dup2": Rule("the worker's own descriptors"),
        "dup3": Rule("the worker's own descriptors"),
        "fcntl": Rule("descriptor flags; not F_SETOWN/F_SETSIG (SIGIO to another process), locks or "
                      "leases (which could stall the judge's own files)",
                      ((none_of(1, F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_GETLK, F_GETOWN, F_GETSIG,
                                F_GETOWN_EX, F_OFD_GETLK, F_DUPFD_CLOEXEC, F_GETPIPE_SZ, F_GET_SEALS),),)),
        # threads and signals, to itself only
        "clone": Rule("threads (CLONE_THREAD), never a new process", ((lacks(0, CLONE_THREAD),),)),
        "clone3": Rule("its flags are behind a pointer: ENOSYS, glibc falls back to clone", errno=errno.ENOSYS),
        "set_robust_list": Rule("every new thread"),
        "rseq": Rule("every new thread (glibc registers restartable sequences)"),
        "set_tid_address": Rule("thread start-up"),
        "map_shadow_stack": Rule("new threads' shadow stacks where CET shadow stacks are on (glibc 2.39+)"),
        "arch_prctl": Rule("the thread's own TLS and CPU features"),
        "rt_sigaction": Rule("signal handlers (the worker's SIGSYS handler, the runtime's)"),
        "rt_sigprocmask": Rule("thread creation blocks signals around clone"),
        "rt_sigreturn": Rule("return from a signal handler"),
        "sigaltstack": Rule("signal stacks of new threads"),
        "kill": Rule("only to the worker itself (raise, abort)", (to_itself,)),
        "tgkill": Rule("only to a thread of the worker (the kernel checks the tid is in that group)", (to_itself,)),
        "tkill": Rule("only the worker's main thread: any other tid could be another process's", (to_itself,)),
        "rt_sigqueueinfo": Rule("only to the worker itself", (to_itself,)),
        "rt_tgsigqueueinfo": Rule("only to a thread of the worker", (to_itself,)),
        "exit": Rule("a thread ends"),
        "exit_group": Rule("the worker ends"),
        "prctl": Rule("thread names (PR_SET_NAME), mapping names (PR_SET_VMA) and reading facts; not "
                      "PR_SET_DUMPABLE, PR_SET_PTRACER, PR_SET_MM, ...",
                      ((none_of(0, PR_SET_NAME, PR_GET_NAME, PR_SET_VMA, PR_GET_DUMPABLE, PR_GET_SECCOMP,
                                PR_CAPBSET_READ, PR_GET_NO_NEW_PRIVS),),)),
        # facts about itself and the machine
        "getpid": Rule("itself"),
        "gettid": Rule("itself"),
        "getppid": Rule("its parent's pid: no secret (signalling it is refused)"),
        "getuid": Rule("ids"),
        "geteuid": Rule("ids"),
        "getgid": Rule("ids"),
        "getegid": Rule("ids"),
        "getresuid": Rule("ids"),
        "getresgid": Rule("ids"),
        "getrlimit": Rule("its own limits (pthread_create reads RLIMIT_STACK)"),
        "prlimit64": Rule("its own limits only (pid 0 or its own): raising past the hard limit needs "
                          "privileges anyway", ((none_of(0, 0, pid),),)),
        "getrusage": Rule("its own usage"),
        "times": Rule("its own usage"),
        "sched_getaffinity": Rule("how many CPUs (thread pools)"),
        "getrandom": Rule("random seeds (hash tables, the C++ runtime)"),
        "uname": Rule("glibc and the driver check the kernel's version"),
        "sysinfo": Rule("total memory (sysconf)"),
    }


# -- the assembler ----------------------------------------------------------------------------------
# Classic BPF: struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}. A conditional jump skips jt or jf
# instructions (0..255); jumps are written to labels and computed at the end.
LD_W_ABS = 0x20  # A = 32-bit word of seccomp_data at k
ALU_AND_K = 0x54  # A &= k
JMP_JEQ_K, JMP_JGE_K, JMP_JSET_K = 0x15, 0x35, 0x45  # A == k, A >= k, A & k
RET_K = 0x06
OFF_NR, OFF_ARCH, OFF_ARGS = 0, 4, 16  # struct seccomp_data {int nr; u32 arch; u64 ip; u64 args[6]}


class _Program:
    def new_label(self) -> str:
        self.count += 1
        return f"L{self.count}"

    def place(self, label: str) -> None:
        self.labels[label] = len(self.code)

    def op(self, code: int, k: int = 0, jt: int | str = 0, jf: int | str = 0) -> None:
        self.code.append((code, jt, jf, k & 0xFFFFFFFF))

    def ret(self, action: int) -> None:
        self.op(RET_K, action)

    def test(self, t: Test, true: str, false: str) -> None:
        """Jump to `true` when the argument passes the test, else to `false`."""
        arg, kind, values = t
        self.op(LD_W_ABS, OFF_ARGS + 8 * arg)  # the low half (little-endian)
        if kind == "any":
            self.op(JMP_JSET_K, values[0], true, false)
        elif kind == "none":
            self.op(JMP_JSET_K, values[0], false, true)
        elif kind == "all":
            self.op(ALU_AND_K, values[0])
            self.op(JMP_JEQ_K, values[0], true, false)
        elif kind in ("in", "not in"):
            hit, miss = (true, false) if kind == "in" else (false, true)
            for v in values[:-1]:
                self.op(JMP_JEQ_K, v, hit, 0)
            self.op(JMP_JEQ_K, values[-1], hit, miss)
        else:
            raise ValueError(f"unknown test {kind!r}")

    def __init__(self, deny: int = RET_TRAP) -> None:
        self.code: list[tuple[int, int | str, int | str, int]] = []  # (code, jt, jf, k); jt/jf: skip or label
        self.labels: dict[str, int] = {}
        self.count = 0
        self.deny = deny

    def rule(self, nr: int, rule: Rule) -> None:
        """`nr` (in A) matched: the rule's body, every path ending in a return; else on to the next."""
        following = self.new_label()
        self.op(JMP_JEQ_K, nr, 0, following)
        if rule.errno is not None:
            self.ret(RET_ERRNO | rule.errno)
        else:
            refuse = self.new_label()
            for clause in rule.refuse_if:
                after = self.new_label()
                for i, t in enumerate(clause):
                    passed = refuse if i == len(clause) - 1 else self.new_label()
                    self.test(t, passed, after)
                    if passed != refuse:
                        self.place(passed)
                self.place(after)
            self.ret(RET_ALLOW)
            if rule.refuse_if:
                self.place(refuse)
                self.ret(self.deny)
        self.place(following)

    def assemble(self) -> bytes:
        out = bytearray()
        for i, (code, jt, jf, k) in enumerate(self.code):
            skips = []
            for j in (jt, jf):
                skip = j if isinstance(j, int) else self.labels[j] - i - 1
                if not 0 <= skip <= 255:
                    raise ValueError(f"instruction {i}: a jump of {skip} does not fit in BPF's 8 bits")
                skips.append(skip)
            out += struct.pack("<HBBI", code, skips[0], skips[1], k)
        return bytes(out)


def program(worker_pid: int, *, write_opens: bool = False, learn: bool = False) -> bytes:
    """The filter for the worker whose pid (as it sees it) is `worker_pid`, as the bytes of a
    `struct sock_filter[]` (8 bytes an instruction) to pass to seccomp(SECCOMP_SET_MODE_FILTER).

    `learn=True` (measuring the list, never judging: scripts/probes/seccomp_learn.sh) makes every
    refusal SECCOMP_RET_USER_NOTIF instead of a trap: the worker's supervisor thread logs the call
    and lets it run."""
    p = _Program(RET_USER_NOTIF if learn else RET_TRAP)
    p.op(LD_W_ABS, OFF_ARCH)
    p.op(JMP_JEQ_K, AUDIT_ARCH_X86_64, 1, 0)
    p.ret(RET_KILL_PROCESS)  # i386 (int 0x80) or another ABI: its numbers mean other calls
    p.op(LD_W_ABS, OFF_NR)
    p.op(JMP_JGE_K, X32_SYSCALL_BIT, 0, 1)
    p.ret(RET_KILL_PROCESS)  # the x32 ABI (and anything above it)
    for name, rule in rules(worker_pid, write_opens=write_opens).items():
        p.rule(NUMBERS[name], rule)
    p.ret(p.deny)
    return p.assemble()


# -- installing it in this process ------------------------------------------------------------------
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def supported() -> str | None:
    """None when the filter can be installed here, else why not."""
    if not sys.platform.startswith("linux"):
        return f"seccomp filters need Linux; this is {sys.platform}"
    machine = platform.machine()
    if machine != "x86_64":
        return f"seccomp filters are built for x86_64 only; this machine is {machine}"
    if struct.calcsize("P") != 8:
        return "seccomp filters are built for 64-bit processes; this Python is 32-bit"
    try:
        with open("/proc/self/status") as f:
            status = f.read()
    except OSError as e:
        return f"cannot read /proc/self/status ({e.strerror})"
    if "\nSeccomp:" not in status:
        return "this kernel has no seccomp (CONFIG_SECCOMP)"
    return None


def install(prog: bytes) -> None:
    """Install `prog` on every thread of this process (no_new_privs, then seccomp with TSYNC), for
    good: nothing undoes it. OSError, with the errno's text, on failure."""
    if not prog or len(prog) % 8:
        raise ValueError("a seccomp program is a non-empty sequence of 8-byte instructions")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(e)}")
    buf = ctypes.create_string_buffer(prog, len(prog))
    fprog = _SockFprog(len(prog) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(ctypes.c_long(NUMBERS["seccomp"]), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                      ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(fprog))
    if rc < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"seccomp(SECCOMP_SET_MODE_FILTER): {os.strerror(e)}")
    if rc > 0:  # TSYNC: the id of a thread that could not take the filter
        raise OSError(errno.EAGAIN, f"seccomp(SECCOMP_SET_MODE_FILTER): thread {rc} could not be synchronised")
