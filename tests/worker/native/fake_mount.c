/* mount(2) refused with EPERM, preloaded (LD_PRELOAD) by tests/worker/test_native_worker.py: a
 * machine that gives the worker its namespaces but not their /proc (as a container that masks
 * parts of /proc does). It refuses the proc mount, or with FAKE_MOUNT_FAIL=private the first step
 * (the mounts made private); every other mount goes to the kernel. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int mount(const char* source, const char* target, const char* type, unsigned long flags, const void* data) {
    const char* step = getenv("FAKE_MOUNT_FAIL");
    int proc = type && strcmp(type, "proc") == 0;
    if (step && strcmp(step, "private") == 0 ? !proc : proc) {
        errno = EPERM;
        return -1;
    }
    return (int)syscall(SYS_mount, source, target, type, flags, data);
}
