/* adapter-subscribe.c -- SUBSCRIBE [TO] relation [AS OF t] and COPY (SUBSCRIBE ...) TO
 * STDOUT (issue 33 item 3): a storage collection's contents at the as-of, then its
 * changes, time by time, until the client cancels or leaves or the relation is dropped.
 * docs/sql.md, "SUBSCRIBE".  Loop thread only.
 *
 * NOTES
 * (1) A subscription is a hold, then reads.  exec_subscribe() picks the as-of (AS OF, or
 *     the read timestamp a SELECT would take), puts a client hold at it in the catalog
 *     (adapter-hold.c, catalog.proto CatalogHold) and only once that is durable sends
 *     its first read: from then on neither a publication nor a restarted follower lets
 *     the input's bound pass the hold, so the controller's since stays at or below
 *     every time the subscription still reads (controller-server-subscribe.c note 26).
 * (2) Reads.  One SubscribeRead in flight per subscription, none while the client has
 *     more than EXEC_STREAM_QUEUED_MAX bytes queued (backpressure: the next read goes
 *     when the client drained, subscribe_drained()).  The first asks for the snapshot
 *     at the as-of (every row at the as-of, diff = its count); each answer carries
 *     whole times below `upto`, which is where the next read starts -- or, when one
 *     time's rows are more than a batch (`partial`), the first rows of time `upto`,
 *     and the next read resumes after the last of them.  An answer
 *     without progress (nothing final after the cursor yet) re-reads after
 *     SUB_POLL_MS, and so does a read the frontier ring says would find nothing new
 *     (sub_nothing_new()).  A read outlives a controller restart: the request is resent when
 *     the controller is back (adapter-exec.c note 4), as it changes nothing.
 * (3) The hold follows what was sent: once rows of times up to T went to the client,
 *     the hold may move to T (not further: a client that stops there can SUBSCRIBE
 *     again AS OF T).  It moves at most once per SUB_HOLD_ADVANCE_MS, one catalog commit
 *     in flight at a time, and only forward (sub_hold_advance()).
 * (4) Ends.  Cancel (57014), the client gone, the relation dropped (42P01), a failed
 *     read: the hold leaves the in-memory table at once, and its record is deleted by a
 *     commit submitted after any put of it in flight has returned (sub_release()), so
 *     a put never lands after its delete.  The subscription is freed when nothing of it
 *     is in flight.
 */
#include "adapter-exec-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-commit.h"
#include "adapter-oracle.h"
#include "catalog/catalog.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "ring/fring.h"
#include "util.h"

#define SUB_POLL_MS 10u
#define SUB_HOLD_ADVANCE_MS 1000u
#define SUB_OID_NUMERIC 1700u
#define SUB_OID_INT8 20u

struct subscription {
        struct exec *ex;
        struct session *s;              /* NULL once ended */
        uint64_t gid;
        char *name;
        size_t ncols;
        bool copy;
        uint64_t as_of;
        uint64_t cursor;                /* (2) the next read's lo */
        bool snapshot_done;
        uint8_t *resume_row;            /* (2) time cursor was sent up to this row */
        size_t resume_len;
        bool resume;
        uint64_t hold_id;
        bool hold_durable;              /* its record was committed */
        bool hold_deleted;              /* its delete was submitted */
        uint64_t hold_at;               /* the committed frontier */
        uint64_t hold_next;             /* the frontier of the put in flight */
        uint64_t hold_commit_ms;
        uint64_t last_ts;               /* (3) the last time sent */
        bool commit_out;
        struct acat_hold_rec rec;       /* the record of the commit in flight */
        struct catalog_op op;
        struct request *rq;
        Coord__SubscribeBatch *batch;   /* (2) being sent, from row batch_i on */
        size_t batch_i;
        bool batch_progress;
        struct loop_timer *timer;
        bool ended;
        uint64_t rows_out;
};

static void sub_read(struct subscription *sub);

static struct loop *sub_loop(const struct subscription *sub)
{
        return node_loop(sub->ex->node);
}

static void sub_free(struct subscription *sub)
{
        if (sub->batch)
                coord__subscribe_batch__free_unpacked(sub->batch, NULL);
        acat_hold_rec_done(&sub->rec);
        free(sub->resume_row);
        free(sub->name);
        free(sub);
}

static void hold_committed(void *ctx, int r, uint64_t seq);

static int sub_commit(struct subscription *sub, bool del, uint64_t frontier)
{
        int r;

        acat_hold_rec_done(&sub->rec);
        if (del) {
                sub->rec.key[0] = 'h';
                be64_put(sub->rec.key + 1, sub->hold_id);
        } else {
                r = acat_hold_record(sub->ex->cat, sub->hold_id, frontier, &sub->rec);
                if (r < 0)
                        return r;
        }
        sub->op = (struct catalog_op){ .kind = del ? CATALOG_OP_DELETE : CATALOG_OP_PUT,
                                       .cf = CATALOG_CF_STATE, .key = sub->rec.key, .key_len = 9,
                                       .value = sub->rec.value, .value_len = sub->rec.value_len };
        r = committer_submit(sub->ex->committer, &sub->op, 1, hold_committed, sub);
        if (r < 0)
                return r;
        sub->commit_out = true;
        sub->hold_next = frontier;
        sub->hold_commit_ms = now_ms();
        return 0;
}

/* (4) Free sub, or delete its hold's record first, once nothing of it is in flight. */
static void sub_release(struct subscription *sub)
{
        if (!sub->ended || sub->rq || sub->commit_out)
                return;
        if (sub->hold_durable && !sub->hold_deleted) {
                sub->hold_deleted = true;
                if (sub_commit(sub, true, 0) == 0)
                        return;
                log_warn("subscribe_hold_delete_failed", "hold=%" PRIu64, sub->hold_id);
        }
        if (sub->hold_deleted)
                log_info("subscribe_hold_released", "hold=%" PRIu64 " gid=%" PRIu64 " frontier=%" PRIu64,
                         sub->hold_id, sub->gid, sub->hold_at);
        sub_free(sub);
}

/* (4) The statement ends: with an error (sqlstate != NULL) unless the client is gone. */
static void sub_end(struct subscription *sub, const char *sqlstate, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void sub_end(struct subscription *sub, const char *sqlstate, const char *fmt, ...)
{
        struct session *s = sub->s;

        if (sub->ended)
                return;
        sub->ended = true;
        sub->s = NULL;
        acat_hold_remove(sub->ex->cat, sub->hold_id);
        loop_timer_cancel(sub_loop(sub), sub->timer);
        sub->timer = NULL;
        log_info("subscribe_ended", "gid=%" PRIu64 " rows=%" PRIu64 " last_ts=%" PRIu64 " sqlstate=%s",
                 sub->gid, sub->rows_out, sub->last_ts, sqlstate ? sqlstate : "none");
        if (s) {
                s->sub = NULL;
                if (sqlstate && !s->gone) {
                        char msg[256];
                        va_list ap;

                        va_start(ap, fmt);
                        vsnprintf(msg, sizeof(msg), fmt, ap);
                        va_end(ap);
                        send_error(s->c, sqlstate, "%s", msg);
                }
                s->waiting = false;
                s->next = SIZE_MAX;
                s->stmt = sql_stmt_free(s->stmt);
                session_resume(s);
        }
        sub_release(sub);
}

/* (3) */
static void sub_hold_advance(struct subscription *sub)
{
        int r;

        if (sub->ended || sub->commit_out || !sub->hold_durable || sub->last_ts <= sub->hold_at ||
            now_ms() - sub->hold_commit_ms < SUB_HOLD_ADVANCE_MS)
                return;
        r = sub_commit(sub, false, sub->last_ts);
        if (r < 0)
                log_warn_errno(r, "subscribe_hold_advance_failed", "hold=%" PRIu64, sub->hold_id);
}

static int sub_columns(struct subscription *sub, const struct acat_item *it)
{
        struct session *s = sub->s;
        struct pgcodec_column *cols = calloc(it->n_columns + 2, sizeof(*cols));
        int r;

        if (!cols)
                return -ENOMEM;
        cols[0] = (struct pgcodec_column){ .name = "mz_timestamp", .type = SUB_OID_NUMERIC, .typmod = -1 };
        cols[1] = (struct pgcodec_column){ .name = "mz_diff", .type = SUB_OID_INT8, .typmod = -1 };
        for (size_t i = 0; i < it->n_columns; i++)
                cols[i + 2] = (struct pgcodec_column){ .name = it->columns[i].name,
                                                       .type = (uint32_t)it->columns[i].type, .typmod = -1 };
        if (sub->copy)
                r = pgwire_send_copy_out(s->c, (unsigned)(it->n_columns + 2));
        else
                r = pgwire_send_row_description(s->c, (unsigned)(it->n_columns + 2), cols);
        free(cols);
        return r;
}

static void hold_committed(void *ctx, int r, uint64_t seq)
{
        struct subscription *sub = ctx;
        const struct acat_item *it;

        (void)seq;
        sub->commit_out = false;
        if (r < 0) {
                log_warn_errno(r, "subscribe_hold_commit_failed", "hold=%" PRIu64, sub->hold_id);
                if (!sub->hold_durable && !sub->hold_deleted && !sub->ended) {
                        /* Its first put: the statement fails (and sub is released). */
                        sub_end(sub, io_sqlstate(r), "could not record the subscription's hold: %s",
                                strerror(-r));
                        return;
                }
                sub_release(sub);
                return;
        }
        if (sub->hold_deleted) {
                sub->hold_durable = false;
                sub_release(sub);       /* the delete is durable */
                return;
        }
        if (sub->hold_durable) {
                (void)acat_hold_set(sub->ex->cat, sub->hold_id, sub->hold_next);
                sub->hold_at = sub->hold_next;
                sub_release(sub);
                return;
        }
        sub->hold_durable = true;
        sub->hold_at = sub->hold_next;
        if (sub->ended) {
                sub_release(sub);
                return;
        }
        log_info("subscribe_started", "gid=%" PRIu64 " as_of=%" PRIu64 " hold=%" PRIu64, sub->gid,
                 sub->as_of, sub->hold_id);
        it = acat_by_gid(sub->ex->cat, sub->gid);
        if (!it) {
                sub_end(sub, "42P01", "relation \"%s\" was dropped", sub->name);
                return;
        }
        if (sub_columns(sub, it) < 0) {
                sub_end(sub, NULL, "%s", "");
                return;
        }
        sub_read(sub);
}

/* COPY's text format: tab between fields, \N for NULL, backslash escapes. */
static int copy_line(char **buf, size_t *cap, size_t *len, const char *v, size_t n, bool last)
{
        size_t need = *len + 2 * (v ? n : 2) + 2;

        if (need > *cap) {
                size_t c = need * 2;
                char *p = realloc(*buf, c);

                if (!p)
                        return -ENOMEM;
                *buf = p;
                *cap = c;
        }
        if (!v) {
                memcpy(*buf + *len, "\\N", 2);
                *len += 2;
        }
        for (size_t i = 0; v && i < n; i++) {
                char ch = v[i], esc = ch == '\\' ? '\\' : ch == '\t' ? 't' : ch == '\n' ? 'n' : ch == '\r' ? 'r' : 0;

                if (esc) {
                        (*buf)[(*len)++] = '\\';
                        (*buf)[(*len)++] = esc;
                } else {
                        (*buf)[(*len)++] = ch;
                }
        }
        (*buf)[(*len)++] = last ? '\n' : '\t';
        return 0;
}

/* (2) The batch's rows to the client, (time, diff, columns...) each, until its output
 * passes the mark: 1 when all went, 0 when waiting for the client to drain, -errno. */
static int sub_emit(struct subscription *sub)
{
        const Coord__SubscribeBatch *b = sub->batch;
        size_t nc = sub->ncols + 2;
        _cleanup_free_ struct row_datum *d = calloc(nc, sizeof(*d));
        _cleanup_free_ const char **vals = calloc(nc, sizeof(*vals));
        _cleanup_free_ size_t *lens = calloc(nc, sizeof(*lens));
        _cleanup_free_ char (*scratch)[ROW_TEXT_SCRATCH] = calloc(nc, ROW_TEXT_SCRATCH);
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;

        if (!d || !vals || !lens || !scratch)
                return -ENOMEM;
        for (; sub->batch_i < b->n_rows; sub->batch_i++) {
                size_t i = sub->batch_i, len = 0;
                int k = row_decode(b->rows[i].data, b->rows[i].len, d + 2, sub->ncols), r;

                if (k != (int)sub->ncols)
                        return -EBADMSG;
                if (pgwire_conn_output_queued(sub->s->c) > EXEC_STREAM_QUEUED_MAX) {
                        r = pgwire_notify_drained(sub->s->c, EXEC_STREAM_QUEUED_MAX);
                        if (r == 0) {
                                sub->ex->stream_waits++;
                                return 0;       /* subscribe_drained() goes on */
                        }
                        if (r < 0)
                                return -ECONNRESET;
                }
                lens[0] = (size_t)snprintf(scratch[0], ROW_TEXT_SCRATCH, "%" PRIu64, b->times[i]);
                lens[1] = (size_t)snprintf(scratch[1], ROW_TEXT_SCRATCH, "%" PRId64, b->diffs[i]);
                vals[0] = scratch[0];
                vals[1] = scratch[1];
                for (size_t j = 2; j < nc; j++)
                        if (row_datum_format(&d[j], scratch[j], &vals[j], &lens[j]) == 1)
                                vals[j] = NULL;
                if (sub->copy) {
                        for (size_t j = 0; j < nc; j++)
                                if (copy_line(&line, &cap, &len, vals[j], lens[j], j + 1 == nc) < 0)
                                        return -ENOMEM;
                        r = pgwire_send_copy_data(sub->s->c, line, len);
                } else {
                        r = pgwire_send_data_row(sub->s->c, (unsigned)nc, vals, lens);
                }
                if (r < 0)
                        return -ECONNRESET;
                sub->rows_out++;
                if (b->times[i] > sub->last_ts)
                        sub->last_ts = b->times[i];
        }
        return 1;
}

static void on_sub_timer(struct loop *l, void *userdata);

/* (2) Send the rest of the batch; once it is all out, the next read. */
static void sub_flush(struct subscription *sub)
{
        int r = sub_emit(sub);

        if (r < 0) {
                sub_end(sub, NULL, "%s", "");
                return;
        }
        (void)pgwire_flush(sub->s->c);
        sub_hold_advance(sub);
        if (r == 0)
                return;
        coord__subscribe_batch__free_unpacked(sub->batch, NULL);
        sub->batch = NULL;
        if (sub->batch_progress)
                sub_read(sub);
        else if (loop_timer_add(sub_loop(sub), SUB_POLL_MS * 1000000ull, on_sub_timer, sub, &sub->timer) < 0)
                sub->timer = NULL;
}

static void on_sub_timer(struct loop *l, void *userdata)
{
        struct subscription *sub = userdata;

        (void)l;
        sub->timer = NULL;
        sub_hold_advance(sub);
        sub_read(sub);
}

static void sub_error_reply(struct subscription *sub, const Coord__Envelope *reply)
{
        Coord__Error *e = coord__error__unpack(NULL, reply->payload.len, reply->payload.data);
        const char *st = e && *e->sqlstate ? e->sqlstate : "XX000";

        if (!acat_by_gid(sub->ex->cat, sub->gid) || strcmp(st, "42P01") == 0)
                sub_end(sub, "42P01", "relation \"%s\" was dropped", sub->name);
        else
                sub_end(sub, st, "%s", e && e->message ? e->message : "subscription read failed");
        if (e)
                coord__error__free_unpacked(e, NULL);
}

/* (2) */
static void read_done(struct exec *ex, struct request *rq, const Coord__Envelope *reply)
{
        struct subscription *sub = rq->ctx;
        Coord__SubscribeBatch *b = NULL;

        sub->rq = NULL;
        if (sub->ended) {
                sub_release(sub);
                return;
        }
        if (reply->type == COORD__MSG_TYPE__MSG_ERROR) {
                sub_error_reply(sub, reply);
                return;
        }
        if (reply->type == COORD__MSG_TYPE__MSG_SUBSCRIBE_BATCH)
                b = coord__subscribe_batch__unpack(NULL, reply->payload.len, reply->payload.data);
        if (!b || b->n_times != b->n_rows || b->n_diffs != b->n_rows || b->upto < sub->cursor) {
                if (b)
                        coord__subscribe_batch__free_unpacked(b, NULL);
                sub_end(sub, "XX000", "malformed subscription batch from the controller");
                return;
        }
        if (!acat_by_gid(ex->cat, sub->gid)) {
                coord__subscribe_batch__free_unpacked(b, NULL);
                sub_end(sub, "42P01", "relation \"%s\" was dropped", sub->name);
                return;
        }
        if (b->partial && (!b->n_rows || b->times[b->n_rows - 1] != b->upto)) {
                coord__subscribe_batch__free_unpacked(b, NULL);
                sub_end(sub, "XX000", "malformed subscription batch from the controller");
                return;
        }
        sub->batch = b;
        sub->batch_i = 0;
        sub->batch_progress = b->upto > sub->cursor || b->partial;
        free(sub->resume_row);
        sub->resume_row = NULL;
        sub->resume_len = 0;
        sub->resume = b->partial;
        if (b->partial) {
                /* The time upto goes on in the next batch, after this one's last row. */
                const ProtobufCBinaryData *last = &b->rows[b->n_rows - 1];

                sub->resume_row = malloc(last->len ? last->len : 1);
                if (!sub->resume_row) {
                        coord__subscribe_batch__free_unpacked(b, NULL);
                        sub->batch = NULL;
                        sub_end(sub, "53200", "out of memory");
                        return;
                }
                if (last->len)
                        memcpy(sub->resume_row, last->data, last->len);
                sub->resume_len = last->len;
                sub->cursor = b->upto;
        } else if (b->upto > sub->cursor) {
                sub->snapshot_done = true;
                sub->cursor = b->upto;
        }
        sub_flush(sub);
}

/* (2) Whether the frontier ring shows nothing final at or after the cursor yet (a
 * table's upper is max(its own, the tables' frontier, gid 1)): then the read waits
 * for the next poll instead of asking the controller.  Unknown: ask. */
static bool sub_nothing_new(struct subscription *sub)
{
        struct fring_reader *rd = node_ring(sub->ex->node);
        const struct acat_item *it = acat_by_gid(sub->ex->cat, sub->gid);
        struct fring_frontier f, t;
        uint64_t upper;

        if (!rd || !it || fring_lookup(rd, sub->gid, &f) < 0)
                return false;
        upper = f.upper;
        if (it->kind == SQL_OBJECT_TABLE && fring_lookup(rd, ACAT_GID_OBJECTS, &t) == 0 && t.upper > upper)
                upper = t.upper;
        return upper <= sub->cursor;
}

static void sub_read(struct subscription *sub)
{
        Coord__SubscribeRead m = COORD__SUBSCRIBE_READ__INIT;
        int r;

        if (sub->ended || sub->rq || sub->timer || sub->batch || !sub->s)
                return;
        if (pgwire_conn_is_closed(sub->s->c)) {
                /* The client closed while its statement runs: pgwire tells only once
                 * the request is done (adapter-pgwire.c note 2). */
                sub_end(sub, NULL, "%s", "");
                return;
        }
        r = pgwire_notify_drained(sub->s->c, EXEC_STREAM_QUEUED_MAX);
        if (r == 0) {
                sub->ex->stream_waits++;
                return;         /* subscribe_drained() goes on */
        }
        if (r < 0)
                return;         /* closing: pg_disconnect() ends it */
        if (sub->snapshot_done && !sub->resume && sub_nothing_new(sub)) {
                if (loop_timer_add(sub_loop(sub), SUB_POLL_MS * 1000000ull, on_sub_timer, sub,
                                   &sub->timer) < 0)
                        sub->timer = NULL;
                return;
        }
        m.gid = sub->gid;
        m.lo = sub->cursor;
        m.snapshot = !sub->snapshot_done;
        m.resume = sub->resume;
        m.after_row = (ProtobufCBinaryData){ .len = sub->resume_len, .data = sub->resume_row };
        m.max_bytes = sub->ex->cfg.peek_chunk_bytes ? sub->ex->cfg.peek_chunk_bytes : EXEC_STREAM_QUEUED_MAX;
        sub->rq = request_new(sub->ex, COORD__MSG_TYPE__MSG_SUBSCRIBE_READ, &m.base, read_done, sub);
        if (!sub->rq)
                sub_end(sub, "53200", "out of memory");
}

void subscribe_drained(struct session *s)
{
        if (s->sub && s->sub->batch)
                sub_flush(s->sub);
        else if (s->sub)
                sub_read(s->sub);
}

bool subscribe_cancel(struct session *s, const char *why)
{
        struct subscription *sub = s->sub;

        log_info("query_cancelled", "peer=%s reason=\"%s\" subscribe=1", pgwire_conn_peer(s->c), why);
        sub_end(sub, "57014", "canceling statement due to %s", why);
        return true;
}

void subscribe_gone(struct session *s)
{
        s->gone = true;
        sub_end(s->sub, NULL, "%s", "");
}

/* The as-of's floor: the input's committed (or in-flight) bound and its since in the
 * ring, as exec_select() takes them. */
static uint64_t sub_floor(struct exec *ex, const struct acat_item *it)
{
        struct fring_reader *rd = node_ring(ex->node);
        struct fring_frontier f;
        uint64_t floor = it->has_bound ? it->bound : 0;

        if (it->pending_bound > floor)
                floor = it->pending_bound;
        if (rd && fring_lookup(rd, it->gid, &f) == 0 && f.since > floor)
                floor = f.since;
        return floor;
}

/* (1) */
int exec_subscribe(struct session *s, struct sql_stmt *st)
{
        struct exec *ex = s->ex;
        const struct acat_item *it = acat_by_gid(ex->cat, st->subscribe.id);
        struct subscription *sub;
        struct row_error e = { .position = 0 };
        uint64_t floor, ts;
        int r;

        if (s->extended) {
                send_error(s->c, "0A000", "SUBSCRIBE is only supported in a simple query");
                return -ECANCELED;
        }
        if (!it) {
                send_error(s->c, "42P01", "relation \"%s\" does not exist", st->subscribe.name);
                return -ECANCELED;
        }
        floor = sub_floor(ex, it);
        if (st->subscribe.has_as_of) {
                ts = st->subscribe.as_of;
        } else {
                ts = oracle_read_ts(ex->oracle);
                if (ts < floor)
                        ts = floor;
        }
        sub = calloc(1, sizeof(*sub));
        if (!sub)
                return -ENOMEM;
        sub->ex = ex;
        sub->s = s;
        sub->gid = it->gid;
        sub->ncols = it->n_columns;
        sub->copy = st->subscribe.copy;
        sub->as_of = sub->cursor = sub->last_ts = ts;
        sub->name = strdup(it->name);
        if (!sub->name) {
                sub_free(sub);
                return -ENOMEM;
        }
        if (ts < floor) {
                sub_free(sub);
                row_error_set(&e, -EDOM, "55000", "cannot subscribe to \"%s\" as of %" PRIu64
                              ": its history starts at %" PRIu64, it->name, ts, floor);
                row_error_hint(&e, "Subscribe AS OF %" PRIu64 " or later.", floor);
                send_row_error(s->c, &e);
                return -ECANCELED;
        }
        r = acat_hold_add(ex->cat, it->gid, ts, node_incarnation(ex->node), &sub->hold_id, &sub->rec, &e);
        if (r < 0) {
                sub_free(sub);
                if (r == -ENOMEM)
                        return r;
                send_row_error(s->c, &e);
                return -ECANCELED;
        }
        sub->op = (struct catalog_op){ .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_STATE, .key = sub->rec.key,
                                       .key_len = 9, .value = sub->rec.value, .value_len = sub->rec.value_len };
        r = committer_submit(ex->committer, &sub->op, 1, hold_committed, sub);
        if (r < 0) {
                acat_hold_remove(ex->cat, sub->hold_id);
                sub_free(sub);
                return r;
        }
        sub->commit_out = true;
        sub->hold_next = ts;
        sub->hold_commit_ms = now_ms();
        s->sub = sub;
        s->waiting = true;
        return STMT_PARKED;
}

size_t exec_holds(const struct exec *ex)
{
        return acat_n_holds(ex->cat);
}
