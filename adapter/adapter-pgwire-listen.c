/* adapter-pgwire-listen.c -- the listening side of the PostgreSQL wire protocol
 * server: the TCP and Unix sockets (a stale Unix socket is unlinked, a live one never),
 * accepting connections (refusals over max_connections, retries after persistent accept
 * errors), and the server's end (stop listening, shutdown done, destroy).
 *
 * The numbered notes are in adapter-pgwire.c (NOTES ON THE DESIGN OF A CONNECTION);
 * the listening fds follow adapter-pgwire.c note 6.  What the server's files share is
 * adapter-pgwire-internal.h.  Loop thread only; nothing logs.
 */
#include "adapter-pgwire-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ipc/ipc.h"
#include "loop/loop.h"

/* --- Accepting --------------------------------------------------------------------- */

static void peer_name(int fd, char *buf, size_t size, bool *ret_tcp)
{
        struct sockaddr_storage ss = { 0 };
        socklen_t len = sizeof(ss);
        char host[INET6_ADDRSTRLEN] = "?";

        *ret_tcp = false;
        if (getpeername(fd, (struct sockaddr *)&ss, &len) < 0) {
                snprintf(buf, size, "?");
                return;
        }
        if (ss.ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;

                inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
                snprintf(buf, size, "%s:%u", host, ntohs(in->sin_port));
                *ret_tcp = true;
        } else if (ss.ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;

                inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
                snprintf(buf, size, "[%s]:%u", host, ntohs(in6->sin6_port));
                *ret_tcp = true;
        } else {
                snprintf(buf, size, "[local]");
        }
}

uint32_t pgw_random_u32(void)
{
        static uint32_t fallback;       /* only without getrandom(): never in practice */
        uint32_t v;

        if (getrandom(&v, sizeof(v), GRND_NONBLOCK) == sizeof(v))
                return v;
        fallback = fallback * 1664525u + 1013904223u + (uint32_t)now_ns();
        return fallback;
}

static void server_take(struct pgwire_server *s, int fd)
{
        struct pgwire_conn *c;
        bool refuse;
        int one = 1;

        s->stats.accepted++;
        /* Over max_connections the client still gets its FATAL through a normal
         * (lingering) close: a bare close() with its startup packet unread would send
         * an RST that can destroy the error before libpq reads it.  Only a flood beyond
         * the slack is cut without a word. */
        refuse = s->stats.active >= s->cfg.max_connections;
        if (refuse && s->stats.active >= s->cfg.max_connections + PGWIRE_REFUSE_SLACK) {
                s->stats.refused++;
                (void)close(fd);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                (void)close(fd);
                return;
        }
        c->in = malloc(PGWIRE_IN_INIT);
        if (!c->in) {
                free(c);
                (void)close(fd);
                return;
        }
        c->in_cap = PGWIRE_IN_INIT;
        c->srv = s;
        c->fd = fd;
        c->state = CONN_STARTUP;
        c->txn_status = 'I';
        c->recv_io.complete = conn_recv_done;
        c->send_io.complete = conn_send_done;
        pgcodec_buf_init(&c->out, s->cfg.max_output);
        pgcodec_buf_init(&c->tx, s->cfg.max_output);
        peer_name(fd, c->peer, sizeof(c->peer), &c->is_tcp);
        if (c->is_tcp) {
                /* Replies are whole messages already: do not let Nagle hold them. */
                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
        }
        do
                c->pid = s->next_pid = s->next_pid >= INT32_MAX ? 1 : s->next_pid + 1;
        while (c->pid == 0);
        c->secret = pgw_random_u32();

        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->stats.active++;
        if (refuse) {
                s->stats.refused++;
                conn_fatal(c, PGCODEC_SQLSTATE_TOO_MANY_CONNECTIONS, -EUSERS,
                           "sorry, too many clients already");
        }
        conn_run(c);
}

int pgw_listener_arm(struct listener *ln)
{
        int r = loop_accept(ln->srv->loop, &ln->io, ln->fd);

        if (r >= 0)
                ln->armed = true;
        return r;
}

static void server_retry_fire(struct loop *l, void *userdata);

static void server_retry_later(struct pgwire_server *s)
{
        if (s->retry)
                return;
        /* Out of memory even for a timer: stop accepting; nothing better is possible. */
        if (loop_timer_add(s->loop, PGWIRE_ACCEPT_RETRY_NS, server_retry_fire, s, &s->retry) < 0)
                s->retry = NULL;
}

static void server_retry_fire(struct loop *l, void *userdata)
{
        struct pgwire_server *s = userdata;

        s->retry = NULL;        /* the loop frees a fired timer */
        for (unsigned i = 0; i < s->nlisteners; i++) {
                struct listener *ln = &s->listeners[i];

                if (!ln->armed && ln->fd >= 0 && pgw_listener_arm(ln) < 0)
                        server_retry_later(s);
        }
}

static void listener_accept_done(struct loop *l, struct loop_io *io, int res)
{
        struct listener *ln = container_of(io, struct listener, io);
        struct pgwire_server *s = ln->srv;

        ln->armed = false;
        if (s->shutting_down || s->freeing) {
                if (res >= 0)
                        (void)close(res);
                /* adapter-pgwire.c note 6: no accept is in flight now. */
                closep(&ln->fd);
                if (s->freeing)
                        pgw_server_maybe_free(s);
                else
                        pgw_server_maybe_done(s);
                return;
        }
        if (res >= 0) {
                server_take(s, res);
        } else if (res != -EAGAIN && res != -EINTR && res != -ECONNABORTED && res != -EPROTO) {
                /* EMFILE, ENFILE, ENOBUFS, ENOMEM...: retrying at once would spin. */
                server_retry_later(s);
                return;
        }
        if (pgw_listener_arm(ln) < 0)
                server_retry_later(s);
}

/* --- Listening --------------------------------------------------------------------- */

static int listener_add(struct pgwire_server *s, int fd)
{
        struct listener *ln;

        if (s->nlisteners == PGWIRE_LISTENERS_MAX)
                return -E2BIG;
        ln = &s->listeners[s->nlisteners++];
        ln->srv = s;
        ln->fd = fd;
        ln->io.complete = listener_accept_done;
        return 0;
}

static int eai_to_errno(int eai)
{
        switch (eai) {
        case EAI_SYSTEM:
                return errno > 0 ? -errno : -EIO;
        case EAI_MEMORY:
                return -ENOMEM;
        case EAI_AGAIN:
                return -EAGAIN;
        case EAI_NONAME:
        case EAI_NODATA:
                return -EADDRNOTAVAIL;
        default:
                return -EINVAL;
        }
}

int pgw_listen_tcp(struct pgwire_server *s)
{
        struct addrinfo hints = {
                .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                .ai_family = AF_UNSPEC,
                .ai_socktype = SOCK_STREAM,
        }, *res = NULL;
        char port[8];
        int r, first_error = 0;
        unsigned bound = 0;

        snprintf(port, sizeof(port), "%u", s->cfg.port);
        /* "*": every interface, as PostgreSQL's listen_addresses. */
        r = getaddrinfo(strcmp(s->cfg.host, "*") == 0 ? NULL : s->cfg.host, port, &hints, &res);
        if (r != 0)
                return eai_to_errno(r);

        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
                _cleanup_close_ int fd = -EBADF;
                struct sockaddr_storage ss;
                socklen_t len;
                int one = 1;

                if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                        continue;
                fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
                if (fd < 0) {
                        r = -errno;
                        goto next;
                }
                if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
                    (ai->ai_family == AF_INET6 &&
                     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)) {
                        r = -errno;
                        goto next;
                }
                /* With port 0, every address gets the port the first one was given. */
                memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
                if (s->port) {
                        if (ai->ai_family == AF_INET)
                                ((struct sockaddr_in *)&ss)->sin_port = htons(s->port);
                        else
                                ((struct sockaddr_in6 *)&ss)->sin6_port = htons(s->port);
                }
                if (bind(fd, (struct sockaddr *)&ss, ai->ai_addrlen) < 0 ||
                    listen(fd, s->cfg.backlog) < 0) {
                        r = -errno;
                        goto next;
                }
                len = sizeof(ss);
                if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) {
                        r = -errno;
                        goto next;
                }
                s->port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                                        : ((struct sockaddr_in6 *)&ss)->sin6_port);
                r = listener_add(s, fd);
                if (r < 0)
                        goto next;
                TAKE_FD(fd);
                bound++;
                continue;
next:
                if (!first_error)
                        first_error = r;
        }
        freeaddrinfo(res);
        if (bound == 0)
                return first_error ? first_error : -EADDRNOTAVAIL;
        return 0;
}

int pgw_listen_unix(struct pgwire_server *s)
{
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa;
        struct stat st;
        socklen_t salen;
        int r;

        r = ipc_sockaddr_fill(s->cfg.unix_path, &sa, &salen);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        r = ipc_unlink_stale(s->cfg.unix_path, &sa, salen);
        if (r < 0)
                return r;
        if (bind(fd, (struct sockaddr *)&sa, salen) < 0)
                return -errno;
        /* As PostgreSQL's default unix_socket_permissions: the socket is as open as
         * the loopback TCP port; the directory decides who reaches it. */
        if (chmod(s->cfg.unix_path, 0777) < 0 || lstat(s->cfg.unix_path, &st) < 0) {
                r = -errno;
                (void)unlink(s->cfg.unix_path);
                return r;
        }
        s->unix_bound = true;
        s->unix_dev = st.st_dev;
        s->unix_ino = st.st_ino;
        if (listen(fd, s->cfg.backlog) < 0)
                return -errno;
        r = listener_add(s, fd);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        return 0;
}

static void server_unlink(struct pgwire_server *s)
{
        struct stat st;

        if (!s->unix_bound)
                return;
        /* Only the file we bound: a successor may have replaced it already. */
        if (lstat(s->cfg.unix_path, &st) == 0 && st.st_dev == s->unix_dev &&
            st.st_ino == s->unix_ino)
                (void)unlink(s->cfg.unix_path);
        s->unix_bound = false;
}

/* Stop accepting: cancel the accepts in flight (their completion closes the fd). */
void pgw_server_stop_listening(struct pgwire_server *s)
{
        if (s->retry) {
                loop_timer_cancel(s->loop, s->retry);
                s->retry = NULL;
        }
        server_unlink(s);
        for (unsigned i = 0; i < s->nlisteners; i++) {
                struct listener *ln = &s->listeners[i];

                if (ln->armed) {
                        if (loop_cancel(s->loop, &ln->io) < 0)
                                (void)shutdown(ln->fd, SHUT_RDWR);
                } else {
                        closep(&ln->fd);
                }
        }
}

static bool server_listening(const struct pgwire_server *s)
{
        for (unsigned i = 0; i < s->nlisteners; i++)
                if (s->listeners[i].armed)
                        return true;
        return false;
}

void pgw_server_destroy(struct pgwire_server *s)
{
        assert(!s->conns && !server_listening(s) && !s->runq);
        for (unsigned i = 0; i < s->nlisteners; i++)
                closep(&s->listeners[i].fd);
        server_unlink(s);
        free(s->host);
        free(s->unix_path);
        free(s->server_version);
        free(s);
}

/* Shutdown complete?  Runs done() from the loop. */
void pgw_server_maybe_done(struct pgwire_server *s)
{
        if (!s->shutting_down || s->shutdown_reported || s->freeing || s->conns ||
            server_listening(s))
                return;
        s->shutdown_reported = true;
        /* Last: done() may free s (every caller returns right after). */
        if (s->shutdown_done)
                s->shutdown_done(s, s->shutdown_userdata);
}

void pgw_server_maybe_free(struct pgwire_server *s)
{
        assert(s->freeing);
        if (s->holds == 0 && !s->conns && !server_listening(s))
                pgw_server_destroy(s);
}

