/* adapter-exec-read.c -- the statement executor's reads and settings: SELECT (its read
 * timestamp, a result streamed in chunks (9), a SELECT over constants answered here
 * (11)), SHOW OBJECTS, SHOW, and SET with statement_timeout (12) and the isolation
 * level (14).
 *
 * The numbered notes are in adapter-exec.c (NOTES ON THE DESIGN).  What the executor's
 * files share is adapter-exec-internal.h.  Loop thread only.
 */
#include "adapter-exec-internal.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-oracle.h"
#include "builtins.h"
#include "ring/fring.h"
#include "log.h"
#include "node/node.h"
#include "row/row-expr.h"
#include "util.h"

/* ---- reads, SHOW and SET ---- */

/* (9) A read still streaming after this long holds its inputs in the catalog
 * (adapter-readhold.c): well inside the 1 s default history window, so the bound is
 * still at or below the read's time when the hold is made (else none is made). */
#define READ_HOLD_STREAM_MS 100u

/* (9) The stream of s's read has ended (or was abandoned): its holds go. */
static void stream_hold_end(struct exec *ex, struct session *s)
{
        loop_timer_cancel(node_loop(ex->node), s->stream_hold_timer);
        s->stream_hold_timer = NULL;
        read_hold_release(&s->stream_hold);
}

static void on_stream_hold(struct loop *l, void *userdata)
{
        struct session *s = userdata;
        const Coord__Plan__Peek *peek;
        int r;

        (void)l;
        s->stream_hold_timer = NULL;
        if (!s->stream || s->gone || !s->stmt || s->stmt->kind != SQL_STMT_SELECT)
                return;
        peek = s->stmt->select.peek;
        if (s->txn_hold && s->txn_ts == peek->timestamp)
                return;         /* the block holds them at that time already */
        r = read_hold_take(s->ex, &s->stream_hold, peek->timestamp, s->stmt);
        if (r < 0)
                log_warn_errno(r, "read_hold_failed", "ts=%" PRIu64, peek->timestamp);
}

/* (9) Ask the controller for the next chunk of rq's stream, or to end it. */
static void stream_pull(struct exec *ex, struct request *rq, bool cancel)
{
        Coord__PeekNext m = COORD__PEEK_NEXT__INIT;
        int r;

        m.cancel = cancel;
        if (!ex->controller_up)
                return;         /* exec_controller_down() ended the stream */
        r = node_send(ex->node, COORD__ROLE__ROLE_CONTROLLER, COORD__MSG_TYPE__MSG_PEEK_NEXT,
                      rq->id, &m.base);
        if (r < 0 && r != -ENOTCONN)
                log_warn_errno(r, "peek_next_failed", "request_id=%llu cancel=%d",
                               (unsigned long long)rq->id, cancel);
}

/* (12) A peek not answered yet is wanted no more: the controller ends it, answering
 * nothing -- it stops evaluating it if it has begun (controller-server-peek.c note 18) --
 * and rq is freed.  A reply already on its way is unmatched and dropped. */
void peek_cancel(struct exec *ex, struct request *rq)
{
        stream_pull(ex, rq, true);
        request_free(rq);
}

/* (12) An Append whose one write evaluates a plan: the controller stops the evaluation
 * if it is still running (controller-server-bgwrite.c note 24) and answers the Append
 * with 57014, else answers it as it would have; rq stays until then. */
void write_eval_cancel(struct exec *ex, struct request *rq)
{
        stream_pull(ex, rq, true);
}

/* (9) The session no longer wants rq's stream.  With a pull out, the chunk it brings
 * is dropped and the stream cancelled then (peek_done() with no session); else it is
 * cancelled now.  Returns whether rq must stay (true) or may be freed. */
bool stream_abandon(struct exec *ex, struct session *s, struct request *rq)
{
        bool pull_out = s->pull_out;

        assert(s->stream == rq);
        s->stream = NULL;
        s->pull_out = false;
        stream_hold_end(ex, s);
        rq->ctx = NULL;
        if (pull_out)
                return true;
        stream_pull(ex, rq, true);
        return false;
}

/* (9) Fetch the next chunk now, or once the client's output has drained. */
static void stream_next(struct exec *ex, struct session *s)
{
        int r;

        assert(s->stream && !s->pull_out);
        r = pgwire_notify_drained(s->c, EXEC_STREAM_QUEUED_MAX);
        if (r == 0) {
                ex->stream_waits++;
                return;         /* pg_drained() goes on */
        }
        if (r < 0)
                return;         /* closing: pg_disconnect() ends the stream */
        s->pull_out = true;
        stream_pull(ex, s->stream, false);
}

void pg_drained(struct pgwire_conn *c, void *userdata)
{
        struct exec *ex = userdata;
        struct session *s = pgwire_conn_userdata(c);

        if (s && s->sub)
                subscribe_drained(s);
        if (s && s->stream && !s->pull_out && !s->gone) {
                s->pull_out = true;
                stream_pull(ex, s->stream, false);
        }
}

/* A chunk's rows (all of a result that came in one piece) as DataRows.  0, or -errno
 * after an error was sent to the client. */
static int peek_rows(struct session *s, const Coord__Plan__Peek *peek, const Coord__PeekResult *res)
{
        size_t nc = peek->output_arity && peek->output_arity < peek->n_columns
                            ? peek->output_arity : peek->n_columns;
        _cleanup_free_ struct row_datum *d = calloc(nc ? nc : 1, sizeof(*d));
        _cleanup_free_ const char **vals = calloc(nc ? nc : 1, sizeof(*vals));
        _cleanup_free_ size_t *lens = calloc(nc ? nc : 1, sizeof(*lens));
        _cleanup_free_ char (*scratch)[ROW_TEXT_SCRATCH] = calloc(nc ? nc : 1, ROW_TEXT_SCRATCH);

        if (!d || !vals || !lens || !scratch) {
                send_error(s->c, "53200", "out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < res->n_rows; i++) {
                int k = row_decode(res->rows[i].data, res->rows[i].len, d, nc);

                if (k != (int)nc) {
                        send_error(s->c, "XX000", "malformed row from the controller");
                        return -EBADMSG;
                }
                for (size_t j = 0; j < nc; j++)
                        if (row_datum_format(&d[j], scratch[j], &vals[j], &lens[j]) == 1)
                                vals[j] = NULL;
                for (uint64_t m = 0; m < res->counts[i]; m++, s->rows_out++)
                        if (pgwire_send_data_row(s->c, (unsigned)nc, vals, lens) < 0)
                                return -ECONNRESET;     /* cut, or the request failed */
        }
        return 0;
}

static void peek_done(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        struct session *s = rq->ctx;
        Coord__PeekResult *res = NULL;
        Coord__Plan__Peek *peek;
        bool more = false;

        if (reply->type == COORD__MSG_TYPE__MSG_PEEK_RESULT)
                res = coord__peek_result__unpack(&ex->arena_pa, reply->payload.len,
                                                 reply->payload.data);
        more = res && res->more;
        if (more) {
                rq->streamed = true;
                ex->stream_chunks++;
        } else if (res && res->chunk) {
                ex->stream_chunks++;    /* the last one */
        }
        if (!s) {
                /* Cancelled (the client was answered already, or is gone). */
                if (more)
                        stream_pull(ex, rq, true);
                goto out;
        }
        assert(!s->stream || s->stream == rq);
        s->pull_out = false;
        if (s->gone) {
                if (more)
                        stream_pull(ex, rq, true);
                s->stream = NULL;
                s->waiting = false;
                goto resume;
        }
        peek = s->stmt->select.peek;
        if (reply->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, reply->payload.len, reply->payload.data);
                struct row_error re = { .position = 0 };
                snprintf(re.sqlstate, sizeof(re.sqlstate), "%s", e && *e->sqlstate ? e->sqlstate : "XX000");
                snprintf(re.message, sizeof(re.message), "%s", e ? e->message : "read failed");
                snprintf(re.detail, sizeof(re.detail), "%s", e ? e->detail : "");
                snprintf(re.hint, sizeof(re.hint), "%s", e ? e->hint : "");
                send_row_error(s->c, &re);
                if (e)
                        coord__error__free_unpacked(e, NULL);
                goto failed;    /* an error ends a stream on the controller too */
        }
        if (!res || res->n_counts != res->n_rows) {
                send_error(s->c, "XX000", "malformed read result from the controller");
                if (more)
                        stream_pull(ex, rq, true);
                goto failed;
        }
        if (more) {
                if (!s->stream && !s->stream_hold && !s->stream_hold_timer &&
                    loop_timer_add(node_loop(ex->node), READ_HOLD_STREAM_MS * 1000000ull,
                                   on_stream_hold, s, &s->stream_hold_timer) < 0)
                        s->stream_hold_timer = NULL;    /* the controller's hold alone */
                s->stream = rq;
                rq->keep = true;
                /* Fetch the next chunk while this one is formatted, when the client's
                 * output has room: the controller encodes it meanwhile. */
                if (pgwire_conn_output_queued(s->c) <= EXEC_STREAM_QUEUED_MAX) {
                        s->pull_out = true;
                        stream_pull(ex, rq, false);
                }
        }
        if (peek_rows(s, peek, res) < 0) {
                if (s->stream)
                        rq->keep = stream_abandon(ex, s, rq);
                goto failed;
        }
        if (more) {
                (void)pgwire_flush(s->c);       /* rows go as they come */
                if (!s->pull_out)
                        stream_next(ex, s);
                goto out;       /* still waiting: the session stays parked */
        }
        s->stream = NULL;
        s->waiting = false;
        snprintf(s->tag, sizeof(s->tag), "SELECT %" PRIu64, s->rows_out);
        goto resume;
failed:
        s->stream = NULL;
        s->waiting = false;
        s->next = SIZE_MAX;
        s->stmt = sql_stmt_free(s->stmt);
resume:
        stream_hold_end(ex, s);
        /* s->stmt alone says whether the read succeeded: s->next belongs to a simple
         * query's batch, and an Execute finds it as an earlier failed request left it. */
        session_resume(s);
out:
        row_arena_reset(&ex->arena);    /* res's memory, all of it */
}

static int send_columns(struct session *s, const Coord__Plan__Peek *peek)
{
        /* ORDER BY may sort on columns the SELECT list does not show: they follow. */
        size_t nc = peek->output_arity && peek->output_arity < peek->n_columns ? peek->output_arity
                                                                               : peek->n_columns;
        struct pgcodec_column *cols = calloc(nc ? nc : 1, sizeof(*cols));
        int r;

        if (!cols)
                return -ENOMEM;
        for (size_t i = 0; i < nc; i++) {
                cols[i].name = peek->columns[i]->name;
                cols[i].type = (uint32_t)peek->columns[i]->type;
                cols[i].typmod = -1;
        }
        r = pgwire_send_row_description(s->c, (unsigned)nc, cols);
        free(cols);
        return r;
}

/* (11) A SELECT over no collection (SELECT 1, SELECT version(), VALUES ...): a Constant
 * under Maps, Filters and Projects is evaluated here, with the expression code the
 * controller runs (row_expr_eval(), common/row), so it is answered while the controller
 * is away and costs no round trip.  The rows keep the Constant's order; several rows
 * under ORDER BY or LIMIT, and any other operator, go to the controller as before, which
 * sorts and consolidates.  const_eval() evaluates a plan into decoded rows: 0,
 * -EOPNOTSUPP ("not here") or -EINVAL / -ENOMEM with e; the caller frees *ret either
 * way. */
struct const_rows {
        struct row_datum **d;           /* in arena */
        int64_t *diffs;
        size_t n, arity;
};

static void const_rows_done(struct const_rows *cr)
{
        free(cr->d);
        free(cr->diffs);
        *cr = (struct const_rows){ 0 };
}

static int const_eval(const Coord__Plan__Relation *r, const struct row_expr_ctx *ctx,
                      struct const_rows *ret, struct row_error *e)
{
        struct const_rows in = { 0 };
        size_t k = 0;
        int rc;

        switch (r->kind_case) {
        case COORD__PLAN__RELATION__KIND_CONSTANT: {
                const Coord__Plan__Constant *c = r->constant;

                ret->arity = c->n_column_types;
                ret->d = calloc(c->n_rows ? c->n_rows : 1, sizeof(*ret->d));
                ret->diffs = calloc(c->n_rows ? c->n_rows : 1, sizeof(*ret->diffs));
                if (!ret->d || !ret->diffs)
                        return row_error_oom(e);
                for (size_t i = 0; i < c->n_rows; i++) {
                        struct row_datum *d = row_arena_alloc(ctx->arena, (ret->arity + 1) * sizeof(*d));

                        if (!d)
                                return row_error_oom(e);
                        if (c->rows[i]->diff <= 0)
                                return -EOPNOTSUPP;     /* the controller's to judge */
                        if (row_decode(c->rows[i]->row.data, c->rows[i]->row.len, d, ret->arity) !=
                            (int)ret->arity)
                                return row_error_set(e, -EINVAL, "XX000", "malformed constant row");
                        ret->d[ret->n] = d;
                        ret->diffs[ret->n++] = c->rows[i]->diff;
                }
                return 0;
        }
        case COORD__PLAN__RELATION__KIND_MAP:
        case COORD__PLAN__RELATION__KIND_FILTER:
        case COORD__PLAN__RELATION__KIND_PROJECT:
                break;
        default:
                return -EOPNOTSUPP;
        }
        rc = const_eval(r->kind_case == COORD__PLAN__RELATION__KIND_MAP      ? r->map->input
                        : r->kind_case == COORD__PLAN__RELATION__KIND_FILTER ? r->filter->input
                                                                              : r->project->input,
                        ctx, &in, e);
        if (rc < 0)
                goto out;
        *ret = in;
        in = (struct const_rows){ 0 };
        if (r->kind_case == COORD__PLAN__RELATION__KIND_PROJECT) {
                for (size_t j = 0; j < r->project->n_outputs; j++)
                        if (r->project->outputs[j] >= ret->arity)
                                return row_error_set(e, -EINVAL, "XX000", "invalid plan: column %u",
                                                     r->project->outputs[j]);
        } else if (r->kind_case == COORD__PLAN__RELATION__KIND_MAP) {
                ret->arity += r->map->n_exprs;
        }
        for (size_t i = 0; i < ret->n; i++) {
                struct row_datum *d = ret->d[i];
                bool keep = true;

                if (r->kind_case == COORD__PLAN__RELATION__KIND_MAP) {
                        size_t base = ret->arity - r->map->n_exprs;

                        d = row_arena_alloc(ctx->arena, (ret->arity + 1) * sizeof(*d));
                        if (!d)
                                return row_error_oom(e);
                        memcpy(d, ret->d[i], base * sizeof(*d));
                        /* Each expression sees the columns before it, as the engine's. */
                        for (size_t j = 0; j < r->map->n_exprs && rc >= 0; j++)
                                rc = row_expr_eval(r->map->exprs[j], d, base + j, ctx, &d[base + j], e);
                } else if (r->kind_case == COORD__PLAN__RELATION__KIND_FILTER) {
                        for (size_t j = 0; j < r->filter->n_predicates && keep && rc >= 0; j++)
                                rc = row_expr_eval_predicate(r->filter->predicates[j], d, ret->arity,
                                                             ctx, &keep, e);
                } else {
                        d = row_arena_alloc(ctx->arena, (r->project->n_outputs + 1) * sizeof(*d));
                        if (!d)
                                return row_error_oom(e);
                        for (size_t j = 0; j < r->project->n_outputs; j++)
                                d[j] = ret->d[i][r->project->outputs[j]];
                }
                if (rc < 0)
                        return rc == -ENOMEM ? row_error_oom(e) : rc;
                if (keep) {
                        ret->diffs[k] = ret->diffs[i];
                        ret->d[k++] = d;
                }
        }
        ret->n = k;
        if (r->kind_case == COORD__PLAN__RELATION__KIND_PROJECT)
                ret->arity = r->project->n_outputs;
out:
        const_rows_done(&in);
        return rc;
}

/* The answer of a peek over constants only, as PeekResult fields in *res (rows in
 * arena), or -EOPNOTSUPP: see const_eval(). */
static int select_constant(const Coord__Plan__Peek *peek, struct row_arena *arena,
                           Coord__PeekResult *res, struct row_error *e)
{
        struct row_expr_ctx ctx = { .now = peek->timestamp, .has_now = true, .arena = arena };
        _cleanup_(const_rows_done) struct const_rows cr = { 0 };
        size_t nc = peek->output_arity && peek->output_arity < peek->n_columns ? peek->output_arity
                                                                               : peek->n_columns;
        uint64_t skip = peek->limit ? peek->limit->offset : 0;
        uint64_t take = peek->limit ? peek->limit->count : UINT64_MAX;
        int r = const_eval(peek->plan, &ctx, &cr, e);

        if (r < 0)
                return r;
        if (cr.n > 1 && (peek->n_order_by || peek->limit))
                return -EOPNOTSUPP;     /* the controller sorts and consolidates */
        if (cr.arity < nc)
                return row_error_set(e, -EINVAL, "XX000", "invalid plan: %zu columns, %zu shown",
                                     cr.arity, nc);
        res->rows = row_arena_alloc(arena, (cr.n + 1) * sizeof(*res->rows));
        res->counts = row_arena_alloc(arena, (cr.n + 1) * sizeof(*res->counts));
        if (!res->rows || !res->counts)
                return row_error_oom(e);
        for (size_t i = 0; i < cr.n; i++) {
                uint64_t count = (uint64_t)cr.diffs[i];
                int64_t size = row_encoded_size(cr.d[i], nc);
                uint8_t *bytes;

                if (skip >= count) {
                        skip -= count;
                        continue;
                }
                count = count - skip < take ? count - skip : take;
                skip = 0;
                if (!count)
                        break;
                take -= count;
                if (size < 0)
                        return row_error_set(e, -EINVAL, "54000", "row is too big");
                bytes = row_arena_alloc(arena, size ? (size_t)size : 1);
                if (!bytes)
                        return row_error_oom(e);
                row_encode_into(cr.d[i], nc, bytes);
                res->rows[res->n_rows] = (ProtobufCBinaryData){ .len = (size_t)size, .data = bytes };
                res->counts[res->n_rows++] = count;
        }
        res->n_counts = res->n_rows;
        return 0;
}

/* (11) Answer a SELECT over constants here: STMT_DONE, -ECANCELED (an error was sent)
 * or -EOPNOTSUPP (nothing was sent: ask the controller). */
static int exec_select_constant(struct session *s, const Coord__Plan__Peek *peek)
{
        Coord__PeekResult res = COORD__PEEK_RESULT__INIT;
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_error e = { .position = 0 };
        int r = select_constant(peek, &arena, &res, &e);

        if (r == -EOPNOTSUPP)
                goto out;
        if (send_columns(s, peek) < 0) {
                r = -ENOMEM;
                goto out;
        }
        s->rows_out = 0;
        if (r < 0) {
                send_row_error(s->c, &e);
                r = -ECANCELED;
        } else if (peek_rows(s, peek, &res) < 0) {
                r = -ECANCELED;         /* sent by peek_rows() */
        } else {
                snprintf(s->tag, sizeof(s->tag), "SELECT %" PRIu64, s->rows_out);
                r = STMT_DONE;
        }
out:
        row_arena_done(&arena);
        return r;
}

/* INSERT ... RETURNING (sql_insert.returning, a list over the inserted rows): evaluate
 * it here, as a SELECT over constants; with send, answer its rows (the RowDescription
 * first in a simple query).  The executor evaluates it before the write, so that an
 * error in it (1/0) fails the INSERT before anything is written, and sends it once
 * the write is acknowledged.  0, or -ECANCELED with the error sent. */
int exec_returning(struct session *s, const Coord__Plan__Peek *peek, bool send)
{
        Coord__PeekResult res = COORD__PEEK_RESULT__INIT;
        struct row_arena arena = ROW_ARENA_INIT;
        struct row_error e = { .position = 0 };
        int r = select_constant(peek, &arena, &res, &e);

        if (r == -EOPNOTSUPP)
                r = row_error_set(&e, -EINVAL, "XX000", "RETURNING could not be evaluated");
        if (r < 0) {
                send_row_error(s->c, &e);
                r = -ECANCELED;
        } else if (send && send_columns(s, peek) < 0) {
                send_error(s->c, "53200", "out of memory");
                r = -ECANCELED;
        } else if (send) {
                s->rows_out = 0;
                r = peek_rows(s, peek, &res) < 0 ? -ECANCELED : 0;
        }
        row_arena_done(&arena);
        return r;
}

/* DELETE / UPDATE ... RETURNING: answer the rows the controller returned for write
 * `write` of its Ok (coord.proto TableWrite.returning; ok NULL: none, the write was
 * empty), the RowDescription first in a simple query.  0, or -ECANCELED with an
 * error sent. */
int exec_write_returned(struct session *s, const Coord__Plan__Peek *peek, const Coord__Ok *ok,
                        size_t write)
{
        Coord__PeekResult res = COORD__PEEK_RESULT__INIT;

        for (size_t i = 0; ok && i < ok->n_returned; i++)
                if (ok->returned[i]->write == write) {
                        if (ok->returned[i]->n_rows != ok->returned[i]->n_counts) {
                                send_error(s->c, "XX000", "malformed RETURNING rows");
                                return -ECANCELED;
                        }
                        res.rows = ok->returned[i]->rows;
                        res.n_rows = ok->returned[i]->n_rows;
                        res.counts = ok->returned[i]->counts;
                        res.n_counts = ok->returned[i]->n_counts;
                }
        if (send_columns(s, peek) < 0) {
                send_error(s->c, "53200", "out of memory");
                return -ECANCELED;
        }
        s->rows_out = 0;
        return peek_rows(s, peek, &res) < 0 ? -ECANCELED : 0;
}

/* Whether a read of st at ts reaches an input's upper (or an input the ring does not
 * show yet): the controller then waits for the next append. */
static bool reads_at_upper(const struct sql_stmt *st, struct fring_reader *rd, uint64_t ts)
{
        for (size_t i = 0; i < st->n_inputs + st->n_physical_inputs; i++) {
                uint64_t gid = i < st->n_inputs ? st->inputs[i] : st->physical_inputs[i - st->n_inputs];
                struct fring_frontier f;

                if (coord_gid_is_live(gid))
                        continue;       /* no frontier: read as it is now */
                if (!rd || fring_lookup(rd, gid, &f) < 0 || f.upper <= ts)
                        return true;
        }
        return false;
}

int exec_select(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        Coord__Plan__Peek *peek = st->select.peek;
        Coord__PeekRequest msg = COORD__PEEK_REQUEST__INIT;
        size_t len;
        int r;

        struct fring_reader *rd = node_ring(ex->node);
        uint64_t ts, floor = 0, floor_gid = 0;

        /* (DESIGN section 4) the read timestamp: AS OF, or one that reflects every
         * acknowledged write (the oracle's read timestamp) and at which every input is
         * readable.  The inputs' sinces come from the controller's frontier ring, no
         * round trip; the controller checks again when it reads (the ring may lag). */
        for (size_t i = 0; i < st->n_inputs + st->n_physical_inputs; i++) {
                uint64_t gid = i < st->n_inputs ? st->inputs[i] : st->physical_inputs[i - st->n_inputs];
                const struct acat_item *it = acat_by_gid(ex->cat, gid);
                struct fring_frontier f;

                /* An index read below the arrangement's since is served from what it
                 * indexes (the controller falls back), so only collections bound it. */
                if (it && it->kind == SQL_OBJECT_INDEX)
                        continue;
                if (rd && fring_lookup(rd, gid, &f) == 0 && f.since > floor) {
                        floor = f.since;
                        floor_gid = gid;
                }
                /* DESIGN section 4: t >= the committed bound of every input (a table's
                 * birth included), whatever the physical since. */
                if (it && it->has_bound && it->bound > floor) {
                        floor = it->bound;
                        floor_gid = gid;
                }
        }
        if (st->select.has_as_of) {
                ts = st->select.as_of;
                if (ts < floor) {
                        const struct acat_item *it = acat_by_gid(ex->cat, floor_gid);
                        struct row_error e = { .position = 0 };
                        snprintf(e.sqlstate, sizeof(e.sqlstate), "55000");
                        snprintf(e.message, sizeof(e.message),
                                 "AS OF %" PRIu64 " is below the since %" PRIu64 " of \"%s\"", ts,
                                 floor, it ? it->name : "?");
                        snprintf(e.detail, sizeof(e.detail),
                                 "Its history before %" PRIu64 " is not readable (it was created or "
                                 "compacted then).", floor);
                        snprintf(e.hint, sizeof(e.hint), "Read AS OF %" PRIu64 " or later.", floor);
                        send_row_error(s->c, &e);
                        return -ECANCELED;
                }
        } else if (s->txn != TXN_NONE && s->txn_snapshot && s->txn_ts) {
                /* (14) the block's one timestamp, while it is readable. */
                ts = s->txn_ts;
                if (ts < floor) {
                        const struct acat_item *it = acat_by_gid(ex->cat, floor_gid);

                        send_error(s->c, "40001", "could not serialize access: the transaction's "
                                   "snapshot at %" PRIu64 " is no longer readable in \"%s\" (its "
                                   "history starts at %" PRIu64 ")", ts, it ? it->name : "?", floor);
                        return -ECANCELED;
                }
        } else {
                ts = oracle_read_ts(ex->oracle);
                if (ts < floor)
                        ts = floor;     /* still includes every acknowledged write */
                /* (3) and the built-in rows of every acknowledged DDL: exec_stmt()
                 * waited until the fence was sent. */
                if (ex->fence && ex->fence->rq && ts < ex->fence->ts && stmt_reads_builtin_rows(st))
                        ts = ex->fence->ts;
                /* (6) A read at or past an input's upper waits in the controller for the
                 * next append.  When that is a held group, it would wait out the hold: a
                 * table read right after its CREATE (ts is the table's birth, above the
                 * tables' upper until the CREATE's own built-in rows go) took 4.8 ms.
                 * Such a read sends the held group now, ahead of its peek. */
                if (ex->hold && reads_at_upper(st, rd, ts))
                        hold_release(ex);
                if (s->txn != TXN_NONE && s->txn_snapshot)
                        s->txn_ts = ts;         /* (14) */
        }
        peek->timestamp = ts;
        /* (14) The block's snapshot holds each input it reads from its first read on
         * (adapter-readhold.c note 1), until the block ends (txn_set()). */
        if (!st->select.has_as_of && s->txn == TXN_OPEN && s->txn_snapshot &&
            (st->n_inputs || st->n_physical_inputs)) {
                r = read_hold_take(ex, &s->txn_hold, ts, st);
                if (r < 0)
                        return r;
        }
        if (!st->n_inputs && !st->n_physical_inputs) {
                r = exec_select_constant(s, peek);      /* (11) */
                if (r != -EOPNOTSUPP)
                        return r;
        }
        msg.peek = peek;
        msg.timeout_ms = ex->cfg.peek_timeout_ms;
        msg.chunk_bytes = ex->cfg.peek_chunk_bytes;
        len = coord__peek_request__get_packed_size(&msg);
        if (len > exec_frame_budget(ex)) {
                /* (2a) It could never be sent. */
                send_error(s->c, "54000", "the query's plan is %zu bytes encoded, over the %zu "
                           "bytes one request to the controller may hold (--max-frame-bytes "
                           "less %u)", len, exec_frame_budget(ex), EXEC_FRAME_SLACK);
                return -ECANCELED;
        }
        r = send_columns(s, peek);
        if (r < 0)
                return r;
        s->rows_out = 0;
        if (!request_new_sized(ex, COORD__MSG_TYPE__MSG_PEEK, &msg.base, len, peek_done, s))
                return -ENOMEM;
        s->waiting = true;
        return STMT_PARKED;
}

int exec_show_objects(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct acat_item *const *items;
        size_t n = acat_items(ex->cat, &items), rows = 0;
        struct pgcodec_column cols[2] = {
                { .name = "name", .type = ROW_TYPE_TEXT, .typmod = -1 },
                { .name = "type", .type = ROW_TYPE_TEXT, .typmod = -1 },
        };
        int r;

        r = pgwire_send_row_description(s->c, 2, cols);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                const char *vals[2];
                if (items[i]->builtin)
                        continue;
                if (!st->show_objects.all && items[i]->kind != st->show_objects.kind)
                        continue;
                vals[0] = items[i]->name;
                /* Materialize spells the kinds this way in SHOW OBJECTS (mz_objects.type). */
                vals[1] = items[i]->kind == SQL_OBJECT_MATERIALIZED_VIEW ? "materialized-view"
                                                                          : acat_kind_name(items[i]->kind);
                r = pgwire_send_data_row(s->c, 2, vals, NULL);
                if (r < 0)
                        return r;
                rows++;
        }
        snprintf(s->tag, sizeof(s->tag), "SELECT %zu", rows);
        return STMT_DONE;
}

static const struct {
        const char *name, *value;
} variables[] = {
        { "server_version", "15.0 (Coord)" },
        { "server_version_num", "150000" },
        { "server_encoding", "UTF8" },
        { "client_encoding", "UTF8" },
        { "datestyle", "ISO, MDY" },
        { "timezone", "UTC" },
        { "standard_conforming_strings", "on" },
        { "integer_datetimes", "on" },
        { "transaction_isolation", "strict serializable" },
        { "default_transaction_isolation", "strict serializable" },
        { "is_superuser", "off" },
        { "max_identifier_length", "63" },
};

/* (12) statement_timeout's value: milliseconds, or a number with a unit as PostgreSQL
 * takes it ("500ms", "5s", "1min", "2h", "1d"; a bare number is ms).  0 or -EINVAL. */
static int parse_timeout_ms(const char *v, uint32_t *ret)
{
        static const struct {
                const char *unit;
                uint64_t ms;
        } units[] = { { "", 1 }, { "ms", 1 }, { "s", 1000 }, { "min", 60000 }, { "h", 3600000 },
                      { "d", 86400000 } };
        char *end;
        unsigned long long n;

        while (*v == ' ')
                v++;
        if (!isdigit((unsigned char)*v))
                return -EINVAL;
        errno = 0;
        n = strtoull(v, &end, 10);
        if (errno)
                return -EINVAL;
        while (*end == ' ')
                end++;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (strcmp(end, units[i].unit) == 0) {
                        if (n > INT32_MAX / units[i].ms)
                                return -ERANGE;
                        *ret = (uint32_t)(n * units[i].ms);
                        return 0;
                }
        return -EINVAL;
}

/* As PostgreSQL shows it: "0", "500ms", "5s". */
static void format_timeout(uint32_t ms, char *buf, size_t size)
{
        if (ms == 0)
                snprintf(buf, size, "0");
        else if (ms % 1000 == 0)
                snprintf(buf, size, "%" PRIu32 "s", ms / 1000);
        else
                snprintf(buf, size, "%" PRIu32 "ms", ms);
}

/* SET / RESET: statement_timeout (12) is the one the adapter keeps; the others that
 * drivers send are accepted and change nothing. */
int exec_set_variable(struct session *s, struct sql_stmt *st)
{
        const struct sql_set_variable *sv = &st->set_variable;
        int r;

        if (strcmp(sv->name, "all") == 0 && sv->reset) {
                s->statement_timeout_ms = s->statement_timeout_default_ms;
                s->default_snapshot = false;
                return STMT_DONE;
        }
        if (strcmp(sv->name, "transaction") == 0) {
                /* SET TRANSACTION: the block's modes, as PostgreSQL takes them. */
                if (s->txn == TXN_NONE) {
                        txn_notice(s, "25P01", "SET TRANSACTION can only be used in transaction blocks");
                        return STMT_DONE;
                }
                if (st->txn_read_only == 0 && s->txn_read_only && (s->txn_read || s->n_txn_writes)) {
                        send_error(s->c, "25001", "transaction read-write mode must be set before any query");
                        return -ECANCELED;
                }
                if (st->txn_snapshot >= 0 && (s->txn_read || s->n_txn_writes)) {
                        send_error(s->c, "25001", "SET TRANSACTION ISOLATION LEVEL must be called "
                                                  "before any query");
                        return -ECANCELED;
                }
                if (st->txn_read_only >= 0)
                        s->txn_read_only = st->txn_read_only == 1;
                if (st->txn_snapshot >= 0)
                        s->txn_snapshot = st->txn_snapshot == 1;
                return STMT_DONE;
        }
        if (strcmp(sv->name, "transaction_isolation") == 0 ||
            strcmp(sv->name, "default_transaction_isolation") == 0) {
                /* (14) */
                bool dflt = sv->name[0] == 'd';
                int snap = sv->value ? sql_isolation_snapshot(sv->value) : 0;

                if (snap < 0) {
                        send_error(s->c, "22023", "invalid value for parameter \"%s\": \"%s\"",
                                   sv->name, sv->value);
                        return -ECANCELED;
                }
                if (dflt) {
                        s->default_snapshot = snap == 1;
                        return STMT_DONE;
                }
                if (s->txn == TXN_NONE) {
                        txn_notice(s, "25P01", "SET TRANSACTION can only be used in transaction blocks");
                        return STMT_DONE;
                }
                if (s->txn_read || s->n_txn_writes) {
                        send_error(s->c, "25001", "SET TRANSACTION ISOLATION LEVEL must be called "
                                                  "before any query");
                        return -ECANCELED;
                }
                s->txn_snapshot = snap == 1;
                return STMT_DONE;
        }
        if (strcmp(sv->name, "statement_timeout") != 0)
                return STMT_DONE;
        if (!sv->value) {       /* RESET, DEFAULT */
                s->statement_timeout_ms = s->statement_timeout_default_ms;
                return STMT_DONE;
        }
        r = parse_timeout_ms(sv->value, &s->statement_timeout_ms);
        if (r == -ERANGE) {
                send_error(s->c, "22023", "%s is outside the valid range for parameter "
                           "\"statement_timeout\" (0 .. %d)", sv->value, INT32_MAX);
                return -ECANCELED;
        }
        if (r < 0) {
                struct row_error e = { .position = 0 };

                row_error_set(&e, r, "22023", "invalid value for parameter \"statement_timeout\": "
                              "\"%s\"", sv->value);
                row_error_hint(&e, "Valid units for this parameter are \"ms\", \"s\", \"min\", "
                               "\"h\", and \"d\".");
                send_row_error(s->c, &e);
                return -ECANCELED;
        }
        return STMT_DONE;
}

/* The session's startup parameters: `-c statement_timeout=...` in options (libpq's
 * PGOPTIONS) sets the session's default (12).  Anything else there is ignored. */
void session_startup_options(struct session *s)
{
        const char *o = pgwire_conn_param(s->c, "options");
        static const char *const keys[] = { "-c statement_timeout=", "-cstatement_timeout=",
                                            "--statement_timeout=", "--statement-timeout=" };

        for (size_t i = 0; o && i < ELEMENTSOF(keys); i++) {
                const char *at = strstr(o, keys[i]);
                char value[32];
                size_t n;
                uint32_t ms;

                if (!at)
                        continue;
                at += strlen(keys[i]);
                n = strcspn(at, " ");
                if (n >= sizeof(value))
                        continue;
                memcpy(value, at, n);
                value[n] = '\0';
                if (parse_timeout_ms(value, &ms) == 0)
                        s->statement_timeout_ms = s->statement_timeout_default_ms = ms;
                else
                        log_info("startup_option_ignored", "peer=%s option=statement_timeout value=\"%s\"",
                                 pgwire_conn_peer(s->c), value);
        }
}

int exec_show_variable(struct session *s, struct sql_stmt *st)
{
        const char *name = st->show_variable.name;
        bool all = strcmp(name, "all") == 0;
        struct pgcodec_column col = { .name = name, .type = ROW_TYPE_TEXT, .typmod = -1 };
        struct pgcodec_column all_cols[2] = {
                { .name = "name", .type = ROW_TYPE_TEXT, .typmod = -1 },
                { .name = "setting", .type = ROW_TYPE_TEXT, .typmod = -1 },
        };
        size_t rows = 0;
        int r;

        char timeout[32];

        format_timeout(s->statement_timeout_ms, timeout, sizeof(timeout));
        if (!all && strcmp(name, "statement_timeout") == 0) {
                const char *v = timeout;

                r = pgwire_send_row_description(s->c, 1, &col);
                if (r >= 0)
                        r = pgwire_send_data_row(s->c, 1, &v, NULL);
                if (r < 0)
                        return r;
                snprintf(s->tag, sizeof(s->tag), "SHOW");
                return STMT_DONE;
        }
        if (!all) {
                for (size_t i = 0; i < ELEMENTSOF(variables); i++) {
                        if (strcmp(variables[i].name, name) != 0)
                                continue;
                        r = pgwire_send_row_description(s->c, 1, &col);
                        if (r >= 0)
                                r = pgwire_send_data_row(s->c, 1, &variables[i].value, NULL);
                        if (r < 0)
                                return r;
                        snprintf(s->tag, sizeof(s->tag), "SHOW");
                        return STMT_DONE;
                }
                send_error(s->c, "42704", "unrecognized configuration parameter \"%s\"", name);
                return -ECANCELED;
        }
        r = pgwire_send_row_description(s->c, 2, all_cols);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(variables); i++, rows++) {
                const char *vals[2] = { variables[i].name, variables[i].value };
                r = pgwire_send_data_row(s->c, 2, vals, NULL);
        }
        if (r >= 0) {
                const char *vals[2] = { "statement_timeout", timeout };
                r = pgwire_send_data_row(s->c, 2, vals, NULL);
        }
        if (r < 0)
                return r;
        snprintf(s->tag, sizeof(s->tag), "SHOW");
        return STMT_DONE;
}
