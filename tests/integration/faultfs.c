/* faultfs.c -- an LD_PRELOAD shim that fails writes and syncs of files under a path, for
 * the disk-fault tests (issue 30 item 3; test-diskfault).
 *
 * Environment, read once when the library is loaded:
 *   COORD_FAULT=eio|enospc   the errno of a failed call (required, else the shim is off)
 *   COORD_FAULT_PATH=prefix  only descriptors whose /proc/self/fd path starts with it
 *                            (required)
 *   COORD_FAULT_OPS=write,sync  which calls fail (default both): write covers write,
 *                            pwrite, writev, pwritev (and their 64/2 forms) and fallocate;
 *                            sync covers fsync and fdatasync (not sync_file_range, a
 *                            hint RocksDB probes once and asserts on if it fails)
 *   COORD_FAULT_AFTER=N      the first N matching calls pass (default 0)
 *   COORD_FAULT_ARM=file     calls fail only while this file exists (and are counted for
 *                            COORD_FAULT_AFTER only then): the test creates it to arm the
 *                            fault and removes it to lift the fault
 * Every matching call after that fails with the errno, without touching the file, and
 * one line goes to stderr (event=faultfs_injected) for the first few.  Calls on other
 * descriptors (sockets, pipes, other files) go straight to libc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

enum { OP_WRITE = 1, OP_SYNC = 2 };

static int fault_errno;                 /* 0: off */
static char fault_path[512];
static size_t fault_path_len;
static char arm_path[512];
static unsigned fault_ops = OP_WRITE | OP_SYNC;
static uint64_t fault_after;
static uint64_t matched;                /* atomic */
static uint64_t injected;               /* atomic */

__attribute__((constructor)) static void faultfs_init(void)
{
        const char *mode = getenv("COORD_FAULT"), *path = getenv("COORD_FAULT_PATH");
        const char *ops = getenv("COORD_FAULT_OPS"), *after = getenv("COORD_FAULT_AFTER");
        const char *arm = getenv("COORD_FAULT_ARM");

        if (!mode || !path || !*path || strlen(path) >= sizeof(fault_path))
                return;
        if (ops) {
                fault_ops = 0;
                if (strstr(ops, "write"))
                        fault_ops |= OP_WRITE;
                if (strstr(ops, "sync"))
                        fault_ops |= OP_SYNC;
        }
        if (after)
                fault_after = strtoull(after, NULL, 10);
        if (arm && strlen(arm) < sizeof(arm_path))
                strcpy(arm_path, arm);
        strcpy(fault_path, path);
        fault_path_len = strlen(path);
        fault_errno = strcmp(mode, "enospc") == 0 ? ENOSPC : strcmp(mode, "eio") == 0 ? EIO : 0;
}

/* Whether this call on fd fails; errno is kept when it does not. */
static bool fault(int fd, unsigned op, const char *call)
{
        char link[64], target[512];
        int saved = errno;
        ssize_t n;

        if (!fault_errno || !(fault_ops & op))
                return false;
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        n = readlink(link, target, sizeof(target) - 1);
        if (n < (ssize_t)fault_path_len || strncmp(target, fault_path, fault_path_len) != 0)
                goto pass;
        target[n] = '\0';
        if (arm_path[0] && access(arm_path, F_OK) != 0)
                goto pass;
        if (__atomic_add_fetch(&matched, 1, __ATOMIC_RELAXED) <= fault_after)
                goto pass;
        if (__atomic_add_fetch(&injected, 1, __ATOMIC_RELAXED) <= 5) {
                char line[768];
                int len = snprintf(line, sizeof(line), "event=faultfs_injected call=%s errno=%d path=%s\n",
                                   call, fault_errno, target);
                if (len > 0)
                        (void)!write(STDERR_FILENO, line, (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
        }
        errno = fault_errno;
        return true;
pass:
        errno = saved;
        return false;
}

#define REAL(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

ssize_t write(int fd, const void *buf, size_t n)
{
        if (fault(fd, OP_WRITE, "write"))
                return -1;
        return REAL(write)(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
        if (fault(fd, OP_WRITE, "pwrite"))
                return -1;
        return REAL(pwrite)(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
        if (fault(fd, OP_WRITE, "pwrite64"))
                return -1;
        return REAL(pwrite64)(fd, buf, n, off);
}

ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
        if (fault(fd, OP_WRITE, "writev"))
                return -1;
        return REAL(writev)(fd, iov, cnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off)
{
        if (fault(fd, OP_WRITE, "pwritev"))
                return -1;
        return REAL(pwritev)(fd, iov, cnt, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off)
{
        if (fault(fd, OP_WRITE, "pwritev64"))
                return -1;
        return REAL(pwritev64)(fd, iov, cnt, off);
}

ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
        if (fault(fd, OP_WRITE, "pwritev2"))
                return -1;
        return REAL(pwritev2)(fd, iov, cnt, off, flags);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
        if (fault(fd, OP_WRITE, "fallocate"))
                return -1;
        return REAL(fallocate)(fd, mode, off, len);
}

int fallocate64(int fd, int mode, off64_t off, off64_t len)
{
        if (fault(fd, OP_WRITE, "fallocate64"))
                return -1;
        return REAL(fallocate64)(fd, mode, off, len);
}

int fsync(int fd)
{
        if (fault(fd, OP_SYNC, "fsync"))
                return -1;
        return REAL(fsync)(fd);
}

int fdatasync(int fd)
{
        if (fault(fd, OP_SYNC, "fdatasync"))
                return -1;
        return REAL(fdatasync)(fd);
}
