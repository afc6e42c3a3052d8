/* itest-notify.h -- the service manager's end of sd_notify(3) for integration tests: a
 * datagram socket that receives a daemon's notifications with its credentials
 * (common/sdnotify.c is the daemon's end).  Include after itest.h. */
#pragma once

#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "itest.h"

/* A datagram socket at addr (a path, or "@name": abstract) that passes credentials. */
static __attribute__((unused)) int notify_bind(const char *addr)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        size_t len = strlen(addr);
        int fd, one = 1;
        socklen_t salen;

        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || len >= sizeof(sa.sun_path))
                return -1;
        memcpy(sa.sun_path, addr, len);
        if (addr[0] == '@')
                sa.sun_path[0] = '\0';
        salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (addr[0] != '@'));
        if (bind(fd, (struct sockaddr *)&sa, salen) < 0 ||
            setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0) {
                close(fd);
                return -1;
        }
        return fd;
}

/* The next datagram within timeout_ms into buf, its sender's pid in *pid; false on
 * timeout. */
static bool notify_recv(int fd, int timeout_ms, char *buf, size_t size, pid_t *pid)
{
        struct pollfd p = { .fd = fd, .events = POLLIN };
        union { struct cmsghdr h; char b[CMSG_SPACE(sizeof(struct ucred))]; } ctl;
        struct iovec iov = { .iov_base = buf, .iov_len = size - 1 };
        struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &ctl,
                            .msg_controllen = sizeof(ctl) };
        ssize_t n;

        if (poll(&p, 1, timeout_ms) != 1)
                return false;
        n = recvmsg(fd, &m, 0);
        if (n < 0)
                return false;
        buf[n] = '\0';
        *pid = -1;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
                        struct ucred u;
                        memcpy(&u, CMSG_DATA(c), sizeof(u));
                        *pid = u.pid;
                }
        return true;
}

/* Wait for a datagram equal to want (others skipped) from pid; false on timeout. */
static __attribute__((unused)) bool notify_wait(int fd, const char *want, pid_t pid, int timeout_ms)
{
        uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
        char buf[256];
        pid_t from;

        while (now_ms() < deadline) {
                if (!notify_recv(fd, (int)(deadline - now_ms()) + 1, buf, sizeof(buf), &from))
                        return false;
                if (strcmp(buf, want) == 0) {
                        if (from != pid)
                                fprintf(stderr, "\n    %s from pid %d, not the daemon's %d", want,
                                        (int)from, (int)pid);
                        return from == pid;
                }
        }
        return false;
}
