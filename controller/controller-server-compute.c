/* controller-server-compute.c -- installed dataflows (materialized views, indexes, sinks):
 * who reads a gid, feeding and stepping them in compute passes, their frontiers.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (13) Compute (issue 4).  MSG_CREATE_DATAFLOWS installs materialized views and
 *     indexes (s->dfs, by GlobalId; struct dataflow, controller-dataflow.h).  A view
 *     installed over an existing collection with upper U emits only times >= U, so its
 *     durable output never skips or repeats a time; its output [old upper, new upper)
 *     goes into the append's own WriteBatch (append_commit()), durable when the INSERT is
 *     acknowledged; a failed write reinstalls every dataflow.  Appends push to readers
 *     (server_compute_push(), s->readers); a pass steps only dirty dataflows, in GlobalId
 *     order (server_compute_stage(), server_compute_run()).  A clean view writes nothing
 *     (server_mv_upper(), server_mv_flush() below); a clean index is caught up when read
 *     (server_dfent_catch_up()), published only when its since moves (server_dfent_publish()).
 *     A failed evaluation stops the dataflow; reads of it get the error.  Detail:
 *     docs/compute.md, "Installing and running", "Frontiers", "Costs to know".
 *
 * (13b) Refresh views (DataflowSpec.refresh).  The collection changes only at refresh
 *     times and its durable upper is the next refresh (what the follower requires of
 *     the inputs): refresh_stage() moves each output update to the first refresh at or
 *     after its time; output not yet due waits in e->correction (the view is not clean).
 *     After the last refresh the upper is empty (UINT64_MAX) and the dataflow is retired
 *     (e->complete).  Resuming at durable upper U (server_dfent_hydrate()) writes the
 *     refresh at U whole, nothing doubled (test-refresh `contents`).  docs/compute.md
 *     and docs/protection.md, "Refresh views".
 *
 * (13c) Parked dataflows.  A dirty dataflow that cannot step because its inputs' uppers
 *     have not passed its frontier F, all of them tables, can step only once the tables'
 *     frontier passes F (a table's upper is at least that frontier, server_effective(),
 *     and rows written into one dirty their readers anyway): it is parked on s->fwait, a
 *     min-heap by F, and parked_release() puts it back on pending at the first pass whose
 *     tables' frontier (or T_next) passes F.  Before, every pass took every such dataflow
 *     again: a setup creating indexes faster than the tables' frontier moved made each
 *     pass revisit all of them (at 1,000,000 objects passes of seconds).  An entry is
 *     stale when e->fwait is false or its need changed; server_work_forget() takes a
 *     leaving dfent out.  A waiting one counts as dirty wherever dirty is asked (no
 *     catch-up on read, no upper beyond the durable one), as a deferred one was.
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
#include "killpoint.h"
#include "log.h"
#include "refresh.h"
#include "row/row.h"
#include "util.h"

/* The dataflows reading one gid (s->readers, (13)). */
struct rlist {
        size_t n, cap;
        struct dfent *v[];
};

/* ---- Compute: materialized views and indexes (13) ------------------------------------ */

/* Where gid is or would go in s->dfs (ascending gids). */
size_t server_dfent_pos(const struct cserver *s, uint64_t gid)
{
        return LOWER_BOUND(s->n_dfs, m, s->df_gids[m], gid);
}

struct dfent *server_dfent_find(const struct cserver *s, uint64_t gid)
{
        size_t i = server_dfent_pos(s, gid);

        assert(i == s->n_dfs || s->dfs[i]->gid == s->df_gids[i]);
        return i < s->n_dfs && s->df_gids[i] == gid ? s->dfs[i] : NULL;
}

/* ---- Readers: who reads a gid (13) --------------------------------------------------
 *
 * An append feeds what it wrote to the dataflows that read it, and a view's output goes
 * to the dataflows that read the view, without visiting every installed dataflow: a map
 * gid -> the dataflows with it among their inputs, kept as dataflows are (re)built and
 * removed.  A dataflow is listed once per distinct input gid. */

static struct rlist *readers_of(const struct cserver *s, uint64_t gid)
{
        const struct gent *g = gmap_find(&s->readers, gid);

        return g ? (struct rlist *)(uintptr_t)g->a : NULL;
}

static int readers_add(struct cserver *s, uint64_t gid, struct dfent *e)
{
        struct rlist *rl = readers_of(s, gid), *q;
        struct gent *g;

        if (!rl || rl->n == rl->cap) {
                size_t cap = rl ? rl->cap * 2 : 4;
                if (!rl && gmap_reserve(&s->readers, 1) < 0)
                        return -ENOMEM;
                q = realloc(rl, sizeof(*q) + cap * sizeof(q->v[0]));
                if (!q)
                        return -ENOMEM;
                if (!rl)
                        q->n = 0;
                q->cap = cap;
                rl = q;
                g = gmap_find(&s->readers, gid);
                if (!g)
                        g = gmap_put(&s->readers, gid);
                g->a = (uint64_t)(uintptr_t)rl;
        }
        rl->v[rl->n++] = e;
        return 0;
}

static void readers_del(struct cserver *s, uint64_t gid, const struct dfent *e)
{
        struct rlist *rl = readers_of(s, gid);

        if (!rl)
                return;
        for (size_t i = 0; i < rl->n; i++)
                if (rl->v[i] == e) {
                        memmove(&rl->v[i], &rl->v[i + 1], (rl->n - i - 1) * sizeof(rl->v[0]));
                        rl->n--;
                        break;
                }
        if (!rl->n) {
                gmap_remove(&s->readers, gid);
                free(rl);
        }
}

void server_dfent_untrack(struct cserver *s, struct dfent *e)
{
        for (size_t i = 0; i < e->n_reads; i++)
                readers_del(s, e->reads[i], e);
        free(e->reads);
        e->reads = NULL;
        e->n_reads = 0;
}

/* Register e as a reader of its dataflow's inputs (none while it has no dataflow). */
int server_dfent_track(struct cserver *s, struct dfent *e)
{
        size_t n;

        server_dfent_untrack(s, e);
        if (!e->df || !(n = dataflow_n_inputs(e->df)))
                return 0;
        e->reads = calloc(n, sizeof(*e->reads));
        if (!e->reads)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                uint64_t gid = dataflow_input_id(e->df, i);
                bool seen = false;
                for (size_t j = 0; j < e->n_reads && !seen; j++)
                        seen = e->reads[j] == gid;
                if (seen)
                        continue;
                if (readers_add(s, gid, e) < 0)
                        return -ENOMEM;         /* e->reads lists what was added */
                e->reads[e->n_reads++] = gid;
        }
        return 0;
}

void server_readers_done(struct cserver *s)
{
        const struct gent *e;

        for (size_t i = 0; (e = gmap_each(&s->readers, &i)); )
                free((void *)(uintptr_t)e->a);
        gmap_done(&s->readers);
}

/* ---- Work of compute passes (13) ------------------------------------------------------
 *
 * A pass steps the dataflows something was pushed into since they last stepped (dirty,
 * on s->pending; also every dataflow just installed), in GlobalId order: a min-heap,
 * which takes the dataflows a view's output dirties during the pass.  A clean one is
 * not visited: nothing is pending in it, so its contents cannot change and it catches
 * up when read (server_dfent_catch_up()).  A dirty one that could not be queued (no memory)
 * stays clean and catches up when read too: eagerness is for memory, not correctness
 * -- except for a view's output, which a catch-up keeps for the next pass. */

void server_dfent_dirty(struct cserver *s, struct dfent *e)
{
        if (e->dirty)
                return;
        if (RESERVE(s->pending, s->cap_pending, s->n_pending + 1) < 0)
                return;
        s->pending[s->n_pending++] = e;
        e->dirty = true;
}

/* The order of a compute pass: by GlobalId, so a dataflow's inputs go first -- but
 * sinks last, as an altered sink (controller-server-source.c NOTE 19) may read a larger GlobalId; nothing reads
 * a sink.  GlobalIds are below 2^63. */
static uint64_t work_key(const struct dfent *e)
{
        return e->sink ? e->gid | (1ull << 63) : e->gid;
}

static void work_up(struct dfent **h, size_t i)
{
        while (i) {
                size_t p = (i - 1) / 2;
                struct dfent *t;
                if (work_key(h[p]) <= work_key(h[i]))
                        break;
                t = h[p], h[p] = h[i], h[i] = t;
                i = p;
        }
}

static struct dfent *work_pop(struct cserver *s)
{
        struct dfent **h = s->work, *top;
        size_t i = 0, n;

        if (!s->n_work)
                return NULL;
        top = h[0];
        h[0] = h[--s->n_work];
        n = s->n_work;
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                struct dfent *t;
                if (l < n && work_key(h[l]) < work_key(h[m]))
                        m = l;
                if (l + 1 < n && work_key(h[l + 1]) < work_key(h[m]))
                        m = l + 1;
                if (m == i)
                        break;
                t = h[m], h[m] = h[i], h[i] = t;
                i = m;
        }
        return top;
}

/* Move s->pending onto the work heap. */
static int work_take_pending(struct cserver *s)
{
        if (RESERVE(s->work, s->cap_work, s->n_work + s->n_pending) < 0)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_pending; i++) {
                s->work[s->n_work] = s->pending[i];
                work_up(s->work, s->n_work++);
        }
        s->n_pending = 0;
        return 0;
}

/* ---- (13c) parked dataflows ---- */

static void parked_up(struct fwait *h, size_t i)
{
        while (i) {
                size_t p = (i - 1) / 2;
                struct fwait t;
                if (h[p].need <= h[i].need)
                        break;
                t = h[p], h[p] = h[i], h[i] = t;
                i = p;
        }
}

static void parked_down(struct fwait *h, size_t n, size_t i)
{
        for (;;) {
                size_t l = 2 * i + 1, m = i;
                struct fwait t;
                if (l < n && h[l].need < h[m].need)
                        m = l;
                if (l + 1 < n && h[l + 1].need < h[m].need)
                        m = l + 1;
                if (m == i)
                        return;
                t = h[m], h[m] = h[i], h[i] = t;
                i = m;
        }
}

static void parked_remove_at(struct cserver *s, size_t i)
{
        s->fwait[i] = s->fwait[--s->n_fwait];
        if (i < s->n_fwait) {
                parked_down(s->fwait, s->n_fwait, i);
                parked_up(s->fwait, i);
        }
}

/* Can e step only once the tables' frontier passes its own?  All its inputs tables,
 * whose upper is at least that frontier (server_effective()). */
static bool parkable(struct cserver *s, struct dfent *e)
{
        for (size_t q = 0; q < dataflow_n_inputs(e->df); q++) {
                uint64_t gid = dataflow_input_id(e->df, q);
                struct storage_frontiers f;
                enum storage_kind kind;

                if (server_dfent_find(s, gid) ||
                    server_object_frontiers(s, gid, &f, &kind, NULL) < 0 ||
                    kind != STORAGE_KIND_TABLE)
                        return false;
        }
        return dataflow_n_inputs(e->df) > 0;
}

/* Park e at need (13c); false when there is no room (it is deferred as before). */
static bool park(struct cserver *s, struct dfent *e, uint64_t need)
{
        if (RESERVE(s->fwait, s->cap_fwait, s->n_fwait + 1) < 0)
                return false;
        s->fwait[s->n_fwait] = (struct fwait){ need, e };
        parked_up(s->fwait, s->n_fwait++);
        e->fwait = true;
        e->fwait_need = need;
        s->fwait_total++;
        return true;
}

/* Back on pending: every parked dataflow whose frontier the tables' frontier (or T_next,
 * an append's) has passed. */
static void parked_release(struct cserver *s, uint64_t T_next)
{
        uint64_t bound = server_tables_frontier(s);

        if (T_next > bound)
                bound = T_next;
        while (s->n_fwait && s->fwait[0].need < bound) {
                struct fwait top = s->fwait[0];

                parked_remove_at(s, 0);
                if (!top.e->fwait || top.e->fwait_need != top.need)
                        continue;       /* stale: stepped or parked again since */
                top.e->fwait = false;
                s->fwait_released++;
                server_dfent_dirty(s, top.e);
        }
}

/* e leaves: off s->pending (it may be there twice, see server_dfent_catch_up()) and off
 * s->fwait. */
void server_work_forget(struct cserver *s, const struct dfent *e)
{
        for (size_t i = s->n_pending; i-- > 0;)
                if (s->pending[i] == e)
                        s->pending[i] = s->pending[--s->n_pending];
        /* Stale entries too: e goes away.  A removal re-sifts the heap, so look again. */
        for (size_t i = 0; i < s->n_fwait;) {
                if (s->fwait[i].e == e) {
                        parked_remove_at(s, i);
                        i = 0;
                } else {
                        i++;
                }
        }
}

/* Push an output or an append's updates of gid into every dataflow reading it that
 * comes after position `after` in the pass's order (work_key(); 0: all). */
static void readers_push(struct cserver *s, uint64_t gid, uint64_t after, const struct eval_update *u,
                         size_t n)
{
        struct rlist *rl = readers_of(s, gid);
        struct row_error err;

        if (!rl || !n)
                return;
        for (size_t i = 0; i < rl->n; i++) {
                struct dfent *d = rl->v[i];
                if (d->failed || !d->df || work_key(d) <= after)
                        continue;
                for (size_t q = 0; q < dataflow_n_inputs(d->df); q++)
                        if (dataflow_input_id(d->df, q) == gid &&
                            dataflow_push(d->df, q, u, n, &err) < 0)
                                server_dfent_fail(s, d, &err);
                server_dfent_dirty(s, d);
        }
}

/* The frontiers of a readable object: a storage collection (a table's effective upper,
 * (10)), or an index's arrangement.  -ENOENT when it does not exist. */
int server_object_frontiers(struct cserver *s, uint64_t gid, struct storage_frontiers *ret,
                            enum storage_kind *ret_kind, struct dfent **ret_index)
{
        struct dfent *e = server_dfent_find(s, gid);
        struct storage_info info;
        int r;

        if (ret_index)
                *ret_index = NULL;
        if (e && e->index) {
                if (!e->arr)
                        return -ENOENT;
                server_dfent_catch_up(s, e);
                *ret = (struct storage_frontiers){ .since = arrangement_since(e->arr),
                                                   .upper = arrangement_upper(e->arr),
                                                   .physical_since = arrangement_since(e->arr) };
                if (ret_kind)
                        *ret_kind = STORAGE_KIND_MV;
                if (ret_index)
                        *ret_index = e;
                return 0;
        }
        if (!s->st)
                return -EIO;
        r = storage_get_info(s->st, gid, &info);
        if (r < 0)
                return r;
        *ret = info.frontiers;
        server_effective(ret, info.kind, server_tables_frontier(s));
        if (info.kind == STORAGE_KIND_MV)
                ret->upper = server_mv_upper(s, gid, ret->upper);
        if (ret_kind)
                *ret_kind = info.kind;
        return 0;
}

/* Publish a dataflow's frontiers to the ring and coord_frontiers.  An index is
 * stepped to T inside every append, like every healthy dataflow, so its upper is
 * known to readers as max(its published upper, T) -- the tables' rule (10) -- and its
 * slot and row change only when its since does (or at installation): an append does
 * not rewrite one ring record and two frontier rows per index.  A materialized view's
 * upper is durable and published as it moves. */
void server_dfent_publish(struct cserver *s, struct dfent *e)
{
        struct storage_frontiers f;
        struct storage_info info;

        if (e->index) {
                if (server_object_frontiers(s, e->gid, &f, NULL, NULL) < 0)
                        return;
                if (e->published_upper && e->published_since == f.since)
                        return;
        } else {
                /* A view's slot shows its DURABLE frontiers: its upper moves when its
                 * contents do (readers of the ring take max(published, T) only for
                 * tables and indexes; the follower's quiet-objects rule relies on it). */
                if (!s->st || storage_get_info(s->st, e->gid, &info) < 0)
                        return;
                f = info.frontiers;
        }
        server_ring_set(s, e->gid, &f);
        if (e->published_upper != f.upper || e->published_since != f.since) {
                e->published_upper = f.upper;
                e->published_since = f.since;
                server_frontiers_dirty(s, e->gid);
        }
}

int server_feed_flush(struct feed *f)
{
        int r = 0;

        if (f->n)
                r = dataflow_push(f->df, f->input, f->buf, f->n, f->err);
        f->n = 0;
        row_arena_reset(&f->bytes);
        return r;
}

int server_feed_add(struct feed *f, const void *row, size_t len, uint64_t time, int64_t diff)
{
        void *copy = row_arena_alloc(&f->bytes, len ? len : 1);

        if (!copy)
                return -ENOMEM;
        if (len)
                memcpy(copy, row, len);
        f->buf[f->n++] = (struct eval_update){ .row = copy, .len = len, .time = time, .diff = diff };
        f->rows++;
        return f->n == ELEMENTSOF(f->buf) ? server_feed_flush(f) : 0;
}

/* Rows of a snapshot (storage_row_fn and eval_emit_fn shapes). */
int server_feed_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct feed *f = userdata;

        return server_feed_add(f, row, len, f->time, count);
}

int server_feed_emit(void *userdata, const void *row, size_t len, int64_t diff)
{
        return server_feed_row(row, len, diff, userdata);
}

int server_feed_update(const void *row, size_t len, uint64_t time, int64_t diff, void *userdata)
{
        struct feed *f = userdata;

        return server_feed_add(f, row, len, time, diff);
}

const char *server_dfent_kind(const struct dfent *e)
{
        return e->index ? "index" : e->sink ? "sink" : "materialized_view";
}

void server_dfent_fail(struct cserver *s, struct dfent *e, const struct row_error *err)
{
        if (!e->failed)
                log_error("dataflow_failed", "gid=%llu kind=%s sqlstate=%s message=\"%s\"",
                          (unsigned long long)e->gid, server_dfent_kind(e),
                          err->sqlstate, err->message);
        e->failed = true;
        if (!e->err)
                e->err = malloc(sizeof(*e->err));       /* NULL: server_dfent_error() says less */
        if (e->err)
                *e->err = *err;
}

/* Why a failed entry failed. */
struct row_error server_dfent_error(const struct dfent *e)
{
        struct row_error err = { .position = 0 };

        assert(e->failed);
        if (e->err)
                return *e->err;
        row_error_set(&err, -ENOMEM, "XX000", "dataflow %llu failed (its error was not kept: "
                      "out of memory)", (unsigned long long)e->gid);
        return err;
}

/* e's refresh schedule (13b), pointing into its spec; false for a continuous view. */
bool server_dfent_schedule(const struct dfent *e, struct refresh_schedule *rs)
{
        const Coord__DataflowSpec *sp = e->spec;

        if (e->index || !sp->refresh)
                return false;
        *rs = (struct refresh_schedule){ .at = sp->refresh_at, .n_at = sp->n_refresh_at,
                                         .every_ms = sp->refresh_every_ms,
                                         .aligned_to = sp->refresh_aligned_to };
        return true;
}

/* A view's upper once its dataflow reached `frontier`: a refresh view's is the first
 * refresh at or after it (13b), REFRESH_NONE past the last one; a leased one's at most
 * what has been released allows. */
static uint64_t dfent_round(const struct dfent *e, uint64_t frontier)
{
        struct refresh_schedule rs;
        uint64_t up, limit;

        if (!server_dfent_schedule(e, &rs))
                return frontier;
        up = refresh_next(&rs, frontier);
        limit = server_refresh_limit(e, &rs);   /* controller-server-refresh.c note 1 */
        return up < limit ? up : limit;
}

/* (13b) A refresh view's output for a write: each update of e->out moves to the first
 * refresh time at or after its time; one past the last refresh is dropped, one at the
 * refresh still open (at or after the new upper, which the dataflow has not passed) is
 * held in e->correction, which the next step puts back in front of its output.  So the
 * durable collection changes only at refresh times, each refresh whole.  *upper: the
 * upper to write, dfent_round(the dataflow's frontier).  0 or -ENOMEM. */
static int refresh_stage(struct dfent *e, uint64_t frontier, uint64_t *upper)
{
        struct refresh_schedule rs;
        size_t keep = 0;

        if (!server_dfent_schedule(e, &rs)) {
                *upper = frontier;
                return 0;
        }
        *upper = refresh_next(&rs, frontier);
        if (*upper > server_refresh_limit(e, &rs))
                *upper = server_refresh_limit(e, &rs);  /* controller-server-refresh.c note 1 */
        for (size_t j = 0; j < e->out.n; j++) {
                struct eval_update u = e->out.updates[j];

                u.time = refresh_next(&rs, u.time);
                if (u.time == REFRESH_NONE)
                        continue;
                if (u.time >= *upper) {
                        if (eval_batch_push(&e->correction, u.row, u.len, u.time, u.diff) < 0)
                                return -ENOMEM;
                        continue;
                }
                e->out.updates[keep++] = u;
        }
        e->out.n = keep;
        return eval_batch_consolidate(&e->out) < 0 ? -ENOMEM : 0;
}

/* Feed what an append wrote (at ts) to the dataflows that read it. */
void server_compute_push(struct cserver *s, uint64_t gid, const struct eval_batch *b)
{
        readers_push(s, gid, 0, b->updates, b->n);
}

static void stage_done(struct stage *st)
{
        free(st->v);
        free(st->ve);
        free(st->u);
        *st = (struct stage){ 0 };
}

/* An input's upper for a compute pass: a materialized view stepped earlier in this pass
 * at its new upper; a table or built-in at max(its effective upper, T_next) when the
 * pass runs inside an append that moves T to T_next (10). */
static uint64_t input_upper(struct cserver *s, uint64_t gid, uint64_t T_next)
{
        struct dfent *up = server_dfent_find(s, gid);
        struct storage_frontiers f;
        enum storage_kind kind;

        if (up && !up->index && up->pending_upper)
                return up->pending_upper;
        if (server_object_frontiers(s, gid, &f, &kind, NULL) < 0)
                return 0;
        if (T_next && (kind == STORAGE_KIND_TABLE || kind == STORAGE_KIND_BUILTIN) && f.upper < T_next)
                f.upper = T_next;
        return f.upper;
}

/* Where e's dataflow can step to now: the meet of its inputs' uppers (input_upper()). */
uint64_t server_dfent_target(struct cserver *s, struct dfent *e, uint64_t T_next)
{
        uint64_t frontier = UINT64_MAX;

        for (size_t q = 0; q < dataflow_n_inputs(e->df); q++) {
                uint64_t up = input_upper(s, dataflow_input_id(e->df, q), T_next);
                if (up < frontier)
                        frontier = up;
        }
        if (frontier == UINT64_MAX) {
                /* No input (a constant, or every input optimized away): its contents
                 * never change, so it follows the tables' frontier, as a table nobody
                 * writes does (10). */
                uint64_t T = T_next ? T_next : server_tables_frontier(s);
                frontier = T > dataflow_as_of(e->df) + 1 ? T : dataflow_as_of(e->df) + 1;
        }
        return frontier;
}

/* Move e's correction (server_dfent_hydrate(), server_dfent_catch_up()) into its output. */
static int correction_into_out(struct dfent *e)
{
        for (size_t j = 0; j < e->correction.n; j++) {
                const struct eval_update *c = &e->correction.updates[j];
                if (eval_batch_push(&e->out, c->row, c->len, c->time, c->diff) < 0)
                        return -ENOMEM;
        }
        eval_batch_clear(&e->correction);
        return eval_batch_consolidate(&e->out) < 0 ? -ENOMEM : 0;
}

/* Step e's dataflow to `frontier` (> its frontier): the output, with any correction of
 * server_dfent_hydrate(), lands in e->out; an index's goes on into its arrangement, which
 * compacts as far as the committed bound allows (14) and is published.  A failing
 * evaluation marks e failed (0 returned); -ENOMEM. */
int server_dfent_step(struct cserver *s, struct dfent *e, uint64_t frontier)
{
        struct row_error err;
        uint64_t target;
        int r;

        assert(e->df && !e->failed && frontier > dataflow_frontier(e->df));
        r = dataflow_step(e->df, frontier, &e->out, &err);
        if (r < 0) {
                server_dfent_fail(s, e, &err);
                return 0;
        }
        if (e->correction.n && correction_into_out(e) < 0)
                return -ENOMEM;
        if (!e->index)
                return 0;
        r = arrangement_insert(e->arr, &e->out);
        if (r < 0) {
                row_error_set(&err, r, "XX000", "index %llu: cannot arrange its output",
                              (unsigned long long)e->gid);
                server_dfent_fail(s, e, &err);
                return 0;
        }
        arrangement_set_upper(e->arr, frontier);
        e->dirty = false;
        target = server_index_allowed_target(s, e);
        if (target > arrangement_since(e->arr))
                (void)arrangement_compact(e->arr, target);
        e->steps++;
        server_dfent_publish(s, e);
        return 0;
}

/* A dataflow nothing was pushed into is not stepped by compute passes (13): its upper
 * would only follow its inputs'.  Whoever reads its frontiers (server_object_frontiers())
 * brings it to the meet of its inputs' uppers first, here -- cheap, as no data is
 * pending.  Were a view to emit anyway, the output is kept (as a correction) for the
 * next pass to write, and the view stays at its durable upper meanwhile. */
void server_dfent_catch_up(struct cserver *s, struct dfent *e)
{
        uint64_t frontier;
        int r;

        if (e->failed || !e->df || !s->st || e->dirty || e->fwait || e->pending_upper || (e->index && !e->arr))
                return;
        frontier = server_dfent_target(s, e, 0);
        if (frontier <= dataflow_frontier(e->df))
                return;
        eval_batch_clear(&e->out);
        r = server_dfent_step(s, e, frontier);
        for (size_t j = 0; r == 0 && !e->index && j < e->out.n; j++) {
                const struct eval_update *u = &e->out.updates[j];
                r = eval_batch_push(&e->correction, u->row, u->len, u->time, u->diff);
        }
        if (r < 0) {
                struct row_error err;
                row_error_oom(&err);
                server_dfent_fail(s, e, &err);
                return;
        }
        if (!e->index && e->out.n) {
                /* A refresh view's output waits for its refresh there (13b). */
                if (!server_dfent_schedule(e, &(struct refresh_schedule){ 0 }))
                        log_warn("dataflow_caught_up_with_output", "gid=%llu updates=%zu",
                                 (unsigned long long)e->gid, e->out.n);
                server_dfent_dirty(s, e);
        }
        eval_batch_clear(&e->out);
        s->index_catchups++;
}

/* A materialized view's upper for readers (13): its durable upper, or -- while its
 * dataflow is installed, healthy and clean, so that its contents cannot have changed
 * since the durable upper - 1 -- the meet of its inputs' uppers.  Only durable times
 * are ever written: a read in [durable upper, this) reads durable upper - 1. */
uint64_t server_mv_upper(struct cserver *s, uint64_t gid, uint64_t stored)
{
        struct dfent *e = server_dfent_find(s, gid);
        uint64_t f;

        if (!e || e->index)
                return stored;
        server_dfent_catch_up(s, e);
        if (e->failed || !e->df || e->dirty || e->fwait || e->pending_upper || e->correction.n)
                return stored;  /* a waiting one (13c) counts as dirty, as when deferred */
        f = dfent_round(e, dataflow_frontier(e->df));
        return f > stored ? f : stored;
}

/* Step the dataflows to the meet of their inputs' uppers, in GlobalId order (an input
 * is always older than what reads it, so one pass carries changes down a chain), and
 * stage every materialized view's output and new upper for ONE synced write (13): the
 * caller's (an append's own WriteBatch, T_next = its ts + 1) or server_compute_run()'s.
 * Indexes are done here (memory only).  Only what something was pushed into (dirty) is
 * stepped: a clean one catches up when read (server_dfent_catch_up()), so an append costs
 * O(the dataflows it feeds), not O(dataflows), and writes no upper for a view whose
 * contents did not change. */
int server_compute_stage(struct cserver *s, uint64_t T_next, struct stage *st)
{
        struct dfent *e, *last = NULL;
        size_t k = 0;
        int r;

        *st = (struct stage){ 0 };
        if (!s->st || !s->n_dfs)
                return 0;
        st->v = calloc(s->n_mvs ? s->n_mvs : 1, sizeof(*st->v));
        st->ve = calloc(s->n_mvs ? s->n_mvs : 1, sizeof(*st->ve));
        if (!st->v || !st->ve)
                goto oom;
        s->n_work = 0;
        parked_release(s, T_next);
        if (work_take_pending(s) < 0)
                goto oom;
        while ((e = work_pop(s))) {
                uint64_t frontier;

                if (e == last)
                        continue;       /* queued twice */
                last = e;
                if (e->failed || !e->df)
                        continue;
                eval_batch_clear(&e->out);
                e->fwait = false;      /* a parked entry of it is stale now */
                frontier = server_dfent_target(s, e, T_next);
                if (frontier > dataflow_frontier(e->df)) {
                        r = server_dfent_step(s, e, frontier);
                        if (r < 0)
                                goto oom;
                } else if (!e->index && e->correction.n) {
                        /* What a catch-up stepped (server_dfent_catch_up()): write it now. */
                        frontier = dataflow_frontier(e->df);
                        if (correction_into_out(e) < 0)
                                goto oom;
                } else {
                        /* Its inputs have not moved past it yet: whatever was pushed
                         * (or, just installed, its first output) waits for the next
                         * pass, which the tables' ticks bring -- parked when only the
                         * tables' frontier can bring it (13c). */
                        if (parkable(s, e) && park(s, e, dataflow_frontier(e->df))) {
                                e->dirty = false;
                                continue;
                        }
                        if (RESERVE(s->defer, s->cap_defer, s->n_defer + 1) == 0)
                                s->defer[s->n_defer++] = e;
                        else
                                e->dirty = false;       /* a read catches it up */
                        continue;
                }
                if (e->failed || e->index)
                        continue;
                e->dirty = false;       /* staged (a failed write reinstalls it) */
                if (e->sink) {
                        if (server_sink_keep(s, e, frontier) < 0)
                                goto oom;
                        continue;       /* for server_sink_flush(), (19) */
                }
                if (refresh_stage(e, frontier, &frontier) < 0)
                        goto oom;
                /* Output held for its refresh: stepped again at every pass (the
                 * adapter's upper tick brings one) until its inputs pass the refresh. */
                if (e->correction.n && RESERVE(s->defer, s->cap_defer, s->n_defer + 1) == 0)
                        s->defer[s->n_defer++] = e;
                /* A materialized view: only times at or after its durable upper. */
                {
                        struct storage_info info;
                        size_t keep = 0;

                        if (storage_get_info(s->st, e->gid, &info) < 0)
                                continue;
                        for (size_t j = 0; j < e->out.n; j++)
                                if (e->out.updates[j].time >= info.frontiers.upper)
                                        e->out.updates[keep++] = e->out.updates[j];
                        e->out.n = keep;
                        if (frontier <= info.frontiers.upper)
                                continue;
                        st->ve[st->n_v] = e;
                        st->v[st->n_v++] = (struct storage_append){ .gid = e->gid,
                                .expected_upper = info.frontiers.upper, .new_upper = frontier,
                                .n_updates = e->out.n };
                        st->n_u += e->out.n;
                        e->pending_upper = frontier;
                }
                /* Downstream dataflows see this output now (in this same pass). */
                readers_push(s, e->gid, work_key(e), e->out.updates, e->out.n);
                if (work_take_pending(s) < 0)
                        goto oom;
        }
        for (size_t i = 0; i < s->n_defer; i++) {
                s->defer[i]->dirty = false;
                server_dfent_dirty(s, s->defer[i]);
        }
        s->n_defer = 0;
        st->u = calloc(st->n_u ? st->n_u : 1, sizeof(*st->u));
        if (!st->u)
                goto oom;
        for (size_t i = 0; i < st->n_v; i++) {
                struct dfent *de = st->ve[i];
                st->v[i].updates = &st->u[k];
                for (size_t j = 0; j < de->out.n; j++)
                        st->u[k++] = (struct storage_update){ .row = de->out.updates[j].row,
                                .len = de->out.updates[j].len, .time = de->out.updates[j].time,
                                .diff = de->out.updates[j].diff };
        }
        return 0;
oom:
        log_error("out_of_memory", "what=compute_stage");
        s->n_work = 0;          /* the caller reinstalls every dataflow */
        s->n_defer = 0;
        stage_done(st);
        return -ENOMEM;
}

/* (13b) A refresh view whose last refresh is durable: its dataflow goes, its inputs
 * are no longer read (the follower releases its requirements). */
static void dfent_retire(struct cserver *s, struct dfent *e)
{
        server_dfent_untrack(s, e);
        server_work_forget(s, e);
        e->df = dataflow_free(e->df);
        eval_batch_clear(&e->correction);
        e->complete = true;
        log_info("dataflow_complete", "gid=%llu", (unsigned long long)e->gid);
}

/* After the staged write: ok, the views' uppers move; not ok, the dataflows consumed
 * what is not durable, so every one is rebuilt from storage. */
void server_compute_staged(struct cserver *s, struct stage *st, bool ok)
{
        if (ok) {
                if (st->n_v)
                        s->compute_writes++;
                for (size_t i = 0; i < st->n_v; i++) {
                        struct dfent *e = st->ve[i];
                        struct refresh_schedule rs;

                        if (server_dfent_schedule(e, &rs))
                                KILLPOINT("refresh.after_write");       /* written, upper not shown */
                        if (e->pending_upper == REFRESH_NONE && server_dfent_schedule(e, &(struct refresh_schedule){ 0 }))
                                dfent_retire(s, e);
                        e->pending_upper = 0;
                        e->steps++;
                        server_dfent_publish(s, e);
                }
        } else {
                server_compute_reinstall_all(s);
        }
        stage_done(st);
}

/* A pass of its own (after installing, or when inputs moved outside an append). */
void server_compute_run(struct cserver *s)
{
        struct stage st;
        int r;

        if (server_compute_stage(s, 0, &st) < 0) {
                server_compute_reinstall_all(s);
                return;
        }
        if (st.n_v) {
                r = storage_append_group(s->st, st.v, st.n_v);
                if (r < 0 || (size_t)r != st.n_v) {
                        log_error_errno(r < 0 ? r : -EIO, "compute_write_failed", "views=%zu why=\"%s\"",
                                        st.n_v, storage_last_error());
                        server_storage_recover(s);
                        server_compute_staged(s, &st, false);
                        return;
                }
        }
        server_compute_staged(s, &st, true);
        server_peeks_wake(s);
}

/* After storage was reopened, or a write of outputs failed: every dataflow again from
 * what storage holds. */
void server_compute_reinstall_all(struct cserver *s)
{
        for (size_t i = 0; i < s->n_dfs; i++) {
                s->dfs[i]->pending_upper = 0;
                if (s->st)
                        (void)server_dfent_hydrate(s, s->dfs[i]);
        }
}

/* (13) A view nothing was fed to writes nothing at appends.  About once a second its
 * durable upper is moved up to where it is readable (server_mv_upper()), for all such views
 * in ONE write, an append group like any other (2): its ring records wait for the
 * sync that covers it (16): the follower derives a view's requirements from its durable
 * upper (an input's bound would otherwise wait for the view's next change, forever
 * for an input the optimizer removed), and a restart resumes from near T.  A view
 * that is not installed, failed or has output pending is left alone: its durable
 * upper keeps protecting its inputs from where it stopped (I6). */
void server_mv_flush(struct cserver *s)
{
        _cleanup_free_ struct storage_append *v = NULL;
        _cleanup_free_ struct dfent **ve = NULL;
        size_t k = 0;
        int r;

        if (!s->st || !s->n_mvs)
                return;
        v = calloc(s->n_mvs, sizeof(*v));
        ve = calloc(s->n_mvs, sizeof(*ve));
        if (!v || !ve)
                return;         /* the next second */
        for (size_t i = 0; i < s->n_dfs && k < s->n_mvs; i++) {
                struct dfent *e = s->dfs[i];
                struct storage_info info;
                uint64_t up;

                if (e->index || e->sink || e->failed || !e->df || e->dirty || e->fwait || e->pending_upper ||
                    e->correction.n)
                        continue;
                if (storage_get_info(s->st, e->gid, &info) < 0)
                        continue;
                up = server_mv_upper(s, e->gid, info.frontiers.upper);
                if (up <= info.frontiers.upper)
                        continue;
                v[k] = (struct storage_append){ .gid = e->gid, .expected_upper = info.frontiers.upper,
                                                .new_upper = up };
                ve[k++] = e;
        }
        if (!k)
                return;
        r = storage_append_group(s->st, v, k);
        if (r < 0 || (size_t)r != k) {
                log_error_errno(r < 0 ? r : -EIO, "mv_flush_failed", "views=%zu why=\"%s\"", k,
                                storage_last_error());
                server_storage_recover(s);
                return;
        }
        for (size_t i = 0; i < k; i++)
                server_dfent_publish(s, ve[i]);
        s->mv_flushes++;
}
