/* adapter-pgwire-reply.c -- the response functions of the PostgreSQL wire protocol
 * server (adapter-pgwire.h: pgwire_send_*(), pgwire_describe_statement(),
 * pgwire_done(), pgwire_notify_drained(), pgwire_flush(),
 * pgwire_set_transaction_status()): what the owner sends while it answers a request,
 * checked against what the client asked for (DataRows in the formats Bind chose, rows
 * past Execute's limit put aside), and the end of a request.
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

#include "hist.h"
#include "probes.h"

/* --- Responses ---------------------------------------------------------------------- */

/* Common entry checks: 0 to go on, else what to return. */
static int conn_can_send(struct pgwire_conn *c, bool result)
{
        assert(c);
        if (!conn_open(c))
                return -ECONNRESET;
        if (result)
                assert(c->req == REQ_QUERY || c->req == REQ_EXECUTE);
        if (c->req_failed && c->req != REQ_NONE && c->req != REQ_CONNECT)
                return -ECANCELED;
        return 0;
}

/* An owner's value does not match what the client asked for: fail the request. */
static int conn_fail_request(struct pgwire_conn *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static int conn_fail_request(struct pgwire_conn *c, const char *fmt, ...)
{
        char msg[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        (void)pgwire_send_error(c, &(struct pgcodec_error){
                .sqlstate = PGCODEC_SQLSTATE_INTERNAL_ERROR, .message = msg });
        return -EINVAL;
}

/* After an owner's put: check, and push the output if it is not part of a request. */
static int conn_sent(struct pgwire_conn *c)
{
        int r = conn_out_check(c);

        if (r < 0)
                return r;
        if (c->req == REQ_NONE && !c->dispatching)
                conn_flush(c);
        return 0;
}

int pgwire_send_row_description(struct pgwire_conn *c, unsigned n,
                                const struct pgcodec_column *cols)
{
        int r = conn_can_send(c, true);

        if (r < 0)
                return r;
        if (n > INT16_MAX)
                return conn_fail_request(c, "too many result columns (%u)", n);
        if (c->req == REQ_EXECUTE)
                return 0;       /* Describe sent it (adapter-pgwire.c note 5) */
        c->req_ncols = n;
        pgcodec_put_row_description(&c->out, n, cols, NULL);
        return conn_sent(c);
}

/* Encode one DataRow into b, in the formats asked (NULL: text).  -EINVAL (b unchanged)
 * when a value asked in binary is not valid text of its column's type. */
static int put_data_row(struct pgcodec_buf *b, unsigned n, const char *const *values,
                        const size_t *lengths, const struct stmt *st, const int16_t *formats,
                        unsigned *ret_bad)
{
        size_t row = b->len, m, need = 1 + 4 + 2;
        bool text = true;

        for (unsigned i = 0; formats && i < n; i++)
                text = text && formats[i] != PGCODEC_FORMAT_BINARY;
        if (text) {
                /* All text, the common case: one reservation for the whole row, then
                 * plain stores -- the calls per field were about a tenth of the
                 * adapter's CPU under a client polling a 1,000-row relation. */
                uint8_t *p;

                for (unsigned i = 0; i < n; i++) {
                        size_t len = !values[i] ? 0 : lengths ? lengths[i] : strlen(values[i]);

                        if (len > INT32_MAX) {
                                *ret_bad = i;
                                return -EINVAL;
                        }
                        need += 4 + len;
                }
                if (pgcodec_buf_reserve(b, need) < 0)
                        return 0;       /* b's error is sticky: the caller's check */
                /* pgcodec_msg_begin()'s header by hand; pgcodec_msg_end() sets its length. */
                p = b->data + b->len;
                *p++ = 'D';
                m = (size_t)(p - b->data);
                p += 4;
                *p++ = (uint8_t)(n >> 8);
                *p++ = (uint8_t)n;
                for (unsigned i = 0; i < n; i++) {
                        size_t len = !values[i] ? 0 : lengths ? lengths[i] : strlen(values[i]);

                        pgw_set_be32(p, values[i] ? (uint32_t)len : UINT32_MAX);
                        p += 4;
                        if (len)
                                memcpy(p, values[i], len);
                        p += len;
                }
                assert((size_t)(p - b->data) == row + need);
                b->len = (size_t)(p - b->data);
                pgcodec_msg_end(b, m);
                return 0;
        }
        m = pgcodec_msg_begin(b, 'D');
        pgcodec_put_i16(b, (int16_t)n);
        for (unsigned i = 0; i < n; i++) {
                size_t len, at;

                if (!values[i]) {
                        pgcodec_put_i32(b, -1);
                        continue;
                }
                len = lengths ? lengths[i] : strlen(values[i]);
                if (len > INT32_MAX) {
                        pgcodec_buf_truncate(b, row);
                        *ret_bad = i;
                        return -EINVAL;
                }
                if (!formats || formats[i] != PGCODEC_FORMAT_BINARY) {
                        pgcodec_put_i32(b, (int32_t)len);
                        pgcodec_put_bytes(b, values[i], len);
                        continue;
                }
                at = b->len;
                pgcodec_put_i32(b, 0);
                if (pgcodec_text_to_binary(st->columns[i].type, values[i], len, b) < 0) {
                        pgcodec_buf_truncate(b, row);
                        *ret_bad = i;
                        return -EINVAL;
                }
                if (!pgcodec_buf_error(b))
                        pgw_set_be32(b->data + at, (uint32_t)(b->len - at - 4));
        }
        pgcodec_msg_end(b, m);
        return 0;
}

int pgwire_send_data_row(struct pgwire_conn *c, unsigned n, const char *const *values,
                         const size_t *lengths)
{
        struct pgcodec_buf *b = &c->out;
        const struct stmt *st = NULL;
        const int16_t *formats = NULL;
        unsigned bad = 0;
        int r = conn_can_send(c, true);

        if (r < 0)
                return r;
        assert(n == 0 || values);
        if (c->req == REQ_EXECUTE) {
                struct portal *p = c->req_portal;

                st = p->stmt;
                if (!st->returns_rows || n != st->ncolumns)
                        return conn_fail_request(c, "executor sent a row of %u columns for "
                                                 "a statement described with %u",
                                                 n, st->returns_rows ? st->ncolumns : 0);
                formats = p->formats;
                /* Rows past Execute's limit wait in the portal (adapter-pgwire.c
                 * note 5). */
                if (c->req_max_rows && c->req_rows >= c->req_max_rows)
                        b = &p->spill;
                c->req_rows++;
        } else if (c->req_ncols == PGWIRE_NCOLS_NONE || n != c->req_ncols) {
                return conn_fail_request(c, "executor sent a row of %u columns without a "
                                         "matching row description", n);
        }

        r = put_data_row(b, n, values, lengths, st, formats, &bad);
        if (r < 0)
                return conn_fail_request(c, "invalid value for binary output in column %u",
                                         bad + 1);
        if (b != &c->out) {
                if (pgcodec_buf_error(b) < 0)
                        return conn_fail_request(c, "result too large for a partial fetch");
                return 0;
        }
        return conn_sent(c);
}

int pgwire_send_copy_out(struct pgwire_conn *c, unsigned n)
{
        int r = conn_can_send(c, true);
        size_t m;

        if (r < 0)
                return r;
        if (c->req == REQ_EXECUTE || n > INT16_MAX)
                return conn_fail_request(c, "COPY TO STDOUT is only sent in a simple query");
        m = pgcodec_msg_begin(&c->out, 'H');
        pgcodec_put_u8(&c->out, 0);                     /* text */
        pgcodec_put_i16(&c->out, (int16_t)n);
        for (unsigned i = 0; i < n; i++)
                pgcodec_put_i16(&c->out, 0);
        pgcodec_msg_end(&c->out, m);
        return conn_sent(c);
}

int pgwire_send_copy_data(struct pgwire_conn *c, const void *data, size_t len)
{
        int r = conn_can_send(c, true);
        size_t m;

        if (r < 0)
                return r;
        m = pgcodec_msg_begin(&c->out, 'd');
        pgcodec_put_bytes(&c->out, data, len);
        pgcodec_msg_end(&c->out, m);
        return conn_sent(c);
}

int pgwire_send_command_complete(struct pgwire_conn *c, const char *tag)
{
        int r = conn_can_send(c, true);

        if (r < 0)
                return r;
        assert(tag);
        if (c->req == REQ_EXECUTE) {
                struct portal *p = c->req_portal;

                free(p->tag);
                p->tag = strdup(tag);
                if (!p->tag)
                        return conn_fail_request(c, "out of memory");
                c->req_result = true;
                if (p->spill.len > 0)
                        return 0;       /* sent when the last row has been fetched */
        }
        c->req_ncols = PGWIRE_NCOLS_NONE;
        if (c->direct_sent)
                return 0;       /* out with the direct reply: adapter-pgwire.c note 7 */
        pgcodec_put_command_complete(&c->out, tag);
        return conn_sent(c);
}

int pgwire_send_empty_query(struct pgwire_conn *c)
{
        int r = conn_can_send(c, true);

        if (r < 0)
                return r;
        if (c->req == REQ_EXECUTE) {
                c->req_portal->empty = true;
                c->req_result = true;
        }
        pgcodec_put_empty(&c->out, 'I');
        return conn_sent(c);
}

static bool severity_fatal(const char *severity)
{
        return severity && (strcmp(severity, "FATAL") == 0 || strcmp(severity, "PANIC") == 0);
}

int pgwire_send_error(struct pgwire_conn *c, const struct pgcodec_error *e)
{
        bool fatal;
        int r = conn_can_send(c, false);

        if (r < 0)
                return r;
        assert(e && e->message);
        fatal = severity_fatal(e->severity);
        /* Outside a request only a FATAL error makes sense to a client. */
        assert(fatal || c->req != REQ_NONE);

        pgcodec_put_error(&c->out, 'E', e);
        r = conn_out_check(c);
        if (r < 0)
                return r;
        c->req_failed = true;
        c->req_result = true;
        if (fatal) {
                conn_close(c, -ECONNABORTED);
                return 0;
        }
        conn_flush(c);
        return 0;
}

int pgwire_send_notice(struct pgwire_conn *c, const struct pgcodec_error *e)
{
        int r = conn_can_send(c, false);

        if (r < 0)
                return r;
        assert(e && e->message);
        pgcodec_put_error(&c->out, 'N', e);
        return conn_sent(c);
}

int pgwire_send_parameter_status(struct pgwire_conn *c, const char *name, const char *value)
{
        int r;

        assert(c && name && value);
        if (!conn_open(c))
                return -ECONNRESET;
        r = conn_can_send(c, false);
        if (r < 0 && r != -ECANCELED)
                return r;
        pgcodec_put_parameter_status(&c->out, name, value);
        return conn_sent(c);
}

int pgwire_describe_statement(struct pgwire_conn *c, const struct pgwire_statement_desc *desc)
{
        struct stmt *st = NULL;
        int r;

        assert(c && desc);
        assert(c->req == REQ_PREPARE);
        assert(!c->req_stmt);           /* once per prepare() */

        r = conn_can_send(c, false);
        if (r == 0) {
                r = pgw_stmt_new(c->req_name, desc, &st);
                if (r == -E2BIG)
                        return conn_fail_request(c, "statement has too many parameters or columns");
        }
        if (r < 0) {
                /* desc->stmt is ours anyway: release it through the dead list (only
                 * out of memory here can leak it). */
                st = desc->stmt ? calloc(1, sizeof(*st)) : NULL;
                if (st) {
                        st->owner = desc->stmt;
                        st->refs = 1;
                        pgw_stmt_unref(c, st);
                        conn_schedule(c);
                }
                if (r == -ENOMEM)
                        (void)conn_fail_request(c, "out of memory");
                return r;
        }
        st->owner = desc->stmt;
        c->req_stmt = st;
        return 0;
}

/* pgwire_done() of a prepare(): store the statement and say ParseComplete. */
static void conn_finish_prepare(struct pgwire_conn *c)
{
        struct stmt *st = TAKE_PTR(c->req_stmt), *old;

        if (!conn_open(c) || c->req_failed) {
                if (st)
                        pgw_stmt_unref(c, st);
                if (conn_open(c))
                        c->state = CONN_SKIP;
                return;
        }
        if (!st) {
                conn_ext_error(c, PGCODEC_SQLSTATE_INTERNAL_ERROR,
                               "the statement was neither described nor refused");
                return;
        }
        /* The unnamed statement is replaced by the next Parse into it. */
        old = pgw_stmt_find(c, st->name);
        assert(!old || !*st->name);
        if (old)
                pgw_stmt_unlink(c, old);
        st->next = c->stmts;
        c->stmts = st;
        pgcodec_put_empty(&c->out, '1');
        (void)conn_out_check(c);
}

/* pgwire_done() of an execute(). */
static void conn_finish_execute(struct pgwire_conn *c)
{
        struct portal *p = TAKE_PTR(c->req_portal);

        if (!conn_open(c)) {
                p->state = PORTAL_DONE;
                return;
        }
        if (c->req_failed) {
                p->state = PORTAL_DONE;
                c->state = CONN_SKIP;
                return;
        }
        if (p->spill.len > 0) {
                p->state = PORTAL_SUSPENDED;
                p->spill_off = 0;
                pgcodec_put_empty(&c->out, 's');
                (void)conn_out_check(c);
                return;
        }
        p->state = PORTAL_DONE;
        if (!c->req_result)
                conn_ext_error(c, PGCODEC_SQLSTATE_INTERNAL_ERROR,
                               "the statement completed without a result");
}

void pgwire_done(struct pgwire_conn *c)
{
        enum conn_req req;

        assert(c);
        req = c->req;
        assert(req == REQ_QUERY || req == REQ_PREPARE || req == REQ_EXECUTE);
        if (c->req_start_ns) {
                uint64_t ns = now_ns() - c->req_start_ns;

                COORD_PGWIRE_REQUEST_DONE(c->pid, req == REQ_QUERY ? 'Q' : req == REQ_PREPARE ? 'P' : 'E',
                                          c->req_failed, ns);
                if (c->srv->cfg.statement_hist)
                        hist_record(c->srv->cfg.statement_hist, ns / 1000);
                c->req_start_ns = 0;
        }

        switch (req) {
        case REQ_QUERY:
                if (conn_open(c)) {
                        if (c->txn_status == 'I')
                                pgw_portals_drop_all(c);
                        if (!c->direct_sent)
                                pgcodec_put_ready(&c->out, c->txn_status);
                        if (conn_out_check(c) == 0)
                                conn_flush(c);
                }
                break;
        case REQ_PREPARE:
                conn_finish_prepare(c);
                break;
        case REQ_EXECUTE:
                conn_finish_execute(c);
                break;
        default:
                break;
        }
        assert(!c->direct);
        c->req = REQ_NONE;
        c->direct_sent = false;
        c->req_failed = false;
        c->req_result = false;
        c->req_name = NULL;
        c->req_ncols = PGWIRE_NCOLS_NONE;
        assert(conn_check(c));
        /* A no-op inside the conn's own callback (adapter-pgwire.c note 3). */
        conn_schedule(c);
}

int pgwire_notify_drained(struct pgwire_conn *c, size_t below)
{
        assert(c);
        if (!conn_open(c))
                return -ECONNRESET;
        if (conn_queued(c) <= below)
                return 1;
        conn_flush(c);
        if (!conn_open(c))
                return -ECONNRESET;
        if (conn_queued(c) <= below)
                return 1;               /* the socket took it at once: no completion comes */
        c->drain_armed = true;
        c->drain_below = below;
        return 0;
}

int pgwire_flush(struct pgwire_conn *c)
{
        assert(c);
        if (!conn_open(c))
                return -ECONNRESET;
        conn_flush(c);
        return 0;
}

void pgwire_set_transaction_status(struct pgwire_conn *c, char status)
{
        assert(c);
        assert(status == 'I' || status == 'T' || status == 'E');
        c->txn_status = status;
}

