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
 *   controller-server-subscribe.c    SUBSCRIBE's reads of updates (26)
 *   controller-server-compute.c      compute: installed dataflows, readers, compute passes
 *   controller-server-install.c      installing dataflows, bulk installs in slices, deferred
 *                                    messages
 *   controller-server-source.c       sources and sinks
 *   controller-server-append.c       appends
 *   controller-server-collection.c   collections: Ensure, Drop, List
 *   controller-server-compact.c      compaction permission and compaction
 *   controller-server-unique.c       PRIMARY KEY, UNIQUE, FOREIGN KEY: key mirrors, the
 *                                    checks
 *   controller-server-lookup.c       keyed index lookups
 *   controller-server-bgwrite.c      a write's plan in the peek thread
 *   controller-server-internal.h     what they share
 *
 * NOTES ON THE DESIGN
 *
 * The notes are numbered across the server; each stands in the file that
 * enforces it, and "NOTE n" or "(n)" in any file of the server names it:
 *   controller-server.c              1, 9, 18b (below)
 *   controller-server-out.c          16
 *   controller-server-mirror.c       7, 8, 10, 11
 *   controller-server-peek.c         5, 18, 21
 *   controller-server-compute.c      13, 13b
 *   controller-server-install.c      17
 *   controller-server-source.c       19, 20
 *   controller-server-append.c       2, 3, 4, 15
 *   controller-server-collection.c   12
 *   controller-server-compact.c      6, 14
 *   controller-server-unique.c       22, 25
 *   controller-server-lookup.c       23
 *   controller-server-bgwrite.c      24
 *
 * (1) Order.  Requests are handled to completion one after the other, in arrival
 *     order, with two exceptions: a peek that must wait for an upper is parked (5) and
 *     the requests after it are served meanwhile; an Append parked while the peek
 *     thread evaluates its write's plan (24) lets reads pass, every other request
 *     waiting behind it.  So Ensure, Drop, Append and List replies leave in request
 *     order; a peek's reply may come after the replies to
 *     later requests.  The adapter matches replies by request_id.
 *
 * (9) Hostile input.  A payload that does not decode, a plan that does not validate,
 *     a row that is not well formed: each is answered with MSG_ERROR and logged at
 *     most MALFORMED_LOG_PER_S times a second; nothing here asserts on input.
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

#include "controller-storage.h"
#include "ring/fring.h"
#include "hist.h"
#include "log.h"
#include "loop/loop.h"
#include "node/node.h"
#include "row/row.h"
#include "util.h"

#define MALFORMED_LOG_PER_S 10u

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

/* ---- Entry points ------------------------------------------------------------------- */

/* One wake-up of the ring's sleeping readers per message, however many frontiers it
 * publishes (fring_hold_wakes()).  While a bulk install is in slices, the follower's
 * messages wait behind it (17); while an Append is parked for its write's plan, every
 * message but reads does (24). */
void cserver_on_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        s->msg_epoch = server_peer_epoch(s, from);
        s->msg_from = from;
        if ((s->install && node_peer_role(from) == COORD__ROLE__ROLE_LIFECYCLE) ||
            (s->bgwrite && env->type != COORD__MSG_TYPE__MSG_PEEK &&
             env->type != COORD__MSG_TYPE__MSG_PEEK_NEXT &&
             env->type != COORD__MSG_TYPE__MSG_LIST_COLLECTIONS)) {
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

void server_on_message(struct cserver *s, node_peer_t from, const Coord__Envelope *env)
{
        struct row_error e;

        if (server_fence_refuses(s, from, env))
                return;
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
        case COORD__MSG_TYPE__MSG_SUBSCRIBE_READ:
                server_handle_subscribe_read(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_LIST_COLLECTIONS:
                server_handle_list(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_CREATE_DATAFLOWS:
                server_handle_create_dataflows(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_RELEASE_REFRESH:
                server_handle_release_refresh(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_ALLOW_COMPACTION:
                server_handle_allow_compaction(s, from, env);
                return;
        case COORD__MSG_TYPE__MSG_OK:
        case COORD__MSG_TYPE__MSG_ERROR:
        case COORD__MSG_TYPE__MSG_PEEK_RESULT:
        case COORD__MSG_TYPE__MSG_SUBSCRIBE_BATCH:
        case COORD__MSG_TYPE__MSG_COLLECTION_LIST:
        case COORD__MSG_TYPE__MSG_PONG:
                /* Replies are never answered (no error ping-pong between daemons). */
                if (server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unexpected_reply", "role=%s type=%d", node_role_name(node_peer_role(from)),
                                 (int)env->type);
                return;
        default:
                if (server_ratelimit_ok(&s->rl_input, now_ms()))
                        log_warn("unsupported_message", "role=%s type=%d", node_role_name(node_peer_role(from)),
                                 (int)env->type);
                row_error_set(&e, -EOPNOTSUPP, "XX000",
                              "message type %d is not served by the controller", (int)env->type);
                server_reply_error(s, from, env->request_id, &e);
                return;
        }
}

void cserver_on_peer_change(struct cserver *s, node_peer_t peer)
{
        struct peek *pk, *next;
        size_t n = 0;

        if (peer < ELEMENTSOF(s->peer_epochs))
                s->peer_epochs[peer]++;         /* (18b) */
        if (s->bgwrite && s->bgwrite->from == peer)
                atomic_store(&s->bgwrite->job->stop, true);     /* dropped when back (24) */
        for (pk = s->peeks_head; pk; pk = next) {
                next = pk->next;
                if (pk->from != peer)
                        continue;
                server_peek_cancel(pk);         /* in the thread: when its job is back (18) */
                n++;
        }
        if (n)
                log_info("peeks_dropped", "role=%s id=%u count=%zu reason=connection_replaced",
                         node_role_name(node_peer_role(peer)), node_peer_id(peer), n);
        server_out_drop_role(s, peer);
}

void cserver_describe(struct cserver *s, char *buf, size_t size)
{
        struct storage_stats st = { 0 };

        if (s->st)
                storage_get_stats(s->st, &st);
        snprintf(buf, size, "collections=%llu appends=%llu tables_frontier=%llu "
                 "last_append_collections=%zu last_append_frontier_rows=%zu peeks_parked=%zu "
                 "peeks_answered=%llu errors=%llu compactions=%llu dataflows=%zu compute_writes=%llu "
                 "allow_msgs=%llu allow_max=%zu allow_moved=%llu allowed=%zu allow_pending=%zu "
                 "allow_queued=%zu allow_slices=%llu frontier_rows_waiting=%zu catchups=%llu "
                 "mv_flushes=%llu "
                 "mirror_reads=%llu append_sync=%s syncs=%llu unsynced_appends=%llu "
                 "appends_per_sync=%.2f sync_max_us=%llu sync_write_max_us=%llu "
                 "unsynced_write_max_us=%llu held=%zu held_max=%zu "
                 "held_max_us=%llu held_replies=%llu held_ring=%llu held_failed=%llu "
                 "peek_chunks=%llu peek_streams=%llu peeks_streaming=%zu installing=%zu "
                 "installs_sliced=%llu install_slices=%llu deferred=%zu peeks_thread=%llu "
                 "peeks_in_thread=%zu peek_thread_max_us=%llu peeks_thread_index_storage=%llu "
                 "peeks_keyed=%llu writes_thread=%llu write_thread_max_us=%llu stale_replies=%llu duty_fence=%llu duty_fenced=%llu refresh_releases=%llu refresh_fenced=%llu "
                 "fwait=%zu fwait_total=%llu fwait_released=%llu "
                 "drops_by_key=%llu drops_by_range=%llu sinks=%zu sink_flushes=%llu sink_bytes=%llu "
                 "sink_errors=%llu sources=%zu source_ticks=%llu source_rows=%llu source_errors=%llu "
                 "mvs=%zu subscribe_reads=%llu storage=%s",
                 (unsigned long long)st.collections, (unsigned long long)s->appends,
                 (unsigned long long)server_tables_frontier(s), s->last_append_collections,
                 s->last_append_frontier_rows, s->n_parked,
                 (unsigned long long)s->peeks_answered, (unsigned long long)s->errors_sent,
                 (unsigned long long)st.compactions, s->n_dfs, (unsigned long long)s->compute_writes,
                 (unsigned long long)s->allow_msgs, s->allow_max, (unsigned long long)s->allow_moved,
                 s->allowed.n, s->allow_pending.n, s->n_allow_q - s->allow_q_head,
                 (unsigned long long)s->allow_slices, s->n_dirty - s->dirty_head,
                 (unsigned long long)s->index_catchups,
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
                 (unsigned long long)s->peek_bg_max_us, (unsigned long long)s->peeks_bg_sub,
                 (unsigned long long)s->peeks_keyed, (unsigned long long)s->writes_bg,
                 (unsigned long long)s->write_bg_max_us, (unsigned long long)s->stale_replies,
                 (unsigned long long)s->duty_fence, (unsigned long long)s->duty_fenced,
                 (unsigned long long)s->refresh_releases, (unsigned long long)s->refresh_fenced,
                 s->n_fwait, (unsigned long long)s->fwait_total, (unsigned long long)s->fwait_released,
                 (unsigned long long)st.drops_by_key, (unsigned long long)st.drops_by_range,
                 s->n_sinks, (unsigned long long)s->sink_flushes, (unsigned long long)s->sink_bytes,
                 (unsigned long long)s->sink_errors, s->n_srcs, (unsigned long long)s->source_ticks,
                 (unsigned long long)s->source_rows, (unsigned long long)s->source_errors,
                 s->n_mvs, (unsigned long long)s->subscribe_reads, s->st ? "ok" : "failed");
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
        s->allow_slice = s->cfg.test_allow_slice ? s->cfg.test_allow_slice : CSERVER_ALLOW_SLICE;
        s->frontier_rows = s->cfg.test_frontier_rows ? s->cfg.test_frontier_rows
                                                     : CSERVER_FRONTIER_ROWS;
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
        r = server_fence_load(s);
        if (r < 0) {
                log_error_errno(r, "server_new_failed", "what=duty_fence");
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
                 s->fr.n + (s->fr0 != 0), s->n_dirty - s->dirty_head,
                 cserver_append_sync_name(s->cfg.append_sync),
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
        server_srcents_free(s);
        for (size_t i = 0; i < s->n_dfs; i++)
                server_dfent_free(s->dfs[i]);
        free(s->dfs);
        free(s->df_gids);
        if (s->compact_timer)
                loop_timer_cancel(s->loop, s->compact_timer);
        server_allow_queue_done(s);
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
        gmap_done(&s->resync_listed);
        free(s->ensure_listed);
        server_readers_done(s);
        free(s->pending);
        free(s->work);
        free(s->defer);
        free(s->fwait);
        server_cm_drop_all(s);
        server_km_drop_all(s);
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
