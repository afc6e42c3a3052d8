/* sdnotify.c -- sd_notify(3) without libsystemd.  See sdnotify.h. */
#include "sdnotify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"

int sdnotify_send(const char *state)
{
        const char *path = getenv("NOTIFY_SOCKET");
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        size_t len;
        socklen_t salen;

        if (!path || !*path)
                return 0;
        if (path[0] != '/' && path[0] != '@')
                return -EAFNOSUPPORT;
        len = strlen(path);
        if (len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, len);
        if (sa.sun_path[0] == '@')
                sa.sun_path[0] = '\0';          /* abstract namespace, not NUL-terminated */
        salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/'));
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
                return -errno;
        return 1;
}

int sdnotify_watchdog_usec(uint64_t *ret_usec)
{
        const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
        uint64_t v, p;

        if (!usec || parse_u64(usec, UINT64_MAX, &v) < 0 || v == 0)
                return 0;
        if (pid && (parse_u64(pid, UINT64_MAX, &p) < 0 || p != (uint64_t)getpid()))
                return 0;
        *ret_usec = v;
        return 1;
}
