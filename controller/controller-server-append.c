/* controller-server-append.c -- appends: checking, consolidating, the rows of
 * coord_frontiers, one WriteBatch per Append, and the mirrors after it.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
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
 * (4a) An append takes at most s->frontier_rows gids of s->dirty, the oldest first; the
 *     rest wait for the next appends.  A wave of moved sinces (the follower's first
 *     permissions after a setup compact every collection) dirties every row at once, and
 *     one append would rewrite them all, two rows each, in one callback.  A row that
 *     waits shows an older since (or a create or drop later): lower, never higher, so
 *     no read_frontier passes its bound (I2) and none goes back (I1).  The tables an
 *     append writes are not capped: their uppers move with it.
 *
 * (15) Writer mark.  An Append may carry writer_mark, a few opaque bytes; it goes into
 *     coord_objects' collection record (storage_append.mark) in the append's own
 *     WriteBatch, so it is durable exactly when the rows it came with are, and stays
 *     until an append carries another.  MSG_LIST_COLLECTIONS reports it on gid 1.
 *     The adapter uses it to tell, after its own restart, which of its catalog's
 *     transactions the built-in relations already reflect (adapter-exec.c note 8);
 *     the controller never interprets it.  ListCollections with `gids` lists only
 *     those, so that question costs O(1) and not a listing of every collection.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-eval.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "hist.h"
#include "killpoint.h"
#include "log.h"
#include "row/row.h"
#include "util.h"

/* ---- Appends (2), (3), (4), (10) ---------------------------------------------------- */

/* A collection the append moves to ts + 1: every built-in, and every table written. */
struct acol {
        struct storage_info info;               /* stored, before the append */
        struct eval_batch pend;                 /* this append's updates, all at ts */
        struct eval_batch base;                 /* its contents before the append */
        bool base_read;
};

/* (22) A unit (a write, or a block named by its last write) that failed alone. */
struct append_failure {
        uint32_t write;
        struct row_error err;
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
        size_t n_dirty_taken;                   /* (4a) from s->dirty_head on */
        bool frontiers;                         /* coord_frontiers is appended to */
        const ProtobufCBinaryData *mark;        /* Append.writer_mark, for gid 1 (15) */
        struct uniq *uq;                        /* (22) the keys the append writes */
        struct append_failure *fail;            /* (22) units that failed alone */
        size_t n_fail, cap_fail;
        struct eval_batch *ret;                 /* one per write: RETURNING rows */
        struct bgwrite *pre;                    /* (24) one write's plan, evaluated */
        size_t n_ret;
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
        server_uniq_free(ac->uq);
        free(ac->fail);
        for (size_t i = 0; i < ac->n_ret; i++)
                eval_batch_done(&ac->ret[i]);
        free(ac->ret);
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

/* The table an INSERT ... SELECT reads (TableWrite.insert_select), as of this append:
 * the written table itself, a table an earlier write of the group wrote (its entry, with
 * those writes), or else *tmp, filled here and cleared by the caller. */
static int select_source(struct append_ctx *ac, struct acol *t, uint64_t gid, struct acol *tmp,
                         struct acol **ret)
{
        struct storage_info info;
        int r;

        *ret = gid == t->info.gid ? t : acol_find(ac, gid);
        if (*ret)
                return 0;
        r = storage_get_info(ac->s->st, gid, &info);
        if (r == -ENOENT)
                return row_error_set(&ac->err, r, "42P01", "collection %llu does not exist",
                                     (unsigned long long)gid);
        if (r < 0)
                return server_storage_failure(ac->s, &ac->err, r, "looking up collection %llu",
                                              (unsigned long long)gid);
        if (info.kind != STORAGE_KIND_TABLE)
                return row_error_set(&ac->err, -EINVAL, "XX000", "invalid plan: the write's plan "
                                     "reads collection %llu, a %s, not a table",
                                     (unsigned long long)gid, server_kind_name(info.kind));
        if (info.frontiers.upper > ac->ts)
                return append_stale(ac, gid, info.frontiers.upper);
        *tmp = (struct acol){ .info = info, .pend = EVAL_BATCH_INIT, .base = EVAL_BATCH_INIT };
        *ret = tmp;
        return 0;
}

/* Push an insert-select's output row, a whole row of the table, at ts. */
static int push_selected(struct append_ctx *ac, struct acol *t, const struct eval_update *u)
{
        if (u->len > STORAGE_ROW_MAX)
                return row_error_set(&ac->err, -EMSGSIZE, "54000", "a row inserted into "
                                     "collection %llu is too long (%zu bytes)",
                                     (unsigned long long)t->info.gid, u->len);
        if (row_validate(u->row, u->len) < 0)
                return row_error_set(&ac->err, -EBADMSG, "XX000", "invalid plan: the "
                                     "insert-select into collection %llu returned a malformed row",
                                     (unsigned long long)t->info.gid);
        if (eval_batch_push(&t->pend, u->row, u->len, ac->ts, u->diff) < 0)
                return row_error_oom(&ac->err);
        return 0;
}

/* Whether rel is a chain of Filter / Map / Project over one Get or Constant: what
 * eval_plan_new() takes. */
bool server_plan_is_chain(const Coord__Plan__Relation *rel)
{
        for (;;) {
                switch (rel ? rel->kind_case : COORD__PLAN__RELATION__KIND__NOT_SET) {
                case COORD__PLAN__RELATION__KIND_GET:
                case COORD__PLAN__RELATION__KIND_CONSTANT:
                        return true;
                case COORD__PLAN__RELATION__KIND_FILTER:
                        rel = rel->filter->input;
                        break;
                case COORD__PLAN__RELATION__KIND_MAP:
                        rel = rel->map->input;
                        break;
                case COORD__PLAN__RELATION__KIND_PROJECT:
                        rel = rel->project->input;
                        break;
                default:
                        return false;
                }
        }
}

/* A Get of collection gid anywhere in rel, or NULL (malformed parts are the dataflow's
 * to refuse). */
static const Coord__Plan__Get *plan_find_get(const Coord__Plan__Relation *rel, uint64_t gid)
{
        const Coord__Plan__Get *g = NULL;

        if (!rel)
                return NULL;
        switch (rel->kind_case) {
        case COORD__PLAN__RELATION__KIND_GET:
                return rel->get && rel->get->id == gid ? rel->get : NULL;
        case COORD__PLAN__RELATION__KIND_FILTER:
                return rel->filter ? plan_find_get(rel->filter->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_MAP:
                return rel->map ? plan_find_get(rel->map->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_PROJECT:
                return rel->project ? plan_find_get(rel->project->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_JOIN:
                if (!rel->join)
                        return NULL;
                g = plan_find_get(rel->join->left, gid);
                return g ? g : plan_find_get(rel->join->right, gid);
        case COORD__PLAN__RELATION__KIND_REDUCE:
                return rel->reduce ? plan_find_get(rel->reduce->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_UNION:
                for (size_t i = 0; rel->union_ && !g && i < rel->union_->n_inputs; i++)
                        g = plan_find_get(rel->union_->inputs[i], gid);
                return g;
        case COORD__PLAN__RELATION__KIND_DISTINCT:
                return rel->distinct ? plan_find_get(rel->distinct->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_TOP_K:
                return rel->top_k ? plan_find_get(rel->top_k->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_NEGATE:
                return rel->negate ? plan_find_get(rel->negate->input, gid) : NULL;
        case COORD__PLAN__RELATION__KIND_THRESHOLD:
                return rel->threshold ? plan_find_get(rel->threshold->input, gid) : NULL;
        default:
                return NULL;
        }
}

/* The rows a write's chain plan returns at ts (eval_peek() over the one table it reads,
 * with the group's earlier writes, or over its Constant). */
static int write_chain(struct append_ctx *ac, struct acol *t, const Coord__TableWrite *w,
                       struct eval_plan **ret_p, struct eval_batch *out)
{
        struct acol tmp = { .pend = EVAL_BATCH_INIT, .base = EVAL_BATCH_INIT }, *src = NULL;
        uint64_t input;
        int r = eval_plan_new(w->delete_filter, ret_p, &ac->err);

        if (r < 0)
                return r;
        input = eval_plan_input(*ret_p);
        if (!w->insert_select && input != w->gid)
                return row_error_set(&ac->err, -EINVAL, "XX000", "invalid plan: the delete filter "
                                     "of collection %llu reads collection %llu",
                                     (unsigned long long)w->gid, (unsigned long long)input);
        if (input)
                r = select_source(ac, t, input, &tmp, &src);
        if (r >= 0 && src)
                r = acol_base(ac, src);
        /* ts is also mz_now(): a DELETE's logical time is its write timestamp. */
        if (r >= 0)
                r = eval_peek(*ret_p, ac->ts, &delete_source, src ? src : t, out, &ac->err);
        if (r == -ENOMEM)
                row_error_oom(&ac->err);
        eval_batch_done(&tmp.base);
        return r;
}

/* The rows of a write's plan that is not a chain (a join, a reduction, a union: a
 * subquery in a DELETE's WHERE, an INSERT's SELECT): a one-shot dataflow at ts, fed as
 * a peek's is, with the contents of every table it reads as of this append
 * (select_source(): the group's earlier writes included), its memory bounded as a
 * peek's.  Every count of the result is positive. */
static int write_dataflow(struct append_ctx *ac, struct acol *t, const Coord__TableWrite *w,
                          struct dataflow **ret_df, struct eval_batch *out)
{
        struct acol *tmp = NULL;
        size_t n = 0;
        int r = dataflow_new(w->delete_filter, ac->ts, ret_df, &ac->err);

        if (r < 0)
                goto out;
        dataflow_set_memory_limit(*ret_df, server_peek_memory_limit(ac->s));
        if (w->eval_timeout_ms)
                r = dataflow_set_deadline(*ret_df, now_ns() + (uint64_t)w->eval_timeout_ms * 1000000u);
        if (r < 0)
                goto out;
        n = dataflow_n_inputs(*ret_df);
        tmp = calloc(n ? n : 1, sizeof(*tmp));
        if (!tmp) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < n; i++)
                tmp[i] = (struct acol){ .pend = EVAL_BATCH_INIT, .base = EVAL_BATCH_INIT };
        for (size_t i = 0; i < n && r >= 0; i++) {
                struct acol *src;

                r = select_source(ac, t, dataflow_input_id(*ret_df, i), &tmp[i], &src);
                if (r >= 0)
                        r = acol_base(ac, src);
                if (r >= 0)
                        r = dataflow_push(*ret_df, i, src->base.updates, src->base.n, &ac->err);
                if (r >= 0)
                        r = dataflow_push(*ret_df, i, src->pend.updates, src->pend.n, &ac->err);
        }
        if (r >= 0)
                r = dataflow_step(*ret_df, ac->ts + 1, out, &ac->err);
        for (size_t i = 0; r >= 0 && i < out->n; i++)
                if (out->updates[i].diff < 0)
                        r = row_error_set(&ac->err, -EUCLEAN, "XX000", "a row of the plan of the "
                                          "write to collection %llu has a negative count",
                                          (unsigned long long)w->gid);
out:
        if (r == -ENOMEM)
                row_error_oom(&ac->err);
        for (size_t i = 0; tmp && i < n; i++)
                eval_batch_done(&tmp[i].base);
        free(tmp);
        return r;
}

/* A DELETE (retract what delete_filter returns), an UPDATE (TableWrite.update: retract
 * the first half of each output row, insert the second) or an INSERT ... SELECT
 * (TableWrite.insert_select: insert each output row).  A chain plan is evaluated as is
 * (write_chain()), any other by a dataflow (write_dataflow()). */
/* A row of a write with RETURNING split into the row(s) it writes (head columns) and
 * the RETURNING values, which go to `ret`; *u then holds the head, encoded in *buf. */
static int split_returning(struct append_ctx *ac, const Coord__TableWrite *w, size_t head,
                           struct eval_update *u, uint8_t **buf, struct eval_batch *ret)
{
        size_t n = head + w->returning, len;
        struct row_datum *d = calloc(n, sizeof(*d));
        int r = -ENOMEM;

        free(*buf);
        *buf = malloc(u->len ? u->len : 1);
        if (!d || !*buf)
                goto out;
        r = row_decode(u->row, u->len, d, n);
        if (r < 0) {
                row_error_set(&ac->err, r, "XX000", "invalid RETURNING row for collection %llu",
                              (unsigned long long)w->gid);
                goto out;
        }
        len = row_encode_into(d + head, w->returning, *buf);
        r = eval_batch_push(ret, *buf, len, ac->ts, u->diff);
        if (r >= 0) {
                u->len = row_encode_into(d, head, *buf);
                u->row = *buf;
        }
out:
        if (r == -ENOMEM)
                row_error_oom(&ac->err);
        free(d);
        return r;
}

static int append_delete(struct append_ctx *ac, struct acol *t, const Coord__TableWrite *w,
                         size_t index, uint64_t *ret_count)
{
        struct eval_batch out = EVAL_BATCH_INIT;
        struct eval_plan *p = NULL;
        struct dataflow *df = NULL;
        const Coord__Plan__Get *get = plan_find_get(w->delete_filter, w->gid);
        const enum row_type *types;
        size_t halves = w->update ? 2 : 1, arity;
        uint64_t count = 0;
        uint8_t *buf = NULL;
        bool whole;
        int r;

        if (ac->pre && ac->pre->write == index) {
                /* (24) evaluated in the peek thread, the Append parked meanwhile. */
                r = ac->pre->r;
                if (r < 0) {
                        ac->err = ac->pre->e;
                } else {
                        df = TAKE_PTR(ac->pre->df);
                        out = ac->pre->out;
                        ac->pre->out = (struct eval_batch)EVAL_BATCH_INIT;
                        types = dataflow_types(df);
                        arity = dataflow_arity(df);
                }
        } else if (server_plan_is_chain(w->delete_filter)) {
                r = write_chain(ac, t, w, &p, &out);
                types = r >= 0 ? eval_plan_types(p) : NULL;
                arity = r >= 0 ? eval_plan_arity(p) : 0;
        } else {
                r = write_dataflow(ac, t, w, &df, &out);
                types = r >= 0 ? dataflow_types(df) : NULL;
                arity = r >= 0 ? dataflow_arity(df) : 0;
        }
        if (r < 0)
                goto out;
        /* Retractions must be whole rows of the table, else they retract rows that do not
         * exist (caught by check_nonnegative(), but this names the real mistake); so must
         * an update's new rows be.  An insert-select's rows are the adapter's, as an
         * INSERT's are: row_validate() only (push_selected()), the controller does not
         * know the table's columns. */
        r = -EINVAL;
        if (!w->insert_select && !get) {
                row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                              "collection %llu does not read it", (unsigned long long)w->gid);
                goto out;
        }
        whole = w->insert_select ? arity > w->returning
                                 : arity == halves * get->n_column_types + w->returning;
        for (size_t i = 0; whole && !w->insert_select && i < arity - w->returning; i++)
                whole = (int)types[i] == (int)get->column_types[i % get->n_column_types];
        if (!whole) {
                row_error_set(&ac->err, r, "XX000", "invalid plan: the delete filter of "
                              "collection %llu must return its rows unchanged",
                              (unsigned long long)w->gid);
                goto out;
        }
        for (size_t i = 0; i < out.n; i++) {
                struct eval_update u = out.updates[i];

                r = w->returning ? split_returning(ac, w, arity - w->returning, &u, &buf,
                                                   &ac->ret[index])
                                 : 0;
                if (r < 0)
                        goto out;
                if (w->insert_select) {
                        r = push_selected(ac, t, &u);
                } else if (w->update) {
                        r = push_update(ac, t, w->gid, &u, get->n_column_types);
                } else {
                        r = eval_batch_push(&t->pend, u.row, u.len, ac->ts, -u.diff);
                        if (r < 0)
                                row_error_oom(&ac->err);
                }
                if (r < 0)
                        goto out;
                count += (uint64_t)out.updates[i].diff;
        }
        *ret_count = count;
        r = 0;
out:
        free(buf);
        eval_batch_done(&out);
        eval_plan_free(p);
        dataflow_free(df);
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
        ac->n_dirty_taken = s->n_dirty - s->dirty_head;
        if (ac->n_dirty_taken > s->frontier_rows)
                ac->n_dirty_taken = s->frontier_rows;
        r = RESERVE(cand, cap_cand, ac->n_dirty_taken + ac->n_c);
        if (r < 0)
                return row_error_oom(&ac->err);
        if (ac->n_dirty_taken)          /* (4a) */
                memcpy(cand, s->dirty + s->dirty_head, ac->n_dirty_taken * sizeof(*cand));
        n_cand = ac->n_dirty_taken;
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
                const struct gent *e;

                for (size_t i = 0; (e = gmap_each(&s->fr, &i)); )
                        cand[n_cand++] = e->key;
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

/* (22) The units of the append: *ret[i] is the last write of write i's unit (a block,
 * TableWrite.block, or the write alone); NULL when no write has keys (no unit needs a
 * check).  XX000 for blocks that overlap or reach before the first write. */
static int units_plan(struct append_ctx *ac, const Coord__Append *a, size_t **ret)
{
        bool any = false;
        size_t *end, done = 0;

        *ret = NULL;
        for (size_t i = 0; i < a->n_writes && !any; i++)
                any = a->writes[i]->n_unique_keys || a->writes[i]->n_foreign_keys;
        if (!any)
                return 0;
        end = calloc(a->n_writes, sizeof(*end));
        if (!end)
                return row_error_oom(&ac->err);
        for (size_t i = 0; i < a->n_writes; i++) {
                uint32_t b = a->writes[i]->block;

                end[i] = i;
                if (b <= 1)
                        continue;
                if (b > i + 1 || i + 1 - b < done) {
                        free(end);
                        return row_error_set(&ac->err, -EINVAL, "XX000", "write %zu of the append "
                                             "ends a block of %u writes that overlaps another or "
                                             "the start", i, b);
                }
                for (size_t j = i + 1 - b; j < i; j++)
                        end[j] = i;
                done = i + 1;
        }
        *ret = end;
        return 0;
}

static bool unit_keyed(const Coord__Append *a, size_t first, size_t last)
{
        for (size_t i = first; i <= last; i++)
                if (a->writes[i]->n_unique_keys || a->writes[i]->n_foreign_keys)
                        return true;
        return false;
}

/* (22) Where each collection's pend stands before a keyed unit: a unit that fails is
 * taken back to there. */
static int unit_begin(struct append_ctx *ac, size_t **marks, size_t *n_marks)
{
        size_t *m = realloc(*marks, (ac->n_c ? ac->n_c : 1) * sizeof(*m));

        if (!m)
                return row_error_oom(&ac->err);
        for (size_t i = 0; i < ac->n_c; i++)
                m[i] = ac->c[i].pend.n;
        *marks = m;
        *n_marks = ac->n_c;
        if (!ac->uq && !(ac->uq = server_uniq_new()))
                return row_error_oom(&ac->err);
        return 0;
}

/* (22), (25) The end of keyed unit [first, last]: its keys checked; if one is violated, the
 * unit's rows leave the append, its counts are 0 and it is a failure of the Ok. */
static int unit_end_check(struct append_ctx *ac, const Coord__Append *a, size_t last,
                          const size_t *marks, size_t n_marks)
{
        struct row_error err = { .position = 0 };
        size_t first = a->writes[last]->block > 1 ? last + 1 - a->writes[last]->block : last;
        int r = server_uniq_commit(ac->uq, &err);

        if (r != -EEXIST) {
                if (r < 0)
                        ac->err = err;
                return r;
        }
        for (size_t i = 0; i < ac->n_c; i++)
                ac->c[i].pend.n = i < n_marks ? marks[i] : 0;
        for (size_t i = first; i <= last; i++) {
                ac->counts[i] = 0;
                if (ac->ret)
                        ac->ret[i].n = 0;       /* nothing of it returns either */
        }
        if (RESERVE(ac->fail, ac->cap_fail, ac->n_fail + 1) < 0)
                return row_error_oom(&ac->err);
        ac->fail[ac->n_fail++] = (struct append_failure){ .write = (uint32_t)last, .err = err };
        return 0;
}

/* Every built-in moves to ts + 1: each joins the group; coord_objects carries T, the
 * tables' shared frontier (10). */
static int append_builtins(struct append_ctx *ac, uint64_t ts, uint64_t *ret_T)
{
        struct cserver *s = ac->s;
        uint64_t T = 0;
        size_t k;
        int r;

        for (size_t i = 0; i < s->n_builtins; i++) {
                struct storage_info info;

                r = storage_get_info(s->st, s->builtins[i], &info);
                if (r < 0)
                        return server_storage_failure(s, &ac->err, r, "looking up collection %llu",
                                               (unsigned long long)s->builtins[i]);
                assert(info.kind == STORAGE_KIND_BUILTIN);
                if (info.frontiers.upper > ts)
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
        if (s->born_above > ts)
                return append_stale(ac, s->born_above_gid, s->born_above);
        *ret_T = T;
        return 0;
}

/* The table of write w joins the group (at its first write in the append). */
static int append_table_add(struct append_ctx *ac, const Coord__TableWrite *w, uint64_t ts,
                            uint64_t T, struct acol **ret)
{
        struct cserver *s = ac->s;
        struct storage_info info;
        size_t k;
        int r;

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
        if (info.frontiers.upper > ts)
                return append_stale(ac, info.gid, info.frontiers.upper);
        r = acol_add(ac, &info, &k);
        if (r < 0)
                return r;
        *ret = &ac->c[k];
        return 0;
}

/* A write that is not well formed, or that the adapter may not make. */
static int append_write_check(struct append_ctx *ac, const Coord__TableWrite *w)
{
        if (w->gid == CSERVER_GID_FRONTIERS)
                return row_error_set(&ac->err, -EPERM, "XX000", "collection %u "
                                     "(coord_frontiers) is written by the controller only",
                                     CSERVER_GID_FRONTIERS);
        if (w->n_diffs && w->n_diffs != w->n_rows)
                return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                     "%llu has %zu rows but %zu diffs",
                                     (unsigned long long)w->gid, w->n_rows, w->n_diffs);
        if ((w->update || w->insert_select) && !w->delete_filter)
                return row_error_set(&ac->err, -EINVAL, "XX000", "the %s of "
                                     "collection %llu has no plan",
                                     w->update ? "update" : "insert-select",
                                     (unsigned long long)w->gid);
        if (w->update && w->insert_select)
                return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                     "%llu is both an update and an insert-select",
                                     (unsigned long long)w->gid);
        if (w->delete_filter && w->n_rows)
                return row_error_set(&ac->err, -EINVAL, "XX000", "the write to collection "
                                     "%llu has both rows and a delete filter",
                                     (unsigned long long)w->gid);
        return 0;
}

/* Stage the writes of a, unit by unit: a keyed unit's rows leave the append when one of
 * its keys is violated (22). */
static int append_writes(struct append_ctx *ac, const Coord__Append *a, uint64_t T)
{
        struct cserver *s = ac->s;
        _cleanup_free_ size_t *unit_end = NULL, *marks = NULL;
        size_t n_marks = 0;
        bool keyed = false;
        int r;

        r = units_plan(ac, a, &unit_end);
        if (r < 0)
                return r;
        for (size_t i = 0; i < a->n_writes; i++) {
                const Coord__TableWrite *w = a->writes[i];
                struct acol *t = acol_find(ac, w->gid);
                size_t from;

                if (unit_end && (i == 0 || unit_end[i - 1] == i - 1) &&
                    unit_keyed(a, i, unit_end[i])) {
                        r = unit_begin(ac, &marks, &n_marks);
                        if (r < 0)
                                return r;
                        keyed = true;
                }

                if (!t) {
                        r = append_table_add(ac, w, a->ts, T, &t);
                        if (r < 0)
                                return r;
                }
                r = append_write_check(ac, w);
                if (r < 0)
                        return r;
                from = t->pend.n;
                r = w->delete_filter ? append_delete(ac, t, w, i, &ac->counts[i])
                                     : append_insert(ac, t, w, &ac->counts[i]);
                if (r < 0)
                        return r;
                if (keyed && w->n_unique_keys && w->on_conflict_skip && !w->delete_filter) {
                        r = server_uniq_skip(s, ac->uq, &t->info, w, &t->pend, from, &ac->err);
                        if (r < 0)
                                return r;
                        ac->counts[i] -= (uint64_t)r;
                }
                if (keyed && (w->n_unique_keys || w->n_foreign_keys)) {
                        r = server_uniq_stage(s, ac->uq, &t->info, w, &t->pend, from, &ac->err);
                        if (r < 0)
                                return r;
                }
                if (keyed && unit_end[i] == i) {
                        r = unit_end_check(ac, a, i, marks, n_marks);
                        if (r < 0)
                                return r;
                        keyed = false;
                }
        }
        return 0;
}

/* Consolidate each collection's updates; no count may go below zero. */
static int append_consolidate(struct append_ctx *ac)
{
        int r;

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
        return 0;
}

/* Everything of (3) that can be checked before writing; fills ac or ac->err. */
static int append_prepare(struct append_ctx *ac, const Coord__Append *a)
{
        struct cserver *s = ac->s;
        struct acol *fcol;
        uint64_t T = 0;
        int r;

        if (a->ts == UINT64_MAX)
                return row_error_set(&ac->err, -EINVAL, "XX000", "cannot append at %llu",
                                     (unsigned long long)a->ts);
        ac->counts = calloc(a->n_writes ? a->n_writes : 1, sizeof(*ac->counts));
        if (!ac->counts)
                return row_error_oom(&ac->err);
        for (size_t i = 0; i < a->n_writes; i++)
                if (a->writes[i]->returning && !a->writes[i]->delete_filter)
                        return row_error_set(&ac->err, -EINVAL, "XX000", "invalid append: "
                                             "RETURNING of a write without a plan");
        for (size_t i = 0; i < a->n_writes && !ac->ret; i++)
                if (a->writes[i]->returning) {
                        ac->ret = calloc(a->n_writes, sizeof(*ac->ret));
                        if (!ac->ret)
                                return row_error_oom(&ac->err);
                        ac->n_ret = a->n_writes;
                        for (size_t k = 0; k < a->n_writes; k++)
                                ac->ret[k] = EVAL_BATCH_INIT;
                }
        r = append_builtins(ac, a->ts, &T);
        if (r < 0)
                return r;
        r = append_writes(ac, a, T);
        if (r < 0)
                return r;

        fcol = acol_find(ac, CSERVER_GID_FRONTIERS);
        if (fcol) {
                ac->frontiers = true;
                r = append_frontiers(ac, (size_t)(fcol - ac->c));
                if (r < 0)
                        return r;
        }
        r = append_consolidate(ac);
        if (r < 0)
                return r;

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
                /* (4a) What this append did not take waits for the next; the array
                 * is moved down only when that costs no more than what was taken. */
                assert(s->dirty_head + ac->n_dirty_taken <= s->n_dirty);
                s->dirty_head += ac->n_dirty_taken;
                if (s->dirty_head == s->n_dirty)
                        s->dirty_head = s->n_dirty = 0;
                else if (s->dirty_head >= s->n_dirty - s->dirty_head) {
                        memmove(s->dirty, s->dirty + s->dirty_head,
                                (s->n_dirty - s->dirty_head) * sizeof(*s->dirty));
                        s->n_dirty -= s->dirty_head;
                        s->dirty_head = 0;
                }
                s->fr_rebuild = false;
        }
        /* T is ts + 1 now, at or above every table's stored upper. */
        s->born_above = s->born_above_gid = 0;
        for (size_t i = 0; i < ac->n_c; i++) {
                struct storage_frontiers f = ac->c[i].info.frontiers;

                if (ac->c[i].info.kind == STORAGE_KIND_BUILTIN)
                        server_cm_apply(s, &ac->c[i].info, &ac->c[i].pend, ac->ts + 1);
                else if (s->n_km)
                        server_uniq_apply(s, &ac->c[i].info, &ac->c[i].pend, ac->ts + 1);
                f.upper = ac->ts + 1;
                server_ring_set(s, ac->c[i].info.gid, &f);
        }
        s->last_append_collections = ac->n_c;
        s->last_append_frontier_rows = ac->frontier_rows;
        s->appends++;
}

static void append_returned_free(Coord__WriteRows *wr, Coord__WriteRows **wrp, size_t n)
{
        for (size_t i = 0; wrp && i < n; i++) {
                free(wrp[i]->rows);
                free(wrp[i]->counts);
        }
        free(wr);
        free(wrp);
}

/* Ok.returned: the RETURNING rows of each write that has some (they borrow from
 * ac->ret).  0, or -ENOMEM with nothing allocated. */
static int append_returned(struct append_ctx *ac, Coord__WriteRows **ret_wr,
                           Coord__WriteRows ***ret_wrp, size_t *ret_n)
{
        size_t n = 0, k = 0;

        *ret_wr = NULL;
        *ret_wrp = NULL;
        *ret_n = 0;
        for (size_t i = 0; i < ac->n_ret; i++)
                n += ac->ret[i].n > 0;
        if (!n)
                return 0;
        *ret_wr = calloc(n, sizeof(**ret_wr));
        *ret_wrp = calloc(n, sizeof(**ret_wrp));
        for (size_t i = 0; *ret_wr && *ret_wrp && i < ac->n_ret; i++) {
                Coord__WriteRows *w = &(*ret_wr)[k];
                const struct eval_batch *b = &ac->ret[i];

                if (!b->n)
                        continue;
                coord__write_rows__init(w);
                w->write = (uint32_t)i;
                w->rows = calloc(b->n, sizeof(*w->rows));
                w->counts = calloc(b->n, sizeof(*w->counts));
                (*ret_wrp)[k++] = w;
                if (!w->rows || !w->counts)
                        break;
                w->n_rows = w->n_counts = b->n;
                for (size_t j = 0; j < b->n; j++) {
                        w->rows[j] = (ProtobufCBinaryData){ .data = (uint8_t *)b->updates[j].row,
                                                            .len = b->updates[j].len };
                        w->counts[j] = (uint64_t)b->updates[j].diff;
                }
        }
        *ret_n = k;
        if (*ret_wr && *ret_wrp && k == n && (!k || (*ret_wrp)[k - 1]->counts))
                return 0;
        append_returned_free(*ret_wr, *ret_wrp, k);
        return -ENOMEM;
}

/* The Ok of an applied append: its counts, the units that failed alone (22) and the
 * RETURNING rows of the others. */
static void append_reply_ok(struct append_ctx *ac, node_peer_t from, uint64_t rid, const Coord__Append *a)
{
        Coord__WriteFailure *wf = NULL, **wfp = NULL;
        Coord__WriteRows *wr = NULL, **wrp = NULL;
        Coord__Error *e = NULL;
        size_t n = ac->n_fail, n_wr = 0;

        if (n) {
                wf = calloc(n, sizeof(*wf));
                wfp = calloc(n, sizeof(*wfp));
                e = calloc(n, sizeof(*e));
                if (!wf || !wfp || !e)
                        n = 0;  /* the counts of 0 still say nothing was written */
        }
        for (size_t i = 0; i < n; i++) {
                const struct row_error *re = &ac->fail[i].err;

                coord__write_failure__init(&wf[i]);
                coord__error__init(&e[i]);
                e[i].sqlstate = (char *)re->sqlstate;
                e[i].message = (char *)re->message;
                e[i].detail = (char *)re->detail;
                e[i].hint = (char *)re->hint;
                wf[i].write = ac->fail[i].write;
                wf[i].error = &e[i];
                wfp[i] = &wf[i];
        }
        if (append_returned(ac, &wr, &wrp, &n_wr) < 0)
                log_warn("append_returning_lost", "ts=%llu reason=oom", (unsigned long long)a->ts);
        server_reply_ok_failed(ac->s, from, rid, ac->counts, a->n_writes, a->ts + 1, wfp, n, wrp,
                               n_wr);
        append_returned_free(wr, wrp, n_wr);
        free(wf);
        free(wfp);
        free(e);
}

void server_handle_append(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__Append *a = coord__append__unpack(NULL, env->payload.len, env->payload.data);

        if (!a) {
                server_reply_malformed(s, from, env);
                return;
        }
        if (server_bgwrite_try(s, from, env->request_id, a) == 1)
                return;                 /* (24) parked; the job has a */
        server_append_run(s, from, env->request_id, a, NULL);
        coord__append__free_unpacked(a, NULL);
}

void server_append_run(struct cserver *s, node_peer_t from, uint64_t request_id,
                       const Coord__Append *a, struct bgwrite *w)
{
        struct append_ctx ac = { .s = s, .pre = w };
        struct stage st = { 0 };
        bool pushed = false;
        uint64_t t0 = now_ns();
        int r;

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
                server_reply_error(s, from, request_id, &ac.err);
        } else {
                append_apply(&ac);
                if (pushed)
                        server_compute_staged(s, &st, true);   /* after apply: it marks rows dirty */
                log_debug("append", "ts=%llu writes=%zu collections=%zu frontier_rows=%zu",
                          (unsigned long long)a->ts, a->n_writes, ac.n_c, ac.frontier_rows);
                s->append_t0_ns = t0;
                append_reply_ok(&ac, from, request_id, a);
                if (s->append_t0_ns) {          /* sent at once, not held */
                        hist_record(&s->append_hist, (now_ns() - t0) / 1000);
                        s->append_t0_ns = 0;
                }
                /* T passed ts, and the views with it: parked peeks may be readable. */
                server_peeks_wake(s);
        }
        append_ctx_done(&ac);
}
