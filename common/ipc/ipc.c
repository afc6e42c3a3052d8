/* ipc.c -- framed connections, the listening server and the blocking client of ipc.h.
 *
 * Owner: common/ipc.  Callers: the daemons (server and client side, on their loop),
 * coordctl and tests (blocking client).  The frame codec lives in frame.c.
 *
 * NOTES ON THE DESIGN OF A CONNECTION
 *
 * (1) States.  OPEN --conn_begin_close()--> CLOSING --conn_maybe_finish()--> CLOSED
 *     (on_close runs, then the conn is freed).  conn_begin_close() is reached from
 *     ipc_conn_close() (reason 0) or from a completion handler (EOF, a bad frame, an I/O
 *     error).  It drops the unsent frames and cancels the operations in flight;
 *     conn_maybe_finish() moves to CLOSED only when no operation is in flight and no
 *     handler of this conn is on the stack (busy == 0), so:
 *       - on_close runs exactly once, always from a completion handler, i.e. from the
 *         loop, never from inside ipc_conn_close() or ipc_conn_send();
 *       - the conn (and its fd and buffers) outlive every kernel operation on them;
 *       - a callback may close its own conn: the handler that called it notices, stops
 *         delivering frames and finishes the close when it unwinds.
 *
 * (2) Invariant: OPEN and busy == 0 implies a recv is in flight.  Hence an
 *     ipc_conn_close() from outside the conn's own handlers always has an operation
 *     whose completion (cancelled) will finish the close.  Cancellation is
 *     IORING_OP_ASYNC_CANCEL; if no SQE can be had, shutdown(2) completes the recv
 *     (EOF) and the send (-EPIPE) instead.
 *
 * (3) Receive.  One buffer per conn, rbuf[0, rlen), capacity rcap; the kernel receives
 *     straight into rbuf + rlen.  After each recv every complete frame is decoded and
 *     delivered, then the remainder (a partial frame) moves to the front.  The buffer
 *     grows to exactly the frame announced by the next prefix (at most max_frame + 4:
 *     an oversized prefix is rejected before its body is read) and shrinks back after
 *     a large frame, so an idle conn holds IPC_RBUF_INIT bytes.
 *
 * (4) Send.  `out` collects encoded frames (ipc_frame_pack() writes in place), `wire` is
 *     what the kernel is sending, wire.data[woff, wire.len).  A flush swaps the two and
 *     writes wire with one send(2, MSG_DONTWAIT) from the loop thread; only the rest goes
 *     to an io_uring send, and frames queued meanwhile wait in `out` for its completion.
 *     A handler of the conn (busy) only queues and conn_rearm() flushes when it returns;
 *     a frame queued from elsewhere asks for a deferred flush (loop.c note 11), run once
 *     after the batch of callbacks, so a batch's frames leave in one send.  Errors are
 *     left to the io_uring send (in order with the conn's other completions).  Unsent
 *     bytes are limited to sendq_limit (-ENOBUFS): a peer that stops reading cannot grow
 *     our memory without bound.
 *
 * (5) Server.  Accept is one loop_accept() re-armed after each completion.  A peer
 *     whose SO_PEERCRED uid differs from our euid is closed at once and counted, and
 *     on_accept never sees it.  Errors that would repeat at once (EMFILE, ENFILE,
 *     ENOMEM...) re-arm after IPC_ACCEPT_RETRY_NS instead of spinning.  The listening fd
 *     is closed only after the last accept completed: closing it earlier could let an
 *     SQE not yet submitted name a reused fd number.
 *
 * Nothing here is thread-safe: conns and servers belong to their loop's thread.
 */
#include "ipc.h"
#include "ipc-internal.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "loop/loop.h"
#include "probes.h"
#include "util.h"

#define IPC_RBUF_INIT           (16u << 10)     /* receive buffer of an idle conn */
#define IPC_BUF_SHRINK          (1u << 20)      /* larger buffers are released when emptied */
#define IPC_OBUF_MIN            4096u
#define IPC_SENDQ_MIN           (4u << 20)      /* send queue limit: max(this, 2 frames) */
#define IPC_ACCEPT_RETRY_NS     (100ull * 1000 * 1000)
#define IPC_BACKLOG             128
#define IPC_SYNC_STACK          4096u           /* blocking client: frames up to this on the stack */

enum conn_state {
        CONN_OPEN,
        CONN_CLOSING,
        CONN_CLOSED,
};

struct obuf {
        uint8_t *data;
        size_t len, cap;
};

struct ipc_conn {
        struct loop *loop;
        int fd;
        uint32_t max_frame;
        size_t sendq_limit;
        pid_t peer_pid;
        struct ipc_conn_ops ops;        /* a copy: the caller's struct may go away */
        bool ops_set;
        void *userdata;

        enum conn_state state;
        int reason;                     /* for on_close, set by conn_begin_close() */
        unsigned busy;                  /* handlers of this conn on the stack: note 1 */

        struct loop_io recv_io;
        bool recv_armed;
        uint8_t *rbuf;                  /* note 3 */
        size_t rlen, rcap;

        struct loop_io send_io;
        bool send_armed;
        struct obuf out;                /* note 4: queued, not yet given to the kernel */
        struct obuf wire;               /* being sent: wire.data[woff, wire.len) */
        size_t woff;
        struct loop_defer flush;        /* note 4: a flush queued for the loop */
};

struct ipc_server {
        struct loop *loop;
        int fd;                         /* closed by server_destroy() only: note 5 */
        char *path;                     /* NULL once unlinked */
        dev_t dev;                      /* the socket file we bound, so we never unlink */
        ino_t ino;                      /* a successor's */
        uint32_t max_frame;
        void (*on_accept)(struct ipc_server *s, struct ipc_conn *c, void *userdata);
        void *userdata;
        struct loop_io accept_io;
        bool accept_armed;
        struct loop_timer *retry;       /* pending re-arm after a persistent error */
        bool busy;                      /* inside on_accept */
        bool freeing;                   /* ipc_server_free() ran */
        uint64_t rejected;
        void (*on_destroyed)(void *arg);
        void *destroyed_arg;
};

/* --- Helpers -------------------------------------------------------------------- */

int ipc_sockaddr_fill(const char *path, struct sockaddr_un *sa, socklen_t *ret_len)
{
        size_t n;

        if (!path || !*path)
                return -EINVAL;
        n = strlen(path);
        if (n >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        memcpy(sa->sun_path, path, n + 1);
        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
        return 0;
}

static int peer_cred(int fd, struct ucred *ret)
{
        socklen_t len = sizeof(*ret);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, ret, &len) < 0)
                return -errno;
        return 0;
}

static int max_frame_check(uint32_t max_frame, uint32_t *ret)
{
        max_frame = ipc_max_frame_resolve(max_frame);
        if (max_frame < IPC_MAX_FRAME_MIN || max_frame > UINT32_MAX - IPC_FRAME_HEADER)
                return -EINVAL;
        *ret = max_frame;
        return 0;
}

static int obuf_reserve(struct obuf *b, size_t extra)
{
        size_t cap;
        uint8_t *p;

        if (b->cap - b->len >= extra)
                return 0;
        cap = b->cap ? b->cap : IPC_OBUF_MIN;
        while (cap - b->len < extra)
                cap *= 2;
        p = realloc(b->data, cap);
        if (!p)
                return -ENOMEM;
        b->data = p;
        b->cap = cap;
        return 0;
}

/* An emptied buffer: release it if a burst made it large. */
static void obuf_trim(struct obuf *b)
{
        assert(b->len == 0);
        if (b->cap > IPC_BUF_SHRINK) {
                free(b->data);
                b->data = NULL;
                b->cap = 0;
        }
}

/* --- Connections: lifetime (note 1) ----------------------------------------------- */

static void conn_free(struct ipc_conn *c)
{
        assert(!c->recv_armed && !c->send_armed && !loop_defer_queued(&c->flush));
        closep(&c->fd);
        free(c->rbuf);
        free(c->out.data);
        free(c->wire.data);
        free(c);
}

/* Finish a close if nothing holds the conn any more.  Returns true when c was freed:
 * the caller must not touch it then. */
static bool conn_maybe_finish(struct ipc_conn *c)
{
        if (c->state != CONN_CLOSING || c->busy > 0 || c->recv_armed || c->send_armed)
                return false;
        c->state = CONN_CLOSED;
        if (c->ops.on_close)
                c->ops.on_close(c, c->reason, c->userdata);
        conn_free(c);
        return true;
}

static void conn_cancel(struct ipc_conn *c, struct loop_io *io)
{
        if (loop_cancel(c->loop, io) < 0)
                (void)shutdown(c->fd, SHUT_RDWR);       /* note 2 */
}

static void conn_begin_close(struct ipc_conn *c, int reason)
{
        assert(c->state == CONN_OPEN);
        assert(reason <= 0);

        c->state = CONN_CLOSING;
        c->reason = reason;
        /* "Close now": frames not yet handed to the kernel are dropped. */
        c->out.len = 0;
        loop_defer_cancel(c->loop, &c->flush);
        if (c->recv_armed)
                conn_cancel(c, &c->recv_io);
        if (c->send_armed)
                conn_cancel(c, &c->send_io);
}

static void conn_recv_done(struct loop *l, struct loop_io *io, int res);
static void conn_send_done(struct loop *l, struct loop_io *io, int res);
static void conn_flush_deferred(struct loop *l, struct loop_defer *d);

static int conn_new(struct loop *l, int fd, uint32_t max_frame, pid_t peer_pid,
                    struct ipc_conn **ret)
{
        struct ipc_conn *c;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->rcap = IPC_RBUF_INIT;
        if (c->rcap > (size_t)max_frame + IPC_FRAME_HEADER)
                c->rcap = (size_t)max_frame + IPC_FRAME_HEADER;
        c->rbuf = malloc(c->rcap);
        if (!c->rbuf) {
                free(c);
                return -ENOMEM;
        }
        c->loop = l;
        c->fd = fd;
        c->max_frame = max_frame;
        c->sendq_limit = 2 * ((size_t)max_frame + IPC_FRAME_HEADER);
        if (c->sendq_limit < IPC_SENDQ_MIN)
                c->sendq_limit = IPC_SENDQ_MIN;
        c->peer_pid = peer_pid;
        c->state = CONN_OPEN;
        c->recv_io.complete = conn_recv_done;
        c->send_io.complete = conn_send_done;
        c->flush.fn = conn_flush_deferred;
        *ret = c;
        return 0;
}

/* --- Connections: receive (note 3) ------------------------------------------------ */

/* Make room for the rest of the frame at the front of rbuf. */
static int conn_rbuf_prepare(struct ipc_conn *c)
{
        size_t init = IPC_RBUF_INIT, need;
        uint8_t *p;

        if (init > (size_t)c->max_frame + IPC_FRAME_HEADER)
                init = (size_t)c->max_frame + IPC_FRAME_HEADER;
        need = init;
        if (c->rlen >= IPC_FRAME_HEADER) {
                /* The decoder already refused a prefix above max_frame. */
                size_t frame = IPC_FRAME_HEADER + (size_t)le32_get(c->rbuf);
                assert(frame <= (size_t)c->max_frame + IPC_FRAME_HEADER);
                if (frame > need)
                        need = frame;
        }
        assert(c->rlen < need);

        if (need > c->rcap || (c->rcap > IPC_BUF_SHRINK && need == init)) {
                p = realloc(c->rbuf, need);
                if (!p)
                        return -ENOMEM;
                c->rbuf = p;
                c->rcap = need;
        }
        return 0;
}

static int conn_recv_arm(struct ipc_conn *c)
{
        int r;

        assert(c->rlen < c->rcap);
        r = loop_recv(c->loop, &c->recv_io, c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
        if (r < 0)
                return r;
        c->recv_armed = true;
        return 0;
}

/* Deliver every complete frame in rbuf, stopping as soon as the conn is no longer open
 * (a callback closed it, or a frame was bad). */
static void conn_consume(struct ipc_conn *c)
{
        size_t off = 0;

        assert(c->busy > 0);
        while (c->state == CONN_OPEN) {
                Coord__Envelope *env;
                ssize_t n = ipc_frame_decode(c->rbuf + off, c->rlen - off, c->max_frame, &env);

                if (n == 0)
                        break;
                if (n < 0) {
                        COORD_IPC_FRAME_REJECT(c->fd, (int)n);
                        conn_begin_close(c, (int)n);
                        return;
                }
                off += (size_t)n;
                COORD_IPC_FRAME_RECV(c->fd, (unsigned)env->type, (unsigned)n);
                if (c->ops.on_frame)
                        c->ops.on_frame(c, env, c->userdata);
                coord__envelope__free_unpacked(env, NULL);
        }
        if (c->state != CONN_OPEN)
                return;
        if (off > 0) {
                memmove(c->rbuf, c->rbuf + off, c->rlen - off);
                c->rlen -= off;
        }
}

static int conn_flush(struct ipc_conn *c);

/* Keep an open conn receiving and sending after one of its handlers ran. */
static void conn_rearm(struct ipc_conn *c)
{
        int r;

        if (c->state != CONN_OPEN)
                return;
        r = conn_rbuf_prepare(c);
        if (r >= 0)
                r = conn_recv_arm(c);
        if (r >= 0)
                r = conn_flush(c);
        if (r < 0)
                conn_begin_close(c, r);
}

static void conn_recv_done(struct loop *l, struct loop_io *io, int res)
{
        struct ipc_conn *c = container_of(io, struct ipc_conn, recv_io);

        c->recv_armed = false;
        if (c->state != CONN_OPEN) {
                (void)conn_maybe_finish(c);
                return;
        }

        c->busy++;
        if (res > 0) {
                c->rlen += (size_t)res;
                conn_consume(c);
        } else if (res == 0) {
                /* EOF between frames is an orderly close; inside a frame the peer died
                 * mid-write or is broken. */
                conn_begin_close(c, c->rlen > 0 ? -ECONNRESET : 0);
        } else if (res != -EINTR && res != -EAGAIN) {
                conn_begin_close(c, res);
        }
        conn_rearm(c);
        c->busy--;
        (void)conn_maybe_finish(c);
}

/* --- Connections: send (note 4) ---------------------------------------------------- */

static int conn_send_arm(struct ipc_conn *c)
{
        int r;

        assert(c->woff < c->wire.len);
        r = loop_send(c->loop, &c->send_io, c->fd, c->wire.data + c->woff,
                      c->wire.len - c->woff);
        if (r < 0)
                return r;
        c->send_armed = true;
        return 0;
}

static void conn_wire_done(struct ipc_conn *c)
{
        c->wire.len = c->woff = 0;
        obuf_trim(&c->wire);
}

/* Send what is queued, unless a send is in flight (its completion will): what the
 * socket takes now with one send(2), the rest through the loop (note 4). */
static int conn_flush(struct ipc_conn *c)
{
        struct obuf t;
        ssize_t n;

        if (c->send_armed || c->out.len == 0 || c->state != CONN_OPEN)
                return 0;
        assert(c->wire.len == 0 && c->woff == 0);
        t = c->wire;
        c->wire = c->out;
        c->out = t;
        /* A full socket (EAGAIN) or an error: the io_uring send takes it all and reports
         * the error in its completion, after the completions submitted before it (a
         * peer's EOF on the armed recv stays an orderly close). */
        n = send(c->fd, c->wire.data, c->wire.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        c->woff = n > 0 ? (size_t)n : 0;
        assert(c->woff <= c->wire.len);
        if (c->woff == c->wire.len) {
                conn_wire_done(c);
                return 0;
        }
        return conn_send_arm(c);
}

static void conn_flush_deferred(struct loop *l, struct loop_defer *d)
{
        struct ipc_conn *c = container_of(d, struct ipc_conn, flush);
        int r;

        (void)l;
        assert(c->busy == 0);
        r = conn_flush(c);
        if (r < 0)      /* no SQE for the rest: the recv's cancellation ends the conn */
                conn_begin_close(c, r);
}

static void conn_send_done(struct loop *l, struct loop_io *io, int res)
{
        struct ipc_conn *c = container_of(io, struct ipc_conn, send_io);
        int r;

        c->send_armed = false;
        if (c->state != CONN_OPEN) {
                (void)conn_maybe_finish(c);
                return;
        }

        if (res > 0) {
                c->woff += (size_t)res;
                assert(c->woff <= c->wire.len);
                if (c->woff < c->wire.len) {
                        r = conn_send_arm(c);   /* short send: the rest */
                } else {
                        conn_wire_done(c);
                        r = conn_flush(c);
                }
        } else if (res == -EINTR || res == -EAGAIN) {
                r = conn_send_arm(c);
        } else {
                r = res == 0 ? -EPIPE : res;
        }
        if (r < 0)
                conn_begin_close(c, r);
        (void)conn_maybe_finish(c);
}

size_t ipc_conn_pending(const struct ipc_conn *c)
{
        return c->out.len + (c->wire.len - c->woff);
}

int ipc_conn_send(struct ipc_conn *c, const Coord__Envelope *env)
{
        size_t pending;
        ssize_t size;
        int r;

        assert(c);
        assert(env);

        if (c->state != CONN_OPEN)
                return -EPIPE;
        size = ipc_frame_size(env, c->max_frame);
        if (size < 0)
                return (int)size;
        pending = ipc_conn_pending(c);
        if (pending + (size_t)size > c->sendq_limit)
                return -ENOBUFS;
        r = obuf_reserve(&c->out, (size_t)size);
        if (r < 0)
                return r;
        ipc_frame_pack(env, (size_t)size, c->out.data + c->out.len);
        c->out.len += (size_t)size;
        COORD_IPC_FRAME_SEND(c->fd, (unsigned)env->type, (unsigned)size);

        /* Note 4: a handler of the conn flushes when it returns, a send in flight
         * when it completes; else the loop, once, before it sleeps. */
        if (c->busy == 0 && !c->send_armed)
                loop_defer(c->loop, &c->flush);
        return 0;
}

int ipc_conn_send_payload(struct ipc_conn *c, Coord__Envelope *env, const ProtobufCMessage *payload)
{
        _cleanup_free_ uint8_t *heap = NULL;
        uint8_t small[256];

        assert(c);
        if (c->state != CONN_OPEN)
                return -EPIPE;
        if (payload) {
                size_t n = protobuf_c_message_get_packed_size(payload);
                uint8_t *p = small;

                if (n > c->max_frame)
                        return -EMSGSIZE;
                if (n > sizeof(small)) {
                        p = heap = malloc(n);
                        if (!p)
                                return -ENOMEM;
                }
                protobuf_c_message_pack(payload, p);
                env->payload.data = p;
                env->payload.len = n;
        }
        return ipc_conn_send(c, env);
}

int ipc_conn_send_msg(struct ipc_conn *c, Coord__MsgType type, Coord__Role sender,
                      uint64_t incarnation, uint64_t request_id, const ProtobufCMessage *payload)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;

        env.type = type;
        env.sender = sender;
        env.incarnation = incarnation;
        env.request_id = request_id;
        return ipc_conn_send_payload(c, &env, payload);
}

void ipc_conn_close(struct ipc_conn *c)
{
        if (!c || c->state != CONN_OPEN)
                return;
        /* Note 2: some completion is coming that will finish the close. */
        assert(c->busy > 0 || c->recv_armed);
        conn_begin_close(c, 0);
}

void ipc_conn_set_ops(struct ipc_conn *c, const struct ipc_conn_ops *ops, void *userdata)
{
        assert(c);
        if (ops)
                c->ops = *ops;
        else
                memset(&c->ops, 0, sizeof(c->ops));
        c->ops_set = true;
        c->userdata = userdata;
}

void *ipc_conn_userdata(const struct ipc_conn *c)
{
        assert(c);
        return c->userdata;
}

pid_t ipc_conn_peer_pid(const struct ipc_conn *c)
{
        assert(c);
        return c->peer_pid;
}

/* --- Client ---------------------------------------------------------------------- */

/* Connects a Unix stream socket (SOCK_CLOEXEC | flags) to the server at path and keeps it
 * only if that server runs as our uid (-EPERM: not our server, DESIGN.md section 6, same
 * uid both ways).  The descriptor, the server's pid in *ret_pid, or -errno. */
static int connect_same_uid(const char *path, int flags, pid_t *ret_pid)
{
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa;
        struct ucred cr;
        socklen_t salen;
        int r;

        r = ipc_sockaddr_fill(path, &sa, &salen);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
        if (fd < 0)
                return -errno;
        /* With SOCK_NONBLOCK a Unix stream connect completes at once: 0, or -ENOENT /
         * -ECONNREFUSED when nobody listens, or -EAGAIN when the listener's backlog is
         * full (retry as for -ECONNREFUSED).  Never blocking, so a server on the
         * caller's own loop cannot deadlock it.  Without, it waits for room in a full
         * backlog. */
        if (connect(fd, (struct sockaddr *)&sa, salen) < 0)
                return -errno;
        r = peer_cred(fd, &cr);
        if (r < 0)
                return r;
        if (cr.uid != geteuid())
                return -EPERM;
        *ret_pid = cr.pid;
        return TAKE_FD(fd);
}

int ipc_connect(struct loop *l, const char *path, uint32_t max_frame,
                const struct ipc_conn_ops *ops, void *userdata, struct ipc_conn **ret)
{
        _cleanup_close_ int fd = -EBADF;
        struct ipc_conn *c;
        pid_t pid;
        int r;

        assert(l);
        assert(ret);

        r = max_frame_check(max_frame, &max_frame);
        if (r < 0)
                return r;
        fd = connect_same_uid(path, SOCK_NONBLOCK, &pid);
        if (fd < 0)
                return fd;

        r = conn_new(l, fd, max_frame, pid, &c);
        if (r < 0)
                return r;
        ipc_conn_set_ops(c, ops, userdata);
        r = conn_recv_arm(c);
        if (r < 0) {
                c->fd = -EBADF;         /* still owned by the _cleanup_ of fd */
                conn_free(c);
                return r;
        }
        TAKE_FD(fd);
        *ret = c;
        return 0;
}

/* --- Server (note 5) -------------------------------------------------------------- */

static void server_unlink(struct ipc_server *s)
{
        struct stat st;

        if (!s->path)
                return;
        /* Only the file we bound: a successor may have replaced it already. */
        if (lstat(s->path, &st) == 0 && st.st_dev == s->dev && st.st_ino == s->ino)
                (void)unlink(s->path);
        free(s->path);
        s->path = NULL;
}

static void server_destroy(struct ipc_server *s)
{
        void (*fn)(void *arg) = s->on_destroyed;
        void *arg = s->destroyed_arg;

        assert(!s->accept_armed);
        loop_timer_cancel(s->loop, s->retry);
        server_unlink(s);
        closep(&s->fd);
        free(s);
        if (fn)
                fn(arg);
}

void ipc_server_on_destroyed(struct ipc_server *s, void (*fn)(void *arg), void *arg)
{
        assert(s && !s->freeing);
        s->on_destroyed = fn;
        s->destroyed_arg = arg;
}

static int server_arm(struct ipc_server *s)
{
        int r = loop_accept(s->loop, &s->accept_io, s->fd);

        if (r >= 0)
                s->accept_armed = true;
        return r;
}

static void server_retry_fire(struct loop *l, void *userdata);

/* Re-arm later.  If even the timer cannot be had (out of memory), the server stops
 * accepting; it has no error channel, and nothing better is possible then. */
static void server_retry_later(struct ipc_server *s)
{
        assert(!s->retry);
        (void)loop_timer_add(s->loop, IPC_ACCEPT_RETRY_NS, server_retry_fire, s, &s->retry);
}

static void server_retry_fire(struct loop *l, void *userdata)
{
        struct ipc_server *s = userdata;

        s->retry = NULL;        /* the loop frees a fired timer */
        if (server_arm(s) < 0)
                server_retry_later(s);
}

/* A new connection: check the peer, hand it to on_accept, start receiving. */
static void server_take(struct ipc_server *s, int fd)
{
        struct ipc_conn *c;
        struct ucred cr;
        int r;

        r = peer_cred(fd, &cr);
        if (r < 0 || cr.uid != geteuid()) {
                COORD_IPC_FRAME_REJECT(fd, -EPERM);
                s->rejected++;
                (void)close(fd);
                return;
        }
        r = conn_new(s->loop, fd, s->max_frame, cr.pid, &c);
        if (r < 0) {
                (void)close(fd);
                return;
        }

        /* busy: frames sent from on_accept (a Hello) are queued and flushed below, and
         * a close from on_accept is finished below, from the loop. */
        c->busy++;
        s->on_accept(s, c, s->userdata);
        assert(c->ops_set || c->state != CONN_OPEN);    /* ipc.h: on_accept must set ops */
        conn_rearm(c);
        c->busy--;
        (void)conn_maybe_finish(c);
}

static void server_accept_done(struct loop *l, struct loop_io *io, int res)
{
        struct ipc_server *s = container_of(io, struct ipc_server, accept_io);

        s->accept_armed = false;
        if (s->freeing) {
                if (res >= 0)
                        (void)close(res);
                server_destroy(s);
                return;
        }

        if (res >= 0) {
                s->busy = true;
                server_take(s, res);
                s->busy = false;
                if (s->freeing) {
                        server_destroy(s);
                        return;
                }
        } else if (res != -EAGAIN && res != -EINTR && res != -ECONNABORTED && res != -EPROTO) {
                /* EMFILE, ENFILE, ENOBUFS, ENOMEM, and anything unexpected: retrying at
                 * once would spin. */
                server_retry_later(s);
                return;
        }
        if (server_arm(s) < 0)
                server_retry_later(s);
}

int ipc_unlink_stale(const char *path, const struct sockaddr_un *sa, socklen_t salen)
{
        _cleanup_close_ int probe = -EBADF;
        struct stat st;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        /* Stale only if nobody listens: replacing a live server's socket would cut it
         * off from every future client. */
        probe = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (probe < 0)
                return -errno;
        if (connect(probe, (const struct sockaddr *)sa, salen) == 0 || errno == EAGAIN)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED && errno != ENOENT)
                return -errno;
        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int ipc_listen(struct loop *l, const char *path, uint32_t max_frame,
               void (*on_accept)(struct ipc_server *s, struct ipc_conn *c, void *userdata),
               void *userdata, struct ipc_server **ret)
{
        struct ipc_server *s = NULL;
        struct sockaddr_un sa;
        struct stat st;
        socklen_t salen;
        bool bound = false;
        int r;

        assert(l);
        assert(on_accept);
        assert(ret);

        r = max_frame_check(max_frame, &max_frame);
        if (r < 0)
                return r;
        r = ipc_sockaddr_fill(path, &sa, &salen);
        if (r < 0)
                return r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->fd = -EBADF;
        s->loop = l;
        s->max_frame = max_frame;
        s->on_accept = on_accept;
        s->userdata = userdata;
        s->accept_io.complete = server_accept_done;
        s->path = strdup(path);
        if (!s->path) {
                r = -ENOMEM;
                goto fail;
        }
        s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (s->fd < 0) {
                r = -errno;
                goto fail;
        }

        r = ipc_unlink_stale(path, &sa, salen);
        if (r < 0)
                goto fail;
        if (bind(s->fd, (struct sockaddr *)&sa, salen) < 0) {
                r = -errno;
                goto fail;
        }
        bound = true;
        /* Unix sockets take their mode from the file; fchmod() on the socket fd does not
         * apply, and umask() is process-wide (not thread-safe).  chmod() between bind()
         * and listen() leaves no window: until listen() every connect is refused. */
        if (chmod(path, 0600) < 0 || lstat(path, &st) < 0) {
                r = -errno;
                goto fail;
        }
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        if (listen(s->fd, IPC_BACKLOG) < 0) {
                r = -errno;
                goto fail;
        }
        r = server_arm(s);
        if (r < 0)
                goto fail;
        *ret = s;
        return 0;

fail:
        if (bound)
                (void)unlink(path);
        closep(&s->fd);
        free(s->path);
        free(s);
        return r;
}

struct ipc_server *ipc_server_free(struct ipc_server *s)
{
        if (!s)
                return NULL;
        assert(!s->freeing);

        s->freeing = true;
        loop_timer_cancel(s->loop, s->retry);
        s->retry = NULL;
        server_unlink(s);       /* no new client finds us from now on */
        if (s->accept_armed) {
                if (loop_cancel(s->loop, &s->accept_io) < 0)
                        (void)shutdown(s->fd, SHUT_RDWR);
                return NULL;    /* server_accept_done() destroys it */
        }
        if (!s->busy)
                server_destroy(s);
        return NULL;
}

uint64_t ipc_server_rejected(const struct ipc_server *s)
{
        assert(s);
        return s->rejected;
}

/* --- Blocking client ---------------------------------------------------------------- */

int ipc_sync_connect(const char *path)
{
        pid_t pid;

        return connect_same_uid(path, 0, &pid);
}

/* Wait for fd to become ready for events until deadline_ns (0 = forever). */
static int sync_wait(int fd, short events, uint64_t deadline_ns)
{
        for (;;) {
                struct pollfd p = { .fd = fd, .events = events };
                int timeout = -1, r;

                if (deadline_ns) {
                        uint64_t now = now_ns();
                        if (now >= deadline_ns)
                                return -ETIMEDOUT;
                        /* Round up: never wake a millisecond early and spin. */
                        timeout = (int)((deadline_ns - now + 999999) / 1000000);
                }
                r = poll(&p, 1, timeout);
                if (r > 0)
                        return 0;
                if (r == 0)
                        return -ETIMEDOUT;
                if (errno != EINTR)
                        return -errno;
        }
}

static int sync_write_all(int fd, const uint8_t *p, size_t n)
{
        while (n > 0) {
                ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

                if (k >= 0) {
                        p += k;
                        n -= (size_t)k;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return -errno;
                k = sync_wait(fd, POLLOUT, 0);  /* the caller made the fd non-blocking */
                if (k < 0)
                        return (int)k;
        }
        return 0;
}

/* Read exactly n bytes.  With a deadline, try first and poll only when nothing is
 * there, so a reply already queued costs one syscall. */
static int sync_read_all(int fd, uint8_t *p, size_t n, uint64_t deadline_ns)
{
        while (n > 0) {
                ssize_t k = recv(fd, p, n, deadline_ns ? MSG_DONTWAIT : 0);
                int r;

                if (k > 0) {
                        p += k;
                        n -= (size_t)k;
                        continue;
                }
                if (k == 0)
                        return -ECONNRESET;
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return -errno;
                r = sync_wait(fd, POLLIN, deadline_ns);
                if (r < 0)
                        return r;
        }
        return 0;
}

int ipc_sync_send(int fd, const Coord__Envelope *env, uint32_t max_frame)
{
        _cleanup_free_ uint8_t *heap = NULL;
        uint8_t small[IPC_SYNC_STACK];
        uint8_t *buf = small;
        ssize_t size;

        assert(fd >= 0);
        assert(env);

        size = ipc_frame_size(env, max_frame);
        if (size < 0)
                return (int)size;
        if ((size_t)size > sizeof(small)) {
                buf = heap = malloc((size_t)size);
                if (!buf)
                        return -ENOMEM;
        }
        ipc_frame_pack(env, (size_t)size, buf);
        return sync_write_all(fd, buf, (size_t)size);
}

int ipc_sync_recv(int fd, uint32_t max_frame, int timeout_ms, Coord__Envelope **ret)
{
        _cleanup_free_ uint8_t *heap = NULL;
        uint8_t hdr[IPC_FRAME_HEADER], small[IPC_SYNC_STACK];
        uint64_t deadline = 0;
        uint8_t *body = small;
        uint32_t n;
        int r;

        assert(fd >= 0);
        assert(ret);

        if (timeout_ms >= 0)
                deadline = now_ns() + (uint64_t)timeout_ms * UINT64_C(1000000);
        /* Prefix, then body: two reads, so nothing beyond this frame is consumed and the
         * caller needs no buffer between calls.  After an error the stream position is
         * unknown: close the fd. */
        r = sync_read_all(fd, hdr, sizeof(hdr), deadline);
        if (r < 0)
                return r;
        n = le32_get(hdr);
        if (n > ipc_max_frame_resolve(max_frame))
                return -EMSGSIZE;
        if (n > sizeof(small)) {
                body = heap = malloc(n);
                if (!body)
                        return -ENOMEM;
        }
        r = sync_read_all(fd, body, n, deadline);
        if (r < 0)
                return r;
        return ipc_frame_unpack(body, n, ret);
}
