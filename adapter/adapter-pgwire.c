/* adapter-pgwire.c -- the PostgreSQL v3 wire protocol server (contract in
 * adapter-pgwire.h), on the io_uring loop.  The byte-level codec is adapter-pgcodec.c.
 *
 * Owner: adapter.  Caller: the adapter's executor, through callbacks and response
 * functions, all in the loop's thread.
 *
 * This file is the core: the run queue (3), a conn's lifetime (1), dispatch (2), the
 * server API and the accessors, with the notes below for every file of the server.
 * The rest, sharing adapter-pgwire-internal.h (struct pgwire_conn, struct
 * pgwire_server and what the files call of each other):
 *   adapter-pgwire-conn.c      a conn's output (4), closing (1) and input (2)
 *   adapter-pgwire-startup.c   the startup phase, SSLRequest, CancelRequest
 *   adapter-pgwire-extended.c  statements and portals, the extended protocol (5)
 *   adapter-pgwire-listen.c    listening, accepting, the server's end (6)
 *   adapter-pgwire-reply.c     the response functions, pgwire_done()
 *
 * NOTES ON THE DESIGN OF A CONNECTION
 *
 * (1) States (conn_check() asserts the invariants):
 *   STARTUP: SSLRequest / GSSENCRequest answered 'N'; StartupMessage 3.x and connect()
 *     accepting (AuthenticationOk, ParameterStatus..., BackendKeyData, ReadyForQuery) --> READY
 *   READY: 'Q' query(), 'P' prepare(), 'E' execute(); with a request in flight later
 *     messages queue; pgwire_done() ends it (ReadyForQuery after a query).  An error in an
 *     extended-protocol message --> SKIP: messages discarded until 'S' (Sync) --> READY.
 *   STARTUP/READY/SKIP --'X', EOF, a protocol violation (FATAL 08P01), a FATAL from the owner,
 *     server shutdown (FATAL 57P01), a CancelRequest--> CLOSING: nothing more is processed;
 *     queued output is sent, then FIN, then the client's bytes are dropped until its EOF (no
 *     RST destroys our last message), at most close_timeout --> CLOSED.
 *   any --an I/O error, output over max_output, the close timeout, server free--> CLOSED:
 *     operations in flight are cancelled; conn_settle() frees the conn once none is in
 *     flight, no request is with the owner, disconnect() ran and no handler is on the stack.
 *
 * (2) One request at a time.  c->req says which callback the owner is answering
 *     (REQ_QUERY, REQ_PREPARE, REQ_EXECUTE; REQ_CONNECT during connect()).  While it is
 *     set, conn_dispatch() processes nothing more, and the input buffer neither moves
 *     nor shrinks: the SQL and parameter strings handed to the owner point into it (or
 *     into the portal).  Nor does it while a recv is in flight: the kernel writes at
 *     in + in_end as it was when the recv was armed.  Receiving continues into the
 *     free tail of the buffer, so pipelined messages queue up; once the buffer is
 *     full, receiving pauses and TCP pushes back on the client.
 *
 * (3) No callback from inside a pgwire_* call.  Callbacks run only in conn_run() (from
 *     I/O completions, timers and the server's waker).  c->dispatching marks a conn
 *     whose conn_run() is on the stack; a pgwire_done() or a close from elsewhere (an
 *     owner's own completion, another connection's callback) puts the conn on the
 *     server's run queue, which the loop runs after the current batch of callbacks
 *     (loop_defer(), before it sleeps); a conn queued while the queue runs waits for
 *     the next turn (the server's loop_waker), so none can starve the loop.  A
 *     pgwire_done() inside the conn's own callback just lets the dispatch loop go on,
 *     so a synchronous owner costs no wake-up and no recursion.  stmt_free() is
 *     deferred the same way (c->dead).
 *
 * (4) Output.  `out` collects messages, `tx` is what the kernel is sending
 *     (tx.data[tx_off, tx.len)); they swap when tx is done.  A push is one send(2,
 *     MSG_DONTWAIT) from the loop thread; only the rest goes to an io_uring send (so code
 *     waiting for output to drain checks again right after a push).  Pushes happen where
 *     PostgreSQL flushes (ReadyForQuery, Flush, an ErrorResponse, the startup replies)
 *     and when `out` passes PGWIRE_FLUSH_AT.  out + unsent tx never exceeds max_output
 *     (past it the connection is cut, -ENOBUFS); conn_dispatch() starts no new message
 *     while PGWIRE_PAUSE_AT bytes are queued, so a pipelining client stalls instead.  An
 *     owner paces a large result with pgwire_notify_drained(): its drained() is called
 *     from the send completion that brings the queued output down to a mark.
 *
 * (5) Extended protocol.  Prepared statements and portals are per connection, in small
 *     lists (the unnamed one is "").  A portal holds a reference on its statement; the
 *     owner's statement is released when the last reference goes.  The server answers
 *     Bind, Describe, Close, Sync and Flush itself.  During execute() it drops the
 *     owner's row description, converts values to the binary format the client asked
 *     for, and puts rows beyond Execute's row limit aside in the portal (`spill`):
 *     the Execute ends with PortalSuspended and the next Execute of the portal is
 *     answered from there.  An error sets SKIP.  At Sync (and after a simple query),
 *     when the transaction status is 'I', every portal is dropped, as at PostgreSQL's
 *     end of transaction.
 *
 * (6) The listening fds are closed only after their last accept completed, and a
 *     conn's fd only when it is freed: closing earlier could let an SQE not yet
 *     submitted name a reused fd number.
 *
 * (7) A reply sent by another thread (pgwire_direct_begin()).  A simple query whose last
 *     statement waits for a catalog commit is answered by the committer thread: its
 *     CommandComplete and ReadyForQuery in one send(2) right after the commit, without a
 *     hop back to the loop -- only when nothing else is queued for the conn and the
 *     transaction status is 'I'.  Between begin and end (c->direct) the loop writes nothing
 *     to the fd (output waits in `out`, conn_flush()).  pgwire_direct_end() tells the loop
 *     what was sent: all (not queued again, c->direct_sent), part (the rest queued first)
 *     or nothing (the request ends the ordinary way).  The conn is not freed before
 *     pgwire_done() (LIFETIME), which comes after the end.
 *
 * Nothing here is thread-safe (pgwire_direct_begin()'s bytes and fd excepted), and
 * nothing logs.
 */
#include "adapter-pgwire.h"
#include "adapter-pgwire-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "loop/loop.h"
#include "util.h"

static bool conn_settle(struct pgwire_conn *c);

/* --- Run queue (note 3) --------------------------------------------------------- */

/* Make sure conn_run(c) happens soon, from the loop. */
void conn_schedule(struct pgwire_conn *c)
{
        struct pgwire_server *s = c->srv;

        if (c->dispatching || c->queued)
                return;
        if (!s->waker) {
                /* Being freed: no callback but stmt_free() runs any more, so settling
                 * here is safe (pgwire_server_free() documents it). */
                assert(s->freeing);
                (void)conn_settle(c);
                return;
        }
        c->queued = true;
        c->run_next = NULL;
        if (s->runq_tail)
                s->runq_tail->run_next = c;
        else {
                s->runq = c;
                /* Every caller is in the loop thread: the queue runs after this batch
                 * of callbacks, before the loop sleeps -- no eventfd write and no
                 * loop turn for its completion (a DDL's answer after its commit).
                 * Conns queued while the queue runs wait for the next turn. */
                if (s->running_queue)
                        loop_waker_wake(s->waker);
                else
                        loop_defer(s->loop, &s->run_defer);
        }
        s->runq_tail = c;
}

static void server_run_queue(struct pgwire_server *s)
{
        struct pgwire_conn *c = s->runq;

        /* Only the conns queued now: those queued while these run wake the loop again,
         * so a busy conn cannot starve the rest of the loop. */
        s->runq = s->runq_tail = NULL;
        s->running_queue = true;
        while (c) {
                struct pgwire_conn *next = c->run_next;

                c->queued = false;
                c->run_next = NULL;
                conn_run(c);
                c = next;
        }
        s->running_queue = false;
        pgw_server_maybe_done(s);
}

static void server_wake(struct loop *l, uint64_t count, void *userdata)
{
        server_run_queue(userdata);
}

static void server_run_deferred(struct loop *l, struct loop_defer *d)
{
        server_run_queue(container_of(d, struct pgwire_server, run_defer));
}

/* --- Lifetime ---------------------------------------------------------------------- */

static void conn_free(struct pgwire_conn *c)
{
        struct pgwire_server *s = c->srv;

        assert(!c->recv_armed && !c->send_armed && !c->queued && !c->dispatching);
        assert(c->req == REQ_NONE);
        assert(!c->close_timer);

        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        assert(s->stats.active > 0);
        s->stats.active--;

        pgw_portals_drop_all(c);
        while (c->stmts)
                pgw_stmt_unlink(c, c->stmts);
        conn_bury(c);
        closep(&c->fd);
        free(c->in);
        pgcodec_buf_done(&c->out);
        pgcodec_buf_done(&c->tx);
        free(c->param_names);
        free(c->param_values);
        free(c->param_block);
        free(c->types);
        free(c);
}

/* Deliver what is owed from the top of the stack (disconnect(), stmt_free()) and free
 * c when nothing holds it any more.  Returns true when c was freed. */
static bool conn_settle(struct pgwire_conn *c)
{
        struct pgwire_server *s = c->srv;

        if (c->dispatching)
                return false;
        if (!conn_open(c) && c->accepted && !c->disconnected) {
                c->disconnected = true;
                c->dispatching = true;
                s->in_callback++;
                if (s->cb.disconnect)
                        s->cb.disconnect(c, c->reason, s->userdata);
                s->in_callback--;
                c->dispatching = false;
        }
        if (c->dead)
                conn_bury(c);
        if (c->state != CONN_CLOSED || c->recv_armed || c->send_armed || c->req != REQ_NONE ||
            c->queued)
                return false;
        conn_free(c);
        if (s->freeing)
                pgw_server_maybe_free(s);
        else
                pgw_server_maybe_done(s);
        return true;
}

/* --- Dispatch ---------------------------------------------------------------------- */

static void conn_handle_query(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        struct pgwire_server *s = c->srv;
        struct stmt *unnamed;
        const char *sql;

        if (pgcodec_parse_query(f, &sql) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Query message");
                return;
        }
        /* As PostgreSQL: a simple query destroys the unnamed statement. */
        unnamed = pgw_stmt_find(c, "");
        if (unnamed)
                pgw_stmt_unlink(c, unnamed);
        if (!s->cb.query) {
                conn_put_error(c, NULL, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED,
                               "simple queries are not supported");
                pgcodec_put_ready(&c->out, c->txn_status);
                if (conn_out_check(c) == 0)
                        conn_flush(c);
                return;
        }
        c->req = REQ_QUERY;
        c->req_ncols = PGWIRE_NCOLS_NONE;
        pgw_req_probe_start(c, 'Q', sql);
        s->in_callback++;
        s->cb.query(c, sql, s->userdata);
        s->in_callback--;
}

static void conn_handle_sync(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        if (pgcodec_parse_empty(f) < 0) {
                conn_protocol_violation(c, -EBADMSG, "invalid Sync message");
                return;
        }
        c->state = CONN_READY;
        if (c->txn_status == 'I')
                pgw_portals_drop_all(c);
        pgcodec_put_ready(&c->out, c->txn_status);
        if (conn_out_check(c) == 0)
                conn_flush(c);
}

static void conn_handle(struct pgwire_conn *c, const struct pgcodec_frame *f)
{
        bool skip = c->state == CONN_SKIP;

        assert(c->state == CONN_READY || c->state == CONN_SKIP);
        switch (f->type) {
        case 'S':
                conn_handle_sync(c, f);
                return;
        case 'X':
                if (pgcodec_parse_empty(f) < 0)
                        conn_protocol_violation(c, -EBADMSG, "invalid Terminate message");
                else
                        conn_close(c, 0);
                return;
        case 'p':
                conn_protocol_violation(c, -EPROTO, "unexpected password message");
                return;
        case 'd': case 'c': case 'f':
                return;         /* COPY messages outside COPY are ignored, per protocol */
        default:
                break;
        }
        if (skip)
                return;         /* everything else waits for Sync */
        switch (f->type) {
        case 'Q':
                conn_handle_query(c, f);
                return;
        case 'P':
                conn_handle_parse(c, f);
                return;
        case 'B':
                conn_handle_bind(c, f);
                return;
        case 'D':
                conn_handle_describe(c, f);
                return;
        case 'E':
                conn_handle_execute(c, f);
                return;
        case 'C':
                conn_handle_close(c, f);
                return;
        case 'H':
                if (pgcodec_parse_empty(f) < 0)
                        conn_protocol_violation(c, -EBADMSG, "invalid Flush message");
                else
                        conn_flush(c);
                return;
        case 'F':
                conn_put_error(c, NULL, PGCODEC_SQLSTATE_FEATURE_NOT_SUPPORTED,
                               "function call messages are not supported");
                pgcodec_put_ready(&c->out, c->txn_status);
                if (conn_out_check(c) == 0)
                        conn_flush(c);
                return;
        default:
                /* pgcodec_frame_next() lets only frontend types through. */
                conn_protocol_violation(c, -EBADMSG, "invalid frontend message type");
                return;
        }
}

/* Process every whole message while the conn is open and no request is in flight. */
static void conn_dispatch(struct pgwire_conn *c)
{
        struct pgwire_server *s = c->srv;

        while (c->req == REQ_NONE && conn_open(c)) {
                struct pgcodec_frame f;
                size_t max = s->cfg.max_message;
                char msg[96];
                int r;

                if (s->shutting_down) {
                        conn_fatal(c, PGCODEC_SQLSTATE_ADMIN_SHUTDOWN, -ESHUTDOWN,
                                   "terminating connection due to administrator command");
                        return;
                }
                if (conn_queued(c) >= PGWIRE_PAUSE_AT) {
                        /* Note 4: resumed by conn_send_done(), unless the socket
                         * took it all at once. */
                        conn_flush(c);
                        if (c->state == CONN_CLOSED)
                                return;
                        if (conn_queued(c) >= PGWIRE_PAUSE_AT) {
                                c->in_need = 0;
                                return;
                        }
                }
                r = pgcodec_frame_next(c->in + c->in_start, c->in_end - c->in_start,
                                       c->state == CONN_STARTUP, max, &f);
                if (r == 0) {
                        c->in_need = f.size;
                        /* EOF between messages is a plain close; inside one, the client
                         * died mid-message or is broken. */
                        if (c->eof)
                                conn_close(c, c->in_end > c->in_start ? -EPROTO : 0);
                        return;
                }
                if (r < 0) {
                        if (r == -EPROTO)
                                snprintf(msg, sizeof(msg), "invalid frontend message type %d",
                                         c->in[c->in_start]);
                        else if (c->state == CONN_STARTUP)
                                snprintf(msg, sizeof(msg), "invalid length of startup packet");
                        else
                                snprintf(msg, sizeof(msg), "invalid message length %s",
                                         r == -EMSGSIZE ? "(over the limit)" : "(too short)");
                        conn_protocol_violation(c, r, msg);
                        return;
                }
                /* Consumed now; the bytes stay put while a request borrows them. */
                c->in_start += f.size;
                c->in_need = 0;
                if (c->state == CONN_STARTUP)
                        conn_handle_startup(c, &f);
                else
                        conn_handle(c, &f);
                assert(conn_check(c));
        }
}

/* Keep the conn's I/O going after its state changed (note 1). */
static void conn_pump(struct pgwire_conn *c)
{
        int r;

        switch (c->state) {
        case CONN_STARTUP:
        case CONN_READY:
        case CONN_SKIP:
                r = conn_in_prepare(c);
                if (r < 0) {
                        conn_abort(c, r);
                        return;
                }
                conn_recv_arm(c);
                return;
        case CONN_CLOSING:
                if (!c->wr_shut && c->out.len == 0 && !c->send_armed && !c->direct) {
                        (void)shutdown(c->fd, SHUT_WR);
                        c->wr_shut = true;
                }
                if (c->wr_shut && c->eof) {
                        conn_abort(c, c->reason);
                        return;
                }
                /* Drain (and drop) the client's bytes, unless a request still borrows
                 * the buffer. */
                if (c->req == REQ_NONE && !c->recv_armed) {
                        c->in_start = c->in_end = 0;
                        conn_recv_arm(c);
                }
                return;
        case CONN_CLOSED:
                return;
        }
}

/* The one entry point from the loop: process input, keep I/O going, settle. */
void conn_run(struct pgwire_conn *c)
{
        assert(!c->dispatching);
        c->dispatching = true;
        conn_dispatch(c);
        conn_pump(c);
        c->dispatching = false;
        assert(conn_check(c));
        (void)conn_settle(c);
}

void conn_recv_done(struct loop *l, struct loop_io *io, int res)
{
        struct pgwire_conn *c = container_of(io, struct pgwire_conn, recv_io);

        c->recv_armed = false;
        if (c->state == CONN_CLOSED) {
                (void)conn_settle(c);
                return;
        }
        if (res > 0) {
                if (c->state == CONN_CLOSING) {
                        c->lingered += (size_t)res;
                        if (c->lingered > PGWIRE_LINGER_MAX)
                                conn_abort(c, c->reason);
                } else {
                        c->in_end += (size_t)res;
                        assert(c->in_end <= c->in_cap);
                }
        } else if (res == 0) {
                c->eof = true;
        } else if (res != -EINTR && res != -EAGAIN) {
                conn_abort(c, res);
        }
        conn_run(c);
}

void conn_send_done(struct loop *l, struct loop_io *io, int res)
{
        struct pgwire_conn *c = container_of(io, struct pgwire_conn, send_io);
        int r = 0;

        c->send_armed = false;
        if (c->state == CONN_CLOSED) {
                (void)conn_settle(c);
                return;
        }
        if (res > 0) {
                c->tx_off += (size_t)res;
                assert(c->tx_off <= c->tx.len);
                if (c->tx_off < c->tx.len)
                        r = conn_send_arm(c);   /* short send: the rest */
                else {
                        conn_tx_done(c);
                        conn_flush(c);
                }
        } else if (res == -EINTR || res == -EAGAIN) {
                r = conn_send_arm(c);
        } else {
                r = res == 0 ? -EPIPE : res;
        }
        if (r < 0)
                conn_abort(c, r);
        if (c->drain_armed && conn_open(c) && conn_queued(c) <= c->drain_below) {
                /* Note 4: an I/O completion, so the owner may be called; the conn is
                 * marked as dispatching so that what it sends is queued, not recursed. */
                c->drain_armed = false;
                if (c->srv->cb.drained) {
                        c->dispatching = true;
                        c->srv->cb.drained(c, c->srv->userdata);
                        c->dispatching = false;
                }
        }
        conn_run(c);
}

/* --- Server API --------------------------------------------------------------------- */

void pgwire_config_init(struct pgwire_config *cfg)
{
        assert(cfg);
        *cfg = (struct pgwire_config){
                .host = "127.0.0.1",
                .port = PGWIRE_PORT_DEFAULT,
                .server_version = PGWIRE_SERVER_VERSION_DEFAULT,
                .max_message = PGWIRE_MAX_MESSAGE_DEFAULT,
                .max_output = PGWIRE_MAX_OUTPUT_DEFAULT,
                .max_connections = PGWIRE_MAX_CONNECTIONS_DEFAULT,
                .close_timeout_ms = PGWIRE_CLOSE_TIMEOUT_MS_DEFAULT,
                .backlog = PGWIRE_BACKLOG_DEFAULT,
        };
}

static int config_resolve(const struct pgwire_config *in, struct pgwire_config *out)
{
        struct pgwire_config d;

        pgwire_config_init(&d);
        *out = *in;
        if (out->host && !*out->host)
                out->host = NULL;       /* "": no TCP, as an empty listen_addresses */
        if (!out->host && !out->unix_path)
                return -EINVAL;         /* nothing to listen on */
        if (!out->server_version)
                out->server_version = d.server_version;
        if (out->max_message == 0)
                out->max_message = d.max_message;
        if (out->max_message < PGWIRE_MAX_MESSAGE_MIN || out->max_message > PGCODEC_MESSAGE_MAX)
                return -EINVAL;
        if (out->max_output == 0)
                out->max_output = d.max_output;
        if (out->max_output < PGWIRE_MAX_OUTPUT_MIN)
                return -EINVAL;
        if (out->max_connections == 0)
                out->max_connections = d.max_connections;
        if (out->close_timeout_ms == 0)
                out->close_timeout_ms = d.close_timeout_ms;
        if (out->backlog <= 0)
                out->backlog = d.backlog;
        return 0;
}

int pgwire_server_new(struct loop *l, const struct pgwire_config *cfg,
                      const struct pgwire_callbacks *cb, void *userdata,
                      struct pgwire_server **ret)
{
        struct pgwire_server *s;
        int r;

        assert(l);
        assert(cfg);
        assert(cb);
        assert(ret);

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        for (unsigned i = 0; i < PGWIRE_LISTENERS_MAX; i++)
                s->listeners[i].fd = -EBADF;
        s->loop = l;
        s->cb = *cb;
        s->userdata = userdata;
        r = config_resolve(cfg, &s->cfg);
        if (r < 0)
                goto fail;
        s->server_version = strdup(s->cfg.server_version);
        s->host = s->cfg.host ? strdup(s->cfg.host) : NULL;
        s->unix_path = s->cfg.unix_path ? strdup(s->cfg.unix_path) : NULL;
        if (!s->server_version || (s->cfg.host && !s->host) ||
            (s->cfg.unix_path && !s->unix_path)) {
                r = -ENOMEM;
                goto fail;
        }
        s->cfg.server_version = s->server_version;
        s->cfg.host = s->host;
        s->cfg.unix_path = s->unix_path;
        s->next_pid = (int32_t)(pgw_random_u32() % 1000000u) + 1000;

        if (s->cfg.host) {
                r = pgw_listen_tcp(s);
                if (r < 0)
                        goto fail;
        }
        if (s->cfg.unix_path) {
                r = pgw_listen_unix(s);
                if (r < 0)
                        goto fail;
        }
        s->run_defer.fn = server_run_deferred;
        r = loop_waker_new(l, server_wake, s, &s->waker);
        if (r < 0)
                goto fail;
        for (unsigned i = 0; i < s->nlisteners; i++) {
                r = pgw_listener_arm(&s->listeners[i]);
                if (r < 0)
                        goto fail_armed;
        }
        *ret = s;
        return 0;

fail_armed:
        /* Some accepts are in flight: the loop must reap them, so tear down through
         * the normal path (the memory goes when they complete). */
        (void)pgwire_server_free(s);
        return r;
fail:
        s->waker = loop_waker_free(l, s->waker);
        pgw_server_destroy(s);
        return r;
}

uint16_t pgwire_server_port(const struct pgwire_server *s)
{
        assert(s);
        return s->cfg.host ? s->port : 0;
}

void pgwire_server_stats(const struct pgwire_server *s, struct pgwire_stats *ret)
{
        assert(s && ret);
        *ret = s->stats;
}

void pgwire_server_shutdown(struct pgwire_server *s,
                            void (*done)(struct pgwire_server *s, void *userdata),
                            void *userdata)
{
        assert(s);
        assert(!s->shutting_down && !s->freeing);

        s->shutting_down = true;
        s->shutdown_done = done;
        s->shutdown_userdata = userdata;
        pgw_server_stop_listening(s);
        /* Each conn says goodbye from conn_dispatch() once it has no request in flight;
         * the waker also reports completion when there is nothing to wait for. */
        for (struct pgwire_conn *c = s->conns; c; c = c->next)
                conn_schedule(c);
        loop_waker_wake(s->waker);
}

struct pgwire_server *pgwire_server_free(struct pgwire_server *s)
{
        struct pgwire_conn *c, *next;

        if (!s)
                return NULL;
        assert(!s->freeing);
        assert(s->in_callback == 0);    /* not from inside one of our callbacks */

        if (!s->shutting_down)
                pgw_server_stop_listening(s);
        s->freeing = true;
        s->holds++;             /* the conns freed below must not free s under us */
        s->waker = loop_waker_free(s->loop, s->waker);
        loop_defer_cancel(s->loop, &s->run_defer);
        for (c = s->runq; c; c = next) {
                next = c->run_next;
                c->queued = false;
                c->run_next = NULL;
        }
        s->runq = s->runq_tail = NULL;
        /* Cut every conn: its disconnect() and stmt_free()s run now (conn_settle()
         * without a waker), so the owner can release its state before we return.  The
         * scan restarts each time: an owner's disconnect() may finish (and so free)
         * any conn. */
        for (;;) {
                for (c = s->conns; c && c->released; c = c->next)
                        ;
                if (!c)
                        break;
                c->released = true;
                conn_drop_statements(c);
                /* Either way conn_settle() runs (conn_abort() through conn_schedule(),
                 * which settles at once without a waker) and may free c. */
                if (c->state == CONN_CLOSED)
                        (void)conn_settle(c);
                else
                        conn_abort(c, -ESHUTDOWN);
        }
        s->holds--;
        pgw_server_maybe_free(s);
        return NULL;
}

/* --- Accessors ---------------------------------------------------------------------- */

const char *pgwire_conn_param(const struct pgwire_conn *c, const char *name)
{
        assert(c && name);
        for (unsigned i = 0; i < c->nparams; i++)
                if (strcmp(c->param_names[i], name) == 0)
                        return c->param_values[i];
        return NULL;
}

int32_t pgwire_conn_pid(const struct pgwire_conn *c)
{
        assert(c);
        return c->pid;
}

const char *pgwire_conn_peer(const struct pgwire_conn *c)
{
        assert(c);
        return c->peer;
}

bool pgwire_conn_is_closed(const struct pgwire_conn *c)
{
        assert(c);
        return !conn_open(c) || c->eof;
}

size_t pgwire_conn_output_queued(const struct pgwire_conn *c)
{
        assert(c);
        return conn_queued(c);
}

void pgwire_conn_set_userdata(struct pgwire_conn *c, void *userdata)
{
        assert(c);
        c->userdata = userdata;
}

void *pgwire_conn_userdata(const struct pgwire_conn *c)
{
        assert(c);
        return c->userdata;
}

int pgwire_direct_begin(struct pgwire_conn *c, const char *tag, struct pgwire_direct *ret)
{
        struct pgcodec_buf b;
        int r;

        assert(c && tag && ret);
        if (!conn_open(c) || c->req != REQ_QUERY || c->req_failed || c->direct || c->direct_sent ||
            c->txn_status != 'I' || c->out.len > 0 || c->tx.len > 0 || c->send_armed)
                return -EAGAIN;
        pgcodec_buf_init(&b, sizeof(ret->bytes));
        pgcodec_put_command_complete(&b, tag);
        pgcodec_put_ready(&b, 'I');
        r = pgcodec_buf_error(&b);
        if (r == 0 && b.len > sizeof(ret->bytes))
                r = -E2BIG;
        if (r == 0) {
                memcpy(ret->bytes, b.data, b.len);
                ret->len = b.len;
                ret->fd = c->fd;
                c->direct = true;
        }
        pgcodec_buf_done(&b);
        return r < 0 ? -EAGAIN : 0;
}

void pgwire_direct_end(struct pgwire_conn *c, const struct pgwire_direct *d, ssize_t sent)
{
        assert(c && d && c->direct);
        assert(sent <= (ssize_t)d->len);
        c->direct = false;
        if (sent > 0) {
                c->direct_sent = true;
                c->req_ncols = PGWIRE_NCOLS_NONE;
                /* The rest first: whatever was queued meanwhile follows the reply. */
                if ((size_t)sent < d->len) {
                        struct pgcodec_buf rest = c->out;

                        pgcodec_buf_init(&c->out, rest.max);
                        pgcodec_put_bytes(&c->out, d->bytes + sent, d->len - (size_t)sent);
                        if (rest.len > 0)
                                pgcodec_put_bytes(&c->out, rest.data, rest.len);
                        pgcodec_buf_done(&rest);
                        (void)conn_out_check(c);
                }
        }
        if (c->out.len > 0)
                conn_flush(c);          /* also in CLOSING: a FATAL queued meanwhile */
}
