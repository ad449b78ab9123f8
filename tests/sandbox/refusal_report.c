/* A stand-in for the native candidate worker's side of the filter (tests/sandbox/test_seccomp.py):
 * read a seccomp program on stdin, install it like the worker does (no_new_privs, then seccomp
 * with TSYNC while another thread already runs), report a refusal the worker's way, die by SIGSYS.
 *
 * usage: refusal_report MODE < program      MODE: kill-self | kill-parent | thread-kill-parent
 */
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static void on_sigsys(int sig, siginfo_t *info, void *context) {
    (void)sig, (void)context;
    char line[96] = "judge-worker: the sandbox refused system call ";
    size_t n = strlen(line);
    char digits[16];
    int k = 0;
    unsigned nr = (unsigned)info->si_syscall;
    do digits[k++] = (char)('0' + nr % 10); while ((nr /= 10) && k < 15);
    while (k) line[n++] = digits[--k];
    line[n++] = '\n';
    (void)!write(2, line, n);
    signal(SIGSYS, SIG_DFL);
    raise(SIGSYS); /* blocked while the handler runs: delivered, and fatal, once it returns */
}

static atomic_int go;

static void *late_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&go)) sched_yield();
    kill(getppid(), 0);
    return NULL;
}

int main(int argc, char **argv) {
    static unsigned char prog[65536];
    size_t len = fread(prog, 1, sizeof prog, stdin);
    if (argc != 2 || len == 0 || len % 8) return 2;
    pthread_t thread;
    int threaded = strcmp(argv[1], "thread-kill-parent") == 0;
    if (threaded && pthread_create(&thread, NULL, late_thread, NULL)) return 3;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    if (sigaction(SIGSYS, &sa, NULL)) return 4;
    struct sock_fprog fprog = {(unsigned short)(len / 8), (struct sock_filter *)prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) return 5;
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog)) return 6;
    if (threaded) {
        atomic_store(&go, 1);
        pthread_join(thread, NULL);
    } else if (strcmp(argv[1], "kill-parent") == 0) {
        kill(getppid(), 0);
    } else if (strcmp(argv[1], "kill-self") == 0) {
        if (kill(getpid(), 0)) return 7;
    } else {
        return 2;
    }
    return 0;
}
