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
 *   controller-server-append.c       appends
 *   controller-server-collection.c   collections: Ensure, Drop, List
 *   controller-server-internal.h     what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the server; each stands in the file that
 * enforces it, and "NOTE n" or "(n)" in any file of the server names it:
 *   controller-server.c              1, 6, 9, 14, 18b (below)
 *   controller-server-out.c          16
 *   controller-server-mirror.c       7, 8, 10, 11
 *   controller-server-peek.c         5, 18, 21
 *   controller-server-compute.c      13, 13b
 *   controller-server-install.c      17
 *   controller-server-source.c       19, 20
 *   controller-server-append.c       2, 3, 4, 15
 *   controller-server-collection.c   12
 *
 * (1) Order.  Requests are handled to completion one after the other, in arrival
 *     order, with one exception: a peek that must wait for an upper is parked (5) and
 *     the requests after it are served meanwhile.  So Ensure, Drop, Append and List
 *     replies leave in request order; a peek's reply may come after the replies to
 *     later requests.  The adapter matches replies by request_id.
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
#include "controller-storage.h"
#include "fring.h"
#include "hist.h"
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
