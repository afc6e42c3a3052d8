/* controller-server.c -- collections, appends, peeks and frontiers of coord-controller
 * (contract: controller-server.h and the comments of proto/coord.proto).
 *
 * Who calls what.  controller.c forwards the node's callbacks: every adapter (or
 * lifecycle) request arrives in cserver_on_message(), in the order the peer sent it on
 * its one connection.  The server answers each with the request's request_id through
 * server_out_send(), the output gate of (16).  A timer runs compaction of the built-in
 * relations; storage's syncer thread reports finished WAL syncs through a loop waker.
 *
 * The server's files:
 *   controller-server.c              the handle, the entry points and message dispatch, small
 *                                    helpers
 *   controller-server-out.c          the output gate (16) and replies
 *   controller-server-mirror.c       storage (re)opening and recovery, the tables' shared
 *                                    frontier, the ring, frontiers and row-count mirrors
 *   controller-server-peek.c         peeks: answering, streaming, live status relations, the
 *                                    peek thread
 *   controller-server-compute.c      compute: installed dataflows, readers, compute passes
 *   controller-server-install.c      installing dataflows, bulk installs in slices, deferred
 *                                    messages
 *   controller-server-source.c       sources and sinks
 *   controller-server-internal.h     what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the server; each stands in the file that
 * enforces it, and "NOTE n" or "(n)" in any file of the server names it:
 *   controller-server.c              1, 2, 3, 4, 6, 9, 12, 14, 15, 18b (below)
 *   controller-server-out.c          16
 *   controller-server-mirror.c       7, 8, 10, 11
 *   controller-server-peek.c         5, 18, 21
 *   controller-server-compute.c      13, 13b
 *   controller-server-install.c      17
 *   controller-server-source.c       19, 20
 *
 * (1) Order.  Requests are handled to completion one after the other, in arrival
 *     order, with one exception: a peek that must wait for an upper is parked (5) and
 *     the requests after it are served meanwhile.  So Ensure, Drop, Append and List
 *     replies leave in request order; a peek's reply may come after the replies to
 *     later requests.  The adapter matches replies by request_id.
 *
 * (2) Durability.  Every change is one storage call that writes ONE RocksDB
 *     WriteBatch (controller-storage.h).  An Append is one storage_append_group():
 *     the rows of all its writes, the rows of the frontiers relation that change (4),
 *     and the new upper ts + 1 of every built-in -- which is the new tables' shared
 *     frontier (10) -- and of every table written.  With --append-sync=thread (the
 *     default) that WriteBatch is written without a sync and storage's syncer thread
 *     syncs the WAL for it and every append written meanwhile (group commit,
 *     controller-storage-write.c NOTE 14); its Ok, and everything else it makes visible,
 *     waits in the output gate (16) until that sync is done.  With
 *     --append-sync=loop the write itself is synced on the loop, as before issue 6.
 *     Either way the Ok leaves only once the append is durable, so what the adapter
 *     was told survives kill -9 (I7), and a crash before leaves none of it.  What
 *     memory derives from storage (the mirrors) changes only after the write.
 *     Creates and drops are one synced write per collection; Ensure answers after all
 *     of them -- except the deferred ones of (12), durable with the next append.
 *
 * (3) An Append is all or nothing.  storage_append_group() applies the valid appends
 *     of a group and reports the invalid ones, so everything that can make one append
 *     of the group invalid is checked before: ts >= the upper of every built-in (so
 *     ts >= T) and of every table server_created above T since the last append (s->born_above;
 *     every other table's stored upper is <= T), so the expected upper of each append
 *     is the one just read; rows well formed and not too long, sums of one (row, time)
 *     that overflow (consolidated here first), descriptors loadable
 *     (storage_collection_stats() loads them), and -- because storage does not check
 *     it -- that no row's count becomes negative: a write with retractions (a DELETE,
 *     or explicit negative diffs) is checked against the collection's contents.  What
 *     remains is a failed write, which fails the whole group.  A group that still
 *     comes back partial is a bug: it is logged, answered with XX000, and the mirrors
 *     and the ring are rebuilt from storage.
 *
 * (4) coord_frontiers (gid CSERVER_GID_FRONTIERS) holds one row (object_id,
 *     read_frontier, write_frontier) per table with the table's STORED since and upper
 *     (10), plus the row (0, 0, T) of the tables' shared frontier.  A table's upper is
 *     max(its write_frontier, the write_frontier of object 0).  Its contents at t are
 *     those rows as the last append at or before t left them.  An append changes O(1)
 *     rows plus two per collection whose stored frontiers changed: every table it
 *     writes (its upper moves to ts + 1) and every table server_created or dropped since the
 *     last append (s->dirty); row 0 is retracted and reinserted with the new T.  So a
 *     table server_created by Ensure appears at the next append, and a dropped one goes at
 *     the next append.  s->fr mirrors the table rows at the relation's upper - 1 (read
 *     back from storage at open, so a restart continues where the last acknowledged
 *     append left off), s->fr0 the row of object 0.  Only the server writes the
 *     relation: a TableWrite naming it is refused.
 *
 * (6) Compaction.  Every collection, the built-in relations included (issue 29), and
 *     every index compacts only with committed permission (14).  Every
 *     CSERVER_COMPACT_INTERVAL_MS the server retries the permissions still held back and
 *     runs storage_compact_pending() with a small budget of updates and of time
 *     (CSERVER_COMPACT_BUDGET_US: at 100,000 objects a run over the ten tables and
 *     coord_frontiers took 5-12 ms, mostly RocksDB memtable seeks and inserts); while
 *     work remains it comes back COMPACT_AGAIN_MS later, so other requests are served
 *     in between.  The budget is soft: one small tiered merge is always done whole.  A
 *     merge that reads 4,096 updates or more -- one that reaches the oldest batch of
 *     coord_frontiers rewrites a row per collection, 100,000 at 100,000 objects, and
 *     the first bound publication of 100,000 indexes moves every row at once -- runs
 *     in storage's thread (controller-storage-compact.c NOTE 13: 215 ms on the loop before)
 *     and is applied by a later run, which logs it (compaction_ran at info, with
 *     background_us); a run that holds the loop COMPACT_SLOW_US or more is logged too.
 *
 * (9) Hostile input.  A payload that does not decode, a plan that does not validate,
 *     a row that is not well formed: each is answered with MSG_ERROR and logged at
 *     most MALFORMED_LOG_PER_S times a second; nothing here asserts on input.
 *
 * (12) Deferred DDL.  A table server_created by a partial Ensure, and a table dropped by Drop,
 *     is not written at once: storage_create_deferred() / storage_drop_deferred()
 *     change storage's memory (so lookups, listings, peeks, the ring and the mirrors
 *     see it exactly as after a synced write) and put the change into the NEXT synced
 *     WriteBatch -- the next append (the adapter's next statement or upper tick) --
 *     which makes it durable atomically with that write (no fsync of its own).  The Ok
 *     of the Ensure or Drop is sent at once.  That is safe because the sender, the
 *     lifecycle follower (enactment, since issue 5), sends the complete set of tables
 *     (Ensure complete = true) after every (re)connection, which re-creates a lost
 *     create and re-drops a lost drop (tables only: so only tables are deferred), and
 *     because an append to a table is durable in the same WriteBatch as its deferred
 *     create.  kill -9 loses deferred changes only with the write they were waiting
 *     for; after a failed write, (8) reopens and makes the lost deferred changes again
 *     (the follower, still connected, would not resend them).  A refused append, and
 *     the compaction timer (every CSERVER_COMPACT_INTERVAL_MS), write leftover
 *     deferred changes alone.  Built-ins and a complete Ensure (a resync) keep synced
 *     creates and drops.
 *
 * (14) Compaction permission (issue 5, I2).  Nothing but the built-ins compacts
 *     without a committed bound: MSG_ALLOW_COMPACTION (from the lifecycle follower,
 *     sent only after the catalog committed the bounds) records per gid the allowed
 *     since in s->allowed (max of what arrived: never backwards, I1).  A storage
 *     collection's since then moves to min(allowed, execution holds): peeks in flight
 *     (5), and for a table the rule of (10) -- since <= stored upper - 1 once it was
 *     written, never above its stored upper otherwise -- so the target is clamped and
 *     the rest waits in s->allow_pending, retried at every compaction run (6) and
 *     dropped once reached.  An index's arrangement compacts to min(allowed, peeks on
 *     it) at every compute pass and at once when permission arrives; without any
 *     permission it keeps its whole history (no CSERVER_INDEX_WINDOW_MS policy any
 *     more).  Permissions live in memory only: after a restart the follower sends all
 *     committed bounds again when it reconnects, and until then nothing compacts.
 *     Built-ins (gids < CSERVER_FIRST_USER_GID) are not catalog items but have
 *     committed bounds all the same: the follower publishes them by a table's rule
 *     (lifecycle-state.c note 6).  coord_frontiers shows the
 *     PHYSICAL since as read_frontier (4), so a compaction marks the rows it changed.
 *
 * (15) Writer mark.  An Append may carry writer_mark, a few opaque bytes; it goes into
 *     coord_objects' collection record (storage_append.mark) in the append's own
 *     WriteBatch, so it is durable exactly when the rows it came with are, and stays
 *     until an append carries another.  MSG_LIST_COLLECTIONS reports it on gid 1.
 *     The adapter uses it to tell, after its own restart, which of its catalog's
 *     transactions the built-in relations already reflect (adapter-exec.c note 8);
 *     the controller never interprets it.  ListCollections with `gids` lists only
 *     those, so that question costs O(1) and not a listing of every collection.
 *
 * (18b) Replies go to a connection, not to a role.  When a peer's connection is
 *     replaced or lost (cserver_on_peer_change()), its held replies are dropped
 *     (server_out_drop_role()), and its epoch (s->peer_epochs) moves on.  A bulk install (17)
 *     and each deferred message remember the epoch of the connection they came by;
 *     the install's Ok and the replies of a deferred message replayed after that
 *     connection went are dropped (stale_replies=), where they went to the new
 *     incarnation, whose own request ids restart at the same value.  The messages
 *     themselves are still handled, in order, as if they had waited in the socket.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-eval.h"
#include "controller-storage.h"
#include "fring.h"
#include "hist.h"
#include "killpoint.h"
#include "log.h"
#include "loop.h"
#include "node.h"
#include "row.h"
#include "util.h"

#define MALFORMED_LOG_PER_S 10u
/* While compaction work is queued, run again this soon. */
#define COMPACT_AGAIN_MS 5u
/* A compaction run this long is logged at info. */
#define COMPACT_SLOW_US 5000u

/* ---- Small helpers ------------------------------------------------------------------ */

bool server_ratelimit_ok(struct ratelimit *rl, uint64_t now)
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

/* Sort v and drop repeats; the new length. */
size_t server_u64_sort_unique(uint64_t *v, size_t n)
{
        size_t k = 0;

        if (n == 0)
                return 0;
        qsort(v, n, sizeof(*v), u64_cmp);
        for (size_t i = 1; i < n; i++)
                if (v[i] != v[k])
                        v[++k] = v[i];
        return k + 1;
}

const char *server_kind_name(enum storage_kind k)
{
        switch (k) {
        case STORAGE_KIND_TABLE: return "table";
        case STORAGE_KIND_SOURCE: return "source";
        case STORAGE_KIND_REMAP: return "remap";
        case STORAGE_KIND_MV: return "mv";
        case STORAGE_KIND_SINK: return "sink";
        case STORAGE_KIND_BUILTIN: return "builtin";
        default: return "invalid";
        }
}

bool server_kind_appendable(enum storage_kind k)
{
        return k == STORAGE_KIND_TABLE || k == STORAGE_KIND_BUILTIN;
}

const char *server_msg_name(int type)
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

/* ---- Appends (2), (3), (4), (10) ---------------------------------------------------- */

/* A collection the append moves to ts + 1: every built-in, and every table written. */
struct acol {
        struct storage_info info;               /* stored, before the append */
        struct eval_batch pend;                 /* this append's updates, all at ts */
        struct eval_batch base;                 /* its contents before the append */
        bool base_read;
};

/* A row of coord_frontiers that the append changes (4). */
struct fchange {
        uint64_t gid;
        bool has_new;                           /* false: the row goes */
        uint64_t since, upper;                  /* the new row */
};

struct append_ctx {
        struct cserver *s;
        uint64_t ts;
        struct acol *c;                         /* built-ins first, then tables written */
        size_t n_c, cap_c;
        struct gmap idx;                        /* gid -> index in c (a) */
        uint64_t *counts;                       /* one per write */
        struct fchange *fch;
        size_t n_fch, cap_fch;
        size_t frontier_rows;                   /* updates of coord_frontiers */
        bool frontiers;                         /* coord_frontiers is appended to */
        const ProtobufCBinaryData *mark;        /* Append.writer_mark, for gid 1 (15) */
        struct row_error err;
};

static void append_ctx_done(struct append_ctx *ac)
{
        for (size_t i = 0; i < ac->n_c; i++) {
                eval_batch_done(&ac->c[i].pend);
                eval_batch_done(&ac->c[i].base);
        }
        free(ac->c);
        gmap_done(&ac->idx);
        free(ac->counts);
        free(ac->fch);
}

/* The append's entry of info->gid, made if new.  Indexes stay valid; pointers into
 * ac->c only until the next call. */
static int acol_add(struct append_ctx *ac, const struct storage_info *info, size_t *ret)
{
        struct gent *e = gmap_find(&ac->idx, info->gid);
        int r;

        if (e) {
                *ret = (size_t)e->a;
                return 0;
        }
        r = RESERVE(ac->c, ac->cap_c, ac->n_c + 1);
        if (r >= 0)
                r = gmap_reserve(&ac->idx, 1);
        if (r < 0)
                return row_error_oom(&ac->err);
        ac->c[ac->n_c] = (struct acol){
                .info = *info, .pend = EVAL_BATCH_INIT, .base = EVAL_BATCH_INIT,
        };
        gmap_put(&ac->idx, info->gid)->a = ac->n_c;
        *ret = ac->n_c++;
        return 0;
}

static struct acol *acol_find(struct append_ctx *ac, uint64_t gid)
{
        const struct gent *e = gmap_find(&ac->idx, gid);

        return e ? &ac->c[e->a] : NULL;
}

static int base_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct acol *t = userdata;

        return eval_batch_push(&t->base, row, len, 0, count);
}

/* The collection's contents before this append: at upper - 1, or empty when nothing
 * is readable (a table that was never appended to has since == upper).  Rows come
 * consolidated and in byte order. */
static int acol_base(struct append_ctx *ac, struct acol *t)
{
        const struct storage_frontiers *f = &t->info.frontiers;
        int r;

        if (t->base_read)
                return 0;
        if (f->upper > f->since) {
                r = storage_read(ac->s->st, t->info.gid, f->upper - 1, base_row, t, NULL);
                if (r < 0) {
                        eval_batch_clear(&t->base);
                        return server_storage_failure(ac->s, &ac->err, r, "reading collection %llu",
                                               (unsigned long long)t->info.gid);
                }
                /* Already consolidated; this puts it in eval's byte order, the one
                 * check_nonnegative() merges in, whatever order storage uses. */
                r = eval_batch_consolidate(&t->base);
                if (r < 0)
                        return row_error_set(&ac->err, r, "XX000", "collection %llu: row "
                                             "count out of range", (unsigned long long)t->info.gid);
        }
        t->base_read = true;
        return 0;
}

/* The snapshot of a DELETE's filter: the contents before the append plus the group's
 * earlier writes (proto: "a delete is applied after the group's earlier writes"). */
static int delete_snapshot(void *userdata, uint64_t id, uint64_t ts, eval_emit_fn emit,
                           void *emit_userdata)
{
        struct acol *t = userdata;
        int r;

        if (id != t->info.gid)
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

/* An UPDATE's output row: the old row's columns, then the new row's (TableWrite.update).
 * Splits it into the two rows (each no longer than the whole) and pushes the retraction
 * and the insertion at ts. */
static int push_update(struct append_ctx *ac, struct acol *t, uint64_t gid,
                       const struct eval_update *u, size_t n)
{
        struct row_datum *d = calloc(n ? 2 * n : 1, sizeof(*d));
        uint8_t *buf = malloc(u->len ? u->len : 1);
        size_t len;
        int r = -ENOMEM;

        if (!d || !buf)
                goto out;
        r = row_decode(u->row, u->len, d, 2 * n);
        if (r < 0) {
                row_error_set(&ac->err, r, "XX000", "invalid update row for collection %llu",
                              (unsigned long long)gid);
                goto out;
        }
        len = row_encode_into(d, n, buf);
        r = eval_batch_push(&t->pend, buf, len, ac->ts, -u->diff);
        if (r >= 0) {
                len = row_encode_into(d + n, n, buf);
                if (len > STORAGE_ROW_MAX) {
                        r = row_error_set(&ac->err, -EMSGSIZE, "54000", "an updated row of "
                                          "collection %llu is too long (%zu bytes)",
                                          (unsigned long long)gid, len);
                        goto out;
                }
                r = eval_batch_push(&t->pend, buf, len, ac->ts, u->diff);
        }
out:
        if (r == -ENOMEM)
                row_error_oom(&ac->err);
        free(d);
        free(buf);
        return r;
}

/* A DELETE (retract what delete_filter returns) or an UPDATE (TableWrite.update: retract
 * the first half of each output row, insert the second). */
static int append_delete(struct append_ctx *ac, struct acol *t, const Coord__TableWrite *w,
                         uint64_t *ret_count)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct eval_plan *p = NULL;
        const Coord__Plan__Get *get;
        const enum row_type *types;
        size_t halves = w->update ? 2 : 1;
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
         * do not exist (caught below, but this names the real mistake); so must an
         * update's new rows be. */
        if (eval_plan_arity(p) != halves * get->n_column_types) {
                row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                              "collection %llu must return its rows unchanged",
                              (unsigned long long)w->gid);
                goto out;
        }
        for (size_t i = 0; i < halves * get->n_column_types; i++)
                if ((int)types[i] != (int)get->column_types[i % get->n_column_types]) {
                        row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                                      "collection %llu must return its rows unchanged",
                                      (unsigned long long)w->gid);
                        goto out;
                }
        r = acol_base(ac, t);
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
                if (w->update) {
                        r = push_update(ac, t, w->gid, &out.updates[i], get->n_column_types);
                        if (r < 0)
                                goto out;
                } else {
                        r = eval_batch_push(&t->pend, out.updates[i].row, out.updates[i].len,
                                            ac->ts, -out.updates[i].diff);
                        if (r < 0) {
                                row_error_oom(&ac->err);
                                goto out;
                        }
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

static int append_insert(struct append_ctx *ac, struct acol *t, const Coord__TableWrite *w,
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

static int frontiers_push(struct acol *t, const struct frow *f, int64_t diff, uint64_t ts)
{
        struct row_datum d[3] = {
                /* Timestamps and GlobalIds are below 2^63 in practice; int8 is signed. */
                ROW_DATUM_INT((int64_t)f->gid), ROW_DATUM_INT((int64_t)f->since),
                /* an empty upper (a refresh view past its last refresh): int8's max */
                ROW_DATUM_INT(f->upper > INT64_MAX ? INT64_MAX : (int64_t)f->upper),
        };
        uint8_t buf[64];
        size_t len;

        assert(row_encoded_size(d, 3) <= (int64_t)sizeof(buf));
        len = row_encode_into(d, 3, buf);
        return eval_batch_push(&t->pend, buf, len, ts, diff);
}

static int fchange_add(struct append_ctx *ac, const struct fchange *f)
{
        int r = RESERVE(ac->fch, ac->cap_fch, ac->n_fch + 1);

        if (r < 0)
                return row_error_oom(&ac->err);
        ac->fch[ac->n_fch++] = *f;
        return 0;
}

/* (4): the rows of coord_frontiers that this append changes: those of the tables it
 * writes, of the tables created or dropped since the last append, the stray rows, and
 * row 0.  O(changed), except after the relation was recreated (s->fr_rebuild). */
static int append_frontiers(struct append_ctx *ac, size_t fidx)
{
        struct cserver *s = ac->s;
        _cleanup_free_ uint64_t *cand = NULL;
        size_t n_cand = 0, cap_cand = 0;
        struct acol *t;
        struct frow f;
        int r;

        /* Candidates: dirty gids, tables written, and with fr_rebuild every table and
         * every row.  Sorted and unique, so each is looked at once. */
        r = RESERVE(cand, cap_cand, s->n_dirty + ac->n_c);
        if (r < 0)
                return row_error_oom(&ac->err);
        if (s->n_dirty)
                memcpy(cand, s->dirty, s->n_dirty * sizeof(*cand));
        n_cand = s->n_dirty;
        for (size_t i = 0; i < ac->n_c; i++)
                if (ac->c[i].info.kind == STORAGE_KIND_TABLE)
                        cand[n_cand++] = ac->c[i].info.gid;
        if (s->fr_rebuild) {
                r = server_list_all(s);
                if (r < 0)
                        return server_storage_failure(s, &ac->err, r, "listing collections");
                r = RESERVE(cand, cap_cand, n_cand + s->n_cols + s->fr.n);
                if (r < 0)
                        return row_error_oom(&ac->err);
                for (size_t i = 0; i < s->n_cols; i++)
                        if (s->cols[i].kind == STORAGE_KIND_TABLE)
                                cand[n_cand++] = s->cols[i].gid;
                for (size_t i = 0; s->fr.slots && i <= s->fr.mask; i++)
                        if (s->fr.slots[i].key)
                                cand[n_cand++] = s->fr.slots[i].key;
        }
        n_cand = server_u64_sort_unique(cand, n_cand);

        for (size_t i = 0; i < n_cand; i++) {
                const struct gent *old = gmap_find(&s->fr, cand[i]);
                const struct acol *w = acol_find(ac, cand[i]);
                struct fchange ch = { .gid = cand[i] };
                struct storage_info info;

                if (w && w->info.kind == STORAGE_KIND_TABLE) {
                        ch = (struct fchange){ .gid = cand[i], .has_new = true,
                                               .since = w->info.frontiers.physical_since,
                                               .upper = ac->ts + 1 };
                } else {
                        r = storage_get_info(s->st, cand[i], &info);
                        if (r < 0 && r != -ENOENT)
                                return server_storage_failure(s, &ac->err, r, "looking up collection %llu",
                                                       (unsigned long long)cand[i]);
                        if (r == 0 && (info.kind == STORAGE_KIND_TABLE || info.kind == STORAGE_KIND_MV ||
                                       info.kind == STORAGE_KIND_SINK || info.kind == STORAGE_KIND_SOURCE ||
                                       info.kind == STORAGE_KIND_REMAP))
                                ch = (struct fchange){ .gid = cand[i], .has_new = true,
                                                       .since = info.frontiers.physical_since,
                                                       .upper = info.frontiers.upper };
                        else if (r == -ENOENT) {
                                /* (13): an index's row shows its arrangement */
                                struct dfent *de = server_dfent_find(s, cand[i]);
                                if (de && de->index && de->arr)
                                        ch = (struct fchange){ .gid = cand[i], .has_new = true,
                                                               .since = arrangement_since(de->arr),
                                                               .upper = arrangement_upper(de->arr) };
                        }
                }
                if (!old && !ch.has_new)
                        continue;
                if (old && ch.has_new && old->c == 1 && old->a == ch.since && old->b == ch.upper)
                        continue;
                t = &ac->c[fidx];
                if (old) {
                        f = (struct frow){ .gid = cand[i], .since = old->a, .upper = old->b };
                        r = frontiers_push(t, &f, -(int64_t)old->c, ac->ts);
                        if (r < 0)
                                return row_error_oom(&ac->err);
                }
                if (ch.has_new) {
                        f = (struct frow){ .gid = cand[i], .since = ch.since, .upper = ch.upper };
                        r = frontiers_push(t, &f, 1, ac->ts);
                        if (r < 0)
                                return row_error_oom(&ac->err);
                }
                r = fchange_add(ac, &ch);
                if (r < 0)
                        return r;
        }
        t = &ac->c[fidx];
        for (size_t i = 0; i < s->n_stray; i++) {
                r = frontiers_push(t, &s->stray[i], -s->stray[i].count, ac->ts);
                if (r < 0)
                        return row_error_oom(&ac->err);
        }
        /* Row 0: the tables' shared frontier moves to ts + 1. */
        if (s->fr0) {
                f = (struct frow){ .gid = CSERVER_FRONTIERS_SHARED_ID, .upper = s->fr0 };
                r = frontiers_push(t, &f, -1, ac->ts);
                if (r < 0)
                        return row_error_oom(&ac->err);
        }
        f = (struct frow){ .gid = CSERVER_FRONTIERS_SHARED_ID, .upper = ac->ts + 1 };
        r = frontiers_push(t, &f, 1, ac->ts);
        if (r < 0)
                return row_error_oom(&ac->err);
        ac->frontier_rows = t->pend.n;
        /* Room for the new rows now, so that applying them cannot fail (2). */
        r = gmap_reserve(&s->fr, ac->n_fch);
        if (r < 0)
                return row_error_oom(&ac->err);
        return 0;
}


/* (3): no row of t's collection may end with a negative count.  pend and base are both
 * consolidated and in byte order, so one merge finds every row's final count. */
static int check_nonnegative(struct append_ctx *ac, struct acol *t)
{
        const struct eval_batch *b = &t->base, *p = &t->pend;
        struct cmirror *m = NULL;
        size_t i = 0;
        char *text = NULL;
        int r;

        if (t->info.kind == STORAGE_KIND_BUILTIN && !t->base_read) {
                /* (11): O(rows retracted), not a read of the whole relation. */
                r = server_cm_get(ac->s, &t->info, &m);
                if (r == -ENOMEM)
                        return row_error_oom(&ac->err);
                if (r < 0)
                        return server_storage_failure(ac->s, &ac->err, r, "reading collection %llu",
                                               (unsigned long long)t->info.gid);
        } else {
                r = acol_base(ac, t);
                if (r < 0)
                        return r;
        }
        for (size_t j = 0; j < p->n; j++) {
                const struct eval_update *u = &p->updates[j];
                int64_t have = 0;
                int c = 1;

                if (u->diff > 0)
                        continue;
                if (m) {
                        have = server_cm_count(m, u->row, u->len);
                } else {
                        while (i < b->n && (c = row_bytes_cmp(b->updates[i].row, b->updates[i].len,
                                                              u->row, u->len)) < 0)
                                i++;
                        if (i < b->n && c == 0)
                                have = b->updates[i].diff;
                }
                if (have + u->diff >= 0)        /* have >= 0 and diff < 0: no overflow */
                        continue;
                (void)row_to_string(u->row, u->len, &text);
                r = row_error_set(&ac->err, -EINVAL, "XX000", "the append would retract row %s of "
                                  "collection %llu %lld times, but it is there %lld times",
                                  text ? text : "(?)", (unsigned long long)t->info.gid,
                                  (long long)-u->diff, (long long)have);
                free(text);
                return r;
        }
        return 0;
}

static int append_stale(struct append_ctx *ac, uint64_t gid, uint64_t upper)
{
        int r = row_error_set(&ac->err, -ESTALE, "XX000",
                              "cannot append at %llu: collection %llu has upper %llu",
                              (unsigned long long)ac->ts, (unsigned long long)gid,
                              (unsigned long long)upper);

        row_error_detail(&ac->err, "An append's timestamp must be at or above the tables' "
                         "shared frontier (the upper of collection %u) and the upper of every "
                         "collection; nothing was written.", CSERVER_GID_OBJECTS);
        return r;
}

/* Everything of (3) that can be checked before writing; fills ac or ac->err. */
static int append_prepare(struct append_ctx *ac, const Coord__Append *a)
{
        struct cserver *s = ac->s;
        struct acol *fcol;
        uint64_t T = 0;
        size_t k;
        int r;

        if (a->ts == UINT64_MAX)
                return row_error_set(&ac->err, -EINVAL, "XX000", "cannot append at %llu",
                                     (unsigned long long)a->ts);
        ac->counts = calloc(a->n_writes ? a->n_writes : 1, sizeof(*ac->counts));
        if (!ac->counts)
                return row_error_oom(&ac->err);

        /* Every built-in moves to ts + 1; coord_objects carries T (10). */
        for (size_t i = 0; i < s->n_builtins; i++) {
                struct storage_info info;

                r = storage_get_info(s->st, s->builtins[i], &info);
                if (r < 0)
                        return server_storage_failure(s, &ac->err, r, "looking up collection %llu",
                                               (unsigned long long)s->builtins[i]);
                assert(info.kind == STORAGE_KIND_BUILTIN);
                if (info.frontiers.upper > a->ts)
                        return append_stale(ac, info.gid, info.frontiers.upper);
                if (info.gid == CSERVER_GID_OBJECTS)
                        T = info.frontiers.upper;
                r = acol_add(ac, &info, &k);
                if (r < 0)
                        return r;
        }
        if (!acol_find(ac, CSERVER_GID_OBJECTS))
                return row_error_set(&ac->err, -ENOENT, "XX000", "cannot append: the built-in "
                                     "collection %u (coord_objects), whose upper is the tables' "
                                     "shared frontier, does not exist", CSERVER_GID_OBJECTS);
        /* A table created above T since the last append; every other one is <= T. */
        if (s->born_above > a->ts)
                return append_stale(ac, s->born_above_gid, s->born_above);

        for (size_t i = 0; i < a->n_writes; i++) {
                const Coord__TableWrite *w = a->writes[i];
                struct storage_info info;
                struct acol *t = acol_find(ac, w->gid);

                if (!t) {
                        r = storage_get_info(s->st, w->gid, &info);
                        if (r == -ENOENT)
                                return row_error_set(&ac->err, -ENOENT, "42P01",
                                                     "collection %llu does not exist",
                                                     (unsigned long long)w->gid);
                        if (r < 0)
                                return server_storage_failure(s, &ac->err, r, "looking up collection %llu",
                                                       (unsigned long long)w->gid);
                        if (info.kind != STORAGE_KIND_TABLE)
                                return row_error_set(&ac->err, -EINVAL, "XX000", "collection %llu "
                                                     "is a %s, not a table",
                                                     (unsigned long long)w->gid, server_kind_name(info.kind));
                        /* (10): every table's stored upper is <= max(T, born_above). */
                        assert(info.frontiers.upper <= (T > s->born_above ? T : s->born_above));
                        if (info.frontiers.upper > a->ts)
                                return append_stale(ac, info.gid, info.frontiers.upper);
                        r = acol_add(ac, &info, &k);
                        if (r < 0)
                                return r;
                        t = &ac->c[k];
                }
                if (w->gid == CSERVER_GID_FRONTIERS)
                        return row_error_set(&ac->err, -EPERM, "XX000", "collection %u "
                                             "(coord_frontiers) is written by the controller only",
                                             CSERVER_GID_FRONTIERS);
                if (w->n_diffs && w->n_diffs != w->n_rows)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                             "%llu has %zu rows but %zu diffs",
                                             (unsigned long long)w->gid, w->n_rows, w->n_diffs);
                if (w->update && !w->delete_filter)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "the update of "
                                             "collection %llu has no plan",
                                             (unsigned long long)w->gid);
                if (w->delete_filter && w->n_rows)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                             "%llu has both rows and a delete filter",
                                             (unsigned long long)w->gid);
                r = w->delete_filter ? append_delete(ac, t, w, &ac->counts[i])
                                     : append_insert(ac, t, w, &ac->counts[i]);
                if (r < 0)
                        return r;
        }

        fcol = acol_find(ac, CSERVER_GID_FRONTIERS);
        if (fcol) {
                ac->frontiers = true;
                r = append_frontiers(ac, (size_t)(fcol - ac->c));
                if (r < 0)
                        return r;
        }

        for (size_t i = 0; i < ac->n_c; i++) {
                struct acol *t = &ac->c[i];
                bool negative = false;

                r = eval_batch_consolidate(&t->pend);
                if (r == -EOVERFLOW)
                        return row_error_set(&ac->err, r, "22003", "row count out of range in "
                                             "the write to collection %llu",
                                             (unsigned long long)t->info.gid);
                for (size_t j = 0; j < t->pend.n && !negative; j++)
                        negative = t->pend.updates[j].diff < 0;
                /* coord_frontiers retracts what s->fr says is there (4), which was read
                 * from the relation itself; it is not read again at every append. */
                if (negative && t->info.gid != CSERVER_GID_FRONTIERS) {
                        r = check_nonnegative(ac, t);
                        if (r < 0)
                                return r;
                }
        }

        /* Load the descriptors of every collection of the group now, so that the
         * group cannot fail for one collection and succeed for the others. */
        for (size_t i = 0; i < ac->n_c; i++) {
                struct storage_collection_stats cs;

                r = storage_collection_stats(s->st, ac->c[i].info.gid, &cs);
                if (r < 0)
                        return server_storage_failure(s, &ac->err, r, "loading collection %llu",
                                               (unsigned long long)ac->c[i].info.gid);
        }
        return 0;
}

/* One synced write: the append's collections, then the materialized views that the
 * compute pass staged for it (13), so their outputs and uppers are durable with it. */
static int append_commit(struct append_ctx *ac, const struct stage *st)
{
        struct cserver *s = ac->s;
        struct storage_append *v = NULL;
        struct storage_update *u = NULL;
        size_t n_u = 0, k = 0, n_all = ac->n_c + st->n_v;
        int r;

        for (size_t i = 0; i < ac->n_c; i++)
                n_u += ac->c[i].pend.n;
        v = calloc(n_all ? n_all : 1, sizeof(*v));
        u = calloc(n_u ? n_u : 1, sizeof(*u));
        if (!v || !u) {
                r = row_error_oom(&ac->err);
                goto out;
        }
        for (size_t i = 0; i < ac->n_c; i++) {
                const struct acol *t = &ac->c[i];

                v[i] = (struct storage_append){
                        .gid = t->info.gid, .expected_upper = t->info.frontiers.upper,
                        .new_upper = ac->ts + 1, .updates = &u[k], .n_updates = t->pend.n,
                };
                if (t->info.gid == CSERVER_GID_OBJECTS && ac->mark && ac->mark->len) {
                        v[i].mark = ac->mark->data;
                        v[i].mark_len = ac->mark->len;
                }
                for (size_t j = 0; j < t->pend.n; j++)
                        u[k++] = (struct storage_update){
                                .row = t->pend.updates[j].row, .len = t->pend.updates[j].len,
                                .time = ac->ts, .diff = t->pend.updates[j].diff,
                        };
        }
        if (st->n_v)
                memcpy(&v[ac->n_c], st->v, st->n_v * sizeof(*v));
        KILLPOINT("append.before_write");
        r = storage_append_group(s->st, v, n_all);
        if (r < 0) {
                server_storage_failure(s, &ac->err, r, "append at %llu", (unsigned long long)ac->ts);
                goto out;
        }
        KILLPOINT("append.after_write");        /* written, not synced, not answered */
        if ((size_t)r != n_all) {
                /* (3) says this cannot happen; if it does, memory follows the disk. */
                for (size_t i = 0; i < n_all; i++)
                        if (v[i].result < 0)
                                log_error_errno(v[i].result, "append_partial", "ts=%llu gid=%llu "
                                                "upper=%llu why=\"%s\"", (unsigned long long)ac->ts,
                                                (unsigned long long)v[i].gid,
                                                (unsigned long long)v[i].actual_upper,
                                                storage_last_error());
                r = row_error_set(&ac->err, -EIO, "XX000", "append at %llu was applied to %d of "
                                  "%zu collections", (unsigned long long)ac->ts, r, n_all);
                if (server_mirrors_rebuild(s) < 0)
                        log_error("mirrors_load_failed", "path=%s why=\"%s\"", s->path,
                                  storage_last_error());
                goto out;
        }
        r = 0;
out:
        free(v);
        free(u);
        return r;
}

/* After a durable append: the mirrors follow (4), (7), (10). */
static void append_apply(struct append_ctx *ac)
{
        struct cserver *s = ac->s;

        if (ac->frontiers) {
                for (size_t i = 0; i < ac->n_fch; i++) {
                        const struct fchange *ch = &ac->fch[i];
                        struct gent *e;

                        if (!ch->has_new) {
                                gmap_remove(&s->fr, ch->gid);
                                continue;
                        }
                        e = gmap_put(&s->fr, ch->gid);  /* reserved by append_frontiers() */
                        e->a = ch->since;
                        e->b = ch->upper;
                        e->c = 1;
                }
                s->fr0 = ac->ts + 1;
                s->n_stray = 0;
                s->n_dirty = 0;
                s->fr_rebuild = false;
        }
        /* T is ts + 1 now, at or above every table's stored upper. */
        s->born_above = s->born_above_gid = 0;
        for (size_t i = 0; i < ac->n_c; i++) {
                struct storage_frontiers f = ac->c[i].info.frontiers;

                if (ac->c[i].info.kind == STORAGE_KIND_BUILTIN)
                        server_cm_apply(s, &ac->c[i].info, &ac->c[i].pend, ac->ts + 1);
                f.upper = ac->ts + 1;
                server_ring_set(s, ac->c[i].info.gid, &f);
        }
        s->last_append_collections = ac->n_c;
        s->last_append_frontier_rows = ac->frontier_rows;
        s->appends++;
}

void server_handle_append(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        struct append_ctx ac = { .s = s };
        struct stage st = { 0 };
        bool pushed = false;
        uint64_t t0 = now_ns();
        Coord__Append *a;
        int r;

        a = coord__append__unpack(NULL, env->payload.len, env->payload.data);
        if (!a) {
                server_reply_malformed(s, from, env);
                return;
        }
        ac.ts = a->ts;
        ac.mark = &a->writer_mark;
        if (!s->st) {
                server_storage_unavailable(&ac.err);
                r = -EIO;
        } else if (a->writer_mark.len > STORAGE_MARK_MAX) {
                r = row_error_set(&ac.err, -EINVAL, "22023", "writer_mark of %zu bytes (at most %u)",
                                  a->writer_mark.len, STORAGE_MARK_MAX);
        } else {
                r = append_prepare(&ac, a);
                if (r >= 0 && s->n_dfs) {
                        /* (13): the dataflows take what this append writes and step to
                         * its new frontier; materialized views write with it. */
                        for (size_t i = 0; i < ac.n_c; i++)
                                server_compute_push(s, ac.c[i].info.gid, &ac.c[i].pend);
                        pushed = true;
                        if (server_compute_stage(s, ac.ts + 1, &st) < 0)
                                r = row_error_oom(&ac.err);
                }
                if (r >= 0)
                        r = append_commit(&ac, &st);
        }
        if (pushed && r < 0)
                server_compute_staged(s, &st, false);
        if (r < 0 && s->st && storage_has_deferred(s->st) && storage_error(s->st) == 0) {
                /* (12): a refused append still makes the deferred creates and drops
                 * durable, as it would have. */
                int q = storage_flush_deferred(s->st);

                if (q < 0) {
                        if (server_ratelimit_ok(&s->rl_storage, now_ms()))
                                log_warn_errno(q, "deferred_flush_failed", "why=\"%s\"",
                                               storage_last_error());
                        server_storage_recover(s);
                }
        }
        if (r < 0) {
                server_reply_error(s, from, env->request_id, &ac.err);
        } else {
                append_apply(&ac);
                if (pushed)
                        server_compute_staged(s, &st, true);   /* after apply: it marks rows dirty */
                log_debug("append", "ts=%llu writes=%zu collections=%zu frontier_rows=%zu",
                          (unsigned long long)a->ts, a->n_writes, ac.n_c, ac.frontier_rows);
                s->append_t0_ns = t0;
                server_reply_ok(s, from, env->request_id, ac.counts, a->n_writes, a->ts + 1);
                if (s->append_t0_ns) {          /* sent at once, not held */
                        hist_record(&s->append_hist, (now_ns() - t0) / 1000);
                        s->append_t0_ns = 0;
                }
                /* T passed ts, and the views with it: parked peeks may be readable. */
                server_peeks_wake(s);
        }
        append_ctx_done(&ac);
        coord__append__free_unpacked(a, NULL);
}

/* ---- Collections -------------------------------------------------------------------- */

static void builtins_remove(struct cserver *s, uint64_t gid)
{
        for (size_t i = 0; i < s->n_builtins; i++)
                if (s->builtins[i] == gid) {
                        memmove(&s->builtins[i], &s->builtins[i + 1],
                                (s->n_builtins - i - 1) * sizeof(*s->builtins));
                        s->n_builtins--;
                        return;
                }
}

static int drop_refused(uint64_t gid, struct row_error *e)
{
        if (gid != CSERVER_GID_OBJECTS)
                return 0;
        return row_error_set(e, -EPERM, "XX000", "collection %u (coord_objects) cannot be "
                             "dropped: its upper is the tables' shared frontier",
                             CSERVER_GID_OBJECTS);
}

int server_drop_one(struct cserver *s, uint64_t gid, bool defer, struct row_error *e)
{
        struct storage_info info;
        int r;

        r = drop_refused(gid, e);
        if (r < 0)
                return r;
        if (server_dfent_find(s, gid))
                server_dfent_remove(s, gid);   /* (13): an index ends here, a view's collection below */
        if (server_srcent_find(s, gid)) {
                /* (20): its remap goes with it */
                uint64_t remap = server_srcent_find(s, gid)->progress_id;

                server_srcent_remove(s, gid);
                r = server_drop_one(s, remap, false, e);
                if (r < 0)
                        return r;
        }
        r = storage_get_info(s->st, gid, &info);
        if (r == -ENOENT)
                return 0;
        /* (12): a table's drop may wait for the next append's write. */
        if (r >= 0)
                r = defer && info.kind == STORAGE_KIND_TABLE ? storage_drop_deferred(s->st, gid)
                                                             : storage_drop(s->st, gid);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return server_storage_failure(s, e, r, "dropping collection %llu", (unsigned long long)gid);
        server_ring_forget(s, gid);
        server_allowed_forget(s, gid);
        if (info.kind == STORAGE_KIND_BUILTIN) {
                builtins_remove(s, gid);
                server_cm_drop(s, gid);
        }
        /* (4): its row goes at the next append.  A dropped coord_frontiers is gone with
         * its rows; a new one is filled with every table's row at the next append. */
        if (gid == CSERVER_GID_FRONTIERS)
                server_frontiers_clear(s);
        else
                server_frontiers_dirty(s, gid);
        log_debug("collection_dropped", "gid=%llu kind=%s", (unsigned long long)gid,
                 server_kind_name(info.kind));
        return 0;
}

/* After gid was created (10), (4). */
int server_created(struct cserver *s, const struct storage_info *info, struct row_error *e)
{
        uint64_t T;
        int r;

        server_ring_set(s, info->gid, &info->frontiers);
        if (info->kind == STORAGE_KIND_BUILTIN) {
                /* Rare (start-up): the built-ins and born_above from a listing. */
                r = server_list_all(s);
                if (r >= 0)
                        r = server_builtins_from_cols(s);
                if (r < 0)
                        return server_storage_failure(s, e, r, "listing collections");
                if (info->gid == CSERVER_GID_FRONTIERS) {
                        server_frontiers_reset(s);
                } else {
                        /* (11): a new built-in is empty, so its mirror costs nothing
                         * now and every append keeps it; built on first use instead,
                         * it read the whole relation on the loop at the first DROP
                         * (200,000 coord_objects rows at 100,000 objects: 200-430 ms). */
                        struct cmirror *cm;

                        (void)server_cm_get(s, info, &cm);     /* without memory: on first use */
                }
                return 0;
        }
        T = server_tables_frontier(s);
        if (info->frontiers.upper > T && info->frontiers.upper > s->born_above) {
                s->born_above = info->frontiers.upper;
                s->born_above_gid = info->gid;
        }
        server_frontiers_dirty(s, info->gid);
        return 0;
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

                if (c->gid == 0 || !server_kind_appendable(kind))
                        return row_error_set(e, -EINVAL, "XX000", "cannot ensure collection %llu "
                                             "of kind %d", (unsigned long long)c->gid, (int)c->kind);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0 && info.kind != kind)
                        return row_error_set(e, -EEXIST, "XX000", "collection %llu exists as a %s, "
                                             "not a %s", (unsigned long long)c->gid,
                                             server_kind_name(info.kind), server_kind_name(kind));
                if (r < 0 && r != -ENOENT)
                        return server_storage_failure(s, e, r, "looking up collection %llu",
                                               (unsigned long long)c->gid);
        }
        for (size_t i = 0; i < m->n_collections; i++) {
                const Coord__CollectionSpec *c = m->collections[i];

                if (storage_get_info(s->st, c->gid, &info) == 0)
                        continue;       /* existing ones are untouched */
                uint64_t since = c->since, T = server_tables_frontier(s);

                /* (10) A table is born at or below T: the follower's Ensure travels
                 * on another connection than the adapter's appends, so an append at a
                 * ts below the table's creation may still come, and must not find the
                 * new table above it.  Nothing can be written to the table below its
                 * creation (the adapter writes it only after its DDL), so it is
                 * empty there; the birth floor for reads is the catalog's bound, which
                 * the adapter checks. */
                if ((enum storage_kind)c->kind == STORAGE_KIND_TABLE && T && since > T)
                        since = T;
                /* (12): a table that a partial Ensure creates is durable with the
                 * next append; a complete Ensure (a resync) writes at once. */
                if (!m->complete && (enum storage_kind)c->kind == STORAGE_KIND_TABLE)
                        r = storage_create_deferred(s->st, c->gid, STORAGE_KIND_TABLE, since, since);
                else
                        r = storage_create(s->st, c->gid, (enum storage_kind)c->kind, since, since);
                if (r < 0)
                        return server_storage_failure(s, e, r, "creating collection %llu",
                                               (unsigned long long)c->gid);
                r = storage_get_info(s->st, c->gid, &info);
                if (r == 0)
                        r = server_created(s, &info, e);
                if (r < 0)
                        return r;
                log_debug("collection_created", "gid=%llu kind=%s since=%llu",
                         (unsigned long long)c->gid, server_kind_name((enum storage_kind)c->kind),
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
        r = server_list_all(s);
        if (r < 0)
                return server_storage_failure(s, e, r, "listing collections");
        /* server_drop_one() lists nothing, so s->cols stays valid through the loop. */
        for (size_t i = 0; i < s->n_cols; i++) {
                uint64_t gid = s->cols[i].gid;

                if (s->cols[i].kind != STORAGE_KIND_TABLE ||
                    bsearch(&gid, listed, m->n_collections, sizeof(*listed), u64_cmp))
                        continue;
                r = server_drop_one(s, gid, false, e);
                if (r < 0)
                        return r;
                n_dropped++;
        }
        if (n_dropped)
                log_info("collections_reconciled", "listed=%zu dropped=%zu", m->n_collections,
                         n_dropped);
        return 0;
}

void server_handle_ensure(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__EnsureCollections *m;
        struct row_error e;
        int r;

        m = coord__ensure_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        r = s->st ? ensure(s, m, &e) : server_storage_unavailable(&e);
        if (r < 0)
                server_reply_error(s, from, env->request_id, &e);
        else
                server_reply_ok(s, from, env->request_id, NULL, 0, 0);
        coord__ensure_collections__free_unpacked(m, NULL);
        /* A collection dropped by `complete` fails the peeks parked on it. */
        server_peeks_wake(s);
}

void server_handle_drop(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__DropCollections *m;
        struct row_error e;
        int r = 0;

        m = coord__drop_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        if (!s->st)
                r = server_storage_unavailable(&e);
        for (size_t i = 0; i < m->n_gids && r >= 0; i++)
                r = drop_refused(m->gids[i], &e);       /* before dropping any */
        for (size_t i = 0; i < m->n_gids && r >= 0; i++)
                r = server_drop_one(s, m->gids[i], true, &e);
        if (r < 0)
                server_reply_error(s, from, env->request_id, &e);
        else
                server_reply_ok(s, from, env->request_id, NULL, 0, 0);
        coord__drop_collections__free_unpacked(m, NULL);
        server_peeks_wake(s);
}

void server_handle_list(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__CollectionList m = COORD__COLLECTION_LIST__INIT;
        Coord__CollectionFrontiers *items = NULL, **ptrs = NULL;
        Coord__ListCollections *req;
        struct row_error e;
        uint8_t mark[STORAGE_MARK_MAX];
        uint64_t T;
        int r;

        req = coord__list_collections__unpack(NULL, env->payload.len, env->payload.data);
        if (!req) {
                server_reply_malformed(s, from, env);
                return;
        }
        r = !s->st ? server_storage_unavailable(&e) : req->n_gids ? server_list_some(s, req->gids, req->n_gids)
                                                           : server_list_all(s);
        coord__list_collections__free_unpacked(req, NULL);
        if (r < 0) {
                if (s->st)
                        server_storage_failure(s, &e, r, "listing collections");
                goto fail;
        }
        T = server_tables_frontier(s);
        items = calloc(s->n_cols ? s->n_cols : 1, sizeof(*items));
        ptrs = calloc(s->n_cols ? s->n_cols : 1, sizeof(*ptrs));
        if (!items || !ptrs) {
                row_error_oom(&e);
                goto fail;
        }
        for (size_t i = 0; i < s->n_cols; i++) {
                /* (10): a table's upper is max(stored upper, T). */
                server_effective(&s->cols[i].frontiers, s->cols[i].kind, T);
                coord__collection_frontiers__init(&items[i]);
                items[i].gid = s->cols[i].gid;
                /* CollectionKind has StorageKind's numbers, but the sink's (5 is the
                 * index's there). */
                items[i].kind = s->cols[i].kind == STORAGE_KIND_SINK
                                        ? COORD__COLLECTION_KIND__COLLECTION_SINK
                                        : (Coord__CollectionKind)s->cols[i].kind;
                items[i].since = s->cols[i].frontiers.since;
                items[i].upper = s->cols[i].frontiers.upper;
                items[i].physical_since = s->cols[i].frontiers.physical_since;
                if (s->cols[i].gid == CSERVER_GID_OBJECTS) {
                        r = storage_get_mark(s->st, CSERVER_GID_OBJECTS, mark);
                        items[i].writer_mark.data = mark;
                        items[i].writer_mark.len = r > 0 ? (size_t)r : 0;
                }
                ptrs[i] = &items[i];
        }
        m.collections = ptrs;
        m.n_collections = s->n_cols;
        server_send_logged(s, from, COORD__MSG_TYPE__MSG_COLLECTION_LIST, env->request_id, &m.base);
        goto out;
fail:
        server_reply_error(s, from, env->request_id, &e);
out:
        free(items);
        free(ptrs);
}

/* ---- Compaction permission (14) ---------------------------------------------------- */

void server_allowed_forget(struct cserver *s, uint64_t gid)
{
        if (gmap_find(&s->allowed, gid))
                gmap_remove(&s->allowed, gid);
        if (gmap_find(&s->allow_pending, gid))
                gmap_remove(&s->allow_pending, gid);
}

/* What an index's arrangement may compact to now: min(allowed, peeks on it), at most
 * its upper; 0 without permission. */
uint64_t server_index_allowed_target(struct cserver *s, struct dfent *e)
{
        const struct gent *a = gmap_find(&s->allowed, e->gid);
        uint64_t target, hold;

        if (!a || !e->arr)
                return 0;
        target = a->a;
        hold = server_peeks_hold(s, e->gid);
        if (hold < target)
                target = hold;
        if (target > arrangement_upper(e->arr))
                target = arrangement_upper(e->arr);
        return target;
}

/* What a storage collection's since may move to now, and whether that is all of it. */
static uint64_t storage_allowed_target(struct cserver *s, const struct storage_info *info,
                                       uint64_t allowed, bool *ret_complete)
{
        uint64_t target = allowed, hold = server_peeks_hold(s, info->gid);

        if (hold < target)
                target = hold;
        if (info->kind == STORAGE_KIND_TABLE || info->kind == STORAGE_KIND_MV) {
                /* (10): a written table keeps since <= stored upper - 1; one never
                 * written (upper == since) keeps its since until it is.  The same for
                 * a materialized view, whose durable upper may lag its readable one
                 * (13). */
                uint64_t cap = info->frontiers.upper > info->frontiers.since
                                       ? info->frontiers.upper - 1 : info->frontiers.since;
                if (cap < target)
                        target = cap;
        }
        *ret_complete = target >= allowed;
        return target;
}

/* Move the sinces of the storage collections in gids[] as far as allowed, in ONE
 * synced write; keep the ones not done on s->allow_pending.  Indexes compact at once. */
static int allow_apply(struct cserver *s, const uint64_t *gids, size_t n)
{
        _cleanup_free_ struct storage_since *v = calloc(n ? n : 1, sizeof(*v));
        size_t k = 0;
        int r;

        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const struct gent *a = gmap_find(&s->allowed, gids[i]);
                struct dfent *e = server_dfent_find(s, gids[i]);
                struct storage_info info;
                bool complete;
                uint64_t target;

                if (!a)
                        continue;
                if (e && e->index) {
                        server_dfent_catch_up(s, e);
                        target = server_index_allowed_target(s, e);
                        if (e->arr && target > arrangement_since(e->arr) &&
                            arrangement_compact(e->arr, target) == 0) {
                                s->allow_moved++;
                                server_dfent_publish(s, e);
                        }
                        continue;       /* the next compute pass goes on from here */
                }
                if (storage_get_info(s->st, gids[i], &info) < 0)
                        continue;
                target = storage_allowed_target(s, &info, a->a, &complete);
                if (complete) {
                        if (gmap_find(&s->allow_pending, gids[i]))
                                gmap_remove(&s->allow_pending, gids[i]);
                } else if (!gmap_find(&s->allow_pending, gids[i])) {
                        if (gmap_reserve(&s->allow_pending, 1) < 0)
                                return -ENOMEM;
                        gmap_put(&s->allow_pending, gids[i]);
                }
                if (target > info.frontiers.since)
                        v[k++] = (struct storage_since){ .gid = gids[i], .since = target };
        }
        if (!k)
                return 0;
        r = storage_allow_compaction_group(s->st, v, k);
        if (r < 0)
                return r;
        for (size_t i = 0; i < k; i++) {
                struct storage_info c;

                if (v[i].result == 1 && storage_get_info(s->st, v[i].gid, &c) == 0) {
                        s->allow_moved++;
                        server_ring_set(s, c.gid, &c.frontiers);
                }
        }
        return 0;
}

/* From compaction runs (6): permissions that holds or (10) kept back. */
static void allow_retry_pending(struct cserver *s)
{
        _cleanup_free_ uint64_t *gids = NULL;
        size_t n = 0;
        int r;

        if (!s->allow_pending.n)
                return;
        gids = calloc(s->allow_pending.n, sizeof(*gids));
        if (!gids)
                return;
        for (size_t i = 0; i <= s->allow_pending.mask; i++)
                if (s->allow_pending.slots[i].key)
                        gids[n++] = s->allow_pending.slots[i].key;
        r = allow_apply(s, gids, n);
        if (r < 0 && server_ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "allow_compaction_failed", "what=pending why=\"%s\"",
                               storage_last_error());
}

void server_handle_allow_compaction(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        Coord__AllowCompaction *m;
        _cleanup_free_ uint64_t *gids = NULL;
        struct row_error e;
        size_t n = 0;
        int r = 0;

        m = coord__allow_compaction__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        s->allow_msgs++;
        if (m->n_sinces > s->allow_max)
                s->allow_max = m->n_sinces;
        if (!s->st) {
                r = server_storage_unavailable(&e);
                goto out;
        }
        gids = calloc(m->n_sinces ? m->n_sinces : 1, sizeof(*gids));
        if (!gids || gmap_reserve(&s->allowed, m->n_sinces) < 0) {
                r = row_error_oom(&e);
                goto out;
        }
        for (size_t i = 0; i < m->n_sinces; i++) {
                const Coord__CatalogBoundRecord *b = m->sinces[i];
                struct gent *a;

                a = gmap_find(&s->allowed, b->gid);
                if (!a) {
                        a = gmap_put(&s->allowed, b->gid);
                        a->a = 0;
                }
                if (b->bound > a->a)
                        a->a = b->bound;        /* never backwards (I1) */
                gids[n++] = b->gid;
        }
        r = allow_apply(s, gids, n);
        if (r < 0)
                r = server_storage_failure(s, &e, r, "allowing compaction");
out:
        if (r < 0)
                server_reply_error(s, from, env->request_id, &e);
        else
                server_reply_ok(s, from, env->request_id, NULL, 0, 0);
        coord__allow_compaction__free_unpacked(m, NULL);
}

/* ---- Compaction (6) ----------------------------------------------------------------- */

/* What one compaction run rewrote, for its log line. */
struct compacted {
        struct cserver *s;
        char gids[64];
        size_t len;
};

static void compacted_one(const struct storage_info *info, void *userdata)
{
        struct compacted *c = userdata;
        int n;

        /* (7): publish each collection as it is done; (14) its row shows the physical
         * since. */
        server_ring_set(c->s, info->gid, &info->frontiers);
        if (info->kind == STORAGE_KIND_TABLE || info->kind == STORAGE_KIND_MV)
                server_frontiers_dirty(c->s, info->gid);
        if (c->len + 24 >= sizeof(c->gids))
                return;         /* the first few are enough */
        n = snprintf(c->gids + c->len, sizeof(c->gids) - c->len, "%s%llu", c->len ? "," : "",
                     (unsigned long long)info->gid);
        if (n > 0)
                c->len += (size_t)n;
}

static bool compact_run(struct cserver *s)
{
        struct storage_stats before, after;
        struct compacted done = { .s = s };
        uint64_t start_ns, took_us;
        int r, remaining;

        /* (12): creates and drops no append followed (the adapter sends one at once,
         * so this is rare) are made durable here. */
        r = storage_flush_deferred(s->st);
        if (r < 0)
                goto fail;
        /* Built-ins compact as far as the catalog allows them too (14): their
         * permissions come with everyone's, and what waits is retried here. */
        allow_retry_pending(s);
        storage_get_stats(s->st, &before);
        start_ns = now_ns();
        remaining = storage_compact_pending_timed(s->st, CSERVER_COMPACT_BUDGET, CSERVER_COMPACT_BUDGET_US,
                                                  compacted_one, &done);
        if (remaining < 0) {
                r = remaining;
                goto fail;
        }
        storage_get_stats(s->st, &after);
        took_us = (now_ns() - start_ns) / 1000;
        /* The budget is soft (one small merge is always done whole, (6)): say when a
         * run held the loop long enough to show in reply latencies, and when a big
         * merge done in storage's thread was applied (rare: its time is the thread's). */
        log_at(took_us >= COMPACT_SLOW_US || after.background_merges != before.background_merges
                       ? LOG_LEVEL_INFO : LOG_LEVEL_DEBUG, "compaction_ran",
               "took_us=%llu compactions=%llu updates_rewritten=%llu remaining=%d gids=%s "
               "background_merges=%llu background_us=%llu",
               (unsigned long long)took_us,
               (unsigned long long)(after.compactions - before.compactions),
               (unsigned long long)(after.updates_rewritten - before.updates_rewritten),
               remaining, done.len ? done.gids : "-",
               (unsigned long long)(after.background_merges - before.background_merges),
               (unsigned long long)((after.background_merge_ns - before.background_merge_ns) / 1000));
        return remaining > 0;
fail:
        if (server_ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "compaction_failed", "why=\"%s\"", storage_last_error());
        server_storage_recover(s);
        return false;
}

static void compact_tick(struct loop *l, void *userdata)
{
        struct cserver *s = userdata;
        uint64_t now = now_ms();
        bool more = false;

        s->compact_timer = NULL;        /* freed after this returns */
        if (s->st && now - s->mv_flush_ms >= CSERVER_MV_FLUSH_MS) {
                s->mv_flush_ms = now;
                server_mv_flush(s);
        }
        server_sink_flush(s);
        server_source_tick(s);
        if (s->st)
                more = compact_run(s);
        if (s->st)
                server_compact_arm(s, more ? COMPACT_AGAIN_MS : CSERVER_COMPACT_INTERVAL_MS);
}

void server_compact_arm(struct cserver *s, uint64_t ms)
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

/* One wake-up of the ring's sleeping readers per message, however many frontiers it
 * publishes (fring_hold_wakes()).  While a bulk install is in slices, the follower's
 * messages wait behind it (17). */
void cserver_on_message(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        s->msg_epoch = server_peer_epoch(s, from);
        s->msg_from = from;
        if (s->install && from == COORD__ROLE__ROLE_LIFECYCLE) {
                if (server_defer_message(s, from, env) < 0) {
                        struct row_error e;

                        row_error_oom(&e);
                        server_reply_error(s, from, env->request_id, &e);
                }
                return;
        }
        fring_hold_wakes(s->ring);
        server_on_message(s, from, env);
        fring_release_wakes(s->ring);
}

void server_on_message(struct cserver *s, Coord__Role from, const Coord__Envelope *env)
{
        struct row_error e;

        switch (env->type) {
        case COORD__MSG_TYPE__MSG_ENSURE_COLLECTIONS:
                server_handle_ensure(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_DROP_COLLECTIONS:
                server_handle_drop(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_APPEND:
                server_handle_append(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_PEEK:
                server_handle_peek(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_PEEK_NEXT:
                server_handle_peek_next(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_LIST_COLLECTIONS:
                server_handle_list(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS:
                server_handle_create_dataflows(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_ALLOW_COMPACTION:
                server_handle_allow_compaction(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_OK:
        case COORD__MSG_TYPE__MSG_ERROR:
        case COORD__MSG_TYPE__MSG_PEEK_RESULT:
        case COORD__MSG_TYPE__MSG_COLLECTION_LIST:
        case COORD__MSG_TYPE__MSG_PONG:
                /* Replies are never answered (no error ping-pong between daemons). */
                if (server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unexpected_reply", "role=%s type=%d", node_role_name(from),
                                 (int)env->type);
                return;
        default:
                if (server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unsupported_message", "role=%s type=%d", node_role_name(from),
                                 (int)env->type);
                row_error_set(&e, -EOPNOTSUPP, "XX000",
                              "message type %d is not served by the controller", (int)env->type);
                server_reply_error(s, from, env->request_id, &e);
                return;
        }
}

void cserver_on_peer_change(struct cserver *s, Coord__Role role)
{
        struct peek *pk, *next;
        size_t n = 0;

        if ((unsigned)role < ELEMENTSOF(s->peer_epochs))
                s->peer_epochs[role]++;         /* (18b) */
        for (pk = s->peeks_head; pk; pk = next) {
                next = pk->next;
                if (pk->from != role)
                        continue;
                if (pk->bg)
                        pk->cancelled = true;   /* freed when its job is back (18) */
                else
                        server_peek_free(pk);
                n++;
        }
        if (n)
                log_info("peeks_dropped", "role=%s count=%zu reason=connection_replaced",
                         node_role_name(role), n);
        server_out_drop_role(s, role);
}

void cserver_describe(struct cserver *s, char *buf, size_t size)
{
        struct storage_stats st = { 0 };

        if (s->st)
                storage_get_stats(s->st, &st);
        snprintf(buf, size, "collections=%llu appends=%llu tables_frontier=%llu "
                 "last_append_collections=%zu last_append_frontier_rows=%zu peeks_parked=%zu "
                 "peeks_answered=%llu errors=%llu compactions=%llu dataflows=%zu compute_writes=%llu "
                 "allow_msgs=%llu allow_max=%zu allow_moved=%llu allowed=%zu allow_pending=%zu catchups=%llu mv_flushes=%llu "
                 "mirror_reads=%llu append_sync=%s syncs=%llu unsynced_appends=%llu "
                 "appends_per_sync=%.2f sync_max_us=%llu sync_write_max_us=%llu "
                 "unsynced_write_max_us=%llu held=%zu held_max=%zu "
                 "held_max_us=%llu held_replies=%llu held_ring=%llu held_failed=%llu "
                 "peek_chunks=%llu peek_streams=%llu peeks_streaming=%zu installing=%zu "
                 "installs_sliced=%llu install_slices=%llu deferred=%zu peeks_thread=%llu "
                 "peeks_in_thread=%zu peek_thread_max_us=%llu stale_replies=%llu "
                 "drops_by_key=%llu drops_by_range=%llu sinks=%zu sink_flushes=%llu sink_bytes=%llu "
                 "sink_errors=%llu sources=%zu source_ticks=%llu source_rows=%llu source_errors=%llu "
                 "mvs=%zu storage=%s",
                 (unsigned long long)st.collections, (unsigned long long)s->appends,
                 (unsigned long long)server_tables_frontier(s), s->last_append_collections,
                 s->last_append_frontier_rows, s->n_parked,
                 (unsigned long long)s->peeks_answered, (unsigned long long)s->errors_sent,
                 (unsigned long long)st.compactions, s->n_dfs, (unsigned long long)s->compute_writes,
                 (unsigned long long)s->allow_msgs, s->allow_max, (unsigned long long)s->allow_moved,
                 s->allowed.n, s->allow_pending.n, (unsigned long long)s->index_catchups,
                 (unsigned long long)s->mv_flushes, (unsigned long long)s->mirror_reads,
                 cserver_append_sync_name(s->cfg.append_sync), (unsigned long long)st.syncs,
                 (unsigned long long)st.unsynced_appends,
                 st.syncs ? (double)st.unsynced_appends / (double)st.syncs : 0.0,
                 (unsigned long long)(st.sync_max_ns / 1000),
                 (unsigned long long)(st.sync_write_max_ns / 1000),
                 (unsigned long long)(st.unsynced_write_max_ns / 1000), s->n_out - s->out_head, s->out_max,
                 (unsigned long long)(s->out_max_held_ns / 1000),
                 (unsigned long long)s->out_held_msgs, (unsigned long long)s->out_held_ring,
                 (unsigned long long)s->out_failed,
                 (unsigned long long)s->peek_chunks, (unsigned long long)s->peek_streams,
                 s->n_streaming,
                 s->install ? s->install->m->n_dataflows - s->install->next : (size_t)0,
                 (unsigned long long)s->installs_sliced, (unsigned long long)s->install_slices,
                 s->n_deferred, (unsigned long long)s->peeks_bg, s->n_bg,
                 (unsigned long long)s->peek_bg_max_us, (unsigned long long)s->stale_replies,
                 (unsigned long long)st.drops_by_key, (unsigned long long)st.drops_by_range,
                 s->n_sinks, (unsigned long long)s->sink_flushes, (unsigned long long)s->sink_bytes,
                 (unsigned long long)s->sink_errors, s->n_srcs, (unsigned long long)s->source_ticks,
                 (unsigned long long)s->source_rows, (unsigned long long)s->source_errors,
                 s->n_mvs, s->st ? "ok" : "failed");
}

struct storage *cserver_storage(struct cserver *s)
{
        return s ? s->st : NULL;
}

bool cserver_failed(const struct cserver *s)
{
        return s->failed;
}

static const char *const append_sync_names[_CSERVER_APPEND_SYNC_MAX] = {
        [CSERVER_APPEND_SYNC_THREAD] = "thread",
        [CSERVER_APPEND_SYNC_LOOP] = "loop",
};

enum cserver_append_sync cserver_append_sync_from_name(const char *name)
{
        for (int i = 0; name && i < _CSERVER_APPEND_SYNC_MAX; i++)
                if (strcmp(name, append_sync_names[i]) == 0)
                        return (enum cserver_append_sync)i;
        return _CSERVER_APPEND_SYNC_INVALID;
}

const char *cserver_append_sync_name(enum cserver_append_sync m)
{
        return m >= 0 && m < _CSERVER_APPEND_SYNC_MAX ? append_sync_names[m] : "?";
}

int cserver_new(struct node *n, struct fring *ring, const char *storage_path,
                const struct cserver_config *cfg, struct cserver **ret)
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
        if (cfg)
                s->cfg = *cfg;
        s->cfg.test_sync_hold_file = NULL;
        s->path = strdup(storage_path);
        if (!s->path || (cfg && cfg->test_sync_hold_file &&
                         !(s->cfg.test_sync_hold_file = strdup(cfg->test_sync_hold_file)))) {
                r = log_error_errno(-ENOMEM, "server_new_failed", "");
                goto fail;
        }
        if (s->cfg.append_sync < 0 || s->cfg.append_sync >= _CSERVER_APPEND_SYNC_MAX) {
                r = log_error_errno(-EINVAL, "server_new_failed", "append_sync=%d",
                                    (int)s->cfg.append_sync);
                goto fail;
        }
        r = loop_waker_new(s->loop, server_on_synced, s, &s->sync_waker);
        if (r < 0) {
                log_error_errno(r, "server_new_failed", "what=sync_waker");
                goto fail;
        }
        r = storage_open(s->path, &s->st);
        if (r < 0) {
                log_error_errno(r, "storage_open_failed", "path=%s why=\"%s\"", s->path,
                                storage_last_error());
                goto fail;
        }
        r = server_storage_attach(s);
        if (r < 0) {
                log_error_errno(r, "storage_syncer_failed", "path=%s", s->path);
                goto fail;
        }
        r = server_storage_opened(s);
        if (r < 0)
                goto fail;
        server_compact_arm(s, CSERVER_COMPACT_INTERVAL_MS);
        storage_get_stats(s->st, &st);
        log_info("storage_opened", "path=%s collections=%llu tables_frontier=%llu "
                 "frontier_rows=%zu frontier_rows_stale=%zu append_sync=%s%s", s->path,
                 (unsigned long long)st.collections, (unsigned long long)server_tables_frontier(s),
                 s->fr.n + (s->fr0 != 0), s->n_dirty, cserver_append_sync_name(s->cfg.append_sync),
                 s->cfg.test_sync_hold_file ? " test_sync_hold_file=set" : "");
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
        server_peek_worker_stop(s);
        while (s->peeks_head)
                server_peek_free(s->peeks_head);
        if (s->install) {
                loop_timer_cancel(s->loop, s->install->timer);
                server_install_free(s->install);
                s->install = NULL;
        }
        server_deferred_free(s);
        for (size_t i = 0; i < s->n_dfs; i++)
                server_dfent_free(s->dfs[i]);
        free(s->dfs);
        free(s->df_gids);
        if (s->compact_timer)
                loop_timer_cancel(s->loop, s->compact_timer);
        /* Held output is dropped: the peers resync with our next life (16).  Storage
         * joins its syncer, which may still wake s->sync_waker: free that after. */
        for (size_t i = s->out_head; i < s->n_out; i++)
                server_out_ent_done(&s->out[i]);
        free(s->out);
        s->st = storage_close(s->st);
        if (s->sync_waker)
                s->sync_waker = loop_waker_free(s->loop, s->sync_waker);
        free((char *)s->cfg.test_sync_hold_file);
        gmap_done(&s->fr);
        free(s->stray);
        free(s->dirty);
        free(s->builtins);
        gmap_done(&s->rc);
        gmap_done(&s->allowed);
        gmap_done(&s->allow_pending);
        server_readers_done(s);
        free(s->pending);
        free(s->work);
        free(s->defer);
        server_cm_drop_all(s);
        free(s->cm);
        free(s->cols);
        free(s->path);
        free(s);
        return NULL;
}

const struct hist *cserver_append_hist(const struct cserver *s)
{
        return &s->append_hist;
}
