/* controller-server.c -- collections, appends, peeks and frontiers of coord-controller
 * (contract: controller-server.h and the comments of proto/coord.proto).
 *
 * Who calls what.  controller.c forwards the node's callbacks: every adapter (or
 * lifecycle) request arrives in cserver_on_message(), in the order the peer sent it on
 * its one connection.  The server answers each with the request's request_id through
 * node_send().  A timer runs compaction of the built-in relations.
 *
 * NOTES ON THE DESIGN
 *
 * (1) Order.  Requests are handled to completion one after the other, in arrival
 *     order, with one exception: a peek that must wait for an upper is parked (5) and
 *     the requests after it are served meanwhile.  So Ensure, Drop, Append and List
 *     replies leave in request order; a peek's reply may come after the replies to
 *     later requests.  The adapter matches replies by request_id.
 *
 * (2) Durability.  Every change is one storage call that returns only after ONE
 *     synced RocksDB WriteBatch (controller-storage.h).  An Append is one
 *     storage_append_group(): the rows of all its writes, the rows of the frontiers
 *     relation (4) and the new upper ts + 1 of every table and built-in.  Its Ok is
 *     sent after that call returned, so what the adapter was told is durable survives
 *     kill -9 (I7), and a crash before leaves none of it.  What memory derives from
 *     storage (the frontiers mirror, the ring) changes only after the write.  Creates
 *     and drops are one synced write per collection; Ensure answers after all of them.
 *
 * (3) An Append is all or nothing.  storage_append_group() applies the valid appends
 *     of a group and reports the invalid ones, so everything that can make one append
 *     of the group invalid is checked before: ts >= every upper (the expected upper is
 *     the one just read), rows well formed and not too long, sums of one (row, time)
 *     that overflow (consolidated here first), descriptors loadable
 *     (storage_collection_stats() loads them), and -- because storage does not check
 *     it -- that no row's count becomes negative: a write with retractions (a DELETE,
 *     or explicit negative diffs) is checked against the collection's contents.  What
 *     remains is a failed write, which fails the whole group.  A group that still
 *     comes back partial is a bug: it is logged, answered with XX000, and the
 *     frontiers mirror and the ring are rebuilt from storage.
 *
 * (4) coord_frontiers (gid CSERVER_GID_FRONTIERS) holds one row (object_id, since,
 *     upper) per table.  Its contents at t are the frontiers every table had after
 *     the last append at or before t.  s->fr mirrors its contents at upper - 1 (read
 *     back from storage at open, so a restart continues where the last acknowledged
 *     append left off); each append retracts the rows whose table changed or was
 *     dropped and inserts the new ones, in the same group as everything else (2).  A
 *     table created by Ensure appears at the next append.  Only the server writes it:
 *     a TableWrite naming it is refused.
 *
 * (5) Peeks.  Every peek in flight is a struct peek on s->peeks, and each one is an
 *     execution hold: compaction (6) never advances the since of a peek's input past
 *     the peek's ts.  A peek whose input is not readable yet (ts >= upper) is parked
 *     with a timer; after every append (and every drop) the parked peeks are retried
 *     in arrival order, and the timer answers 57014 if the upper never passes ts.  A
 *     peek reads the input at its ts through storage_read() and evaluates the plan
 *     over it (eval_peek()) synchronously, in one loop turn.  When a peer's connection
 *     is replaced or lost, its parked peeks are dropped without an answer.
 *
 * (6) Compaction.  Tables are not compacted in this milestone (their since stays at
 *     birth until issue 5 commits bounds).  The built-in relations grow at every
 *     append, so every CSERVER_COMPACT_INTERVAL_MS the server allows them to compact
 *     to min(upper - CSERVER_BUILTIN_WINDOW_MS, holds) in one write and runs
 *     storage_compact_pending() with a small budget; while work remains it comes back
 *     sooner.
 *
 * (7) The frontier ring shows every live collection's (upper, since, physical_since).
 *     s->rc mirrors what was last published, so that a change is published once and
 *     an unchanged collection never.  At start everything is published (readers
 *     resync on our new generation anyway); after an append every appended collection
 *     is; after a drop its slot is forgotten.
 *
 * (8) Storage errors are sticky (controller-storage.h).  After one, the server
 *     reopens the database at once: RocksDB recovery then shows exactly what reached
 *     the disk, and the mirrors are rebuilt from it.  If the reopen fails, the server
 *     stops the node and the daemon exits non-zero.
 *
 * (9) Hostile input.  A payload that does not decode, a plan that does not validate,
 *     a row that is not well formed: each is answered with MSG_ERROR and logged at
 *     most MALFORMED_LOG_PER_S times a second; nothing here asserts on input.
 */
#include "controller-server.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-eval.h"
#include "controller-storage.h"
#include "fring.h"
#include "log.h"
#include "loop.h"
#include "node.h"
#include "row.h"
#include "util.h"

#define NS_PER_MS 1000000ull
#define MALFORMED_LOG_PER_S 10u
/* While compaction work is queued, run again this soon. */
#define COMPACT_AGAIN_MS 5u
/* A compaction run this long is logged at info. */
#define COMPACT_SLOW_US 5000u

/* A row of coord_frontiers, as stored. */
struct frow {
        uint64_t gid, since, upper;
        int64_t count;          /* 1, unless the relation was damaged */
};

struct cserver;

struct peek {
        struct peek *prev, *next;       /* on s->peeks: every peek in flight (5) */
        struct cserver *srv;
        Coord__Role from;
        uint64_t request_id;
        Coord__PeekRequest *req;        /* owned */
        struct eval_plan *plan;         /* borrows req */
        uint64_t input;                 /* the collection read; 0 for a constant plan */
        uint64_t ts;
        uint32_t timeout_ms;
        struct loop_timer *timer;       /* set while parked */
};

struct ratelimit {
        uint64_t window_ms;
        unsigned n, suppressed;
};

struct cserver {
        struct node *node;
        struct loop *loop;
        struct fring *ring;
        char *path;
        struct storage *st;             /* NULL only after a failed reopen (8) */
        bool failed;

        struct frow *fr;                /* coord_frontiers at its upper - 1, by gid (4) */
        size_t n_fr, cap_fr;
        struct fring_frontier *rc;      /* what the ring shows, by id (7) */
        size_t n_rc, cap_rc;
        struct storage_info *cols;      /* scratch: a listing of the collections */
        size_t n_cols, cap_cols;

        struct peek *peeks_head, *peeks_tail;
        size_t n_peeks, n_parked;
        struct loop_timer *compact_timer;

        struct ratelimit rl_input, rl_storage;
        uint64_t appends, peeks_answered, errors_sent;
};

/* ---- Small helpers ------------------------------------------------------------------ */

static int reserve(void **p, size_t *cap, size_t need, size_t size)
{
        size_t n;
        void *q;

        if (need <= *cap)
                return 0;
        n = *cap ? *cap : 16;
        while (n < need)
                n *= 2;
        q = reallocarray(*p, n, size);
        if (!q)
                return -ENOMEM;
        *p = q;
        *cap = n;
        return 0;
}
#define RESERVE(p, cap, need) reserve((void **)&(p), &(cap), (need), sizeof(*(p)))

static bool ratelimit_ok(struct ratelimit *rl, uint64_t now)
{
        if (now - rl->window_ms >= 1000) {
                rl->window_ms = now;
                rl->n = 0;
        }
        if (rl->n < MALFORMED_LOG_PER_S) {
                rl->n++;
                return true;
        }
        rl->suppressed++;
        return false;
}

/* The byte order of eval_batch_consolidate() (and of storage reads): memcmp, then
 * shorter first. */
static int row_bytes_cmp(const void *a, size_t alen, const void *b, size_t blen)
{
        int c = memcmp(a, b, alen < blen ? alen : blen);

        if (c)
                return c;
        return (alen > blen) - (alen < blen);
}

static const char *kind_name(enum storage_kind k)
{
        switch (k) {
        case STORAGE_KIND_TABLE: return "table";
        case STORAGE_KIND_SOURCE: return "source";
        case STORAGE_KIND_REMAP: return "remap";
        case STORAGE_KIND_MV: return "mv";
        case STORAGE_KIND_BUILTIN: return "builtin";
        default: return "invalid";
        }
}

static bool kind_appendable(enum storage_kind k)
{
        return k == STORAGE_KIND_TABLE || k == STORAGE_KIND_BUILTIN;
}

static const char *msg_name(int type)
{
        switch (type) {
        case COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS: return "EnsureCollections";
        case COORD__MSG_TYPE__MSG_DROP_COLLECTIONS: return "DropCollections";
        case COORD__MSG_TYPE__MSG_APPEND: return "Append";
        case COORD__MSG_TYPE__MSG_PEEK: return "PeekRequest";
        case COORD__MSG_TYPE__MSG_LIST_COLLECTIONS: return "ListCollections";
        default: return "message";
        }
}

/* ---- Replies ------------------------------------------------------------------------ */

static void send_logged(struct cserver *s, Coord__Role to, Coord__MsgType type, uint64_t rid,
                        const ProtobufCMessage *payload)
{
        int r = node_send(s->node, to, type, rid, payload);

        /* -ENOTCONN: the peer went away; its next life resyncs.  Anything else (a
         * peer that stopped reading) is worth a line, rate-limited. */
        if (r < 0 && r != -ENOTCONN && ratelimit_ok(&s->rl_input, now_ms()))
                log_warn_errno(r, "reply_failed", "role=%s type=%d request_id=%llu",
                               node_role_name(to), (int)type, (unsigned long long)rid);
}

static void reply_error(struct cserver *s, Coord__Role to, uint64_t rid, const struct row_error *e)
{
        Coord__Error m = COORD__ERROR__INIT;

        m.sqlstate = (char *)(e->sqlstate[0] ? e->sqlstate : "XX000");
        m.message = (char *)e->message;
        m.detail = (char *)e->detail;
        m.hint = (char *)e->hint;
        s->errors_sent++;
        log_debug("request_failed", "role=%s request_id=%llu sqlstate=%s message=\"%s\"",
                  node_role_name(to), (unsigned long long)rid, m.sqlstate, m.message);
        send_logged(s, to, COORD__MSG_TYPE__MSG_ERROR, rid, &m.base);
}

static void reply_ok(struct cserver *s, Coord__Role to, uint64_t rid, uint64_t *counts, size_t n,
                     uint64_t upper)
{
        Coord__Ok m = COORD__OK__INIT;

        m.counts = counts;
        m.n_counts = n;
        m.upper = upper;
        send_logged(s, to, COORD__MSG_TYPE__MSG_OK, rid, &m.base);
}

static void reply_malformed(struct cserver *s, Coord__Role to, const Coord__Envelope *env)
{
        struct row_error e;

        if (ratelimit_ok(&s->rl_input, now_ms()))
                log_warn("malformed_payload", "role=%s type=%d request_id=%llu bytes=%zu suppressed=%u",
                         node_role_name(to), (int)env->type, (unsigned long long)env->request_id,
                         env->payload.len, s->rl_input.suppressed);
        row_error_set(&e, -EBADMSG, "XX000", "malformed %s payload (%zu bytes)",
                      msg_name(env->type), env->payload.len);
        reply_error(s, to, env->request_id, &e);
}

/* An error of the storage layer, as a SQL error; checks for the sticky state (8). */
static int storage_failure(struct cserver *s, struct row_error *e, int r, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

/* ---- Storage (re)opening and listing ------------------------------------------------ */

static int list_one(const struct storage_info *info, void *userdata)
{
        struct cserver *s = userdata;
        int r = RESERVE(s->cols, s->cap_cols, s->n_cols + 1);

        if (r < 0)
                return r;
        s->cols[s->n_cols++] = *info;
        return 0;
}

/* Every collection, by gid, into s->cols. */
static int list_all(struct cserver *s)
{
        s->n_cols = 0;
        return storage_list(s->st, list_one, s);
}

static const struct storage_info *cols_find(const struct storage_info *v, size_t n, uint64_t gid)
{
        size_t lo = 0, hi = n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (v[mid].gid == gid)
                        return &v[mid];
                if (v[mid].gid < gid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* ---- The ring mirror (7) ------------------------------------------------------------ */

static size_t rc_lower_bound(const struct cserver *s, uint64_t id)
{
        size_t lo = 0, hi = s->n_rc;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (s->rc[mid].id < id)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static void ring_set(struct cserver *s, uint64_t gid, const struct storage_frontiers *f)
{
        struct fring_frontier rec = {
                .id = gid, .upper = f->upper, .since = f->since,
                .physical_since = f->physical_since,
        };
        size_t i;
        int r;

        if (!s->ring)
                return;
        i = rc_lower_bound(s, gid);
        if (i < s->n_rc && s->rc[i].id == gid && s->rc[i].upper == rec.upper &&
            s->rc[i].since == rec.since && s->rc[i].physical_since == rec.physical_since)
                return;
        if (!(i < s->n_rc && s->rc[i].id == gid)) {
                /* Room in the mirror first, so that a publish is never left unmirrored. */
                r = RESERVE(s->rc, s->cap_rc, s->n_rc + 1);
                if (r < 0)
                        goto fail;
        }
        r = fring_publish(s->ring, &rec);
        if (r < 0)
                goto fail;
        if (!(i < s->n_rc && s->rc[i].id == gid)) {
                memmove(&s->rc[i + 1], &s->rc[i], (s->n_rc - i) * sizeof(*s->rc));
                s->n_rc++;
        }
        s->rc[i] = rec;
        return;
fail:
        /* Not mirrored, so the next change of this collection tries again. */
        if (ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "ring_publish_failed", "gid=%llu", (unsigned long long)gid);
}

static void ring_forget(struct cserver *s, uint64_t gid)
{
        size_t i;
        int r;

        if (!s->ring)
                return;
        i = rc_lower_bound(s, gid);
        if (!(i < s->n_rc && s->rc[i].id == gid))
                return;
        r = fring_forget(s->ring, gid);
        if (r < 0 && r != -ENOENT)
                log_warn_errno(r, "ring_forget_failed", "gid=%llu", (unsigned long long)gid);
        memmove(&s->rc[i], &s->rc[i + 1], (s->n_rc - i - 1) * sizeof(*s->rc));
        s->n_rc--;
}

/* Publish every collection that changed and forget the ones that are gone. */
static void ring_sync_all(struct cserver *s)
{
        int r;

        if (!s->ring || !s->st)
                return;
        r = list_all(s);
        if (r < 0) {
                log_warn_errno(r, "ring_sync_failed", "");
                return;
        }
        for (size_t i = 0; i < s->n_rc;) {
                if (!cols_find(s->cols, s->n_cols, s->rc[i].id))
                        ring_forget(s, s->rc[i].id);        /* shifts the rest down */
                else
                        i++;
        }
        for (size_t i = 0; i < s->n_cols; i++)
                ring_set(s, s->cols[i].gid, &s->cols[i].frontiers);
}

/* ---- The frontiers mirror (4) ------------------------------------------------------- */

static int frow_cmp(const void *x, const void *y)
{
        const struct frow *a = x, *b = y;

        if (a->gid != b->gid)
                return a->gid < b->gid ? -1 : 1;
        if (a->since != b->since)
                return a->since < b->since ? -1 : 1;
        return (a->upper > b->upper) - (a->upper < b->upper);
}

static int frontiers_load_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct cserver *s = userdata;
        struct row_datum d[3];
        int r;

        if (row_decode(row, len, d, 3) != 3 || d[0].kind != ROW_KIND_INT ||
            d[1].kind != ROW_KIND_INT || d[2].kind != ROW_KIND_INT) {
                /* Only this module writes the relation; such a row is damage. */
                log_error("frontiers_row_ignored", "gid=%u bytes=%zu count=%lld",
                          CSERVER_GID_FRONTIERS, len, (long long)count);
                return 0;
        }
        r = RESERVE(s->fr, s->cap_fr, s->n_fr + 1);
        if (r < 0)
                return r;
        s->fr[s->n_fr++] = (struct frow){
                .gid = (uint64_t)d[0].i, .since = (uint64_t)d[1].i, .upper = (uint64_t)d[2].i,
                .count = count,
        };
        return 0;
}

/* Read coord_frontiers back at its upper - 1 into s->fr. */
static int frontiers_load(struct cserver *s)
{
        struct storage_info info;
        int r;

        s->n_fr = 0;
        r = storage_get_info(s->st, CSERVER_GID_FRONTIERS, &info);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (info.frontiers.upper <= info.frontiers.since)
                return 0;       /* nothing readable yet: empty */
        r = storage_read(s->st, CSERVER_GID_FRONTIERS, info.frontiers.upper - 1,
                         frontiers_load_row, s, NULL);
        if (r < 0) {
                s->n_fr = 0;
                return r;
        }
        /* Rows come in byte order, which is not gid order.  (qsort's base may not be
         * NULL, even for no rows.) */
        if (s->n_fr > 1)
                qsort(s->fr, s->n_fr, sizeof(*s->fr), frow_cmp);
        return 0;
}

/* After storage_open(): the mirrors follow the disk. */
static int storage_opened(struct cserver *s)
{
        int r = frontiers_load(s);

        if (r < 0)
                return log_error_errno(r, "frontiers_load_failed", "path=%s why=\"%s\"", s->path,
                                       storage_last_error());
        ring_sync_all(s);
        return 0;
}

/* (8): after a failed write, reopen so that memory follows what reached the disk. */
static void storage_recover(struct cserver *s)
{
        int r;

        if (!s->st || storage_error(s->st) == 0)
                return;
        log_error("storage_failed", "path=%s err=%d why=\"%s\" action=reopen", s->path,
                  storage_error(s->st), storage_last_error());
        s->st = storage_close(s->st);
        r = storage_open(s->path, &s->st);
        if (r >= 0)
                r = storage_opened(s);
        if (r < 0) {
                log_error_errno(r, "storage_reopen_failed", "path=%s why=\"%s\"", s->path,
                                storage_last_error());
                s->st = storage_close(s->st);
                s->failed = true;
                node_stop(s->node);
                return;
        }
        log_info("storage_reopened", "path=%s", s->path);
}

static int storage_failure(struct cserver *s, struct row_error *e, int r, const char *fmt, ...)
{
        char what[256];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        if (r == -ENOMEM)
                return row_error_oom(e);
        row_error_set(e, r, "XX000", "%s: %s", what, strerrordesc_np(-r) ? strerrordesc_np(-r) : "?");
        if (storage_last_error()[0])
                row_error_detail(e, "%s", storage_last_error());
        storage_recover(s);
        return r;
}

static int storage_unavailable(struct row_error *e)
{
        return row_error_set(e, -EIO, "58030", "the controller's storage is unavailable");
}

/* ---- Peeks (5) ---------------------------------------------------------------------- */

static void peek_free(struct peek *pk)
{
        struct cserver *s;

        if (!pk)
                return;
        s = pk->srv;
        if (pk->timer) {
                loop_timer_cancel(s->loop, pk->timer);
                s->n_parked--;
        }
        if (pk->prev)
                pk->prev->next = pk->next;
        else
                s->peeks_head = pk->next;
        if (pk->next)
                pk->next->prev = pk->prev;
        else
                s->peeks_tail = pk->prev;
        s->n_peeks--;
        eval_plan_free(pk->plan);
        if (pk->req)
                coord__peek_request__free_unpacked(pk->req, NULL);
        free(pk);
}

/* The lowest ts of a peek in flight on gid (an execution hold), or UINT64_MAX. */
static uint64_t peeks_hold(const struct cserver *s, uint64_t gid)
{
        uint64_t m = UINT64_MAX;

        for (const struct peek *pk = s->peeks_head; pk; pk = pk->next)
                if (pk->input == gid && pk->ts < m)
                        m = pk->ts;
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

static int storage_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                            void *emit_userdata)
{
        struct cserver *s = userdata;
        struct snapshot_emit se = { emit, emit_userdata };

        return storage_read(s->st, id, ts, snapshot_row, &se, NULL);
}

static const struct eval_source_ops storage_source = { .snapshot = storage_snapshot };

static void peek_answer(struct cserver *s, struct peek *pk, struct eval_batch *out)
{
        Coord__PeekResult m = COORD__PEEK_RESULT__INIT;
        struct row_error e;
        int r;

        m.rows = calloc(out->n ? out->n : 1, sizeof(*m.rows));
        m.counts = calloc(out->n ? out->n : 1, sizeof(*m.counts));
        if (!m.rows || !m.counts) {
                row_error_oom(&e);
                reply_error(s, pk->from, pk->request_id, &e);
                goto out;
        }
        for (size_t i = 0; i < out->n; i++) {
                assert(out->updates[i].diff > 0);
                m.rows[i].data = (uint8_t *)out->updates[i].row;
                m.rows[i].len = out->updates[i].len;
                m.counts[i] = (uint64_t)out->updates[i].diff;
        }
        m.n_rows = m.n_counts = out->n;
        r = node_send(s->node, pk->from, COORD__MSG_TYPE__MSG_PEEK_RESULT, pk->request_id, &m.base);
        if (r == -EMSGSIZE) {
                row_error_set(&e, r, "54000", "the result of the read (%zu distinct rows, %zu bytes) "
                              "is larger than a frame", out->n,
                              protobuf_c_message_get_packed_size(&m.base));
                reply_error(s, pk->from, pk->request_id, &e);
        } else if (r < 0 && r != -ENOTCONN && ratelimit_ok(&s->rl_input, now_ms())) {
                log_warn_errno(r, "reply_failed", "role=%s type=peek_result request_id=%llu",
                               node_role_name(pk->from), (unsigned long long)pk->request_id);
        }
        s->peeks_answered++;
out:
        free(m.rows);
        free(m.counts);
}

enum { PEEK_DONE, PEEK_WAIT };

/* Answer pk if it can be answered now: PEEK_DONE (answered, the caller frees it) or
 * PEEK_WAIT with *ret_upper the upper of the input that is not readable at ts yet. */
static int peek_try(struct cserver *s, struct peek *pk, uint64_t *ret_upper)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct storage_info info;
        struct row_error e;
        int r;

        if (!s->st) {
                storage_unavailable(&e);
                goto fail;
        }
        if (pk->input) {
                r = storage_get_info(s->st, pk->input, &info);
                if (r == -ENOENT) {
                        row_error_set(&e, r, "42P01", "collection %llu does not exist",
                                      (unsigned long long)pk->input);
                        goto fail;
                }
                if (r < 0) {
                        storage_failure(s, &e, r, "reading collection %llu",
                                        (unsigned long long)pk->input);
                        goto fail;
                }
                if (pk->ts < info.frontiers.since) {
                        row_error_set(&e, -EDOM, "55000",
                                      "AS OF %llu is below the since %llu of collection %llu: its "
                                      "history before the since is compacted",
                                      (unsigned long long)pk->ts,
                                      (unsigned long long)info.frontiers.since,
                                      (unsigned long long)pk->input);
                        row_error_detail(&e, "Collection %llu is readable from %llu on; the read "
                                         "asked for %llu.", (unsigned long long)pk->input,
                                         (unsigned long long)info.frontiers.since,
                                         (unsigned long long)pk->ts);
                        goto fail;
                }
                if (pk->ts >= info.frontiers.upper) {
                        *ret_upper = info.frontiers.upper;
                        return PEEK_WAIT;
                }
        }
        r = eval_peek(pk->plan, pk->ts, &storage_source, s, &out, &e);
        if (r < 0) {
                if (r == -ENOMEM)
                        row_error_oom(&e);
                goto fail;
        }
        peek_answer(s, pk, &out);
        eval_batch_done(&out);
        return PEEK_DONE;
fail:
        eval_batch_done(&out);
        reply_error(s, pk->from, pk->request_id, &e);
        return PEEK_DONE;
}

static void peek_timeout(struct loop *l, void *userdata)
{
        struct peek *pk = userdata;
        struct cserver *s = pk->srv;
        uint64_t upper = 0;
        struct row_error e;

        /* The timer is freed after this returns: never cancel it again. */
        pk->timer = NULL;
        s->n_parked--;
        if (peek_try(s, pk, &upper) == PEEK_WAIT) {
                row_error_set(&e, -ETIMEDOUT, "57014",
                              "timed out after %u ms waiting for collection %llu to become "
                              "readable at %llu (its upper is %llu)", pk->timeout_ms,
                              (unsigned long long)pk->input, (unsigned long long)pk->ts,
                              (unsigned long long)upper);
                row_error_hint(&e, "Appends advance the upper; is the adapter ticking?");
                reply_error(s, pk->from, pk->request_id, &e);
        }
        peek_free(pk);
}

/* Retry every parked peek, in arrival order. */
static void peeks_wake(struct cserver *s)
{
        struct peek *pk, *next;
        uint64_t upper;

        for (pk = s->peeks_head; pk; pk = next) {
                next = pk->next;
                if (pk->timer && peek_try(s, pk, &upper) == PEEK_DONE)
                        peek_free(pk);
        }
}

static void handle_peek(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        struct peek *pk;
        struct row_error e;
        uint64_t upper = 0;
        int r;

        pk = calloc(1, sizeof(*pk));
        if (!pk) {
                row_error_oom(&e);
                reply_error(s, from, env->request_id, &e);
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
                reply_malformed(s, from, env);
                goto done;
        }
        if (!pk->req->peek || !pk->req->peek->plan) {
                row_error_set(&e, -EINVAL, "XX000", "invalid plan: a peek without a plan");
                goto fail;
        }
        r = eval_plan_new(pk->req->peek->plan, &pk->plan, &e);
        if (r < 0) {
                if (r == -ENOMEM)
                        row_error_oom(&e);
                if (ratelimit_ok(&s->rl_input, now_ms()))
                        log_info("peek_plan_rejected", "role=%s request_id=%llu sqlstate=%s message=\"%s\"",
                                 node_role_name(from), (unsigned long long)env->request_id,
                                 e.sqlstate, e.message);
                goto fail;
        }
        pk->input = eval_plan_input(pk->plan);
        pk->ts = pk->req->peek->timestamp;
        pk->timeout_ms = pk->req->timeout_ms ? pk->req->timeout_ms : CSERVER_PEEK_TIMEOUT_DEFAULT_MS;
        if (peek_try(s, pk, &upper) == PEEK_DONE)
                goto done;
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
        reply_error(s, from, env->request_id, &e);
done:
        peek_free(pk);
}

/* ---- Appends (2), (3), (4) ---------------------------------------------------------- */

/* A collection an append writes rows to. */
struct touched {
        const struct storage_info *col;         /* in ac->cols */
        struct eval_batch pend;                 /* this append's updates, all at ts */
        struct eval_batch base;                 /* its contents before the append */
        bool base_read;
};

struct append_ctx {
        struct cserver *s;
        uint64_t ts;
        struct storage_info *cols;              /* TABLE and BUILTIN collections, by gid */
        size_t n_cols;
        struct touched *t;
        size_t n_t, cap_t;
        uint64_t *counts;                       /* one per write */
        struct frow *new_fr;                    /* coord_frontiers after the append */
        size_t n_new_fr;
        bool frontiers;                         /* coord_frontiers is appended to */
        struct row_error err;
};

static void append_ctx_done(struct append_ctx *ac)
{
        for (size_t i = 0; i < ac->n_t; i++) {
                eval_batch_done(&ac->t[i].pend);
                eval_batch_done(&ac->t[i].base);
        }
        free(ac->t);
        free(ac->cols);
        free(ac->counts);
        free(ac->new_fr);
}

static int touch(struct append_ctx *ac, const struct storage_info *col, struct touched **ret)
{
        int r;

        for (size_t i = 0; i < ac->n_t; i++)
                if (ac->t[i].col == col) {
                        *ret = &ac->t[i];
                        return 0;
                }
        r = RESERVE(ac->t, ac->cap_t, ac->n_t + 1);
        if (r < 0)
                return row_error_oom(&ac->err);
        ac->t[ac->n_t] = (struct touched){
                .col = col, .pend = EVAL_BATCH_INIT, .base = EVAL_BATCH_INIT,
        };
        *ret = &ac->t[ac->n_t++];
        return 0;
}

static int base_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct touched *t = userdata;

        return eval_batch_push(&t->base, row, len, 0, count);
}

/* The collection's contents before this append: at upper - 1, or empty when nothing
 * is readable (a table that was never appended to has since == upper).  Rows come
 * consolidated and in byte order. */
static int touched_base(struct append_ctx *ac, struct touched *t)
{
        const struct storage_frontiers *f = &t->col->frontiers;
        int r;

        if (t->base_read)
                return 0;
        if (f->upper > f->since) {
                r = storage_read(ac->s->st, t->col->gid, f->upper - 1, base_row, t, NULL);
                if (r < 0) {
                        eval_batch_clear(&t->base);
                        return storage_failure(ac->s, &ac->err, r, "reading collection %llu",
                                               (unsigned long long)t->col->gid);
                }
                /* Already consolidated; this puts it in eval's byte order, the one
                 * check_nonnegative() merges in, whatever order storage uses. */
                r = eval_batch_consolidate(&t->base);
                if (r < 0)
                        return row_error_set(&ac->err, r, "XX000", "collection %llu: row "
                                             "count out of range", (unsigned long long)t->col->gid);
        }
        t->base_read = true;
        return 0;
}

/* The snapshot of a DELETE's filter: the contents before the append plus the group's
 * earlier writes (proto: "a delete is applied after the group's earlier writes"). */
static int delete_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                           void *emit_userdata)
{
        struct touched *t = userdata;
        int r;

        if (id != t->col->gid)
                return -ENOENT;
        for (size_t i = 0; i < t->base.n; i++) {
                r = emit(emit_userdata, t->base.updates[i].row, t->base.updates[i].len,
                         t->base.updates[i].diff);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < t->pend.n; i++) {
                r = emit(emit_userdata, t->pend.updates[i].row, t->pend.updates[i].len,
                         t->pend.updates[i].diff);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const struct eval_source_ops delete_source = { .snapshot = delete_snapshot };

/* The Get at the bottom of a chain of Filter / Map / Project, or NULL. */
static const Coord__Plan__Get *plan_leaf_get(const Coord__Plan__Relation *rel)
{
        while (rel) {
                switch (rel->kind_case) {
                case COORD__PLAN__RELATION__KIND_GET:
                        return rel->get;
                case COORD__PLAN__RELATION__KIND_FILTER:
                        rel = rel->filter ? rel->filter->input : NULL;
                        break;
                case COORD__PLAN__RELATION__KIND_MAP:
                        rel = rel->map ? rel->map->input : NULL;
                        break;
                case COORD__PLAN__RELATION__KIND_PROJECT:
                        rel = rel->project ? rel->project->input : NULL;
                        break;
                default:
                        return NULL;
                }
        }
        return NULL;
}

static int append_delete(struct append_ctx *ac, struct touched *t, const Coord__TableWrite *w,
                         uint64_t *ret_count)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct eval_plan *p = NULL;
        const Coord__Plan__Get *get;
        const enum row_type *types;
        uint64_t count = 0;
        int r;

        r = eval_plan_new(w->delete_filter, &p, &ac->err);
        if (r < 0)
                goto out;
        get = plan_leaf_get(w->delete_filter);
        types = eval_plan_types(p);
        r = -EINVAL;
        if (eval_plan_input(p) != w->gid || !get) {
                row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                              "collection %llu reads collection %llu",
                              (unsigned long long)w->gid, (unsigned long long)eval_plan_input(p));
                goto out;
        }
        /* Retractions must be whole rows of the table, else they retract rows that
         * do not exist (caught below, but this names the real mistake). */
        if (eval_plan_arity(p) != get->n_column_types) {
                row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                              "collection %llu must return its rows unchanged",
                              (unsigned long long)w->gid);
                goto out;
        }
        for (size_t i = 0; i < get->n_column_types; i++)
                if ((int)types[i] != (int)get->column_types[i]) {
                        row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                                      "collection %llu must return its rows unchanged",
                                      (unsigned long long)w->gid);
                        goto out;
                }
        r = touched_base(ac, t);
        if (r < 0)
                goto out;
        /* ts is also mz_now(): a DELETE's logical time is its write timestamp. */
        r = eval_peek(p, ac->ts, &delete_source, t, &out, &ac->err);
        if (r < 0) {
                if (r == -ENOMEM)
                        row_error_oom(&ac->err);
                goto out;
        }
        for (size_t i = 0; i < out.n; i++) {
                r = eval_batch_push(&t->pend, out.updates[i].row, out.updates[i].len, ac->ts,
                                    -out.updates[i].diff);
                if (r < 0) {
                        row_error_oom(&ac->err);
                        goto out;
                }
                count += (uint64_t)out.updates[i].diff;
        }
        *ret_count = count;
        r = 0;
out:
        eval_batch_done(&out);
        eval_plan_free(p);
        return r;
}

static int append_insert(struct append_ctx *ac, struct touched *t, const Coord__TableWrite *w,
                         uint64_t *ret_count)
{
        uint64_t count = 0;
        int r;

        for (size_t k = 0; k < w->n_rows; k++) {
                const ProtobufCBinaryData *row = &w->rows[k];
                int64_t diff = w->n_diffs ? w->diffs[k] : 1;

                if (row->len > STORAGE_ROW_MAX)
                        return row_error_set(&ac->err, -EMSGSIZE, "54000", "row %zu of the write to "
                                             "collection %llu is too long (%zu bytes)", k,
                                             (unsigned long long)w->gid, row->len);
                if (row_validate(row->data, row->len) < 0)
                        return row_error_set(&ac->err, -EBADMSG, "22P02", "row %zu of the write to "
                                             "collection %llu is not a well-formed row", k,
                                             (unsigned long long)w->gid);
                if (diff == 0)
                        continue;
                r = eval_batch_push(&t->pend, row->data, row->len, ac->ts, diff);
                if (r < 0)
                        return row_error_oom(&ac->err);
                /* |diff| without overflow at INT64_MIN; the count saturates. */
                if (__builtin_add_overflow(count, diff < 0 ? (uint64_t)0 - (uint64_t)diff
                                                           : (uint64_t)diff, &count))
                        count = UINT64_MAX;
        }
        *ret_count = count;
        return 0;
}

static int frontiers_push(struct touched *t, const struct frow *f, int64_t diff, uint64_t ts)
{
        struct row_datum d[3] = {
                /* Timestamps and GlobalIds are below 2^63 in practice; int8 is signed. */
                ROW_DATUM_INT((int64_t)f->gid), ROW_DATUM_INT((int64_t)f->since),
                ROW_DATUM_INT((int64_t)f->upper),
        };
        uint8_t buf[64];
        size_t len;

        assert(row_encoded_size(d, 3) <= (int64_t)sizeof(buf));
        len = row_encode_into(d, 3, buf);
        return eval_batch_push(&t->pend, buf, len, ts, diff);
}

/* (4): the rows of coord_frontiers that this append changes.  new_fr is the relation
 * after it: every table with its since and its new upper ts + 1. */
static int append_frontiers(struct append_ctx *ac, const struct storage_info *fcol)
{
        struct cserver *s = ac->s;
        struct touched *t;
        size_t i = 0, j = 0, n = 0;
        int r;

        ac->new_fr = calloc(ac->n_cols ? ac->n_cols : 1, sizeof(*ac->new_fr));
        if (!ac->new_fr)
                return row_error_oom(&ac->err);
        for (size_t k = 0; k < ac->n_cols; k++)
                if (ac->cols[k].kind == STORAGE_KIND_TABLE)
                        ac->new_fr[n++] = (struct frow){
                                .gid = ac->cols[k].gid, .since = ac->cols[k].frontiers.since,
                                .upper = ac->ts + 1, .count = 1,
                        };
        ac->n_new_fr = n;
        r = touch(ac, fcol, &t);
        if (r < 0)
                return r;
        /* Merge the old rows (s->fr) with the new ones, both by gid. */
        while (i < s->n_fr || j < n) {
                uint64_t gid = j < n && (i >= s->n_fr || ac->new_fr[j].gid <= s->fr[i].gid)
                                       ? ac->new_fr[j].gid : s->fr[i].gid;
                size_t i0 = i;
                bool same;

                while (i < s->n_fr && s->fr[i].gid == gid)
                        i++;
                same = j < n && ac->new_fr[j].gid == gid && i - i0 == 1 && s->fr[i0].count == 1 &&
                       s->fr[i0].since == ac->new_fr[j].since &&
                       s->fr[i0].upper == ac->new_fr[j].upper;
                if (!same) {
                        for (size_t k = i0; k < i; k++) {
                                r = frontiers_push(t, &s->fr[k], -s->fr[k].count, ac->ts);
                                if (r < 0)
                                        return row_error_oom(&ac->err);
                        }
                        if (j < n && ac->new_fr[j].gid == gid) {
                                r = frontiers_push(t, &ac->new_fr[j], 1, ac->ts);
                                if (r < 0)
                                        return row_error_oom(&ac->err);
                        }
                }
                if (j < n && ac->new_fr[j].gid == gid)
                        j++;
        }
        return 0;
}

/* (3): no row of t's collection may end with a negative count.  pend and base are both
 * consolidated and in byte order, so one merge finds every row's final count. */
static int check_nonnegative(struct append_ctx *ac, struct touched *t)
{
        const struct eval_batch *b = &t->base, *p = &t->pend;
        size_t i = 0;
        char *text = NULL;
        int r;

        r = touched_base(ac, t);
        if (r < 0)
                return r;
        for (size_t j = 0; j < p->n; j++) {
                const struct eval_update *u = &p->updates[j];
                int64_t have = 0;
                int c = 1;

                if (u->diff > 0)
                        continue;
                while (i < b->n && (c = row_bytes_cmp(b->updates[i].row, b->updates[i].len,
                                                      u->row, u->len)) < 0)
                        i++;
                if (i < b->n && c == 0)
                        have = b->updates[i].diff;
                if (have + u->diff >= 0)        /* have >= 0 and diff < 0: no overflow */
                        continue;
                (void)row_to_string(u->row, u->len, &text);
                r = row_error_set(&ac->err, -EINVAL, "XX000", "the append would retract row %s of "
                                  "collection %llu %lld times, but it is there %lld times",
                                  text ? text : "(?)", (unsigned long long)t->col->gid,
                                  (long long)-u->diff, (long long)have);
                free(text);
                return r;
        }
        return 0;
}

/* Everything of (3) that can be checked before writing; fills ac or ac->err. */
static int append_prepare(struct append_ctx *ac, const Coord__Append *a)
{
        struct cserver *s = ac->s;
        const struct storage_info *fcol = NULL;
        int r;

        if (a->ts == UINT64_MAX)
                return row_error_set(&ac->err, -EINVAL, "XX000", "cannot append at %llu",
                                     (unsigned long long)a->ts);
        r = list_all(s);
        if (r < 0)
                return storage_failure(s, &ac->err, r, "listing collections");
        ac->cols = calloc(s->n_cols ? s->n_cols : 1, sizeof(*ac->cols));
        ac->counts = calloc(a->n_writes ? a->n_writes : 1, sizeof(*ac->counts));
        if (!ac->cols || !ac->counts)
                return row_error_oom(&ac->err);
        for (size_t i = 0; i < s->n_cols; i++) {
                const struct storage_info *c = &s->cols[i];

                if (!kind_appendable(c->kind))
                        continue;
                if (c->frontiers.upper > a->ts) {
                        r = row_error_set(&ac->err, -ESTALE, "XX000",
                                          "cannot append at %llu: collection %llu has upper %llu",
                                          (unsigned long long)a->ts, (unsigned long long)c->gid,
                                          (unsigned long long)c->frontiers.upper);
                        row_error_detail(&ac->err, "An append's timestamp must be at or above the "
                                         "upper of every table; nothing was written.");
                        return r;
                }
                ac->cols[ac->n_cols++] = *c;
        }

        for (size_t i = 0; i < a->n_writes; i++) {
                const Coord__TableWrite *w = a->writes[i];
                const struct storage_info *col = cols_find(ac->cols, ac->n_cols, w->gid);
                struct touched *t;

                if (!col) {
                        struct storage_info info;

                        if (storage_get_info(s->st, w->gid, &info) == 0)
                                return row_error_set(&ac->err, -EINVAL, "XX000", "collection %llu "
                                                     "is a %s, not a table",
                                                     (unsigned long long)w->gid, kind_name(info.kind));
                        return row_error_set(&ac->err, -ENOENT, "42P01",
                                             "collection %llu does not exist",
                                             (unsigned long long)w->gid);
                }
                if (w->gid == CSERVER_GID_FRONTIERS)
                        return row_error_set(&ac->err, -EPERM, "XX000", "collection %u "
                                             "(coord_frontiers) is written by the controller only",
                                             CSERVER_GID_FRONTIERS);
                if (w->n_diffs && w->n_diffs != w->n_rows)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                             "%llu has %zu rows but %zu diffs",
                                             (unsigned long long)w->gid, w->n_rows, w->n_diffs);
                if (w->delete_filter && w->n_rows)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                             "%llu has both rows and a delete filter",
                                             (unsigned long long)w->gid);
                r = touch(ac, col, &t);
                if (r < 0)
                        return r;
                r = w->delete_filter ? append_delete(ac, t, w, &ac->counts[i])
                                     : append_insert(ac, t, w, &ac->counts[i]);
                if (r < 0)
                        return r;
        }

        fcol = cols_find(ac->cols, ac->n_cols, CSERVER_GID_FRONTIERS);
        if (fcol && fcol->kind == STORAGE_KIND_BUILTIN) {
                ac->frontiers = true;
                r = append_frontiers(ac, fcol);
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < ac->n_t; i++) {
                struct touched *t = &ac->t[i];
                bool negative = false;

                r = eval_batch_consolidate(&t->pend);
                if (r == -EOVERFLOW)
                        return row_error_set(&ac->err, r, "22003", "row count out of range in "
                                             "the write to collection %llu",
                                             (unsigned long long)t->col->gid);
                for (size_t k = 0; k < t->pend.n && !negative; k++)
                        negative = t->pend.updates[k].diff < 0;
                /* coord_frontiers retracts what s->fr says is there (4), which was read
                 * from the relation itself; it is not read again at every append. */
                if (negative && t->col->gid != CSERVER_GID_FRONTIERS) {
                        r = check_nonnegative(ac, t);
                        if (r < 0)
                                return r;
                }
        }

        /* Load every collection's descriptors now, so that the group cannot fail for
         * one collection and succeed for the others. */
        for (size_t i = 0; i < ac->n_cols; i++) {
                struct storage_collection_stats cs;

                r = storage_collection_stats(s->st, ac->cols[i].gid, &cs);
                if (r < 0)
                        return storage_failure(s, &ac->err, r, "loading collection %llu",
                                               (unsigned long long)ac->cols[i].gid);
        }
        return 0;
}

static int append_commit(struct append_ctx *ac)
{
        struct cserver *s = ac->s;
        struct storage_append *v = NULL;
        struct storage_update *u = NULL;
        size_t n_u = 0, k = 0;
        int r;

        for (size_t i = 0; i < ac->n_t; i++)
                n_u += ac->t[i].pend.n;
        v = calloc(ac->n_cols ? ac->n_cols : 1, sizeof(*v));
        u = calloc(n_u ? n_u : 1, sizeof(*u));
        if (!v || !u) {
                r = row_error_oom(&ac->err);
                goto out;
        }
        for (size_t i = 0; i < ac->n_cols; i++)
                v[i] = (struct storage_append){
                        .gid = ac->cols[i].gid, .expected_upper = ac->cols[i].frontiers.upper,
                        .new_upper = ac->ts + 1,
                };
        for (size_t i = 0; i < ac->n_t; i++) {
                const struct touched *t = &ac->t[i];
                struct storage_append *sa = &v[t->col - ac->cols];

                sa->updates = &u[k];
                sa->n_updates = t->pend.n;
                for (size_t j = 0; j < t->pend.n; j++)
                        u[k++] = (struct storage_update){
                                .row = t->pend.updates[j].row, .len = t->pend.updates[j].len,
                                .time = ac->ts, .diff = t->pend.updates[j].diff,
                        };
        }
        if (ac->n_cols == 0) {
                r = 0;
                goto out;
        }
        r = storage_append_group(s->st, v, ac->n_cols);
        if (r < 0) {
                storage_failure(s, &ac->err, r, "append at %llu", (unsigned long long)ac->ts);
                goto out;
        }
        if ((size_t)r != ac->n_cols) {
                /* (3) says this cannot happen; if it does, memory follows the disk. */
                for (size_t i = 0; i < ac->n_cols; i++)
                        if (v[i].result < 0)
                                log_error_errno(v[i].result, "append_partial", "ts=%llu gid=%llu "
                                                "upper=%llu why=\"%s\"", (unsigned long long)ac->ts,
                                                (unsigned long long)v[i].gid,
                                                (unsigned long long)v[i].actual_upper,
                                                storage_last_error());
                r = row_error_set(&ac->err, -EIO, "XX000", "append at %llu was applied to %d of "
                                  "%zu collections", (unsigned long long)ac->ts, r, ac->n_cols);
                if (frontiers_load(s) < 0)
                        s->n_fr = 0;
                ring_sync_all(s);
                goto out;
        }
        r = 0;
out:
        free(v);
        free(u);
        return r;
}

/* After a durable append: the mirrors follow (4), (7). */
static void append_apply(struct append_ctx *ac)
{
        struct cserver *s = ac->s;

        if (ac->frontiers) {
                free(s->fr);
                s->fr = TAKE_PTR(ac->new_fr);
                s->n_fr = s->cap_fr = ac->n_new_fr;
        }
        for (size_t i = 0; i < ac->n_cols; i++) {
                struct storage_frontiers f = ac->cols[i].frontiers;

                f.upper = ac->ts + 1;
                ring_set(s, ac->cols[i].gid, &f);
        }
        s->appends++;
}

static void handle_append(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        struct append_ctx ac = { .s = s };
        Coord__Append *a;
        int r;

        a = coord__append__unpack(NULL, env->payload.len, env->payload.data);
        if (!a) {
                reply_malformed(s, from, env);
                return;
        }
        ac.ts = a->ts;
        if (!s->st) {
                storage_unavailable(&ac.err);
                r = -EIO;
        } else {
                r = append_prepare(&ac, a);
                if (r >= 0)
                        r = append_commit(&ac);
        }
        if (r < 0) {
                reply_error(s, from, env->request_id, &ac.err);
        } else {
                append_apply(&ac);
                log_debug("append", "ts=%llu writes=%zu collections=%zu",
                          (unsigned long long)a->ts, a->n_writes, ac.n_cols);
                reply_ok(s, from, env->request_id, ac.counts, a->n_writes, a->ts + 1);
                peeks_wake(s);
        }
        append_ctx_done(&ac);
        coord__append__free_unpacked(a, NULL);
}

/* ---- Collections -------------------------------------------------------------------- */

static int drop_one(struct cserver *s, uint64_t gid, struct row_error *e)
{
        int r = storage_drop(s->st, gid);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return storage_failure(s, e, r, "dropping collection %llu", (unsigned long long)gid);
        ring_forget(s, gid);
        /* The relation is gone; a new one starts empty and is filled at the next append. */
        if (gid == CSERVER_GID_FRONTIERS)
                s->n_fr = 0;
        log_info("collection_dropped", "gid=%llu", (unsigned long long)gid);
        return 0;
}

static int u64_cmp(const void *x, const void *y)
{
        uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

        return (a > b) - (a < b);
}

static int ensure(struct cserver *s, const Coord__EnsureCollections *m, struct row_error *e)
{
        _cleanup_free_ uint64_t *listed = NULL;
        struct storage_info info;
        size_t n_dropped = 0;
        int r;

        /* Validate everything before changing anything. */
        for (size_t i = 0; i < m->n_collections; i++) {
                const Coord__CollectionSpec *c = m->collections[i];
                enum storage_kind kind = (enum storage_kind)c->kind;

                if (c->gid == 0 || !kind_appendable(kind))
                        return row_error_set(e, -EINVAL, "XX000", "cannot ensure collection %llu "
                                             "of kind %d", (unsigned long long)c->gid, (int)c->kind);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0 && info.kind != kind)
                        return row_error_set(e, -EEXIST, "XX000", "collection %llu exists as a %s, "
                                             "not a %s", (unsigned long long)c->gid,
                                             kind_name(info.kind), kind_name(kind));
                if (r < 0 && r != -ENOENT)
                        return storage_failure(s, e, r, "looking up collection %llu",
                                               (unsigned long long)c->gid);
        }
        for (size_t i = 0; i < m->n_collections; i++) {
                const Coord__CollectionSpec *c = m->collections[i];

                if (storage_get_info(s->st, c->gid, &info) == 0)
                        continue;       /* existing ones are untouched */
                r = storage_create(s->st, c->gid, (enum storage_kind)c->kind, c->since, c->since);
                if (r < 0)
                        return storage_failure(s, e, r, "creating collection %llu",
                                               (unsigned long long)c->gid);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0)
                        ring_set(s, c->gid, &info.frontiers);
                log_info("collection_created", "gid=%llu kind=%s since=%llu",
                         (unsigned long long)c->gid, kind_name((enum storage_kind)c->kind),
                         (unsigned long long)c->since);
        }
        if (!m->complete)
                return 0;
        listed = calloc(m->n_collections ? m->n_collections : 1, sizeof(*listed));
        if (!listed)
                return row_error_oom(e);
        for (size_t i = 0; i < m->n_collections; i++)
                listed[i] = m->collections[i]->gid;
        qsort(listed, m->n_collections, sizeof(*listed), u64_cmp);
        r = list_all(s);
        if (r < 0)
                return storage_failure(s, e, r, "listing collections");
        /* drop_one() lists nothing, so s->cols stays valid through the loop. */
        for (size_t i = 0; i < s->n_cols; i++) {
                uint64_t gid = s->cols[i].gid;

                if (s->cols[i].kind != STORAGE_KIND_TABLE ||
                    bsearch(&gid, listed, m->n_collections, sizeof(*listed), u64_cmp))
                        continue;
                r = drop_one(s, gid, e);
                if (r < 0)
                        return r;
                n_dropped++;
        }
        if (n_dropped)
                log_info("collections_reconciled", "listed=%zu dropped=%zu", m->n_collections,
                         n_dropped);
        return 0;
}

static void handle_ensure(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__EnsureCollections *m;
        struct row_error e;
        int r;

        m = coord__ensure_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                reply_malformed(s, from, env);
                return;
        }
        r = s->st ? ensure(s, m, &e) : storage_unavailable(&e);
        if (r < 0)
                reply_error(s, from, env->request_id, &e);
        else
                reply_ok(s, from, env->request_id, NULL, 0, 0);
        coord__ensure_collections__free_unpacked(m, NULL);
        /* A collection dropped by `complete` fails the peeks parked on it. */
        peeks_wake(s);
}

static void handle_drop(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__DropCollections *m;
        struct row_error e;
        int r = 0;

        m = coord__drop_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                reply_malformed(s, from, env);
                return;
        }
        if (!s->st)
                r = storage_unavailable(&e);
        for (size_t i = 0; i < m->n_gids && r >= 0; i++)
                r = drop_one(s, m->gids[i], &e);
        if (r < 0)
                reply_error(s, from, env->request_id, &e);
        else
                reply_ok(s, from, env->request_id, NULL, 0, 0);
        coord__drop_collections__free_unpacked(m, NULL);
        peeks_wake(s);
}

static void handle_list(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__CollectionList m = COORD__COLLECTION_LIST__INIT;
        Coord__CollectionFrontiers *items = NULL, **ptrs = NULL;
        Coord__ListCollections *req;
        struct row_error e;
        int r;

        req = coord__list_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!req) {
                reply_malformed(s, from, env);
                return;
        }
        coord__list_collections__free_unpacked(req, NULL);
        r = s->st ? list_all(s) : storage_unavailable(&e);
        if (r < 0) {
                if (s->st)
                        storage_failure(s, &e, r, "listing collections");
                goto fail;
        }
        items = calloc(s->n_cols ? s->n_cols : 1, sizeof(*items));
        ptrs = calloc(s->n_cols ? s->n_cols : 1, sizeof(*ptrs));
        if (!items || !ptrs) {
                row_error_oom(&e);
                goto fail;
        }
        for (size_t i = 0; i < s->n_cols; i++) {
                coord__collection_frontiers__init(&items[i]);
                items[i].gid = s->cols[i].gid;
                /* CollectionKind has StorageKind's numbers. */
                items[i].kind = (Coord__CollectionKind)s->cols[i].kind;
                items[i].since = s->cols[i].frontiers.since;
                items[i].upper = s->cols[i].frontiers.upper;
                items[i].physical_since = s->cols[i].frontiers.physical_since;
                ptrs[i] = &items[i];
        }
        m.collections = ptrs;
        m.n_collections = s->n_cols;
        send_logged(s, from, COORD__MSG_TYPE__MSG_COLLECTION_LIST, env->request_id, &m.base);
        goto out;
fail:
        reply_error(s, from, env->request_id, &e);
out:
        free(items);
        free(ptrs);
}

/* ---- Compaction (6) ----------------------------------------------------------------- */

static void compact_arm(struct cserver *s, uint64_t ms);

static bool compact_run(struct cserver *s)
{
        struct storage_since *v = NULL;
        struct storage_stats before, after;
        uint64_t start_ns, took_us;
        size_t n = 0;
        int r, remaining;
        bool moved = false;

        r = list_all(s);
        if (r < 0)
                goto fail;
        v = calloc(s->n_cols ? s->n_cols : 1, sizeof(*v));
        if (!v) {
                r = -ENOMEM;
                goto fail;
        }
        for (size_t i = 0; i < s->n_cols; i++) {
                const struct storage_info *c = &s->cols[i];
                uint64_t target, hold;

                if (c->kind != STORAGE_KIND_BUILTIN || c->frontiers.upper <= CSERVER_BUILTIN_WINDOW_MS)
                        continue;
                target = c->frontiers.upper - CSERVER_BUILTIN_WINDOW_MS;
                hold = peeks_hold(s, c->gid);
                if (hold < target)
                        target = hold;
                if (target > c->frontiers.since)
                        v[n++] = (struct storage_since){ .gid = c->gid, .since = target };
        }
        if (n > 0) {
                r = storage_allow_compaction_group(s->st, v, n);
                if (r < 0)
                        goto fail;
                moved = r > 0;
        }
        storage_get_stats(s->st, &before);
        start_ns = now_ns();
        remaining = storage_compact_pending(s->st, CSERVER_COMPACT_BUDGET);
        if (remaining < 0) {
                r = remaining;
                goto fail;
        }
        storage_get_stats(s->st, &after);
        took_us = (now_ns() - start_ns) / 1000;
        /* The budget is soft (one collection is always compacted whole): say when a
         * run held the loop long enough to show in reply latencies. */
        log_at(took_us >= COMPACT_SLOW_US ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG, "compaction_ran",
               "took_us=%llu compactions=%llu updates_rewritten=%llu remaining=%d",
               (unsigned long long)took_us,
               (unsigned long long)(after.compactions - before.compactions),
               (unsigned long long)(after.updates_rewritten - before.updates_rewritten),
               remaining);
        if (moved || after.compactions != before.compactions)
                ring_sync_all(s);
        free(v);
        return remaining > 0;
fail:
        free(v);
        if (ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "compaction_failed", "why=\"%s\"", storage_last_error());
        storage_recover(s);
        return false;
}

static void compact_tick(struct loop *l, void *userdata)
{
        struct cserver *s = userdata;
        bool more = false;

        s->compact_timer = NULL;        /* freed after this returns */
        if (s->st)
                more = compact_run(s);
        if (s->st)
                compact_arm(s, more ? COMPACT_AGAIN_MS : CSERVER_COMPACT_INTERVAL_MS);
}

static void compact_arm(struct cserver *s, uint64_t ms)
{
        int r;

        assert(!s->compact_timer);
        r = loop_timer_add(s->loop, ms * NS_PER_MS, compact_tick, s, &s->compact_timer);
        if (r < 0) {
                s->compact_timer = NULL;
                log_error_errno(r, "compaction_timer_failed", "");
        }
}

/* ---- Entry points ------------------------------------------------------------------- */

void cserver_on_message(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        struct row_error e;

        switch (env->type) {
        case COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS:
                handle_ensure(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_DROP_COLLECTIONS:
                handle_drop(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_APPEND:
                handle_append(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_PEEK:
                handle_peek(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_LIST_COLLECTIONS:
                handle_list(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_OK:
        case COORD__MSG_TYPE__MSG_ERROR:
        case COORD__MSG_TYPE__MSG_PEEK_RESULT:
        case COORD__MSG_TYPE__MSG_COLLECTION_LIST:
        case COORD__MSG_TYPE__MSG_PONG:
                /* Replies are never answered (no error ping-pong between daemons). */
                if (ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unexpected_reply", "role=%s type=%d", node_role_name(from),
                                 (int)env->type);
                return;
        default:
                if (ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unsupported_message", "role=%s type=%d", node_role_name(from),
                                 (int)env->type);
                row_error_set(&e, -EOPNOTSUPP, "XX000",
                              "message type %d is not served by the controller", (int)env->type);
                reply_error(s, from, env->request_id, &e);
                return;
        }
}

void cserver_on_peer_change(struct cserver *s, Coord__Role role)
{
        struct peek *pk, *next;
        size_t n = 0;

        for (pk = s->peeks_head; pk; pk = next) {
                next = pk->next;
                if (pk->from == role) {
                        peek_free(pk);
                        n++;
                }
        }
        if (n)
                log_info("peeks_dropped", "role=%s count=%zu reason=connection_replaced",
                         node_role_name(role), n);
}

void cserver_describe(struct cserver *s, char *buf, size_t size)
{
        struct storage_stats st = { 0 };

        if (s->st)
                storage_get_stats(s->st, &st);
        snprintf(buf, size, "collections=%llu appends=%llu peeks_parked=%zu peeks_answered=%llu "
                 "errors=%llu compactions=%llu storage=%s",
                 (unsigned long long)st.collections, (unsigned long long)s->appends, s->n_parked,
                 (unsigned long long)s->peeks_answered, (unsigned long long)s->errors_sent,
                 (unsigned long long)st.compactions, s->st ? "ok" : "failed");
}

bool cserver_failed(const struct cserver *s)
{
        return s->failed;
}

int cserver_new(struct node *n, struct fring *ring, const char *storage_path,
                struct cserver **ret)
{
        struct cserver *s;
        struct storage_stats st;
        int r;

        assert(n && storage_path && ret);
        s = calloc(1, sizeof(*s));
        if (!s)
                return log_error_errno(-ENOMEM, "server_new_failed", "");
        s->node = n;
        s->loop = node_loop(n);
        s->ring = ring;
        s->path = strdup(storage_path);
        if (!s->path) {
                r = log_error_errno(-ENOMEM, "server_new_failed", "");
                goto fail;
        }
        r = storage_open(s->path, &s->st);
        if (r < 0) {
                log_error_errno(r, "storage_open_failed", "path=%s why=\"%s\"", s->path,
                                storage_last_error());
                goto fail;
        }
        r = storage_opened(s);
        if (r < 0)
                goto fail;
        compact_arm(s, CSERVER_COMPACT_INTERVAL_MS);
        storage_get_stats(s->st, &st);
        log_info("storage_opened", "path=%s collections=%llu frontier_rows=%zu", s->path,
                 (unsigned long long)st.collections, s->n_fr);
        *ret = s;
        return 0;
fail:
        cserver_free(s);
        return r;
}

struct cserver *cserver_free(struct cserver *s)
{
        if (!s)
                return NULL;
        while (s->peeks_head)
                peek_free(s->peeks_head);
        if (s->compact_timer)
                loop_timer_cancel(s->loop, s->compact_timer);
        s->st = storage_close(s->st);
        free(s->fr);
        free(s->rc);
        free(s->cols);
        free(s->path);
        free(s);
        return NULL;
}
