/* controller-server-compact.c -- compaction permission (AllowCompaction) and the
 * compaction timer, which also flushes materialized views' uppers and sinks.
 *
 * Contract: controller-server.h; what the server's files share:
 * controller-server-internal.h.  The notes are numbered across the server
 * (controller-server.c lists where each stands).
 *
 * NOTES ON THE DESIGN
 *
 * (6) Compaction.  Every collection, the built-ins included, and every index compacts
 *     only with committed permission (14).  Every CSERVER_COMPACT_INTERVAL_MS the server
 *     retries the permissions held back and runs storage_compact_pending() with a small
 *     budget of updates and time (CSERVER_COMPACT_BUDGET_US, soft: one small tiered merge
 *     is done whole); while work remains it comes back COMPACT_AGAIN_MS later, so other
 *     requests are served between.  A merge reading 4,096 updates or more runs in
 *     storage's thread (controller-storage-compact.c NOTE 13) and is applied, and logged
 *     (compaction_ran, background_us), by a later run; a run holding the loop
 *     COMPACT_SLOW_US or more is logged too.
 *
 * (14) Compaction permission (issue 5, I2).  Nothing compacts without a committed bound:
 *     MSG_ALLOW_COMPACTION (the lifecycle follower's, sent after the catalog committed
 *     the bounds) records per gid the allowed since in s->allowed (max of what arrived,
 *     never backwards, I1).  A collection's since moves to min(allowed, execution holds:
 *     peeks in flight (5), a table's rule of (10)); the rest waits in s->allow_pending,
 *     retried at every compaction run (6).  An index's arrangement compacts to
 *     min(allowed, peeks on it) at every compute pass and when permission arrives; with
 *     none it keeps its whole history.  Permissions live in memory only: after a restart
 *     the follower resends all committed bounds, and until then nothing compacts.
 *     Built-ins (gids < CSERVER_FIRST_USER_GID) get bounds by a table's rule
 *     (lifecycle-state.c note 6).  coord_frontiers shows the PHYSICAL since (4).
 *
 * (14a) Permissions in slices.  The follower sends them in messages of up to 1,024
 *     records (lifecycle ALLOW_CHUNK), and at a million collections applying one such
 *     message (storage reads, a write, lookups in maps of a million entries) held the
 *     loop 10 ms and more, message after message.  A message of more than
 *     CSERVER_ALLOW_SLICE gids is recorded at once in s->allowed and applied from
 *     s->allow_q that many per loop turn (allow_queue_step()).  The Ok answers the
 *     recording; a since moves later or waits anyway (14), and moving later only
 *     protects more (I2).  While the queue is not empty every permission joins it, so
 *     none is applied before one that arrived earlier.  A gid dropped meanwhile has no
 *     s->allowed entry and is skipped; after a storage failure, what is left goes to
 *     s->allow_pending.
 */
#include "controller-server.h"
#include "controller-server-internal.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller-dataflow.h"
#include "controller-storage.h"
#include "log.h"
#include "loop/loop.h"
#include "row/row.h"
#include "util.h"

/* While compaction work is queued, run again this soon. */
#define COMPACT_AGAIN_MS 5u
/* A compaction run this long is logged at info. */
#define COMPACT_SLOW_US 5000u

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

/* (14a) What is left of the queue, after a storage failure: retried with the pending. */
static void allow_queue_to_pending(struct cserver *s)
{
        for (size_t i = s->allow_q_head; i < s->n_allow_q; i++)
                if (!gmap_find(&s->allow_pending, s->allow_q[i]) &&
                    gmap_reserve(&s->allow_pending, 1) == 0)
                        gmap_put(&s->allow_pending, s->allow_q[i]);
        s->allow_q_head = s->n_allow_q = 0;
}

static void allow_continue(struct loop *l, void *userdata);

/* (14a) Applies the next slice of the queue; a timer brings the rest. */
static void allow_queue_step(struct cserver *s)
{
        size_t n = s->n_allow_q - s->allow_q_head;
        struct row_error e = { 0 };
        int r;

        if (n > s->allow_slice)
                n = s->allow_slice;
        r = s->st ? allow_apply(s, s->allow_q + s->allow_q_head, n) : -EIO;
        if (r < 0) {
                if (s->st)
                        (void)server_storage_failure(s, &e, r, "allowing compaction");
                if (server_ratelimit_ok(&s->rl_storage, now_ms()))
                        log_warn_errno(r, "allow_compaction_failed", "what=queued left=%zu",
                                       s->n_allow_q - s->allow_q_head);
                allow_queue_to_pending(s);
                return;
        }
        s->allow_q_head += n;
        s->allow_slices++;
        if (s->allow_q_head == s->n_allow_q) {
                s->allow_q_head = s->n_allow_q = 0;
                return;
        }
        if (loop_timer_add(s->loop, 0, allow_continue, s, &s->allow_timer) < 0) {
                s->allow_timer = NULL;
                allow_queue_to_pending(s);      /* the next compaction run has them */
        }
}

static void allow_continue(struct loop *l, void *userdata)
{
        struct cserver *s = userdata;

        (void)l;
        s->allow_timer = NULL;
        fring_hold_wakes(s->ring);
        allow_queue_step(s);
        fring_release_wakes(s->ring);
}

/* (14a) Queues gids[0..n) behind what is queued; the first slice goes now. */
static int allow_enqueue(struct cserver *s, const uint64_t *gids, size_t n)
{
        bool idle = s->n_allow_q == s->allow_q_head;
        int r;

        /* Moved down only when that costs no more than what was applied. */
        if (s->allow_q_head > 0 && s->allow_q_head >= s->n_allow_q - s->allow_q_head) {
                memmove(s->allow_q, s->allow_q + s->allow_q_head,
                        (s->n_allow_q - s->allow_q_head) * sizeof(*s->allow_q));
                s->n_allow_q -= s->allow_q_head;
                s->allow_q_head = 0;
        }
        r = RESERVE(s->allow_q, s->cap_allow_q, s->n_allow_q + n);
        if (r < 0)
                return r;
        memcpy(s->allow_q + s->n_allow_q, gids, n * sizeof(*gids));
        s->n_allow_q += n;
        if (idle && !s->allow_timer)
                allow_queue_step(s);
        return 0;
}

void server_allow_queue_done(struct cserver *s)
{
        if (s->allow_timer)
                loop_timer_cancel(s->loop, s->allow_timer);
        s->allow_timer = NULL;
        free(s->allow_q);
        s->allow_q = NULL;
        s->allow_q_head = s->n_allow_q = s->cap_allow_q = 0;
}

/* From compaction runs (6): permissions that holds or (10) kept back. */
static void allow_retry_pending(struct cserver *s)
{
        _cleanup_free_ uint64_t *gids = NULL;
        const struct gent *e;
        size_t n = 0;
        int r;

        if (!s->allow_pending.n)
                return;
        gids = calloc(s->allow_pending.n, sizeof(*gids));
        if (!gids)
                return;
        for (size_t i = 0; (e = gmap_each(&s->allow_pending, &i)); )
                gids[n++] = e->key;
        r = allow_apply(s, gids, n);
        if (r < 0 && server_ratelimit_ok(&s->rl_storage, now_ms()))
                log_warn_errno(r, "allow_compaction_failed", "what=pending why=\"%s\"",
                               storage_last_error());
}

void server_handle_allow_compaction(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
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
        if (n > s->allow_slice || s->n_allow_q > s->allow_q_head) {
                r = allow_enqueue(s, gids, n);  /* (14a) */
                if (r < 0)
                        r = row_error_oom(&e);
        } else {
                r = allow_apply(s, gids, n);
                if (r < 0)
                        r = server_storage_failure(s, &e, r, "allowing compaction");
        }
out:
        server_reply_result(s, from, env->request_id, r, &e);
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
