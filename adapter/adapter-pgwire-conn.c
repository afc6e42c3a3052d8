/* adapter-pgwire-conn.c -- a connection's I/O for the PostgreSQL wire protocol server:
 * output (two buffers, a send(2) first, io_uring for the rest), closing (CLOSING's
 * lingering close, CLOSED) and input (the receive buffer).
 *
 * The numbered notes are in adapter-pgwire.c (NOTES ON THE DESIGN OF A CONNECTION).
 * What the server's files share is adapter-pgwire-internal.h.  Loop thread only;
 * nothing logs.
 */
#include "adapter-pgwire-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "loop/loop.h"

/* --- Output (adapter-pgwire.c note 4) --------------------------------------------- */

int conn_send_arm(struct pgwire_conn *c)
{
        int r;

        assert(c->tx_off < c->tx.len);
        r = loop_send(c->srv->loop, &c->send_io, c->fd, c->tx.data + c->tx_off,
                      c->tx.len - c->tx_off);
        if (r < 0)
                return r;
        c->send_armed = true;
        return 0;
}

void conn_tx_done(struct pgwire_conn *c)
{
        pgcodec_buf_reset(&c->tx);
        c->tx_off = 0;
        if (c->tx.cap > PGWIRE_BUF_SHRINK)
                pgcodec_buf_done(&c->tx);
}

/* Start sending what is queued, unless a send is in flight (its completion will): what
 * the socket takes now with one send(2), the rest through the loop
 * (adapter-pgwire.c note 4). */
void conn_flush(struct pgwire_conn *c)
{
        struct pgcodec_buf t;
        ssize_t n;
        int r;

        if (c->send_armed || c->out.len == 0 || c->state == CONN_CLOSED || c->direct)
                return;
        assert(c->tx.len == 0 && c->tx_off == 0);
        t = c->tx;
        c->tx = c->out;
        c->out = t;
        /* A full socket or an error: the io_uring send takes it all, and reports the
         * error in order with the conn's other completions. */
        n = send(c->fd, c->tx.data, c->tx.len, MSG_DONTWAIT | MSG_NOSIGNAL);
        c->tx_off = n > 0 ? (size_t)n : 0;
        assert(c->tx_off <= c->tx.len);
        if (c->tx_off == c->tx.len) {
                conn_tx_done(c);
                return;
        }
        r = conn_send_arm(c);
        if (r < 0)
                conn_abort(c, r);
}

/* After appending to `out`: a buffer failure or too much output cuts the connection. */
int conn_out_check(struct pgwire_conn *c)
{
        int r = pgcodec_buf_error(&c->out);

        if (r == 0 && conn_queued(c) > c->srv->cfg.max_output)
                r = -ENOBUFS;
        if (r < 0) {
                if (r == -ENOBUFS)
                        c->srv->stats.overflows++;
                conn_abort(c, r);
                return r;
        }
        if (c->out.len >= PGWIRE_FLUSH_AT)
                conn_flush(c);
        return 0;
}

void conn_put_errorv(struct pgwire_conn *c, const char *severity, const char *sqlstate,
                     const char *fmt, va_list ap)
{
        char msg[512];

        vsnprintf(msg, sizeof(msg), fmt, ap);
        pgcodec_put_error(&c->out, 'E', &(struct pgcodec_error){
                .severity = severity, .sqlstate = sqlstate, .message = msg });
}

void conn_put_error(struct pgwire_conn *c, const char *severity, const char *sqlstate,
                    const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        conn_put_errorv(c, severity, sqlstate, fmt, ap);
        va_end(ap);
}

/* --- Closing (adapter-pgwire.c note 1) --------------------------------------------- */

static void conn_cancel_io(struct pgwire_conn *c, struct loop_io *io)
{
        if (loop_cancel(c->srv->loop, io) < 0)
                (void)shutdown(c->fd, SHUT_RDWR);       /* completes recv (EOF) and send (EPIPE) */
}

static void conn_timer_cancel(struct pgwire_conn *c)
{
        if (!c->close_timer)
                return;
        loop_timer_cancel(c->srv->loop, c->close_timer);
        c->close_timer = NULL;
}

/* To CLOSED: cancel what is in flight; conn_settle() frees the conn later. */
void conn_abort(struct pgwire_conn *c, int reason)
{
        if (c->state == CONN_CLOSED)
                return;
        if (conn_open(c))
                c->reason = reason;
        c->state = CONN_CLOSED;
        conn_timer_cancel(c);
        pgcodec_buf_reset(&c->out);
        if (c->recv_armed)
                conn_cancel_io(c, &c->recv_io);
        if (c->send_armed)
                conn_cancel_io(c, &c->send_io);
        conn_schedule(c);
}

static void conn_close_timeout(struct loop *l, void *userdata)
{
        struct pgwire_conn *c = userdata;

        c->close_timer = NULL;          /* the loop frees a fired timer */
        conn_abort(c, c->reason);
        conn_run(c);
}

/* To CLOSING: finish sending, then FIN and wait for the client's EOF
 * (adapter-pgwire.c note 1). */
void conn_close(struct pgwire_conn *c, int reason)
{
        uint64_t ns = (uint64_t)c->srv->cfg.close_timeout_ms * 1000 * 1000;

        if (!conn_open(c))
                return;
        c->reason = reason;
        c->state = CONN_CLOSING;
        if (loop_timer_add(c->srv->loop, ns, conn_close_timeout, c, &c->close_timer) < 0) {
                c->close_timer = NULL;
                conn_abort(c, reason);
                return;
        }
        conn_flush(c);
        conn_schedule(c);
}

/* A FATAL error, then close. */
void conn_fatal(struct pgwire_conn *c, const char *sqlstate, int reason, const char *message)
{
        if (!conn_open(c))
                return;
        conn_put_error(c, "FATAL", sqlstate, "%s", message);
        if (conn_out_check(c) < 0)
                return;
        conn_close(c, reason);
}

void conn_protocol_violation(struct pgwire_conn *c, int reason, const char *message)
{
        c->srv->stats.protocol_errors++;
        conn_fatal(c, PGCODEC_SQLSTATE_PROTOCOL_VIOLATION, reason, message);
}

/* --- Input (adapter-pgwire.c note 2) ---------------------------------------------- */

/* Make room for the rest of the message at in_start.  Nothing moves while a request
 * borrows the buffer or while a recv is in flight into it (the kernel writes at the
 * address it was given: its completion calls us again).  When the buffer holds whole
 * messages not yet processed (dispatch paused), it may stay full: receiving then
 * waits, and TCP pushes back. */
int conn_in_prepare(struct pgwire_conn *c)
{
        size_t have = c->in_end - c->in_start, need;
        uint8_t *p;

        if (c->req != REQ_NONE || c->recv_armed)
                return 0;
        if (have == 0)
                c->in_start = c->in_end = 0;
        else if (c->in_start > 0) {
                memmove(c->in, c->in + c->in_start, have);
                c->in_start = 0;
                c->in_end = have;
        }
        need = c->in_need > PGWIRE_IN_INIT ? c->in_need : PGWIRE_IN_INIT;
        if (need > c->in_cap || (c->in_cap > PGWIRE_BUF_SHRINK && need == PGWIRE_IN_INIT &&
                                 have <= need)) {
                p = realloc(c->in, need);
                if (!p)
                        return -ENOMEM;
                c->in = p;
                c->in_cap = need;
        }
        return 0;
}

void conn_recv_arm(struct pgwire_conn *c)
{
        int r;

        if (c->recv_armed || c->eof || c->in_end == c->in_cap)
                return;
        r = loop_recv(c->srv->loop, &c->recv_io, c->fd, c->in + c->in_end,
                      c->in_cap - c->in_end);
        if (r < 0) {
                conn_abort(c, r);
                return;
        }
        c->recv_armed = true;
}

