/* controller-server-peek.c -- peeks: reading at ts, evaluating, answering in chunks,
 * the live status relations, and big peeks in the peek thread.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (5) Peeks.  Every peek in flight is a struct peek on s->peeks and an execution hold:
 *     compaction (6) never moves an input's since past a peek's ts.  A peek whose input
 *     is not readable yet (ts >= its effective upper, (10)) is parked; the parked peeks
 *     are retried after every append and drop in arrival order, and a parked peek's
 *     timer answers 57014 if the upper never passes ts.  A peek reads its inputs at ts
 *     (storage_read(); a table at min(ts, stored upper - 1), (10)) and evaluates its plan
 *     (eval_peek()) in one loop turn, unless (18) hands it to the thread.  With
 *     chunk_bytes > 0 the answer STREAMS: the evaluated result stays on the peek (pk->out)
 *     and so does its hold, until the last chunk; each MSG_PEEK_NEXT sends the next one
 *     (peek_send_chunk(), O(chunk) a turn).  A stream ends at its last chunk, a PeekNext
 *     with cancel, its peer's connection going (parked and streaming peeks are dropped
 *     unanswered), or with 57014 when not pulled for CSERVER_STREAM_IDLE_MS.  A peek's
 *     dataflow holds at most --peek-memory-limit-mb (controller-dataflow.c note 6); past
 *     it the peek fails with 53200.  docs/wire.md, "Streamed reads".
 *
 * (18) Big peeks in a thread.  A peek that reads PEEK_BG_MIN_UPDATES updates or more, or
 *     whose joined inputs' updates multiply to that, runs in the peek thread (struct
 *     bgpeek, peek_try_bg()): the loop makes a storage_reader per collection it reads
 *     (controller-storage-read.c NOTE 15) and copies what only the loop may read (an
 *     index's arrangement, a live relation's state; an index read below its since reads
 *     its plan over readers of its collections, struct bgsub); the thread feeds and steps
 *     the dataflow and sorts the result (peek_prepare()), touching only its job.  The
 *     peek stays on s->peeks as an execution hold (5), with no timer, so
 *     server_peeks_wake() passes it by; server_peek_cancel() sets its job's stop flag,
 *     which the thread reads between inputs.  One thread, jobs in arrival order.  The
 *     answer is the loop's at the hand-off: the readers and copies hold that moment's
 *     state, and contents at ts do not change once upper > ts.
 *
 * (21) Live status relations (builtins.h): coord_sources (one row per source: its
 *     offset, its data upper, running | finished | error and why) and coord_refreshes
 *     (one row per refresh view: the last refresh its durable upper passed, and the
 *     next, the first at or after that upper).  No collection holds them: a peek that reads one gets the
 *     loop's state when it is fed (live_feed(), always on the loop), whatever its
 *     timestamp; nothing maintained may read them (the adapter refuses, 0A000).
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"
#include "controller-dataflow.h"
#include "controller-eval.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "refresh.h"
#include "row/row.h"
#include "util.h"

/* A peek whose evaluation holds the loop this long is logged (peek_slow, (5)). */
#define PEEK_SLOW_US 20000u
/* A stream not pulled for this long is ended with 57014 (5). */
#define CSERVER_STREAM_IDLE_MS 60000ull
/* A peek reading this many stored updates or more is evaluated in the peek thread (18). */
#define PEEK_BG_MIN_UPDATES 4096u
/* The peek thread's nice value (Linux: per thread). */
#define PEEK_THREAD_NICE 19
/* server_plan_cost() looks this deep, then assumes the worst. */
#define PEEK_PLAN_MAX_DEPTH 256u

/* The peek thread (18): todo and done under lock, FIFO. */
struct peek_worker {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct bgpeek *todo, **todo_tail, *done, **done_tail;
        bool stop;
        uint32_t delay_ms;              /* test hook */
        struct loop_waker *waker;       /* a job is done */
};

/* ---- Peeks (5) ---------------------------------------------------------------------- */

void server_peek_free(struct peek *pk)
{
        struct cserver *s;

        if (!pk)
                return;
        assert(!pk->bg);                /* the thread's until it hands it back (18) */
        s = pk->srv;
        if (pk->timer) {
                loop_timer_cancel(s->loop, pk->timer);
                s->n_parked--;
        }
        if (pk->streaming)
                s->n_streaming--;
        loop_timer_cancel(s->loop, pk->idle);
        eval_batch_done(&pk->out);
        free(pk->order);
        free(pk->d);
        free(pk->rows);
        free(pk->counts);
        if (pk->prev)
                pk->prev->next = pk->next;
        else
                s->peeks_head = pk->next;
        if (pk->next)
                pk->next->prev = pk->prev;
        else
                s->peeks_tail = pk->prev;
        s->n_peeks--;
        dataflow_free(pk->df);
        if (pk->req)
                coord__peek_request__free_unpacked(pk->req, NULL);
        free(pk);
}

/* End pk without an answer: now, or -- in the peek thread -- when its job is back, the
 * thread told to stop at its next check (18). */
void server_peek_cancel(struct peek *pk)
{
        if (pk->bg) {
                pk->cancelled = true;
                atomic_store_explicit(&pk->bg->stop, true, memory_order_relaxed);
        } else {
                server_peek_free(pk);
        }
}

/* The lowest ts of a peek in flight on gid (an execution hold), or UINT64_MAX. */
uint64_t server_peeks_hold(const struct cserver *s, uint64_t gid)
{
        uint64_t m = UINT64_MAX;

        for (const struct peek *pk = s->peeks_head; pk; pk = pk->next) {
                if (!pk->df || pk->ts >= m)
                        continue;
                for (size_t i = 0; i < dataflow_n_inputs(pk->df); i++)
                        if (dataflow_input_id(pk->df, i) == gid)
                                m = pk->ts;
        }
        return m;
}

struct snapshot_emit {
        eval_emit_fn emit;
        void *userdata;
};

static int snapshot_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct snapshot_emit *se = userdata;

        return se->emit(se->userdata, row, len, count);
}

/* Where the contents of id at ts are stored (10): a table at ts in [stored upper, T)
 * has the contents it had at stored upper - 1, and none when it was never written
 * (stored upper == since).  1 with *ret_ts to read, 0 when empty, -EAGAIN when not
 * readable at ts yet (peek_try() waits for it first), or -errno. */
static int snapshot_at(struct cserver *s, uint64_t id, uint64_t ts, uint64_t *ret_ts)
{
        struct storage_info info;
        int r;

        r = storage_get_info(s->st, id, &info);
        if (r < 0)
                return r;
        if ((info.kind == STORAGE_KIND_TABLE || info.kind == STORAGE_KIND_MV) &&
            ts >= info.frontiers.upper && ts >= info.frontiers.since) {
                /* (10), (13): readable above its durable upper, unchanged since. */
                uint64_t readable = info.kind == STORAGE_KIND_TABLE
                                            ? server_tables_frontier(s)
                                            : server_mv_upper(s, id, info.frontiers.upper);
                if (ts >= readable)
                        return -EAGAIN;
                if (info.frontiers.upper <= info.frontiers.since)
                        return 0;
                ts = info.frontiers.upper - 1;
        }
        *ret_ts = ts;
        return 1;
}

/* The contents of id at ts (snapshot_at()). */
int server_storage_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                            void *emit_userdata)
{
        struct cserver *s = userdata;
        struct snapshot_emit se = { emit, emit_userdata };
        int r;

        r = snapshot_at(s, id, ts, &ts);
        if (r <= 0)
                return r;
        return storage_read(s->st, id, ts, snapshot_row, &se, NULL);
}

/* ORDER BY keys of a peek, over decoded rows (issue 4). */
struct sort_ctx {
        const Coord__Plan__Peek *peek;
        const struct row_datum *d;      /* n_rows x arity */
        size_t arity;
        const struct eval_batch *out;
};

static _Thread_local struct sort_ctx *sort_ctx_current;  /* qsort has no userdata */

static int sort_cmp(const void *x, const void *y)
{
        const struct sort_ctx *c = sort_ctx_current;
        size_t i = *(const size_t *)x, j = *(const size_t *)y;

        for (size_t k = 0; k < c->peek->n_order_by; k++) {
                const Coord__Plan__SortKey *sk = c->peek->order_by[k];
                const struct row_datum *a = &c->d[i * c->arity + sk->column];
                const struct row_datum *b = &c->d[j * c->arity + sk->column];
                bool an = a->kind == ROW_KIND_NULL, bn = b->kind == ROW_KIND_NULL;
                int r;

                if (an || bn) {
                        if (an && bn)
                                continue;
                        r = an ? 1 : -1;                /* NULL sorts as the largest */
                        if (sk->nulls_first != sk->descending)
                                r = -r;
                        if (sk->descending)
                                r = -r;
                        return r;
                }
                r = row_datum_compare(a, b);
                if (r)
                        return sk->descending ? -r : r;
        }
        /* ties in row byte order: deterministic */
        return row_compare(c->out->updates[i].row, c->out->updates[i].len,
                           c->out->updates[j].row, c->out->updates[j].len);
}

enum { PEEK_DONE, PEEK_WAIT, PEEK_STREAM, PEEK_BG /* in the peek thread (18) */ };

/* Send the next chunk of pk's result (5): from pk->pos on, rows until their bytes reach
 * pk->chunk_bytes (at least one row; everything when chunk_bytes is 0).  PEEK_STREAM
 * when rows remain (the PeekResult said more = true), else PEEK_DONE -- the last chunk
 * went, or the peek was answered with an error, or the peer is gone. */
static int peek_send_chunk(struct cserver *s, struct peek *pk)
{
        Coord__PeekResult m = COORD__PEEK_RESULT__INIT;
        struct row_arena proj = ROW_ARENA_INIT;
        size_t n = 0, bytes = 0;
        struct row_error e;
        int r, ret = PEEK_DONE;

        for (; pk->pos < pk->out.n && pk->take > 0; pk->pos++) {
                const struct eval_update *u = &pk->out.updates[pk->order[pk->pos]];
                uint64_t cnt;

                if (pk->chunk_bytes && n > 0 && bytes >= pk->chunk_bytes)
                        break;
                assert(u->diff > 0);
                cnt = (uint64_t)u->diff;
                if (pk->skip >= cnt) {
                        pk->skip -= cnt;
                        continue;
                }
                cnt -= pk->skip;
                pk->skip = 0;
                if (cnt > pk->take)
                        cnt = pk->take;
                pk->take -= cnt;
                if (GROW_ARRAY(pk->rows, pk->rows_cap, n + 1) < 0 ||
                    GROW_ARRAY(pk->counts, pk->counts_cap, n + 1) < 0)
                        goto oom;
                if (pk->keep < pk->arity) {
                        const struct row_datum *d = &pk->d[pk->order[pk->pos] * pk->arity];
                        int64_t len = row_encoded_size(d, pk->keep);
                        uint8_t *buf = len >= 0 ? row_arena_alloc(&proj, (size_t)len) : NULL;
                        if (!buf)
                                goto oom;
                        pk->rows[n].len = row_encode_into(d, pk->keep, buf);
                        pk->rows[n].data = buf;
                } else {
                        pk->rows[n].data = (uint8_t *)u->row;
                        pk->rows[n].len = u->len;
                }
                bytes += pk->rows[n].len + 12;          /* tags, lengths, the count */
                pk->counts[n++] = cnt;
        }
        m.rows = pk->rows;
        m.counts = pk->counts;
        m.n_rows = m.n_counts = n;
        m.more = pk->pos < pk->out.n && pk->take > 0;
        m.chunk = pk->chunks;
        assert(!m.more || pk->chunk_bytes);
        r = server_out_send(s, pk->from, COORD__MSG_TYPE__MSG_PEEK_RESULT, pk->request_id, &m.base);
        if (r == -EMSGSIZE) {
                row_error_set(&e, r, "54000", "the result of the read (%zu distinct rows, %zu bytes) "
                              "is larger than a frame", n,
                              protobuf_c_message_get_packed_size(&m.base));
                server_reply_error(s, pk->from, pk->request_id, &e);
                goto out;
        }
        if (r < 0) {
                if (r != -ENOTCONN && server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn_errno(r, "reply_failed", "role=%s type=peek_result request_id=%llu chunk=%u",
                                       node_role_name(node_peer_role(pk->from)), (unsigned long long)pk->request_id,
                                       pk->chunks);
                goto out;
        }
        pk->chunks++;
        s->peek_chunks++;
        if (m.more) {
                ret = PEEK_STREAM;
                goto out;
        }
        s->peeks_answered++;
        if (pk->chunks > 1)
                s->peek_streams++;
        goto out;
oom:
        row_error_oom(&e);
        server_reply_error(s, pk->from, pk->request_id, &e);
out:
        row_arena_done(&proj);
        return ret;
}

/* Make pk's result `out`, which it takes over, ready to send: validate the ORDER BY,
 * decode, sort.  Touches pk alone (the peek thread runs it too, (18)).  0, or -errno
 * with e. */
static int peek_prepare(struct peek *pk, struct eval_batch *out, struct row_error *e)
{
        const Coord__Plan__Peek *peek = pk->req->peek;

        pk->out = *out;
        *out = EVAL_BATCH_INIT;
        out = &pk->out;
        pk->arity = pk->keep = dataflow_arity(pk->df);
        pk->skip = 0;
        pk->take = UINT64_MAX;
        if (peek->output_arity && peek->output_arity < pk->arity)
                pk->keep = peek->output_arity;
        for (size_t k = 0; k < peek->n_order_by; k++)
                if (peek->order_by[k]->column >= pk->arity)
                        return row_error_set(e, -EINVAL, "XX000", "invalid plan: ORDER BY column %u of %zu",
                                             peek->order_by[k]->column, pk->arity);
        if (peek->limit) {
                pk->skip = peek->limit->offset;
                pk->take = peek->limit->count;
        }
        pk->order = calloc(out->n ? out->n : 1, sizeof(*pk->order));
        if (!pk->order)
                return row_error_oom(e);
        for (size_t i = 0; i < out->n; i++)
                pk->order[i] = i;
        if ((peek->n_order_by || pk->keep < pk->arity) && out->n) {
                pk->d = calloc(out->n * (pk->arity ? pk->arity : 1), sizeof(*pk->d));
                if (!pk->d)
                        return row_error_oom(e);
                for (size_t i = 0; i < out->n; i++)
                        if (row_decode(out->updates[i].row, out->updates[i].len,
                                       &pk->d[i * pk->arity], pk->arity) != (int)pk->arity)
                                return row_error_set(e, -EINVAL, "XX000", "malformed row in a read result");
        }
        if (peek->n_order_by && out->n > 1) {
                struct sort_ctx c = { .peek = peek, .d = pk->d, .arity = pk->arity, .out = out };
                sort_ctx_current = &c;
                qsort(pk->order, out->n, sizeof(*pk->order), sort_cmp);
                sort_ctx_current = NULL;
        }
        return 0;
}

/* Answer pk with its result `out`, which it takes over: peek_prepare(), then send the
 * first chunk (all of it, unless the requester asked for chunks).  The whole result is
 * evaluated (and sorted) before the first row goes -- ORDER BY and LIMIT need all of
 * it, and storage_read() consolidates all batches at once -- so streaming bounds the
 * encoding and sending per loop turn, not the evaluation.  PEEK_DONE or PEEK_STREAM
 * (rows remain: the caller keeps pk, see peek_stream()). */
static int peek_answer(struct cserver *s, struct peek *pk, struct eval_batch *out)
{
        struct row_error e;

        if (peek_prepare(pk, out, &e) < 0) {
                server_reply_error(s, pk->from, pk->request_id, &e);
                return PEEK_DONE;
        }
        return peek_send_chunk(s, pk);
}

static void peek_idle(struct loop *l, void *userdata);

/* pk answered its first chunk with more = true: it stays on s->peeks -- an execution
 * hold at its ts, so compaction cannot move a since past it (5) -- until the last
 * chunk went, the requester cancels, its connection goes, or it stops pulling for
 * CSERVER_STREAM_IDLE_MS.  0, or -errno (then the caller answers with an error). */
static int peek_stream(struct cserver *s, struct peek *pk)
{
        int r;

        assert(!pk->streaming);
        r = loop_timer_add(s->loop, CSERVER_STREAM_IDLE_MS * NS_PER_MS, peek_idle, pk, &pk->idle);
        if (r < 0) {
                pk->idle = NULL;
                return r;
        }
        if (pk->timer) {
                /* A parked peek whose input became readable (server_peeks_wake()). */
                loop_timer_cancel(s->loop, pk->timer);
                pk->timer = NULL;
                s->n_parked--;
        }
        pk->streaming = true;
        pk->pulled_ms = now_ms();
        s->n_streaming++;
        log_debug("peek_streaming", "role=%s request_id=%llu rows=%zu", node_role_name(node_peer_role(pk->from)),
                  (unsigned long long)pk->request_id, pk->out.n);
        return 0;
}

/* A stream nobody pulls holds its inputs: end it after CSERVER_STREAM_IDLE_MS. */
static void peek_idle(struct loop *l, void *userdata)
{
        struct peek *pk = userdata;
        struct cserver *s = pk->srv;
        uint64_t idle = now_ms() - pk->pulled_ms;
        struct row_error e;
        int r;

        pk->idle = NULL;        /* freed after this returns */
        if (idle < CSERVER_STREAM_IDLE_MS) {
                r = loop_timer_add(l, (CSERVER_STREAM_IDLE_MS - idle) * NS_PER_MS, peek_idle, pk,
                                   &pk->idle);
                if (r >= 0)
                        return;
                pk->idle = NULL;
        }
        log_info("peek_stream_idle", "role=%s request_id=%llu chunks=%u idle_ms=%llu",
                 node_role_name(node_peer_role(pk->from)), (unsigned long long)pk->request_id, pk->chunks,
                 (unsigned long long)idle);
        row_error_set(&e, -ETIMEDOUT, "57014", "the result was not fetched for %llu ms: the "
                      "read was ended after %u chunks", (unsigned long long)idle, pk->chunks);
        server_reply_error(s, pk->from, pk->request_id, &e);
        server_peek_free(pk);
}

/* MSG_PEEK_NEXT: the next chunk of a stream, or its end (cancel); a cancel also ends a
 * peek not answered yet -- parked, or evaluating in the peek thread (5). */
void server_handle_peek_next(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__PeekNext *m;
        struct peek *pk;

        if (s->bgwrite && s->bgwrite->from == from && s->bgwrite->request_id == env->request_id) {
                /* (24) a PeekNext with cancel stops a parked Append's write too. */
                m = coord__peek_next__unpack(NULL, env->payload.len, env->payload.data);
                if (m && m->cancel) {
                        atomic_store(&s->bgwrite->job->stop, true);
                        log_info("write_cancelled", "role=%s request_id=%llu state=evaluating",
                                 node_role_name(node_peer_role(from)), (unsigned long long)env->request_id);
                }
                if (m)
                        coord__peek_next__free_unpacked(m, NULL);
                return;
        }
        for (pk = s->peeks_head; pk; pk = pk->next)
                if (pk->from == from && pk->request_id == env->request_id && !pk->cancelled)
                        break;
        if (!pk) {
                log_debug("peek_next_unmatched", "role=%s request_id=%llu", node_role_name(node_peer_role(from)),
                          (unsigned long long)env->request_id);
                return;
        }
        m = coord__peek_next__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                server_peek_cancel(pk);
                return;
        }
        if (m->cancel && !pk->streaming) {
                log_info("peek_cancelled", "role=%s request_id=%llu state=%s",
                         node_role_name(node_peer_role(from)), (unsigned long long)pk->request_id,
                         pk->bg ? "evaluating" : "parked");
                server_peek_cancel(pk);
        } else if (!pk->streaming) {
                log_debug("peek_next_unmatched", "role=%s request_id=%llu", node_role_name(node_peer_role(from)),
                          (unsigned long long)env->request_id);
        } else if (m->cancel) {
                log_debug("peek_stream_cancelled", "role=%s request_id=%llu chunks=%u",
                          node_role_name(node_peer_role(from)), (unsigned long long)pk->request_id, pk->chunks);
                server_peek_free(pk);
        } else {
                pk->pulled_ms = now_ms();
                if (peek_send_chunk(s, pk) == PEEK_DONE)
                        server_peek_free(pk);
        }
        coord__peek_next__free_unpacked(m, NULL);
}



/* A peek of an index at a time below its arrangement's since is answered from what the
 * index arranges -- its plan over storage collections, which keep their history -- so
 * an index never hides history that its collections still hold (I8).  Ready when every
 * collection the plan reads is readable at ts: PEEK_DONE (0), PEEK_WAIT, or -errno
 * with e (55000 when a collection is compacted past ts). */
static int index_fallback_ready(struct cserver *s, struct dfent *de, struct peek *pk,
                                uint64_t *ret_upper, struct row_error *e)
{
        if (!de->df)
                return row_error_set(e, -EINVAL, "XX000", "index %llu is not installed",
                                     (unsigned long long)de->gid);
        for (size_t i = 0; i < dataflow_n_inputs(de->df); i++) {
                uint64_t gid = dataflow_input_id(de->df, i);
                struct storage_frontiers f;
                int r = server_object_frontiers(s, gid, &f, NULL, NULL);

                if (r < 0)
                        return row_error_set(e, r, "42P01", "collection %llu does not exist",
                                             (unsigned long long)gid);
                if (pk->ts < f.since) {
                        row_error_set(e, -EDOM, "55000", "AS OF %llu is below the since %llu of "
                                      "collection %llu: its history before the since is compacted",
                                      (unsigned long long)pk->ts, (unsigned long long)f.since,
                                      (unsigned long long)gid);
                        return -EDOM;
                }
                if (pk->ts >= f.upper) {
                        pk->input = gid;
                        *ret_upper = f.upper;
                        return PEEK_WAIT;
                }
        }
        return PEEK_DONE;
}

/* The bytes one peek's dataflow may hold (5): --peek-memory-limit-mb; also a write's
 * (controller-server-append.c, write_dataflow()). */
size_t server_peek_memory_limit(const struct cserver *s)
{
        uint64_t mb = s->cfg.peek_memory_limit_mb ? s->cfg.peek_memory_limit_mb
                                                  : CSERVER_PEEK_MEMORY_LIMIT_DEFAULT_MB;

        return (size_t)mb << 20;
}

/* Feed `fd` with the index's contents at ts computed from storage (see above). */
static int index_fallback_feed(struct cserver *s, struct dfent *de, uint64_t ts, struct feed *fd)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct dataflow *sub = NULL;
        int r;

        r = dataflow_new(de->spec->plan, ts, &sub, fd->err);
        if (r >= 0)
                dataflow_set_memory_limit(sub, server_peek_memory_limit(s));
        for (size_t i = 0; r >= 0 && i < dataflow_n_inputs(sub); i++) {
                struct feed f2 = { .df = sub, .input = i, .err = fd->err, .time = ts };

                r = server_storage_snapshot(s, dataflow_input_id(sub, i), ts, server_feed_emit, &f2);
                if (r >= 0)
                        r = server_feed_flush(&f2);
                row_arena_done(&f2.bytes);
        }
        if (r >= 0)
                r = dataflow_step(sub, ts + 1, &out, fd->err);
        for (size_t i = 0; r >= 0 && i < out.n; i++)
                r = server_feed_add(fd, out.updates[i].row, out.updates[i].len, ts, out.updates[i].diff);
        eval_batch_done(&out);
        dataflow_free(sub);
        return r;
}

/* ---- Live status relations (21) ----------------------------------------------------- */

static int64_t int8_of(uint64_t v)
{
        return v > INT64_MAX ? INT64_MAX : (int64_t)v;  /* an empty upper: int8's max */
}

static int live_row(struct feed *fd, const struct row_datum *d, size_t n)
{
        uint8_t buf[1024];
        int64_t size = row_encoded_size(d, n);

        if (size < 0 || size > (int64_t)sizeof(buf))
                return -E2BIG;
        return server_feed_add(fd, buf, row_encode_into(d, n, buf), fd->time, 1);
}

/* (21) The rows of live relation gid as the loop knows them now, at fd->time. */
static int live_feed(struct cserver *s, uint64_t gid, struct feed *fd)
{
        struct storage_info info;
        int r = 0;

        if (gid == COORD_GID_SOURCES) {
                for (size_t i = 0; i < s->n_srcs && r >= 0; i++) {
                        const struct srcent *e = s->srcs[i];
                        bool done = e->spec->source_up_to && e->offset >= e->spec->source_up_to;
                        const char *status = e->err[0] || !e->reader ? "error" : done ? "finished" : "running";
                        struct row_datum d[6] = {
                                ROW_DATUM_INT((int64_t)e->gid), ROW_DATUM_INT((int64_t)e->progress_id),
                                ROW_DATUM_INT(int8_of(e->offset)),
                                ROW_DATUM_INT(storage_get_info(s->st, e->gid, &info) == 0
                                                      ? int8_of(info.frontiers.upper) : 0),
                                ROW_DATUM_TEXT(status, (uint32_t)strlen(status)),
                                e->err[0] ? ROW_DATUM_TEXT(e->err, (uint32_t)strlen(e->err)) : ROW_DATUM_NULL,
                        };
                        r = live_row(fd, d, 6);
                }
                return r;
        }
        assert(gid == COORD_GID_REFRESHES);
        for (size_t i = 0; i < s->n_dfs && r >= 0; i++) {
                const struct dfent *e = s->dfs[i];
                struct refresh_schedule rs;
                uint64_t last, next;

                if (!server_dfent_schedule(e, &rs) || storage_get_info(s->st, e->gid, &info) < 0)
                        continue;
                /* Written up to the upper (13b: a refresh time once anything was
                 * written; the as-of before); one before the as-of never happened. */
                last = refresh_prev(&rs, info.frontiers.upper);
                next = refresh_next(&rs, info.frontiers.upper);
                struct row_datum d[3] = {
                        ROW_DATUM_INT((int64_t)e->gid),
                        last != REFRESH_NONE && last >= e->spec->as_of ? ROW_DATUM_INT(int8_of(last))
                                                                       : ROW_DATUM_NULL,
                        next != REFRESH_NONE ? ROW_DATUM_INT(int8_of(next)) : ROW_DATUM_NULL,
                };
                r = live_row(fd, d, 3);
        }
        return r;
}

/* ---- Big peeks in the peek thread (18) ------------------------------------------ */

/* In the peek thread: read, feed, step, prepare.  Frees the readers. */
/* A peek's read of input gid failed with r (< 0) while feeding its dataflow: e says
 * why.  On the loop and in the peek thread alike (18).  True when storage failed, so
 * the loop may look for a sticky state (server_storage_recover(), 8). */
static bool peek_read_error(int r, uint64_t gid, struct row_error *e)
{
        assert(r < 0);
        if (r == -EINVAL || r == -E2BIG || r == -ECANCELED)
                return false;           /* e set by the dataflow (-E2BIG: its memory limit,
                                         * -ECANCELED: cancelled in the thread, 18) */
        if (r == -ENOMEM) {
                row_error_oom(e);
                return false;
        }
        if (r == -EUCLEAN) {
                row_error_set(e, r, "XX000", "collection %llu has a negative count",
                              (unsigned long long)gid);
                return false;
        }
        row_error_set(e, r, "XX000", "reading collection %llu: %s", (unsigned long long)gid,
                      strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        if (storage_last_error()[0])
                row_error_detail(e, "%s", storage_last_error());
        return true;
}

/* Step a fed peek's dataflow to its answer in *out: every count positive, else e. */
static int peek_step(struct peek *pk, struct eval_batch *out, struct row_error *e)
{
        int r = dataflow_step(pk->df, pk->ts + 1, out, e);

        if (r < 0) {
                if (r == -ENOMEM)
                        row_error_oom(e);
                return r;
        }
        for (size_t i = 0; i < out->n; i++)
                if (out->updates[i].diff < 0)
                        return row_error_set(e, -EUCLEAN, "XX000", "a row of the result has a "
                                             "negative count (%lld)", (long long)out->updates[i].diff);
        return 0;
}

static struct bgsub *bgsub_free(struct bgsub *b)
{
        if (!b)
                return NULL;
        for (size_t k = 0; k < b->n; k++)
                b->rd[k] = storage_reader_free(b->rd[k]);
        dataflow_free(b->df);
        free(b);
        return NULL;
}

/* Free what j reads (its readers and index sub-reads); the job itself stays. */
static void bg_release(struct bgpeek *j)
{
        for (size_t i = 0; i < j->n; i++) {
                j->rd[i] = storage_reader_free(j->rd[i]);
                if (j->sub)
                        j->sub[i] = bgsub_free(j->sub[i]);
        }
        free(j->sub);
        j->sub = NULL;
}

/* In the peek thread: evaluate b (an index below its since, 13) at pk's ts from its
 * readers, and feed the result to pk's input i, as index_fallback_feed() does on the
 * loop.  Checks j->stop between inputs; the dataflow checks it too (18). */
static int bgsub_run(struct bgpeek *j, struct bgsub *b, size_t i)
{
        struct peek *pk = j->pk;
        struct eval_batch out = EVAL_BATCH_INIT;
        struct feed fd = { .df = pk->df, .input = i, .err = &j->e, .time = pk->ts };
        int r = 0;

        for (size_t k = 0; r >= 0 && k < b->n; k++) {
                struct feed f2 = { .df = b->df, .input = k, .err = &j->e, .time = pk->ts };

                if (!b->rd[k])
                        continue;
                if (atomic_load_explicit(&j->stop, memory_order_relaxed))
                        return row_error_set(&j->e, -ECANCELED, "57014", "canceling statement "
                                             "due to user request");
                r = storage_reader_run(b->rd[k], server_feed_row, &f2);
                if (r >= 0)
                        r = server_feed_flush(&f2);
                row_arena_done(&f2.bytes);
                b->rd[k] = storage_reader_free(b->rd[k]);
                if (r < 0)
                        (void)peek_read_error(r, dataflow_input_id(b->df, k), &j->e);
        }
        if (r >= 0)
                r = dataflow_step(b->df, pk->ts + 1, &out, &j->e);
        if (r == -ENOMEM)
                row_error_oom(&j->e);
        for (size_t k = 0; r >= 0 && k < out.n; k++)
                r = server_feed_add(&fd, out.updates[k].row, out.updates[k].len, pk->ts,
                                    out.updates[k].diff);
        if (r >= 0)
                r = server_feed_flush(&fd);
        row_arena_done(&fd.bytes);
        eval_batch_done(&out);
        return r;
}

static void bg_eval(struct bgpeek *j)
{
        struct peek *pk = j->pk;
        struct eval_batch out = EVAL_BATCH_INIT;
        uint64_t start_ns = now_ns();
        int r = 0;

        if (j->w) {
                server_bgwrite_eval(j);         /* a write's plan (24) */
                return;
        }
        for (size_t i = 0; i < j->n; i++) {
                uint64_t gid = dataflow_input_id(pk->df, i);
                struct feed fd = { .df = pk->df, .input = i, .err = &j->e, .time = pk->ts };

                if (j->sub && j->sub[i]) {
                        r = bgsub_run(j, j->sub[i], i);
                        j->sub[i] = bgsub_free(j->sub[i]);
                        if (r < 0)
                                goto out;
                        continue;
                }
                if (!j->rd[i])
                        continue;
                if (atomic_load_explicit(&j->stop, memory_order_relaxed)) {
                        r = row_error_set(&j->e, -ECANCELED, "57014", "canceling statement due "
                                          "to user request");
                        goto out;
                }
                r = storage_reader_run(j->rd[i], server_feed_row, &fd);
                if (r >= 0)
                        r = server_feed_flush(&fd);
                row_arena_done(&fd.bytes);
                j->rd[i] = storage_reader_free(j->rd[i]);
                if (r < 0) {
                        /* Reads are never sticky (controller-storage-write.c NOTE 9): no reopen. */
                        (void)peek_read_error(r, gid, &j->e);
                        goto out;
                }
        }
        r = peek_step(pk, &out, &j->e);
        if (r >= 0)
                r = peek_prepare(pk, &out, &j->e);
out:
        bg_release(j);
        eval_batch_done(&out);
        j->r = r < 0 ? r : 0;
        j->eval_us = (now_ns() - start_ns) / 1000;
}

static void *peek_worker_main(void *arg)
{
        struct peek_worker *w = arg;

        /* Below the loops: a big read waits for CPU, appends and DDL do not (18). */
        if (setpriority(PRIO_PROCESS, (id_t)gettid(), PEEK_THREAD_NICE) < 0)
                log_warn_errno(-errno, "peek_thread_nice_failed", "nice=%d", PEEK_THREAD_NICE);
        pthread_mutex_lock(&w->lock);
        for (;;) {
                struct bgpeek *j;

                while (!w->todo && !w->stop)
                        pthread_cond_wait(&w->cond, &w->lock);
                j = w->todo;
                if (!j)
                        break;                  /* stopped, nothing left */
                w->todo = j->next;
                if (!w->todo)
                        w->todo_tail = &w->todo;
                pthread_mutex_unlock(&w->lock);
                if (w->stop) {
                        bg_release(j);
                        j->r = row_error_set(&j->e, -ECANCELED, "57P01", "the controller is stopping");
                } else {
                        if (w->delay_ms)
                                usleep(w->delay_ms * 1000u);
                        bg_eval(j);
                }
                pthread_mutex_lock(&w->lock);
                j->next = NULL;
                *w->done_tail = j;
                w->done_tail = &j->next;
                loop_waker_wake(w->waker);
        }
        pthread_mutex_unlock(&w->lock);
        return NULL;
}

/* On the loop: answer a job the thread handed back, and free it. */
static void bg_finish(struct cserver *s, struct bgpeek *j)
{
        struct peek *pk = j->pk;
        struct row_error e;
        int r;

        if (j->w) {
                server_bgwrite_finish(s, j, s->pw->stop);
                return;
        }
        assert(pk->bg == j);
        pk->bg = NULL;
        s->n_bg--;
        if (j->eval_us > s->peek_bg_max_us)
                s->peek_bg_max_us = j->eval_us;
        if (pk->cancelled)
                goto done;
        if (j->r < 0) {
                server_reply_error(s, pk->from, pk->request_id, &j->e);
                goto done;
        }
        if (j->eval_us >= PEEK_SLOW_US && server_ratelimit_ok(&s->rl_input, now_ms()))
                log_info("peek_slow", "role=%s request_id=%llu rows=%zu eval_us=%llu thread=peek",
                         node_role_name(node_peer_role(pk->from)), (unsigned long long)pk->request_id, pk->out.n,
                         (unsigned long long)j->eval_us);
        r = peek_send_chunk(s, pk);
        if (r == PEEK_STREAM) {
                r = peek_stream(s, pk);
                if (r == 0) {
                        free(j);
                        return;
                }
                row_error_set(&e, r, "XX000", "cannot stream the result: %s", strerrordesc_np(-r));
                server_reply_error(s, pk->from, pk->request_id, &e);
        }
done:
        free(j);
        server_peek_free(pk);
}

static void bg_take_done(struct cserver *s)
{
        struct peek_worker *w = s->pw;
        struct bgpeek *list;

        pthread_mutex_lock(&w->lock);
        list = w->done;
        w->done = NULL;
        w->done_tail = &w->done;
        pthread_mutex_unlock(&w->lock);
        while (list) {
                struct bgpeek *j = list;

                list = j->next;
                bg_finish(s, j);
        }
}

static void on_peeks_done(struct loop *l, uint64_t count, void *userdata)
{
        (void)l;
        (void)count;
        bg_take_done(userdata);
}

int server_peek_worker_start(struct cserver *s)
{
        struct peek_worker *w = calloc(1, sizeof(*w));
        int r;

        if (!w)
                return -ENOMEM;
        w->todo_tail = &w->todo;
        w->done_tail = &w->done;
        w->delay_ms = s->cfg.test_peek_bg_delay_ms;
        pthread_mutex_init(&w->lock, NULL);
        pthread_cond_init(&w->cond, NULL);
        r = loop_waker_new(s->loop, on_peeks_done, s, &w->waker);
        if (r < 0)
                goto fail;
        r = thread_start(&w->thread, "peek", peek_worker_main, w);
        if (r < 0) {
                w->waker = loop_waker_free(s->loop, w->waker);
                goto fail;
        }
        s->pw = w;
        log_info("peek_thread_started", "min_updates=%llu",
                 (unsigned long long)(s->cfg.test_peek_bg_min_updates ? s->cfg.test_peek_bg_min_updates
                                                                      : PEEK_BG_MIN_UPDATES));
        return 0;
fail:
        log_warn_errno(r, "peek_thread_failed", "action=evaluate_on_the_loop");
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        return r;
}

/* Stop the thread: jobs still queued come back unevaluated, and every peek of a job
 * is freed unanswered. */
void server_peek_worker_stop(struct cserver *s)
{
        struct peek_worker *w = s->pw;

        if (!w)
                return;
        for (struct peek *pk = s->peeks_head; pk; pk = pk->next)
                if (pk->bg)
                        server_peek_cancel(pk); /* no answers while stopping */
        if (s->bgwrite)
                atomic_store(&s->bgwrite->job->stop, true);
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
        bg_take_done(s);
        assert(s->n_bg == 0);
        w->waker = loop_waker_free(s->loop, w->waker);
        pthread_cond_destroy(&w->cond);
        pthread_mutex_destroy(&w->lock);
        free(w);
        s->pw = NULL;
}

void server_peek_worker_queue(struct cserver *s, struct bgpeek *j)
{
        pthread_mutex_lock(&s->pw->lock);
        *s->pw->todo_tail = j;
        s->pw->todo_tail = &j->next;
        pthread_cond_signal(&s->pw->cond);
        pthread_mutex_unlock(&s->pw->lock);
}

uint64_t server_peek_bg_min(const struct cserver *s)
{
        return s->cfg.test_peek_bg_min_updates ? s->cfg.test_peek_bg_min_updates : PEEK_BG_MIN_UPDATES;
}

static uint64_t cost_add(uint64_t a, uint64_t b)
{
        return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t cost_mul(uint64_t a, uint64_t b)
{
        uint64_t r;

        return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* (18) A peek's cost: the updates a Get reads (ups[i] for the dataflow's input i), the
 * product of a Join's sides (a join of small tables can be a large cross product, issue
 * 36), the sum of a Union's arms, the rows of a Constant, and an operator's input's
 * otherwise.  An upper bound of the rows the plan may produce along the way. */
uint64_t server_plan_cost(const Coord__Plan__Relation *rel, const struct dataflow *df,
                          const uint64_t *ups, unsigned depth)
{
        if (!rel)
                return 0;
        if (depth > PEEK_PLAN_MAX_DEPTH)
                return UINT64_MAX;      /* too deep to tell: assume the worst */
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                for (size_t i = 0; i < dataflow_n_inputs(df); i++)
                        if (dataflow_input_id(df, i) == rel->get->id)
                                return ups[i];
                return 0;
        case COORD__PLAN__RELATION__KIND_CONSTANT:
                return rel->constant->n_rows;
        case COORD__PLAN__RELATION__KIND_JOIN:
                return cost_mul(cost_add(server_plan_cost(rel->join->left, df, ups, depth + 1), 1),
                                cost_add(server_plan_cost(rel->join->right, df, ups, depth + 1), 1));
        case COORD__PLAN__RELATION__KIND_UNION: {
                uint64_t c = 0;

                for (size_t i = 0; i < rel->union_->n_inputs; i++)
                        c = cost_add(c, server_plan_cost(rel->union_->inputs[i], df, ups, depth + 1));
                return c;
        }
        case COORD__PLAN__RELATION__KIND_FILTER:
                return server_plan_cost(rel->filter->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_MAP:
                return server_plan_cost(rel->map->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return server_plan_cost(rel->project->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_REDUCE:
                return server_plan_cost(rel->reduce->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                return server_plan_cost(rel->distinct->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_TOP_K:
                return server_plan_cost(rel->top_k->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_NEGATE:
                return server_plan_cost(rel->negate->input, df, ups, depth + 1);
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return server_plan_cost(rel->threshold->input, df, ups, depth + 1);
        default:
                return UINT64_MAX;
        }
}

/* An index's arrangement at pk->ts into fd: the rows of one key when pk's plan fixes
 * it (23), else all. */
static int index_feed(struct cserver *s, struct peek *pk, struct dfent *de, struct feed *fd)
{
        _cleanup_free_ uint8_t *key = NULL;
        size_t klen;
        int r = server_lookup_key(pk->req->peek->plan, de->gid, de->arr, &key, &klen);

        if (r < 0)
                return r;
        if (r == 0)
                return arrangement_read(de->arr, pk->ts, server_feed_emit, fd);
        s->peeks_keyed++;
        return arrangement_read_key(de->arr, pk->ts, key, klen, server_feed_emit, fd);
}

/* Feed input i of pk's dataflow with its contents at pk->ts, on the loop: a live
 * relation's state (21), an index's arrangement (or, below its since, what it indexes),
 * a storage collection's snapshot.  -errno with e. */
static int peek_feed(struct cserver *s, struct peek *pk, size_t i, struct row_error *e)
{
        uint64_t gid = dataflow_input_id(pk->df, i);
        struct dfent *de = server_dfent_find(s, gid);
        struct feed fd = { .df = pk->df, .input = i, .err = e, .time = pk->ts };
        int r;

        if (coord_gid_is_live(gid))
                r = live_feed(s, gid, &fd);
        else if (de && de->index && pk->ts < arrangement_since(de->arr))
                r = index_fallback_feed(s, de, pk->ts, &fd);
        else if (de && de->index)
                r = index_feed(s, pk, de, &fd);
        else
                r = server_storage_snapshot(s, gid, pk->ts, server_feed_emit, &fd);
        if (r >= 0)
                r = server_feed_flush(&fd);
        row_arena_done(&fd.bytes);
        if (r < 0 && peek_read_error(r, gid, e))
                server_storage_recover(s);     /* (8): a sticky state? */
        return r < 0 ? r : 0;
}

/* (18) An index's input of pk read below its arrangement's since (13), for the peek
 * thread: its plan over readers of its storage collections at pk->ts, in *ret with
 * its cost.  0, or -errno: evaluate pk on the loop instead. */
static int bgsub_new(struct cserver *s, struct dfent *de, struct bgpeek *j, uint64_t *ret_cost,
                     struct bgsub **ret)
{
        struct peek *pk = j->pk;
        struct dataflow *df = NULL;
        struct bgsub *b = NULL;
        struct row_error e;
        uint64_t *ups = NULL;
        size_t n;
        int r;

        r = dataflow_new(de->spec->plan, pk->ts, &df, &e);
        if (r < 0)
                return r;
        dataflow_set_memory_limit(df, server_peek_memory_limit(s));
        dataflow_set_cancel(df, &j->stop);
        n = dataflow_n_inputs(df);
        b = calloc(1, sizeof(*b) + n * sizeof(b->rd[0]));
        ups = calloc(n ? n : 1, sizeof(*ups));
        if (!b || !ups) {
                r = -ENOMEM;
                goto fail;
        }
        b->df = df;
        b->n = n;
        df = NULL;
        for (size_t k = 0; k < n; k++) {
                uint64_t gid = dataflow_input_id(b->df, k), at;

                r = snapshot_at(s, gid, pk->ts, &at);
                if (r == 0)
                        continue;               /* empty at ts */
                if (r > 0)
                        r = storage_read_cost(s->st, gid, at, &ups[k]);
                if (r >= 0)
                        r = storage_reader_new(s->st, gid, at, &b->rd[k]);
                if (r < 0)
                        goto fail;
        }
        *ret_cost = server_plan_cost(de->spec->plan, b->df, ups, 0);
        *ret = b;
        free(ups);
        return 0;
fail:
        dataflow_free(df);
        bgsub_free(b);
        free(ups);
        return r;
}

/* Classify pk's input i for the thread: how[i], its cost in ups[i] (server_plan_cost()),
 * at[i] the time to read a storage collection at.  0, or -errno: stay on the loop. */
enum { BG_EMPTY, BG_READ, BG_COPY, BG_SUB };
static int bg_plan_input(struct cserver *s, struct bgpeek *j, size_t i, uint8_t *how, uint64_t *ups,
                         uint64_t *at)
{
        struct peek *pk = j->pk;
        uint64_t gid = dataflow_input_id(pk->df, i);
        struct dfent *de = server_dfent_find(s, gid);
        int r;

        ups[i] = 0;
        if (de && de->index) {
                if (!de->arr)
                        return -ENOENT;
                if (pk->ts >= arrangement_since(de->arr)) {
                        _cleanup_free_ uint8_t *key = NULL;
                        size_t klen;

                        r = server_lookup_key(pk->req->peek->plan, gid, de->arr, &key, &klen);
                        if (r < 0)
                                return r;
                        how[i] = BG_COPY;
                        /* By key (23): a few rows, whatever the arrangement holds. */
                        ups[i] = r ? 1 : arrangement_updates(de->arr);
                        return 0;
                }
                if (!j->sub && !(j->sub = calloc(j->n, sizeof(*j->sub))))
                        return -ENOMEM;
                how[i] = BG_SUB;
                return bgsub_new(s, de, j, &ups[i], &j->sub[i]);
        }
        if (coord_gid_is_live(gid)) {
                how[i] = BG_COPY;               /* a row per source or refresh view */
                return 0;
        }
        r = snapshot_at(s, gid, pk->ts, &at[i]);
        if (r < 0)
                return r;
        how[i] = r > 0 ? BG_READ : BG_EMPTY;
        return how[i] == BG_READ ? storage_read_cost(s->st, gid, at[i], &ups[i]) : 0;
}

/* (18): hand pk, readable at its ts (peek_try() checked), to the peek thread when it
 * may cost enough (server_plan_cost()): on the loop a cross product would hold every other
 * client until it ended.  The thread reads storage collections itself, also for an
 * index read below its since (bgsub_new()); an index's arrangement and a live
 * relation's state are the loop's, so the loop copies them into pk's dataflow before
 * the handoff.  PEEK_BG when handed off; 0: evaluate it here, also whenever anything
 * fails before the dataflow is fed -- the loop's path reports it; -errno with e when
 * a copy into the dataflow failed (nothing may be fed twice). */
static int peek_try_bg(struct cserver *s, struct peek *pk, struct row_error *e)
{
        uint64_t min = s->cfg.test_peek_bg_min_updates ? s->cfg.test_peek_bg_min_updates
                                                       : PEEK_BG_MIN_UPDATES;
        size_t n = dataflow_n_inputs(pk->df);
        _cleanup_free_ uint64_t *at = calloc(n ? n : 1, sizeof(*at));
        _cleanup_free_ uint64_t *ups = calloc(n ? n : 1, sizeof(*ups));
        _cleanup_free_ uint8_t *how = calloc(n ? n : 1, sizeof(*how));
        struct bgpeek *j = calloc(1, sizeof(*j) + n * sizeof(j->rd[0]));
        int r = 0;

        if (!at || !ups || !how || !j)
                goto stay;
        j->pk = pk;
        j->n = n;
        atomic_init(&j->stop, false);
        for (size_t i = 0; i < n; i++)
                if (bg_plan_input(s, j, i, how, ups, at) < 0)
                        goto stay;
        if (server_plan_cost(pk->req->peek->plan, pk->df, ups, 0) < min ||
            (!s->pw && server_peek_worker_start(s) < 0))
                goto stay;
        for (size_t i = 0; i < n; i++)
                if (how[i] == BG_READ &&
                    storage_reader_new(s->st, dataflow_input_id(pk->df, i), at[i], &j->rd[i]) < 0)
                        goto stay;
        dataflow_set_cancel(pk->df, &j->stop);
        for (size_t i = 0; i < n; i++) {
                r = how[i] == BG_COPY ? peek_feed(s, pk, i, e) : 0;
                if (r < 0)
                        goto stay;
        }
        if (pk->timer) {
                /* Parked until now (server_peeks_wake()): the thread has it now. */
                loop_timer_cancel(s->loop, pk->timer);
                pk->timer = NULL;
                s->n_parked--;
        }
        pk->bg = j;
        s->n_bg++;
        s->peeks_bg++;
        s->peeks_bg_sub += j->sub != NULL;
        server_peek_worker_queue(s, j);
        return PEEK_BG;
stay:
        if (j)
                bg_release(j);
        free(j);
        return r;
}

/* Answer pk if it can be answered now: PEEK_DONE (answered, the caller frees it),
 * PEEK_STREAM (its first chunk went, more follow: it stays, streaming), PEEK_BG (the
 * peek thread has it, 18) or PEEK_WAIT with *ret_upper the upper of an input that is
 * not readable at ts yet (pk->input).  Every input must be readable at ts -- a storage
 * collection (a table at its effective upper, (10)) or an index's arrangement (13) --
 * and then the plan runs as a one-shot dataflow at ts over their snapshots: the engine
 * of (13), fed once. */
static int peek_try(struct cserver *s, struct peek *pk, uint64_t *ret_upper)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct storage_frontiers f;
        struct row_error e;
        uint64_t start_ns = 0, took_us;
        int r;

        if (!s->st) {
                server_storage_unavailable(&e);
                goto fail;
        }
        for (size_t i = 0; i < dataflow_n_inputs(pk->df); i++) {
                uint64_t gid = dataflow_input_id(pk->df, i);
                struct dfent *de = server_dfent_find(s, gid);

                if (coord_gid_is_live(gid))
                        continue;       /* (21) readable at any time */
                if (!de && server_install_pending(s, gid)) {
                        /* Installed later in this bulk install (17). */
                        pk->input = gid;
                        *ret_upper = 0;
                        return PEEK_WAIT;
                }
                if (de && de->failed) {
                        e = server_dfent_error(de);
                        goto fail;
                }
                if (de && de->index && de->arr && pk->ts < arrangement_since(de->arr)) {
                        /* Older than the arrangement keeps: read what it indexes (13). */
                        r = index_fallback_ready(s, de, pk, ret_upper, &e);
                        if (r == PEEK_WAIT)
                                return PEEK_WAIT;
                        if (r < 0)
                                goto fail;
                        continue;
                }
                r = server_object_frontiers(s, gid, &f, NULL, NULL);
                if (r == -ENOENT) {
                        row_error_set(&e, r, "42P01", "collection %llu does not exist",
                                      (unsigned long long)gid);
                        goto fail;
                }
                if (r < 0) {
                        server_storage_failure(s, &e, r, "reading collection %llu", (unsigned long long)gid);
                        goto fail;
                }
                if (pk->ts < f.since) {
                        row_error_set(&e, -EDOM, "55000",
                                      "AS OF %llu is below the since %llu of collection %llu: its "
                                      "history before the since is compacted",
                                      (unsigned long long)pk->ts, (unsigned long long)f.since,
                                      (unsigned long long)gid);
                        row_error_detail(&e, "Collection %llu is readable from %llu on; the read "
                                         "asked for %llu.", (unsigned long long)gid,
                                         (unsigned long long)f.since, (unsigned long long)pk->ts);
                        goto fail;
                }
                if (pk->ts >= f.upper) {
                        pk->input = gid;
                        *ret_upper = f.upper;
                        return PEEK_WAIT;
                }
        }
        r = peek_try_bg(s, pk, &e);
        if (r == PEEK_BG)
                return PEEK_BG;
        if (r < 0)
                goto fail;
        start_ns = now_ns();
        for (size_t i = 0; i < dataflow_n_inputs(pk->df); i++)
                if (peek_feed(s, pk, i, &e) < 0)
                        goto fail;
        if (peek_step(pk, &out, &e) < 0)
                goto fail;
        took_us = (now_ns() - start_ns) / 1000;
        if (took_us >= PEEK_SLOW_US && server_ratelimit_ok(&s->rl_input, now_ms()))
                log_info("peek_slow", "role=%s request_id=%llu rows=%zu eval_us=%llu", node_role_name(node_peer_role(pk->from)),
                         (unsigned long long)pk->request_id, out.n, (unsigned long long)took_us);
        r = peek_answer(s, pk, &out);
        eval_batch_done(&out);
        if (r == PEEK_STREAM) {
                r = peek_stream(s, pk);
                if (r == 0)
                        return PEEK_STREAM;
                row_error_set(&e, r, "XX000", "cannot stream the result: %s", strerrordesc_np(-r));
                goto fail;
        }
        return PEEK_DONE;
fail:
        eval_batch_done(&out);
        server_reply_error(s, pk->from, pk->request_id, &e);
        return PEEK_DONE;
}

static void peek_timeout(struct loop *l, void *userdata)
{
        struct peek *pk = userdata;
        struct cserver *s = pk->srv;
        uint64_t upper = 0;
        struct row_error e;
        int r;

        /* The timer is freed after this returns: never cancel it again. */
        pk->timer = NULL;
        s->n_parked--;
        r = peek_try(s, pk, &upper);
        if (r == PEEK_STREAM || r == PEEK_BG)
                return;
        if (r == PEEK_WAIT) {
                row_error_set(&e, -ETIMEDOUT, "57014",
                              "timed out after %u ms waiting for collection %llu to become "
                              "readable at %llu (its upper is %llu)", pk->timeout_ms,
                              (unsigned long long)pk->input, (unsigned long long)pk->ts,
                              (unsigned long long)upper);
                row_error_hint(&e, "Appends advance the upper; is the adapter ticking?");
                server_reply_error(s, pk->from, pk->request_id, &e);
        }
        server_peek_free(pk);
}

/* Retry every parked peek, in arrival order. */
void server_peeks_wake(struct cserver *s)
{
        struct peek *pk, *next;
        uint64_t upper;

        for (pk = s->peeks_head; pk; pk = next) {
                next = pk->next;
                /* Parked ones only; one that streams now was unparked (peek_stream()). */
                if (pk->timer && peek_try(s, pk, &upper) == PEEK_DONE)
                        server_peek_free(pk);
        }
}

void server_handle_peek(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        struct peek *pk;
        struct row_error e;
        uint64_t upper = 0;
        int r;

        pk = calloc(1, sizeof(*pk));
        if (!pk) {
                row_error_oom(&e);
                server_reply_error(s, from, env->request_id, &e);
                return;
        }
        *pk = (struct peek){ .srv = s, .from = from, .request_id = env->request_id,
                             .prev = s->peeks_tail };
        /* On the list from here on: the peek holds its input (5). */
        if (s->peeks_tail)
                s->peeks_tail->next = pk;
        else
                s->peeks_head = pk;
        s->peeks_tail = pk;
        s->n_peeks++;

        pk->req = coord__peek_request__unpack(NULL, env->payload.len, env->payload.data);
        if (!pk->req) {
                server_reply_malformed(s, from, env);
                goto done;
        }
        if (!pk->req->peek || !pk->req->peek->plan) {
                row_error_set(&e, -EINVAL, "XX000", "invalid plan: a peek without a plan");
                goto fail;
        }
        pk->ts = pk->req->peek->timestamp;
        r = dataflow_new(pk->req->peek->plan, pk->ts, &pk->df, &e);
        if (r >= 0)
                dataflow_set_memory_limit(pk->df, server_peek_memory_limit(s));
        if (r < 0) {
                if (r == -ENOMEM)
                        row_error_oom(&e);
                if (server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_info("peek_plan_rejected", "role=%s request_id=%llu sqlstate=%s message=\"%s\"",
                                 node_role_name(node_peer_role(from)), (unsigned long long)env->request_id,
                                 e.sqlstate, e.message);
                goto fail;
        }
        pk->timeout_ms = pk->req->timeout_ms ? pk->req->timeout_ms : CSERVER_PEEK_TIMEOUT_DEFAULT_MS;
        pk->chunk_bytes = pk->req->chunk_bytes;
        r = peek_try(s, pk, &upper);
        if (r == PEEK_DONE)
                goto done;
        if (r == PEEK_STREAM || r == PEEK_BG)
                return;
        r = loop_timer_add(s->loop, (uint64_t)pk->timeout_ms * NS_PER_MS, peek_timeout, pk, &pk->timer);
        if (r < 0) {
                pk->timer = NULL;
                row_error_set(&e, r, "XX000", "cannot wait for collection %llu: %s",
                              (unsigned long long)pk->input, strerrordesc_np(-r));
                goto fail;
        }
        s->n_parked++;
        log_debug("peek_parked", "request_id=%llu gid=%llu ts=%llu upper=%llu timeout_ms=%u",
                  (unsigned long long)pk->request_id, (unsigned long long)pk->input,
                  (unsigned long long)pk->ts, (unsigned long long)upper, pk->timeout_ms);
        return;
fail:
        server_reply_error(s, from, env->request_id, &e);
done:
        server_peek_free(pk);
}
