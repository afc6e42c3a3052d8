/* test-ipc.c -- framed connections on the loop (common/ipc/ipc.h).
 *
 * One loop runs a server and several clients; blocking clients and other-uid peers run
 * in forked children.  Covered: pipelined echo on several connections, a frame at
 * max_frame, bad peers (garbage, oversized prefix, truncated frame + EOF, empty frame)
 * closed with the right reason while a good connection keeps working, close semantics
 * (from on_frame, from on_accept, from outside the loop: on_close exactly once, later),
 * the send-queue limit, socket mode and path handling, the blocking helpers, and (as
 * root) the SO_PEERCRED uid check.  Exits 77 without io_uring.
 */
#include "ipc/ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loop/loop.h"
#include "t-loop.h"
#include "t.h"
#include "util.h"

#define MS (1000ull * 1000)
#define NOBODY 65534

static struct loop *L;
static char *dir;
static char path[256];

/* --- Helpers -------------------------------------------------------------------- */

static void flag_fire(struct loop *l, void *userdata)
{
        *(bool *)userdata = true;
        loop_stop(l);
}

static bool flag_set(void *arg)
{
        return *(bool *)arg;
}

/* One more short loop turn: lets cancellations (a freed server's accept) complete, so
 * valgrind and ASan see everything released. */
static void settle(void)
{
        bool fired = false;

        CU_ASSERT_EQUAL_FATAL(loop_timer_add(L, MS, flag_fire, &fired, NULL), 0);
        CU_ASSERT(t_run_until(L, flag_set, &fired));
}

static uint8_t pattern(uint64_t req, size_t i)
{
        return (uint8_t)(req * 7 + i);
}

static int send_ping(struct ipc_conn *c, Coord__MsgType type, uint64_t req, size_t len)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT;
        uint8_t *payload = malloc(len ? len : 1);
        int r;

        if (!payload)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++)
                payload[i] = pattern(req, i);
        env.type = type;
        env.sender = COORD__ROLE__ROLE_CTL;
        env.incarnation = 1;
        env.request_id = req;
        env.payload.data = payload;
        env.payload.len = len;
        r = ipc_conn_send(c, &env);
        free(payload);
        return r;
}

static bool payload_ok(const Coord__Envelope *env)
{
        for (size_t i = 0; i < env->payload.len; i++)
                if (env->payload.data[i] != pattern(env->request_id, i))
                        return false;
        return true;
}

static void sa_set(struct sockaddr_un *sa, const char *p)
{
        size_t n = strlen(p);

        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        if (n >= sizeof(sa->sun_path))
                abort();        /* the test's own paths are short */
        memcpy(sa->sun_path, p, n + 1);
}

/* A raw blocking client socket (to misbehave with). */
static int raw_connect(const char *p)
{
        struct sockaddr_un sa;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
                return -errno;
        sa_set(&sa, p);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

/* --- The echo server ------------------------------------------------------------- */

enum {
        SRV_ECHO,               /* PING -> PONG with the same id and payload */
        SRV_HELLO,              /* and on_accept sends a HELLO first */
        SRV_HELLO_CLOSE,        /* on_accept sends a HELLO, then closes */
};

struct srv;

struct srv_conn {
        struct srv *srv;
        struct ipc_conn *c;
        pid_t peer;
        int frames;
        int close_after;        /* ipc_conn_close() from on_frame at this frame */
        int closed;             /* on_close calls: must end at exactly 1 */
        int reason;
};

struct srv {
        struct ipc_server *s;
        int mode;
        int close_after;
        struct srv_conn conns[64];
        int n;
        int closes;
};

static void srv_on_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        struct srv_conn *sc = userdata;
        Coord__Envelope reply;

        CU_ASSERT_EQUAL(sc->closed, 0);
        sc->frames++;
        if (sc->close_after && sc->frames == sc->close_after) {
                ipc_conn_close(c);
                /* Closed: sending fails at once, and no on_close from in here. */
                CU_ASSERT_EQUAL(ipc_conn_send_msg(c, COORD__MSG_TYPE__MSG_PONG, 0, 0, 0, NULL),
                                -EPIPE);
                CU_ASSERT_EQUAL(sc->closed, 0);
                return;
        }
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                ipc_conn_close(c);      /* the test's "hang up on me" */
                return;
        }
        reply = *env;
        reply.type = COORD__MSG_TYPE__MSG_PONG;
        reply.sender = COORD__ROLE__ROLE_CONTROLLER;
        CU_ASSERT_EQUAL(ipc_conn_send(c, &reply), 0);
}

static void srv_on_close(struct ipc_conn *c, int reason, void *userdata)
{
        struct srv_conn *sc = userdata;

        sc->closed++;
        sc->reason = reason;
        sc->c = NULL;
        sc->srv->closes++;
        CU_ASSERT_EQUAL(ipc_conn_send_msg(c, COORD__MSG_TYPE__MSG_PONG, 0, 0, 0, NULL), -EPIPE);
        ipc_conn_close(c);      /* harmless: already closed */
        loop_stop(L);
}

static const struct ipc_conn_ops srv_ops = {
        .on_frame = srv_on_frame,
        .on_close = srv_on_close,
};

static void srv_on_accept(struct ipc_server *s, struct ipc_conn *c, void *userdata)
{
        struct srv *srv = userdata;
        struct srv_conn *sc;

        CU_ASSERT_FATAL(srv->n < (int)ELEMENTSOF(srv->conns));
        sc = &srv->conns[srv->n++];
        *sc = (struct srv_conn){ .srv = srv, .c = c, .peer = ipc_conn_peer_pid(c),
                                 .close_after = srv->close_after };
        ipc_conn_set_ops(c, &srv_ops, sc);
        CU_ASSERT_PTR_EQUAL(ipc_conn_userdata(c), sc);
        if (srv->mode == SRV_HELLO || srv->mode == SRV_HELLO_CLOSE)
                CU_ASSERT_EQUAL(ipc_conn_send_msg(c, COORD__MSG_TYPE__MSG_HELLO,
                                                  COORD__ROLE__ROLE_CONTROLLER, 3, 0, NULL), 0);
        if (srv->mode == SRV_HELLO_CLOSE) {
                ipc_conn_close(c);
                CU_ASSERT_EQUAL(sc->closed, 0);
        }
        loop_stop(L);
}

static void srv_start(struct srv *srv, uint32_t max_frame)
{
        memset(srv, 0, sizeof(*srv));
        CU_ASSERT_EQUAL_FATAL(ipc_listen(L, path, max_frame, srv_on_accept, srv, &srv->s), 0);
}

static void srv_stop(struct srv *srv)
{
        srv->s = ipc_server_free(srv->s);
        settle();
}

struct srv_wait {
        const struct srv *srv;
        int want;
};

static bool srv_accepted(void *arg)
{
        const struct srv_wait *w = arg;
        return w->srv->n >= w->want;
}

static bool srv_closed(void *arg)
{
        const struct srv_wait *w = arg;
        return w->srv->closes >= w->want;
}

static void wait_accepted(struct srv *srv, int n)
{
        struct srv_wait w = { srv, n };
        CU_ASSERT_FATAL(t_run_until(L, srv_accepted, &w));
}

static void wait_srv_closed(struct srv *srv, int n)
{
        struct srv_wait w = { srv, n };
        CU_ASSERT_FATAL(t_run_until(L, srv_closed, &w));
}

/* --- Clients --------------------------------------------------------------------- */

struct cli {
        struct ipc_conn *c;
        uint64_t next;          /* request id expected next */
        uint64_t want;
        int hellos;
        int closed;
        int reason;
        bool bad;
};

static void cli_on_frame(struct ipc_conn *c, const Coord__Envelope *env, void *userdata)
{
        struct cli *cl = userdata;

        CU_ASSERT_EQUAL(cl->closed, 0);
        if (env->type == COORD__MSG_TYPE__MSG_HELLO) {
                cl->hellos++;
        } else if (env->type != COORD__MSG_TYPE__MSG_PONG || env->request_id != cl->next ||
                   !payload_ok(env)) {
                cl->bad = true;
        } else {
                cl->next++;
        }
        loop_stop(L);
}

static void cli_on_close(struct ipc_conn *c, int reason, void *userdata)
{
        struct cli *cl = userdata;

        cl->closed++;
        cl->reason = reason;
        cl->c = NULL;
        loop_stop(L);
}

static const struct ipc_conn_ops cli_ops = {
        .on_frame = cli_on_frame,
        .on_close = cli_on_close,
};

static void cli_connect(struct cli *cl, uint32_t max_frame)
{
        memset(cl, 0, sizeof(*cl));
        CU_ASSERT_EQUAL_FATAL(ipc_connect(L, path, max_frame, &cli_ops, cl, &cl->c), 0);
}

static bool clis_done(void *arg)
{
        struct cli **cls = arg;

        for (; *cls; cls++)
                if ((*cls)->next < (*cls)->want && !(*cls)->bad && !(*cls)->closed)
                        return false;
        return true;
}

static bool clis_closed(void *arg)
{
        struct cli **cls = arg;

        for (; *cls; cls++)
                if (!(*cls)->closed)
                        return false;
        return true;
}

/* One round trip on a good client, proving its connection still works. */
static void cli_ping(struct cli *cl, size_t len)
{
        struct cli *one[] = { cl, NULL };

        CU_ASSERT_EQUAL_FATAL(send_ping(cl->c, COORD__MSG_TYPE__MSG_PING, cl->next, len), 0);
        cl->want = cl->next + 1;
        CU_ASSERT_FATAL(t_run_until(L, clis_done, one));
        CU_ASSERT_FALSE(cl->bad);
        CU_ASSERT_EQUAL(cl->next, cl->want);
}

static void cli_close(struct cli *cl)
{
        struct cli *one[] = { cl, NULL };

        if (cl->c)
                ipc_conn_close(cl->c);
        CU_ASSERT(t_run_until(L, clis_closed, one));
        CU_ASSERT_EQUAL(cl->closed, 1);
}

/* --- Echo ------------------------------------------------------------------------- */

static void test_echo_pipelined(void)
{
        struct cli cl[4];
        struct cli *all[] = { &cl[0], &cl[1], &cl[2], &cl[3], NULL };
        struct srv srv;

        srv_start(&srv, 0);
        for (int i = 0; i < 4; i++) {
                cli_connect(&cl[i], 0);
                cl[i].want = 500;
                /* All queued before the loop runs: sent as few large writes, received
                 * as many frames per recv. */
                for (uint64_t r = 0; r < cl[i].want; r++)
                        CU_ASSERT_EQUAL_FATAL(send_ping(cl[i].c, COORD__MSG_TYPE__MSG_PING, r,
                                                        (size_t)(r * 13 % 300)), 0);
        }
        CU_ASSERT_FATAL(t_run_until(L, clis_done, all));
        for (int i = 0; i < 4; i++) {
                CU_ASSERT_FALSE(cl[i].bad);
                CU_ASSERT_EQUAL(cl[i].next, 500);
                CU_ASSERT_EQUAL(srv.conns[i].frames, 500);
                CU_ASSERT_EQUAL(srv.conns[i].peer, getpid());
        }
        for (int i = 0; i < 4; i++)
                cli_close(&cl[i]);
        wait_srv_closed(&srv, 4);
        for (int i = 0; i < 4; i++) {
                CU_ASSERT_EQUAL(cl[i].reason, 0);
                CU_ASSERT_EQUAL(srv.conns[i].closed, 1);
                CU_ASSERT_EQUAL(srv.conns[i].reason, 0);       /* orderly EOF */
        }
        srv_stop(&srv);
}

static void test_large_frame(void)
{
        const uint32_t max = 1u << 20;
        Coord__Envelope probe = COORD__ENVELOPE__INIT;
        struct cli cl, *one[] = { &cl, NULL };
        struct srv srv;
        size_t len;

        /* The largest payload whose Envelope is exactly max_frame. */
        probe.type = COORD__MSG_TYPE__MSG_PING;
        probe.sender = COORD__ROLE__ROLE_CTL;
        probe.incarnation = 1;
        probe.request_id = 2;
        for (len = max; len > 0; len--) {
                probe.payload.len = len;
                if (coord__envelope__get_packed_size(&probe) <= max)
                        break;
        }
        probe.payload.len = len;
        CU_ASSERT_EQUAL_FATAL(coord__envelope__get_packed_size(&probe), max);

        srv_start(&srv, max);
        cli_connect(&cl, max);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 0, len / 2), 0);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 1, 10), 0);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 2, len), 0);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 3, len + 1), -EMSGSIZE);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 3, 5), 0);
        cl.want = 4;
        CU_ASSERT_FATAL(t_run_until(L, clis_done, one));
        CU_ASSERT_FALSE(cl.bad);
        CU_ASSERT_EQUAL(cl.next, 4);
        CU_ASSERT_EQUAL(srv.conns[0].frames, 4);
        cli_close(&cl);
        wait_srv_closed(&srv, 1);
        srv_stop(&srv);
}

/* --- Bad peers ---------------------------------------------------------------------- */

struct bad_case {
        const char *name;
        uint8_t bytes[32];
        size_t len;
        bool eof;               /* close the raw socket after writing */
        int frames;             /* frames the server delivers first */
        int reason;
};

static void test_bad_peers(void)
{
        static const struct bad_case cases[] = {
                { "garbage body", { 8, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff },
                  12, false, 0, -EBADMSG },
                { "oversized prefix, body never sent", { 0xff, 0xff, 0xff, 0xff }, 4, false, 0,
                  -EMSGSIZE },
                { "just over max_frame", { 0x01, 0x00, 0x00, 0x01 }, 4, false, 0, -EMSGSIZE },
                { "truncated frame then EOF", { 100, 0, 0, 0, 8, 4, 16, 1 }, 8, true, 0,
                  -ECONNRESET },
                { "empty frame", { 0, 0, 0, 0 }, 4, false, 0, -EBADMSG },
                { "type 0 frame", { 2, 0, 0, 0, 0x20, 0x05 }, 6, false, 0, -EBADMSG },
                /* A valid PING (type 4, id 1), then a bad one. */
                { "valid then garbage", { 4, 0, 0, 0, 0x08, 0x04, 0x20, 0x01,
                                          3, 0, 0, 0, 0x0f, 0x0f, 0x0f }, 15, false, 1,
                  -EBADMSG },
                { "valid then EOF", { 4, 0, 0, 0, 0x08, 0x04, 0x20, 0x01 }, 8, true, 1, 0 },
        };
        struct cli good;
        struct srv srv;

        srv_start(&srv, 1u << 24);
        cli_connect(&good, 0);
        wait_accepted(&srv, 1);
        cli_ping(&good, 64);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const struct bad_case *bc = &cases[i];
                struct srv_conn *sc;
                int fd = raw_connect(path);

                CU_ASSERT_FATAL(fd >= 0);
                CU_ASSERT_EQUAL_FATAL(write(fd, bc->bytes, bc->len), (ssize_t)bc->len);
                if (bc->eof)
                        close(fd);
                wait_accepted(&srv, (int)i + 2);
                sc = &srv.conns[i + 1];
                wait_srv_closed(&srv, (int)i + 1);
                if (sc->reason != bc->reason || sc->frames != bc->frames)
                        fprintf(stderr, "\n    case '%s': reason %d frames %d\n", bc->name,
                                sc->reason, sc->frames);
                CU_ASSERT_EQUAL(sc->closed, 1);
                CU_ASSERT_EQUAL(sc->reason, bc->reason);
                CU_ASSERT_EQUAL(sc->frames, bc->frames);
                if (!bc->eof) {
                        /* The server hung up on us: we see EOF (maybe after the echo). */
                        char buf[64];
                        ssize_t n;
                        while ((n = read(fd, buf, sizeof(buf))) > 0)
                                ;
                        CU_ASSERT_EQUAL(n, 0);
                        close(fd);
                }
                /* The good connection never noticed. */
                CU_ASSERT_EQUAL(srv.conns[0].closed, 0);
                cli_ping(&good, (size_t)i * 100);
        }
        cli_close(&good);
        srv_stop(&srv);
}

/* --- Close semantics -------------------------------------------------------------------- */

static void test_close_in_on_frame(void)
{
        struct cli cl, *one[] = { &cl, NULL };
        struct srv srv;

        srv_start(&srv, 0);
        srv.close_after = 3;
        cli_connect(&cl, 0);
        /* Ten frames in one send: the server closes at the third, and must not
         * deliver the seven already in its buffer. */
        for (uint64_t r = 0; r < 10; r++)
                CU_ASSERT_EQUAL_FATAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, r, 16), 0);
        CU_ASSERT_FATAL(t_run_until(L, clis_closed, one));
        wait_srv_closed(&srv, 1);
        CU_ASSERT_EQUAL(srv.conns[0].frames, 3);
        CU_ASSERT_EQUAL(srv.conns[0].closed, 1);
        CU_ASSERT_EQUAL(srv.conns[0].reason, 0);
        CU_ASSERT_EQUAL(cl.closed, 1);
        CU_ASSERT_EQUAL(cl.reason, 0);
        CU_ASSERT(cl.next <= 2);        /* replies queued before the close may be dropped */
        CU_ASSERT_FALSE(cl.bad);
        srv_stop(&srv);
}

static void test_close_outside_loop(void)
{
        struct cli cl, *one[] = { &cl, NULL };
        struct srv srv;

        srv_start(&srv, 0);
        cli_connect(&cl, 0);
        cli_ping(&cl, 8);
        ipc_conn_close(cl.c);
        /* Not from inside ipc_conn_close(): later, from the loop. */
        CU_ASSERT_EQUAL(cl.closed, 0);
        CU_ASSERT_EQUAL(send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 9, 8), -EPIPE);
        ipc_conn_close(cl.c);
        CU_ASSERT_EQUAL(cl.closed, 0);
        CU_ASSERT_FATAL(t_run_until(L, clis_closed, one));
        CU_ASSERT_EQUAL(cl.closed, 1);
        CU_ASSERT_EQUAL(cl.reason, 0);
        wait_srv_closed(&srv, 1);
        CU_ASSERT_EQUAL(srv.conns[0].reason, 0);
        srv_stop(&srv);
}

static void test_close_in_on_accept(void)
{
        struct cli cl, *one[] = { &cl, NULL };
        struct srv srv;

        srv_start(&srv, 0);
        srv.mode = SRV_HELLO_CLOSE;
        cli_connect(&cl, 0);
        wait_srv_closed(&srv, 1);
        CU_ASSERT_EQUAL(srv.conns[0].closed, 1);
        CU_ASSERT_EQUAL(srv.conns[0].reason, 0);
        CU_ASSERT_FATAL(t_run_until(L, clis_closed, one));
        /* "Close now": the HELLO queued in on_accept is dropped by the close. */
        CU_ASSERT_EQUAL(cl.hellos, 0);
        CU_ASSERT_EQUAL(cl.reason, 0);
        srv_stop(&srv);
}

static void test_send_in_on_accept(void)
{
        struct srv srv;
        struct cli cl;

        srv_start(&srv, 0);
        srv.mode = SRV_HELLO;
        cli_connect(&cl, 0);
        /* The HELLO sent from on_accept arrives, before the reply to our ping. */
        cli_ping(&cl, 3);
        CU_ASSERT_EQUAL(cl.hellos, 1);
        /* And the server may send outside any callback. */
        CU_ASSERT_EQUAL(ipc_conn_send_msg(srv.conns[0].c, COORD__MSG_TYPE__MSG_HELLO,
                                          COORD__ROLE__ROLE_CONTROLLER, 1, 0, NULL), 0);
        cli_ping(&cl, 3);
        CU_ASSERT_EQUAL(cl.hellos, 2);
        cli_close(&cl);
        wait_srv_closed(&srv, 1);
        srv_stop(&srv);
}

static void test_send_queue_limit(void)
{
        struct sockaddr_un sa;
        struct cli cl;
        int lfd, r = 0, sent = 0;

        /* A listener that never accepts (nor reads): our sends pile up. */
        lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        CU_ASSERT_FATAL(lfd >= 0);
        sa_set(&sa, path);
        CU_ASSERT_EQUAL_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        CU_ASSERT_EQUAL_FATAL(listen(lfd, 4), 0);

        cli_connect(&cl, 64u << 10);
        while (sent < 1000 && (r = send_ping(cl.c, COORD__MSG_TYPE__MSG_PING, 0, 60000)) == 0)
                sent++;
        CU_ASSERT_EQUAL(r, -ENOBUFS);
        /* 4 MiB limit (ipc.c IPC_SENDQ_MIN), 60 kB frames. */
        CU_ASSERT(sent >= 60 && sent <= 80);
        cli_close(&cl);
        CU_ASSERT_EQUAL(cl.reason, 0);
        close(lfd);
        unlink(path);
}

/* --- Paths and modes -------------------------------------------------------------------- */

static void destroyed(void *arg)
{
        (*(int *)arg)++;
        loop_stop(L);
}

/* ipc_server_on_destroyed(): a server freed with its accept armed is destroyed from
 * the loop, when the cancel completes (what node_free() drains for: loop_free() runs
 * no completion, and the server was lost, 112 bytes at every daemon's exit); one
 * freed while idle, within ipc_server_free(). */
static void test_server_destroyed(void)
{
        struct srv srv;
        int n = 0;

        srv_start(&srv, 0);
        ipc_server_on_destroyed(srv.s, destroyed, &n);
        srv.s = ipc_server_free(srv.s);
        CU_ASSERT_EQUAL(n, 0);          /* the accept is armed: not yet */
        (void)loop_run_for(L, 2000ull * 1000000ull);
        CU_ASSERT_EQUAL(n, 1);
}

static void test_paths(void)
{
        struct sockaddr_un sa;
        struct ipc_server *s2;
        struct ipc_conn *c;
        struct srv srv;
        char longp[200];
        struct stat st;
        int fd;

        CU_ASSERT_EQUAL(ipc_connect(L, path, 0, &cli_ops, NULL, &c), -ENOENT);
        CU_ASSERT_EQUAL(ipc_sync_connect(path), -ENOENT);

        /* A stale socket (its server died): refused, and replaced by ipc_listen(). */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sa_set(&sa, path);
        CU_ASSERT_EQUAL_FATAL(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(fd);
        CU_ASSERT_EQUAL(ipc_connect(L, path, 0, &cli_ops, NULL, &c), -ECONNREFUSED);
        srv_start(&srv, 0);

        CU_ASSERT_EQUAL_FATAL(stat(path, &st), 0);
        CU_ASSERT(S_ISSOCK(st.st_mode));
        CU_ASSERT_EQUAL(st.st_mode & 07777, 0600);

        /* A live server's socket is not stolen. */
        CU_ASSERT_EQUAL(ipc_listen(L, path, 0, srv_on_accept, &srv, &s2), -EADDRINUSE);
        wait_accepted(&srv, 1);         /* the liveness probe's connection */
        wait_srv_closed(&srv, 1);

        CU_ASSERT_EQUAL(ipc_listen(L, path, 10, srv_on_accept, &srv, &s2), -EINVAL);
        memset(longp, 'x', sizeof(longp) - 1);
        longp[sizeof(longp) - 1] = 0;
        CU_ASSERT_EQUAL(ipc_listen(L, longp, 0, srv_on_accept, &srv, &s2), -ENAMETOOLONG);
        CU_ASSERT_EQUAL(ipc_connect(L, longp, 0, &cli_ops, NULL, &c), -ENAMETOOLONG);

        /* Freeing the server removes its socket file. */
        srv_stop(&srv);
        CU_ASSERT_EQUAL(stat(path, &st), -1);
        CU_ASSERT_EQUAL(errno, ENOENT);

        /* Something that is not a socket is never removed. */
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        CU_ASSERT_FATAL(fd >= 0);
        close(fd);
        CU_ASSERT_EQUAL(ipc_listen(L, path, 0, srv_on_accept, &srv, &s2), -EEXIST);
        CU_ASSERT_EQUAL(stat(path, &st), 0);
        unlink(path);
}

/* --- Blocking helpers -------------------------------------------------------------------- */

static int sync_child(void)
{
        Coord__Envelope env = COORD__ENVELOPE__INIT, *rep = NULL;
        uint8_t payload[200];
        int fd, r;

        fd = ipc_sync_connect(path);
        if (fd < 0)
                return 10;
        if (!(fcntl(fd, F_GETFD) & FD_CLOEXEC))
                return 11;
        env.type = COORD__MSG_TYPE__MSG_PING;
        for (uint64_t i = 0; i < 200; i++) {
                for (size_t k = 0; k < i; k++)
                        payload[k] = pattern(i, k);
                env.request_id = i;
                env.payload.data = payload;
                env.payload.len = (size_t)i;
                if (ipc_sync_send(fd, &env, 0) < 0)
                        return 12;
                r = ipc_sync_recv(fd, 0, 5000, &rep);
                if (r < 0)
                        return 13;
                if (rep->type != COORD__MSG_TYPE__MSG_PONG || rep->request_id != i ||
                    !payload_ok(rep) || rep->payload.len != i)
                        return 14;
                coord__envelope__free_unpacked(rep, NULL);
        }
        /* Nothing is coming: a timeout. */
        if (ipc_sync_recv(fd, 0, 30, &rep) != -ETIMEDOUT)
                return 15;
        /* A reply larger than our max_frame: -EMSGSIZE from the prefix. */
        env.payload.len = 150;
        if (ipc_sync_send(fd, &env, 0) < 0 || ipc_sync_recv(fd, 64, 5000, &rep) != -EMSGSIZE)
                return 16;
        close(fd);

        /* The server hangs up on MSG_ERROR: EOF is -ECONNRESET. */
        fd = ipc_sync_connect(path);
        if (fd < 0)
                return 17;
        env.type = COORD__MSG_TYPE__MSG_ERROR;
        env.payload.len = 0;
        if (ipc_sync_send(fd, &env, 0) < 0 || ipc_sync_recv(fd, 0, 5000, &rep) != -ECONNRESET)
                return 18;
        /* Type 0 is refused before anything is written. */
        env.type = COORD__MSG_TYPE__MSG_INVALID;
        if (ipc_sync_send(fd, &env, 0) != -EINVAL)
                return 19;
        close(fd);
        return 0;
}

static void test_sync_helpers(void)
{
        struct srv srv;
        int status;
        pid_t pid;

        srv_start(&srv, 0);
        pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0)
                _exit(sync_child());
        wait_srv_closed(&srv, 2);
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
                fprintf(stderr, "\n    sync child failed at step %d\n", WEXITSTATUS(status));
        CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
        CU_ASSERT_EQUAL(srv.conns[0].peer, pid);
        CU_ASSERT_EQUAL(srv.conns[0].frames, 201);
        /* The child closed with our oversized reply unread: a Unix socket reports
         * that to the peer as a reset, not as an orderly EOF. */
        CU_ASSERT_EQUAL(srv.conns[0].reason, -ECONNRESET);
        CU_ASSERT_EQUAL(srv.conns[1].reason, 0);
        srv_stop(&srv);
}

/* --- Peer credentials (root only) ------------------------------------------------------- */

static int sigchld_count;

static void on_sigchld(struct loop *l, int signo, void *userdata)
{
        sigchld_count++;
        loop_stop(l);
}

static bool child_gone(void *arg)
{
        return sigchld_count > 0;
}

static int other_uid_child(void)
{
        struct pollfd p;
        char c;
        int fd;

        if (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 || setuid(NOBODY) < 0 ||
            geteuid() != NOBODY)
                return 20;
        /* Our own check, client side: the server is not ours. */
        if (ipc_sync_connect(path) != -EPERM)
                return 21;
        /* A raw connection gets through the socket's mode (opened up by the test) but
         * not the server's SO_PEERCRED check: closed at once. */
        fd = raw_connect(path);
        if (fd < 0)
                return 22;
        p = (struct pollfd){ .fd = fd, .events = POLLIN };
        if (poll(&p, 1, 5000) != 1)
                return 23;
        if (read(fd, &c, 1) != 0)
                return 24;
        return 0;
}

static void test_peer_uid(void)
{
        struct srv srv;
        int status;
        pid_t pid;

        if (geteuid() != 0) {
                fprintf(stderr, "(not root: skipped) ");
                return;
        }
        CU_ASSERT_EQUAL_FATAL(loop_signal_add(L, SIGCHLD, on_sigchld, NULL), 0);
        srv_start(&srv, 0);
        /* Let uid 65534 reach the socket: the mode is the first defence, this test is
         * about the second. */
        CU_ASSERT_EQUAL_FATAL(chmod(dir, 0711), 0);
        CU_ASSERT_EQUAL_FATAL(chmod(path, 0666), 0);

        pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0)
                _exit(other_uid_child());
        CU_ASSERT(t_run_until(L, child_gone, NULL));
        CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
        CU_ASSERT(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0)
                fprintf(stderr, "\n    other-uid child failed at step %d\n", WEXITSTATUS(status));
        CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
        CU_ASSERT_EQUAL(ipc_server_rejected(srv.s), 2);
        CU_ASSERT_EQUAL(srv.n, 0);      /* on_accept never saw them */
        chmod(dir, 0700);
        srv_stop(&srv);
}

/* --- Main --------------------------------------------------------------------------- */

static const struct t_case echo_cases[] = {
        { "pipelined echo on four connections", test_echo_pipelined },
        { "frames up to max_frame", test_large_frame },
        { NULL, NULL },
};

static const struct t_case bad_cases[] = {
        { "bad peers closed, good one unaffected", test_bad_peers },
        { NULL, NULL },
};

static const struct t_case close_cases[] = {
        { "close from on_frame", test_close_in_on_frame },
        { "close outside the loop", test_close_outside_loop },
        { "a server freed with its accept armed is destroyed from the loop", test_server_destroyed },
        { "close from on_accept", test_close_in_on_accept },
        { "send right after accept", test_send_in_on_accept },
        { "send queue limit", test_send_queue_limit },
        { NULL, NULL },
};

static const struct t_case server_cases[] = {
        { "socket mode, stale and live paths", test_paths },
        { "blocking helpers against the loop server", test_sync_helpers },
        { "peer with another uid is rejected", test_peer_uid },
        { NULL, NULL },
};

static const struct t_suite suites[] = {
        { "echo", echo_cases },
        { "bad peers", bad_cases },
        { "close", close_cases },
        { "server", server_cases },
        { NULL, NULL },
};

int main(void)
{
        int r;

        r = t_loop_new(256, &L);
        if (r)
                return r;
        dir = t_mkdtemp("ipc");
        if (!dir)
                return T_EXIT_ERROR;
        snprintf(path, sizeof(path), "%s/test.sock", dir);

        r = t_run(suites);

        L = loop_free(L);
        t_rmrf(dir);
        free(dir);
        return r;
}
