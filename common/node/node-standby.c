/* node-standby.c -- a standby daemon's wait for its role's lock (node_new() with
 * cfg->standby; coord-adapter --standby).
 *
 * NOTES ON THE DESIGN
 * (1) A standby takes over only once the lock's holder is gone.  A thread waits in
 *     flock(LOCK_EX) on <data-dir>/<role>/lock; the kernel grants it when the holder's
 *     last descriptor of the lock closes -- the process has exited, kill -9 included, so
 *     it sends and writes nothing more -- and to one waiter only: of two standbys one
 *     takes over, the other waits on.  No polling: the wake-up is the kernel's.
 *     node_new() then bumps the incarnation under the lock as at any start (node.c note
 *     4): the new life's incarnation is above every earlier one of the role.
 * (2) While waiting, the standby answers status requests (role CTL: Hello, then
 *     StatusRequest) on <run-dir>/<role>.standby.<pid>.sock with ready = false,
 *     incarnation 0 and detail "standby" (node_standby_socket_path()); that socket is
 *     removed before node_new() goes on.  One request at a time, each cut off after
 *     STANDBY_CLIENT_MS, so a slow client delays a takeover by that much at most.
 * (3) SIGTERM or SIGINT while waiting: -ECANCELED, nothing else done.  The lock thread
 *     is left blocked in flock() (detached, with its state) until the process exits.
 * (4) Under a service manager (Type=notify) a standby is started once it waits:
 *     READY=1 with STATUS=standby, and WATCHDOG=1 every half interval from wait_loop(),
 *     so neither TimeoutStartSec= nor WatchdogSec= ends a long wait.  The takeover
 *     says STATUS=primary; node_set_ready() then says READY=1 once it serves.
 */
#include "node-standby.h"
#include "node.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/ipc.h"
#include "log.h"
#include "sdnotify.h"
#include "util.h"

#define STANDBY_CLIENT_MS 200

/* Shared by the waiting thread and the lock thread; freed by neither on -ECANCELED
 * (note 3). */
struct standby_lock {
        int lock_fd;
        int efd;                /* written once by the lock thread: the flock returned */
        int err;                /* its errno; read after efd says so */
};

static void *lock_thread(void *arg)
{
        struct standby_lock *s = arg;
        uint64_t one = 1;

        while (flock(s->lock_fd, LOCK_EX) < 0) {
                if (errno != EINTR) {
                        s->err = errno;
                        break;
                }
        }
        if (write(s->efd, &one, sizeof(one)) < 0)
                s->err = s->err ? s->err : errno;
        return NULL;
}

char *node_standby_socket_path(const char *run_dir, Coord__Role role, int pid)
{
        char *p;
        return asprintf(&p, "%s/%s.standby.%d.sock", run_dir, node_role_name(role), pid) < 0 ? NULL : p;
}

static int listen_unix(const char *path)
{
        struct sockaddr_un sa;
        socklen_t len;
        int fd, r;

        r = ipc_sockaddr_fill(path, &sa, &len);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void)unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 16) < 0) {
                r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* Answer one coordctl (note 2): its Hello, then a status request. */
static void serve_one(int fd, const struct node_standby_info *info)
{
        Coord__Envelope *env = NULL;
        struct ucred cred;
        socklen_t clen = sizeof(cred);
        bool hello = false;

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != geteuid())
                return;
        while (ipc_sync_recv(fd, IPC_MAX_FRAME_DEFAULT, STANDBY_CLIENT_MS, &env) == 0) {
                Coord__MsgType type = env->type;
                uint64_t id = env->request_id;

                coord__envelope__free_unpacked(env, NULL);
                if (type == COORD__MSG_TYPE__MSG_HELLO && !hello) {
                        hello = true;
                } else if (type == COORD__MSG_TYPE__MSG_STATUS_REQUEST && hello) {
                        Coord__StatusReply s = COORD__STATUS_REPLY__INIT;
                        Coord__Envelope out = COORD__ENVELOPE__INIT;
                        uint8_t buf[512];

                        s.role = info->role;
                        s.pid = (int32_t)getpid();
                        s.uptime_ms = now_ms() - info->start_ms;
                        s.instance = (char *)info->instance;
                        s.detail = (char *)"standby";
                        if (coord__status_reply__get_packed_size(&s) > sizeof(buf))
                                return;
                        out.type = COORD__MSG_TYPE__MSG_STATUS_REPLY;
                        out.sender = info->role;
                        out.request_id = id;
                        out.payload.len = coord__status_reply__pack(&s, buf);
                        out.payload.data = buf;
                        (void)ipc_sync_send(fd, &out, IPC_MAX_FRAME_DEFAULT);
                        return;
                } else {
                        return;
                }
        }
}

/* Until the lock is ours (0), a signal (-ECANCELED) or a failure. */
static int wait_loop(int lfd, int efd, int sfd, const struct node_standby_info *info)
{
        struct pollfd p[3] = {
                { .fd = efd, .events = POLLIN },
                { .fd = sfd, .events = POLLIN },
                { .fd = lfd, .events = POLLIN },
        };
        uint64_t usec = 0;
        int timeout = -1, n;

        /* Note 4. */
        if (sdnotify_watchdog_usec(&usec) > 0)
                timeout = usec >= 2000 ? (int)(usec / 2000) : 1;
        (void)sdnotify_send("READY=1\nSTATUS=standby: waiting for the lock of the primary");
        for (;;) {
                n = poll(p, 3, timeout);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (timeout >= 0)
                        (void)sdnotify_send("WATCHDOG=1");
                if (n == 0)
                        continue;
                if (p[0].revents) {
                        (void)sdnotify_send("STATUS=primary: took over the lock");
                        return 0;
                }
                if (p[1].revents) {
                        struct signalfd_siginfo si;
                        /* Taken, so that it does not strike again when unblocked. */
                        if (read(sfd, &si, sizeof(si)) < 0)
                                return -errno;
                        log_info("standby_stopped", "role=%s signal=%d", node_role_name(info->role),
                                 (int)si.ssi_signo);
                        return -ECANCELED;
                }
                if (p[2].revents) {
                        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
                        if (c >= 0) {
                                serve_one(c, info);
                                close(c);
                        }
                }
        }
}

int node_standby_wait(int lock_fd, const struct node_standby_info *info)
{
        _cleanup_free_ char *path = NULL;
        struct standby_lock *s;
        sigset_t mask, old;
        pthread_t t;
        int lfd = -EBADF, sfd = -EBADF, r;

        path = node_standby_socket_path(info->run_dir, info->role, (int)getpid());
        s = calloc(1, sizeof(*s));
        if (!path || !s) {
                free(s);
                return -ENOMEM;
        }
        s->lock_fd = lock_fd;
        s->efd = eventfd(0, EFD_CLOEXEC);
        if (s->efd < 0) {
                r = -errno;
                free(s);
                return r;
        }
        /* Blocked before the thread starts, so that it inherits the mask too. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        pthread_sigmask(SIG_BLOCK, &mask, &old);
        sfd = signalfd(-1, &mask, SFD_CLOEXEC);
        if (sfd < 0) {
                r = -errno;
                goto fail;
        }
        lfd = listen_unix(path);
        if (lfd < 0) {
                r = lfd;
                goto fail;
        }
        r = -pthread_create(&t, NULL, lock_thread, s);
        if (r < 0)
                goto fail;
        pthread_detach(t);
        log_info("standby_waiting", "role=%s socket=%s", node_role_name(info->role), path);
        r = wait_loop(lfd, s->efd, sfd, info);
        if (r == 0) {
                /* The thread is done with s. */
                r = s->err ? -s->err : 0;
                close(s->efd);
                free(s);
        }
        /* else note 3: the thread keeps s. */
        s = NULL;
fail:
        if (lfd >= 0) {
                close(lfd);
                (void)unlink(path);
        }
        if (sfd >= 0)
                close(sfd);
        if (s) {
                close(s->efd);
                free(s);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}
