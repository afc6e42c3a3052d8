/* ring-shm.c -- names, ownership and futexes shared by the rings (ring-shm.h). */
#include "ring-shm.h"

#include <assert.h>
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int ring_shm_name_check(const char *name)
{
        size_t len;

        if (!name || name[0] != '/' || name[1] == '\0' || strchr(name + 1, '/'))
                return -EINVAL;
        len = strlen(name + 1);
        if (len + strlen(RING_SHM_WAIT_SUFFIX) > NAME_MAX)
                return -ENAMETOOLONG;
        return 0;
}

void ring_shm_wait_name(const char *name, char buf[static NAME_MAX + 2])
{
        int n = snprintf(buf, NAME_MAX + 2, "%s%s", name, RING_SHM_WAIT_SUFFIX);

        assert(n > 0 && n < NAME_MAX + 2);
        (void)n;
}

int ring_shm_name_for(const char *instance, const char *what, char *buf, size_t size)
{
        int n;

        if (!instance || !*instance || !buf)
                return -EINVAL;
        for (const char *p = instance; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                      (*p >= '0' && *p <= '9') || *p == '.' || *p == '-' || *p == '_'))
                        return -EINVAL;
        n = snprintf(buf, size, "/coord-%s-%s", instance, what);
        if (n < 0)
                return -EINVAL;
        if ((size_t)n >= size)
                return -ENAMETOOLONG;
        return ring_shm_name_check(buf);
}

int ring_shm_secure(int fd)
{
        struct stat st;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (st.st_uid != geteuid())
                return -EPERM;
        if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0)
                return -errno;
        return 0;
}

int ring_futex_wait(const uint32_t *word, uint32_t val, int timeout_ms)
{
        struct timespec ts, *tsp = NULL;

        if (timeout_ms >= 0) {
                ts.tv_sec = timeout_ms / 1000;
                ts.tv_nsec = (long)(timeout_ms % 1000) * 1000000L;
                tsp = &ts;
        }
        /* The timeout of FUTEX_WAIT is relative (monotonic). */
        if (syscall(SYS_futex, word, FUTEX_WAIT, val, tsp, NULL, 0) < 0) {
                if (errno == ETIMEDOUT)
                        return -ETIMEDOUT;
                if (errno == EAGAIN || errno == EINTR)
                        return 0;       /* the word moved, or a signal: look again */
                return -errno;
        }
        return 0;
}

unsigned ring_futex_wake(uint32_t *word)
{
        long n = syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);

        return n > 0 ? (unsigned)n : 0u;
}
