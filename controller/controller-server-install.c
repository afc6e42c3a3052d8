/* controller-server-install.c -- installing dataflows (MSG_CREATE_DATAFLOWS): hydration,
 * bulk installs in slices, and the messages deferred meanwhile.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (17) A bulk install in slices (the follower's resync after a restart): the loop
 *     turns every 5 ms of installing; the follower's later messages wait for the end,
 *     a peek of a dataflow not installed yet waits for it.  Details at struct install.
 *     And one FUTEX_WAKE of the ring's sleepers per message handled or per release of
 *     held output, not per record (fring_hold_wakes()).
 * (17a) A complete set in parts (CreateDataflows.more/part: a million dataflows are more
 *     than a frame): resync_part() collects the gids of parts 0, 1, ... in
 *     s->resync_listed; the last part removes what none named -- unless a part was
 *     missed (a part number out of order), when it removes nothing (log
 *     resync_incomplete) and the follower's next resync converges.  Each part installs
 *     as a message of its own, the next waiting behind it (17).
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-eval.h"
#include "controller-sink.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "refresh.h"
#include "row/row.h"
#include "util.h"

/* ---- Installing dataflows (13), (17) ------------------------------------------------ */

/* Feed input i of df with the contents of collection gid at `at` (as time at), then its
 * updates in (at, upper): what a dataflow installed at `at` needs to catch up (13).
 * Returns the number of rows fed, or -errno with err. */
static int hydrate_input(struct cserver *s, struct dataflow *df, size_t i, uint64_t at,
                         struct row_error *err)
{
        uint64_t gid = dataflow_input_id(df, i);
        struct feed f = { .df = df, .input = i, .err = err };
        struct storage_info info;
        uint64_t eff_upper, snap_at, lo, hi;
        struct dfent *up;
        int r;

        r = storage_get_info(s->st, gid, &info);
        if (r == -ENOENT)
                return row_error_set(err, r, "42P01", "collection %llu does not exist",
                                     (unsigned long long)gid);
        if (r < 0)
                return server_storage_failure(s, err, r, "looking up collection %llu", (unsigned long long)gid);
        up = server_dfent_find(s, gid);
        if (up && up->failed) {
                struct row_error why = server_dfent_error(up);

                return row_error_set(err, -EINVAL, why.sqlstate, "%s", why.message);
        }
        eff_upper = info.frontiers.upper;
        if (info.kind == STORAGE_KIND_TABLE && eff_upper < server_tables_frontier(s))
                eff_upper = server_tables_frontier(s);
        if (eff_upper <= info.frontiers.since)
                return 0;       /* nothing readable yet: everything comes by push */
        /* Everything written up to at, as one snapshot at min(at, upper - 1). */
        snap_at = at < eff_upper - 1 ? at : eff_upper - 1;
        if (snap_at < info.frontiers.since)
                return row_error_set(err, -EDOM, "55000", "cannot install at %llu: collection %llu "
                                     "is compacted to %llu", (unsigned long long)at,
                                     (unsigned long long)gid,
                                     (unsigned long long)info.frontiers.since);
        f.time = at;
        r = server_storage_snapshot(s, gid, snap_at, server_feed_emit, &f);
        if (r >= 0)
                r = server_feed_flush(&f);
        if (r < 0)
                goto fail;
        /* Then the stored updates after at (a table's stop at its stored upper). */
        lo = at + 1;
        hi = info.frontiers.upper;
        if (lo < hi) {
                r = storage_read_updates(s->st, gid, lo, hi, server_feed_update, &f);
                if (r >= 0)
                        r = server_feed_flush(&f);
                if (r < 0)
                        goto fail;
        }
        row_arena_done(&f.bytes);
        return (int)(f.rows > INT32_MAX ? INT32_MAX : f.rows);
fail:
        row_arena_done(&f.bytes);
        if (r == -EINVAL)
                return r;       /* err set by dataflow_push() */
        if (r == -ENOMEM)
                return row_error_oom(err);
        return server_storage_failure(s, err, r, "reading collection %llu", (unsigned long long)gid);
}

static int correction_row(const void *row, size_t len, int64_t count, void *userdata)
{
        struct dfent *e = userdata;

        return eval_batch_push(&e->correction, row, len, 0, -count);
}

/* Build e's dataflow and read its inputs (13).  On error the entry stays, failed, so
 * that reads of it say why. */
int server_dfent_hydrate(struct cserver *s, struct dfent *e)
{
        const Coord__DataflowSpec *sp = e->spec;
        struct row_error err = { .position = 0 };
        struct storage_frontiers f;
        uint64_t as_of = sp->as_of, start_ns = now_ns(), rows = 0;
        struct dataflow *probe = NULL;
        struct storage_info info;
        struct refresh_schedule rs;
        bool refresh = server_dfent_schedule(e, &rs);
        int r;

        e->df = dataflow_free(e->df);
        e->arr = arrangement_free(e->arr);
        eval_batch_clear(&e->correction);
        e->failed = false;
        e->complete = false;
        /* Hard constraints first: at or after every input's since. */
        r = dataflow_new(sp->plan, as_of, &probe, &err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < dataflow_n_inputs(probe); i++) {
                uint64_t gid = dataflow_input_id(probe, i);
                r = server_object_frontiers(s, gid, &f, NULL, NULL);
                if (r < 0) {
                        row_error_set(&err, r, "42P01", "input %llu of dataflow %llu does not exist",
                                      (unsigned long long)gid, (unsigned long long)e->gid);
                        goto fail;
                }
                if (f.since > as_of)
                        as_of = f.since;
        }
        e->emit_from = 0;
        if (e->sink) {
                r = server_sink_open(s, e, &as_of, &err);
                if (r < 0)
                        goto fail;
        } else if (!e->index) {
                r = storage_get_info(s->st, e->gid, &info);
                if (r == -ENOENT) {
                        r = storage_create(s->st, e->gid, STORAGE_KIND_MV, as_of, as_of);
                        if (r < 0) {
                                server_storage_failure(s, &err, r, "creating collection %llu",
                                                (unsigned long long)e->gid);
                                goto fail;
                        }
                        r = storage_get_info(s->st, e->gid, &info);
                }
                if (r < 0) {
                        server_storage_failure(s, &err, r, "looking up collection %llu", (unsigned long long)e->gid);
                        goto fail;
                }
                if (info.kind != STORAGE_KIND_MV) {
                        row_error_set(&err, -EEXIST, "XX000", "collection %llu exists as another kind",
                                      (unsigned long long)e->gid);
                        goto fail;
                }
                /* Resume: times below the durable upper are written; recompute the
                 * snapshot at upper - 1 and emit from upper on. */
                e->emit_from = info.frontiers.upper;
                if (refresh && info.frontiers.upper == REFRESH_NONE) {
                        /* (13b) past its last refresh: nothing more to compute. */
                        probe = dataflow_free(probe);
                        e->complete = true;
                        e->as_of = as_of;
                        e->dirty = false;
                        log_info("dataflow_complete", "gid=%llu", (unsigned long long)e->gid);
                        server_dfent_publish(s, e);
                        return 0;
                }
                if (info.frontiers.upper > info.frontiers.since) {
                        bool correct = refresh;

                        if (refresh) {
                                /* (13b) Its inputs are protected from its next refresh U =
                                 * upper on, not from U - 1: read them at max(U - 1, their
                                 * sinces) <= U, whose snapshot lands at U, less what the
                                 * collection holds. */
                                if (info.frontiers.upper - 1 > as_of)
                                        as_of = info.frontiers.upper - 1;
                        } else if (info.frontiers.upper - 1 > as_of) {
                                as_of = info.frontiers.upper - 1;
                        } else if (info.frontiers.upper - 1 < as_of) {
                                /* An input was compacted past our upper: the output jumps
                                 * at as_of from its durable contents to the new ones
                                 * (logged, not fatal). */
                                log_warn("dataflow_as_of_raised", "gid=%llu upper=%llu as_of=%llu",
                                         (unsigned long long)e->gid,
                                         (unsigned long long)info.frontiers.upper, (unsigned long long)as_of);
                                correct = true;
                        }
                        r = correct ? storage_read(s->st, e->gid, info.frontiers.upper - 1, correction_row, e, NULL) : 0;
                        if (r < 0) {
                                server_storage_failure(s, &err, r, "reading collection %llu", (unsigned long long)e->gid);
                                goto fail;
                        }
                        for (size_t i = 0; i < e->correction.n; i++)
                                e->correction.updates[i].time = as_of;
                }
                if (as_of < info.frontiers.upper && info.frontiers.upper == info.frontiers.since)
                        as_of = info.frontiers.upper;
        }
        probe = dataflow_free(probe);
        r = dataflow_new(sp->plan, as_of, &e->df, &err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < dataflow_n_inputs(e->df); i++) {
                r = hydrate_input(s, e->df, i, as_of, &err);
                if (r < 0)
                        goto fail;
                rows += (uint64_t)r;
        }
        if (e->index) {
                r = arrangement_new(as_of, &e->arr);
                if (r >= 0)
                        r = server_index_keys(e->arr, sp);     /* (23) */
                if (r < 0) {
                        row_error_oom(&err);
                        goto fail;
                }
        }
        e->as_of = as_of;
        r = server_dfent_track(s, e);
        if (r < 0) {
                row_error_oom(&err);
                goto fail;
        }
        e->dirty = false;       /* (it may be queued already: a duplicate is skipped) */
        server_dfent_dirty(s, e);      /* its first step (at as_of + 1 or later) is due */
        if (s->bulk_install) {
                s->bulk_installed++;
                s->bulk_rows += rows;
        }
        log_at(s->bulk_install ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO,
               "dataflow_installed", "gid=%llu kind=%s as_of=%llu requested_as_of=%llu inputs=%zu "
                 "rows=%llu took_us=%llu", (unsigned long long)e->gid,
                 server_dfent_kind(e), (unsigned long long)as_of,
                 (unsigned long long)sp->as_of, dataflow_n_inputs(e->df), (unsigned long long)rows,
                 (unsigned long long)((now_ns() - start_ns) / 1000));
        server_dfent_publish(s, e);
        return 0;
fail:
        dataflow_free(probe);
        e->df = dataflow_free(e->df);
        server_dfent_untrack(s, e);
        if (r == -ENOMEM)
                row_error_oom(&err);
        server_dfent_fail(s, e, &err);
        return r;
}

void server_dfent_free(struct dfent *e)
{
        if (!e)
                return;
        dataflow_free(e->df);
        arrangement_free(e->arr);
        eval_batch_done(&e->out);
        eval_batch_done(&e->correction);
        eval_batch_done(&e->sink_out);
        sink_file_close(e->file);
        free(e->reads);
        free(e->err);
        if (e->spec)
                coord__dataflow_spec__free_unpacked(e->spec, NULL);
        free(e);
}

/* Remove the dataflow gid (its MV collection is dropped by the caller). */
void server_dfent_remove(struct cserver *s, uint64_t gid)
{
        size_t i = server_dfent_pos(s, gid);
        struct dfent *e;

        if (i == s->n_dfs || s->df_gids[i] != gid)
                return;
        e = s->dfs[i];
        memmove(&s->dfs[i], &s->dfs[i + 1], (s->n_dfs - i - 1) * sizeof(*s->dfs));
        memmove(&s->df_gids[i], &s->df_gids[i + 1], (s->n_dfs - i - 1) * sizeof(*s->df_gids));
        s->n_dfs--;
        server_dfent_untrack(s, e);
        server_work_forget(s, e);
        if (e->sink)
                s->n_sinks--;
        else if (!e->index)
                s->n_mvs--;         /* dfs_insert() counted it */
        if (e->index) {
                server_ring_forget(s, gid);
                server_allowed_forget(s, gid);
        }
        server_frontiers_dirty(s, gid);
        log_info("dataflow_removed", "gid=%llu kind=%s", (unsigned long long)gid,
                 server_dfent_kind(e));
        server_dfent_free(e);
}

static int dfs_insert(struct cserver *s, struct dfent *e)
{
        size_t pos = server_dfent_pos(s, e->gid);
        int r = RESERVE(s->dfs, s->cap_dfs, s->n_dfs + 1);

        if (r >= 0)
                r = RESERVE(s->df_gids, s->cap_df_gids, s->n_dfs + 1);
        if (r < 0)
                return r;
        if (e->sink)
                s->n_sinks++;
        else if (!e->index)
                s->n_mvs++;
        memmove(&s->dfs[pos + 1], &s->dfs[pos], (s->n_dfs - pos) * sizeof(*s->dfs));
        memmove(&s->df_gids[pos + 1], &s->df_gids[pos], (s->n_dfs - pos) * sizeof(*s->df_gids));
        s->dfs[pos] = e;
        s->df_gids[pos] = e->gid;
        s->n_dfs++;
        return 0;
}

int server_spec_copy(const Coord__DataflowSpec *sp, Coord__DataflowSpec **ret)
{
        size_t len = coord__dataflow_spec__get_packed_size(sp);
        _cleanup_free_ uint8_t *buf = malloc(len ? len : 1);

        if (!buf)
                return -ENOMEM;
        coord__dataflow_spec__pack(sp, buf);
        *ret = coord__dataflow_spec__unpack(NULL, len, buf);
        return *ret ? 0 : -ENOMEM;
}

/* (17) A bulk install in slices (the follower's resync after a controller restart):
 * a CreateDataflows of more than INSTALL_SLICED_MIN dataflows is installed
 * INSTALL_SLICE_NS at a time, the loop turning in between (a zero timer), so the
 * adapter's appends and peeks go on:
 *   - the follower's messages that arrive meanwhile (its AllowCompaction, a Drop, the
 *     next CreateDataflows) are deferred, copied, and handled in order once the install
 *     is done, exactly as if they had waited in the socket behind it;
 *   - a peek that reads a dataflow not installed yet waits for it (PEEK_WAIT, woken
 *     by the compute pass at the end), where it would have found it missing;
 *   - appends feed the dataflows installed so far; one installed later reads its
 *     inputs from storage, appends included, as any install does.  Nothing compacts a
 *     user collection meanwhile: after a restart permissions come only with the
 *     follower's AllowCompaction, which waits behind the install.
 * One Ok answers the message when the last dataflow is in, then the pass of its own. */
#define INSTALL_SLICED_MIN 256u
#define INSTALL_SLICE_NS (5u * 1000u * 1000u)

struct deferred {
        struct deferred *next;
        node_peer_t from;
        uint64_t epoch;                 /* of from's connection that sent it */
        size_t len;
        uint8_t buf[];                  /* the packed Envelope */
};

/* Whether gid is a dataflow the install in progress has not installed yet. */
bool server_install_pending(const struct cserver *s, uint64_t gid)
{
        const struct gent *e;

        if (!s->install)
                return false;
        e = gmap_find(&s->install->pending, gid);
        return e && e->a >= s->install->next;
}

int server_defer_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        size_t len = coord__envelope__get_packed_size(env);
        struct deferred *d = malloc(sizeof(*d) + (len ? len : 1));

        if (!d)
                return -ENOMEM;
        d->next = NULL;
        d->from = from;
        d->epoch = s->msg_epoch;
        d->len = coord__envelope__pack(env, d->buf);
        if (!s->deferred_tail)
                s->deferred_tail = &s->deferred_head;
        *s->deferred_tail = d;
        s->deferred_tail = &d->next;
        s->n_deferred++;
        return 0;
}

/* Handle the deferred messages in order, until one starts another install or parks
 * an Append (24). */
void server_deferred_run(struct cserver *s)
{
        while (!s->install && !s->bgwrite && s->deferred_head) {
                struct deferred *d = s->deferred_head;
                Coord__Envelope *env;

                s->deferred_head = d->next;
                if (!s->deferred_head)
                        s->deferred_tail = &s->deferred_head;
                s->n_deferred--;
                env = coord__envelope__unpack(NULL, d->len, d->buf);
                if (env) {
                        /* Handled as if it had waited in the socket; but when that
                         * connection is gone, its replies go nowhere (18b). */
                        s->msg_epoch = d->epoch;
                        s->msg_from = d->from;
                        s->msg_stale = d->epoch != server_peer_epoch(s, d->from);
                        server_on_message(s, d->from, env);
                        s->msg_stale = false;
                        coord__envelope__free_unpacked(env, NULL);
                } else
                        log_error("deferred_message_lost", "bytes=%zu why=out_of_memory", d->len);
                free(d);
        }
}

void server_deferred_free(struct cserver *s)
{
        while (s->deferred_head) {
                struct deferred *d = s->deferred_head;

                s->deferred_head = d->next;
                free(d);
        }
        s->deferred_tail = &s->deferred_head;
        s->n_deferred = 0;
}

static bool same_plan(const Coord__Plan__Relation *a, const Coord__Plan__Relation *b)
{
        size_t na = a ? coord__plan__relation__get_packed_size(a) : 0;
        size_t nb = b ? coord__plan__relation__get_packed_size(b) : 0;
        _cleanup_free_ uint8_t *x = NULL, *y = NULL;

        if (na != nb)
                return false;
        if (!na)
                return true;
        x = malloc(na);
        y = malloc(nb);
        if (!x || !y)
                return false;   /* switching again is harmless */
        coord__plan__relation__pack(a, x);
        coord__plan__relation__pack(b, y);
        return memcmp(x, y, na) == 0;
}

/* Install one spec: 1 installed (or a sink switched), 0 already there, -ENOMEM (e set). */
static int install_one(struct cserver *s, const Coord__DataflowSpec *sp, struct row_error *e)
{
        struct dfent *de;

        if (sp->kind == COORD__DATAFLOW_KIND__DATAFLOW_SOURCE)
                return server_source_install(s, sp, e);
        de = server_dfent_find(s, sp->gid);
        if (de && de->sink && sp->kind == COORD__DATAFLOW_KIND__DATAFLOW_SINK &&
            !same_plan(de->spec->plan, sp->plan))
                return server_sink_switch(s, de, sp, e);
        if (de)
                return 0;
        de = calloc(1, sizeof(*de));
        if (!de || server_spec_copy(sp, &de->spec) < 0) {
                server_dfent_free(de);
                return row_error_oom(e);
        }
        de->gid = sp->gid;
        de->index = sp->kind == COORD__DATAFLOW_KIND__DATAFLOW_INDEX;
        de->sink = sp->kind == COORD__DATAFLOW_KIND__DATAFLOW_SINK;
        de->out = EVAL_BATCH_INIT;
        de->correction = EVAL_BATCH_INIT;
        de->sink_out = EVAL_BATCH_INIT;
        if (dfs_insert(s, de) < 0) {
                server_dfent_free(de);
                return row_error_oom(e);
        }
        (void)server_dfent_hydrate(s, de);     /* a failure stays on the entry */
        return 1;
}

void server_install_free(struct install *in)
{
        if (!in)
                return;
        coord__create_dataflows__free_unpacked(in->m, NULL);
        free(in->counts);
        gmap_done(&in->pending);
        free(in);
}

/* The install is over (r < 0: failed with e): answer, then the pass of its own, then
 * what the follower sent meanwhile. */
static void install_done(struct cserver *s, int r, struct row_error *e)
{
        struct install *in = s->install;

        if (in->m->n_dataflows > 1)
                log_info("dataflows_installed", "dataflows=%zu installed=%llu rows=%llu slices=%u "
                         "deferred=%zu took_us=%llu", in->m->n_dataflows,
                         (unsigned long long)s->bulk_installed, (unsigned long long)s->bulk_rows,
                         in->slices + 1, s->n_deferred,
                         (unsigned long long)((now_ns() - in->start_ns) / 1000));
        s->bulk_install = false;
        if (in->epoch != server_peer_epoch(s, in->from)) {
                /* Its connection is gone (18b): the new one resyncs on its own. */
                s->stale_replies++;
                log_info("install_reply_dropped", "role=%s request_id=%llu why=connection_replaced",
                         node_role_name(node_peer_role(in->from)), (unsigned long long)in->request_id);
        } else if (r < 0)
                server_reply_error(s, in->from, in->request_id, e);
        else
                server_reply_ok(s, in->from, in->request_id, in->counts, in->m->n_dataflows, 0);
        s->install = NULL;
        server_install_free(in);
        server_compute_run(s);                 /* wakes the peeks that waited (17) */
        server_deferred_run(s);
}

static void install_continue(struct loop *l, void *userdata);

/* Install the next slice; the last one ends the install. */
static void install_step(struct cserver *s, bool sliced)
{
        struct install *in = s->install;
        uint64_t start = now_ns();
        struct row_error e;
        int r = 0;

        s->bulk_install = in->m->n_dataflows > 1;
        if (!s->st) {
                r = server_storage_unavailable(&e);
                goto done;
        }
        while (in->next < in->m->n_dataflows) {
                r = install_one(s, in->m->dataflows[in->next], &e);
                if (r < 0)
                        goto done;
                in->counts[in->next++] = (uint64_t)r;
                if (sliced && in->next < in->m->n_dataflows &&
                    (s->cfg.test_install_slice_ms ? (in->next & 7) == 0
                                                  : (in->next & 63) == 0 &&
                                                    now_ns() - start >= INSTALL_SLICE_NS)) {
                        uint64_t after = (uint64_t)s->cfg.test_install_slice_ms * NS_PER_MS;

                        s->bulk_install = false;
                        if (loop_timer_add(s->loop, after, install_continue, s, &in->timer) == 0) {
                                in->slices++;
                                s->install_slices++;
                                return;
                        }
                        in->timer = NULL;
                        sliced = false;         /* no timer: the rest now */
                        s->bulk_install = true;
                }
        }
        r = 0;
done:
        install_done(s, r, &e);
}

static void install_continue(struct loop *l, void *userdata)
{
        struct cserver *s = userdata;

        s->install->timer = NULL;
        fring_hold_wakes(s->ring);
        install_step(s, true);
        fring_release_wakes(s->ring);
}

/* (17a) A complete set's part: part 0 starts it; a part out of order breaks it (its
 * last part then removes nothing).  Adds the part's gids (and sources' remaps, 20). */
static int resync_part(struct cserver *s, const Coord__CreateDataflows *m)
{
        if (parts_next(&s->resync_parts, m->part))
                gmap_done(&s->resync_listed);
        if (gmap_reserve(&s->resync_listed, 2 * m->n_dataflows) < 0)
                return -ENOMEM;
        for (size_t j = 0; j < m->n_dataflows; j++) {
                gmap_put(&s->resync_listed, m->dataflows[j]->gid);
                if (m->dataflows[j]->kind == COORD__DATAFLOW_KIND__DATAFLOW_SOURCE &&
                    m->dataflows[j]->progress_id)
                        gmap_put(&s->resync_listed, m->dataflows[j]->progress_id);
        }
        return 0;
}

void server_handle_create_dataflows(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        Coord__CreateDataflows *m;
        struct install *in;
        struct row_error e;
        int r = 0;

        m = coord__create_dataflows__unpack(NULL, env->payload.len, env->payload.data);
        if (!m) {
                server_reply_malformed(s, from, env);
                return;
        }
        assert(!s->install);            /* the follower's messages wait behind one (17) */
        in = calloc(1, sizeof(*in));
        if (!in || !(in->counts = calloc(m->n_dataflows ? m->n_dataflows : 1, sizeof(*in->counts)))) {
                free(in);
                r = row_error_oom(&e);
                goto fail;
        }
        in->m = m;
        in->from = from;
        in->epoch = s->msg_epoch;
        in->request_id = env->request_id;
        in->start_ns = now_ns();
        if (!s->st) {
                r = server_storage_unavailable(&e);
                goto fail_in;
        }
        /* Validate before changing anything. */
        for (size_t i = 0; i < m->n_dataflows; i++) {
                const Coord__DataflowSpec *sp = m->dataflows[i];

                /* A plan the engine refuses is not refused here: the dataflow is
                 * installed failed, so that reads of it say why (13). */
                if (!sp->gid || (!sp->plan && sp->kind != COORD__DATAFLOW_KIND__DATAFLOW_SOURCE)) {
                        r = row_error_set(&e, -EINVAL, "XX000", "invalid dataflow spec %zu", i);
                        goto fail_in;
                }
        }
        if (m->complete && resync_part(s, m) < 0) {
                r = row_error_oom(&e);
                goto fail_in;
        }
        if (m->complete && !m->more && s->resync_parts.broken) {
                log_warn("resync_incomplete", "parts=%u action=keep", m->part + 1);
                gmap_done(&s->resync_listed);
        } else if (m->complete && !m->more) {
                /* (17a) The resync's last part: remove what the follower no longer has. */
                struct gmap listed = s->resync_listed;

                s->resync_listed = (struct gmap){ 0 };
                for (size_t i = s->n_dfs; i-- > 0;) {
                        uint64_t gid = s->dfs[i]->gid;
                        bool mv = !s->dfs[i]->index;
                        if (gmap_find(&listed, gid))
                                continue;
                        server_dfent_remove(s, gid);
                        if (mv && server_drop_one(s, gid, false, &e) < 0)
                                log_warn("dataflow_drop_failed", "gid=%llu", (unsigned long long)gid);
                }
                for (size_t i = s->n_srcs; i-- > 0;)
                        if (!gmap_find(&listed, s->srcs[i]->gid) &&
                            server_drop_one(s, s->srcs[i]->gid, false, &e) < 0)
                                log_warn("source_drop_failed", "gid=%llu", (unsigned long long)s->srcs[i]->gid);
                r = server_list_all(s);
                for (size_t i = 0; r >= 0 && i < s->n_cols; i++)
                        if ((s->cols[i].kind == STORAGE_KIND_MV || s->cols[i].kind == STORAGE_KIND_SINK ||
                             s->cols[i].kind == STORAGE_KIND_SOURCE || s->cols[i].kind == STORAGE_KIND_REMAP) &&
                            !gmap_find(&listed, s->cols[i].gid))
                                (void)server_drop_one(s, s->cols[i].gid, false, &e);
                gmap_done(&listed);
                r = 0;
        }
        s->bulk_installed = s->bulk_rows = 0;
        if (m->n_dataflows > INSTALL_SLICED_MIN) {
                if (gmap_reserve(&in->pending, m->n_dataflows) < 0) {
                        r = row_error_oom(&e);
                        goto fail_in;
                }
                for (size_t i = 0; i < m->n_dataflows; i++)
                        gmap_put(&in->pending, m->dataflows[i]->gid)->a = i;
                s->installs_sliced++;
        }
        s->install = in;
        install_step(s, m->n_dataflows > INSTALL_SLICED_MIN);
        return;
fail_in:
        in->m = NULL;
        server_install_free(in);
fail:
        server_reply_error(s, from, env->request_id, &e);
        coord__create_dataflows__free_unpacked(m, NULL);
        server_compute_run(s);
}
