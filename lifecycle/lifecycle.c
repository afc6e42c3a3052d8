/* coord-lifecycle -- the lifecycle follower (DESIGN section 1): follows the catalog,
 * keeps the maintained state, publishes read protection in batches.
 *
 * This file is main(), its options and the node's callbacks.  The rest is in
 * liblifecycle, with unit tests in tests/lifecycle: following the catalog
 * (lifecycle-follow.c notes 1, 4 and 6), the maintained state and its tick
 * (lifecycle-state.c), enactment (lifecycle-enact.c), the load in bulk
 * (lifecycle-load.c); the handle they share is lifecycle-internal.h.
 *
 * Threads: everything runs in the node's loop thread (the node's frontier ring watcher
 * aside).  The loop sleeps on the catalog log ring itself (lifecycle-follow.c note 4);
 * only where the kernel cannot, a catalog watcher thread sleeps on it and wakes the
 * loop.  The loop thread owns the ring reader that reads; the sleeper (or the watcher)
 * has a reader of its own, which only waits.  Nothing polls: the catalog is read when
 * the adapter says it committed, the frontier ring when the controller published.
 *
 * NOTES ON THE DESIGN
 *
 * (1), (4) and (6), following the catalog, are lifecycle-follow.c's (they keep their
 * numbers).
 *
 * (2) Publication, every --publication-interval-ms.  At most one in flight: tick
 *     (lifecycle-state.h), send ONE PublishProtection to the adapter; on its Ok
 *     (Ok.upper = the commit's seq) the values become committed and AllowCompaction
 *     with the changed bounds goes to the controller -- never before (I2).  On an
 *     Error, a timeout or the adapter's disconnection, the proposal is abandoned and
 *     the state rebuilt from the catalog.  A controller that (re)connects gets every
 *     committed bound once (it keeps permissions in memory only).
 *
 * (3) Enactment (creating collections, installing dataflows) is this daemon's:
 *     lifecycle-enact.c follows the same transactions and sends EnsureCollections,
 *     CreateDataflows and DropCollections to the controller; a controller that
 *     (re)connects gets the complete set (a resync, installed in slices there:
 *     controller-server-install.c note 17).
 *
 * (5) A restart (issue 6: serving within 1 s of a kill -9 at 100,000 objects): main()
 *     opens the secondary and loads the state before the loop runs, and reports ready
 *     right after; the loop then connects, and the controller's connection brings the
 *     complete enactment set and every committed bound (lifecycle_peer_up()).  One log
 *     line, restart_timings, gives the phases once the controller has them: open_us
 *     (main() to the secondary opened: its WAL replay, mostly), load_us (scan_us on
 *     threads, link_us into the state), resync_us (building and sending both
 *     resyncs), total_us (main() to then).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "conf.h"
#include "fring.h"
#include "hist.h"
#include "killpoint.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop.h"
#include "lring.h"
#include "node.h"
#include "probes.h"
#include "util.h"

/* A publication not answered this long is abandoned (2). */
#define PUBLISH_TIMEOUT_MS 10000u

/* ---- publication (2) ---- */

/* AllowCompaction goes in messages of at most ALLOW_CHUNK records: the controller
 * moves each since in its loop, and one message of a setup's publication at 100,000
 * objects (3,500-5,600 records) held it 15-32 ms; the resync after a controller restart
 * sends every bound.  Splitting is safe: each record stands alone (a since moves to a
 * committed bound or stays, I2), and the controller handles the messages in order. */
#define ALLOW_CHUNK 1024u

static int send_allow(struct lifecycle *lc, const struct lc_publication *p)
{
        Coord__AllowCompaction m = COORD__ALLOW_COMPACTION__INIT;
        Coord__CatalogBoundRecord *recs, **ptrs;
        size_t cap = p->n_bounds < ALLOW_CHUNK ? p->n_bounds : ALLOW_CHUNK;
        int r = 0;

        if (!p->n_bounds)
                return 0;
        recs = calloc(cap, sizeof(*recs));
        ptrs = calloc(cap, sizeof(*ptrs));
        if (!recs || !ptrs) {
                free(recs);
                free(ptrs);
                return -ENOMEM;
        }
        for (size_t off = 0; off < p->n_bounds && r == 0; off += cap) {
                size_t n = p->n_bounds - off < cap ? p->n_bounds - off : cap;

                for (size_t i = 0; i < n; i++) {
                        coord__catalog_bound_record__init(&recs[i]);
                        recs[i].gid = p->bounds[off + i].gid;
                        recs[i].bound = p->bounds[off + i].bound;
                        ptrs[i] = &recs[i];
                }
                m.sinces = ptrs;
                m.n_sinces = n;
                r = node_send(lc->node, COORD__ROLE__ROLE_CONTROLLER,
                              COORD__MSG_TYPE__MSG_ALLOW_COMPACTION, ++lc->next_request_id, &m.base);
                if (r == 0)
                        lc->allow_sent++;
        }
        free(recs);
        free(ptrs);
        return r;
}

static void send_allow_all(struct lifecycle *lc)
{
        struct lc_publication all = { 0 };
        uint64_t start = now_ns();
        int r;

        if (!lc->loaded)
                return;
        r = lc_state_all_bounds(lc->state, &all);
        if (r == 0)
                r = send_allow(lc, &all);
        if (r < 0 && r != -ENOTCONN)
                log_warn_errno(r, "allow_compaction_failed", "what=all");
        else
                log_info("allow_compaction_resync", "bounds=%zu took_us=%llu", all.n_bounds,
                         (unsigned long long)((now_ns() - start) / 1000));
        lc_publication_done(&all);
}

static void publication_failed(struct lifecycle *lc, const char *why)
{
        lc->in_flight = false;
        lc->pub_errors++;
        lc_state_abandon(lc->state);
        log_warn("publication_failed", "why=\"%s\" records=%zu action=reload", why,
                 lc->pub.n_bounds + lc->pub.n_reqs);
        if (lc->catalog)
                (void)lifecycle_reload(lc);
}

static int publish(struct lifecycle *lc)
{
        Coord__PublishProtection m = COORD__PUBLISH_PROTECTION__INIT;
        Coord__CatalogBoundRecord *b = NULL, **bp = NULL;
        Coord__Requirement *q = NULL, **qp = NULL;
        struct lc_publication *p = &lc->pub;
        int r;

        r = lc_state_tick(lc->state, p);
        if (r < 0)
                return r;
        if (!p->n_bounds && !p->n_reqs)
                return 0;
        b = calloc(p->n_bounds + 1, sizeof(*b));
        bp = calloc(p->n_bounds + 1, sizeof(*bp));
        q = calloc(p->n_reqs + 1, sizeof(*q));
        qp = calloc(p->n_reqs + 1, sizeof(*qp));
        if (!b || !bp || !q || !qp) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < p->n_bounds; i++) {
                coord__catalog_bound_record__init(&b[i]);
                b[i].gid = p->bounds[i].gid;
                b[i].bound = p->bounds[i].bound;
                bp[i] = &b[i];
        }
        for (size_t i = 0; i < p->n_reqs; i++) {
                coord__requirement__init(&q[i]);
                q[i].consumer = p->reqs[i].consumer;
                q[i].input = p->reqs[i].input;
                q[i].frontier = p->reqs[i].frontier;
                qp[i] = &q[i];
        }
        m.based_on_seq = lc_state_seq(lc->state);
        m.bounds = bp;
        m.n_bounds = p->n_bounds;
        m.requirements = qp;
        m.n_requirements = p->n_reqs;
        lc->pub_bytes = coord__publish_protection__get_packed_size(&m);
        lc->pub_request_id = ++lc->next_request_id;
        KILLPOINT("publication.before_send");
        r = node_send(lc->node, COORD__ROLE__ROLE_ADAPTER, COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION,
                      lc->pub_request_id, &m.base);
        if (r < 0)
                goto out;
        lc->in_flight = true;
        lc->pub_sent_ms = now_ms();
        lc->pub_sent_ns = now_ns();
        lc->last_bounds = p->n_bounds;
        lc->last_reqs = p->n_reqs;
        lc->last_records = p->n_bounds + p->n_reqs;
        lc->last_bytes = lc->pub_bytes;
        lc->last_touched = p->touched;
        COORD_LIFECYCLE_PUBLISH(m.based_on_seq, (unsigned)p->n_bounds, (unsigned)p->n_reqs,
                                (unsigned)lc->pub_bytes);
out:
        free(b);
        free(bp);
        free(q);
        free(qp);
        if (r < 0)
                lc_state_abandon(lc->state);
        return r;
}

static void tick_arm(struct lifecycle *lc);

static void tick(struct loop *l, void *userdata)
{
        struct lifecycle *lc = userdata;
        int r;

        lc->tick_timer = NULL;
        if (lc->in_flight && now_ms() - lc->pub_sent_ms > PUBLISH_TIMEOUT_MS)
                publication_failed(lc, "no answer from the adapter");
        if (!lc->in_flight && lc->loaded && node_peer_connected(lc->node, COORD__ROLE__ROLE_ADAPTER)) {
                lifecycle_follow(lc);   /* cheap when nothing is new; a safety net */
                r = publish(lc);
                if (r < 0 && r != -ENOTCONN)
                        log_warn_errno(r, "publication_failed", "what=send");
        }
        tick_arm(lc);
}

static void tick_arm(struct lifecycle *lc)
{
        int r = loop_timer_add(node_loop(lc->node), lc->interval_ms * NS_PER_MS, tick, lc,
                               &lc->tick_timer);
        if (r < 0) {
                lc->tick_timer = NULL;
                log_error_errno(r, "timer_failed", "what=publication");
        }
}

static void on_publish_reply(struct lifecycle *lc, const Coord__Envelope *env)
{
        if (env->type == COORD__MSG_TYPE__MSG_OK) {
                Coord__Ok *ok = coord__ok__unpack(NULL, env->payload.len, env->payload.data);

                lc->last_commit_seq = ok ? ok->upper : 0;
                if (ok)
                        coord__ok__free_unpacked(ok, NULL);
                lc->in_flight = false;
                lc->publications++;
                hist_record(&lc->pub_hist, (now_ns() - lc->pub_sent_ns) / 1000);
                lc->records_total += lc->pub.n_bounds + lc->pub.n_reqs;
                lc->bytes_total += lc->pub_bytes;
                lc_state_committed(lc->state, &lc->pub);
                log_debug("publication_committed", "seq=%llu bounds=%zu requirements=%zu bytes=%zu",
                          (unsigned long long)lc->last_commit_seq, lc->pub.n_bounds, lc->pub.n_reqs,
                          lc->pub_bytes);
                KILLPOINT("publication.after_commit");  /* committed, not enacted */
                /* Only now may the controller compact (I2). */
                if (send_allow(lc, &lc->pub) < 0)
                        log_debug("allow_compaction_deferred", "reason=controller_down");
                return;
        }
        if (env->type == COORD__MSG_TYPE__MSG_ERROR) {
                Coord__Error *e = coord__error__unpack(NULL, env->payload.len, env->payload.data);
                char why[256];

                snprintf(why, sizeof(why), "%s: %s", e && e->sqlstate ? e->sqlstate : "?",
                         e && e->message ? e->message : "undecodable error");
                if (e)
                        coord__error__free_unpacked(e, NULL);
                publication_failed(lc, why);
        }
}

/* ---- node callbacks ---- */

static void lifecycle_message(struct node *n, Coord__Role from, const Coord__Envelope *env,
                              void *userdata)
{
        struct lifecycle *lc = userdata;

        if (from == COORD__ROLE__ROLE_ADAPTER && lc->in_flight && env->request_id == lc->pub_request_id)
                on_publish_reply(lc, env);
        if (from == COORD__ROLE__ROLE_CONTROLLER)
                (void)lc_enact_reply(lc->enact, env);
        /* The controller's Oks to AllowCompaction need nothing. */
}

static void lifecycle_peer_up(struct node *n, Coord__Role role, uint64_t incarnation, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (role == COORD__ROLE__ROLE_ADAPTER)
                lifecycle_follow(lc);
        if (role == COORD__ROLE__ROLE_CONTROLLER) {
                uint64_t t = now_ns();

                lc_enact_resync(lc->enact);     /* before permissions: they name these */
                send_allow_all(lc);
                if (lc->loaded && !lc->restart_logged) {
                        /* (5): from main() to the controller holding what the catalog says. */
                        lc->restart_logged = true;
                        log_info("restart_timings", "open_us=%llu load_us=%llu scan_us=%llu link_us=%llu "
                                 "resync_us=%llu total_us=%llu objects=%zu",
                                 (unsigned long long)((lc->open_ns - lc->start_ns) / 1000),
                                 (unsigned long long)((lc->loaded_ns - lc->open_ns) / 1000),
                                 (unsigned long long)lc->first_load.scan_us,
                                 (unsigned long long)lc->first_load.link_us,
                                 (unsigned long long)((now_ns() - t) / 1000),
                                 (unsigned long long)((now_ns() - lc->start_ns) / 1000),
                                 lc_state_n_objects(lc->state));
                }
        }
}

static void lifecycle_peer_down(struct node *n, Coord__Role role, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (role == COORD__ROLE__ROLE_ADAPTER && lc->in_flight)
                publication_failed(lc, "adapter disconnected");
}

static void lifecycle_frontiers(struct node *n, const struct fring_frontier *f, size_t count,
                                bool resynced, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (resynced)
                lc_state_frontiers_reset(lc->state);
        for (size_t i = 0; i < count; i++)
                if (lc_state_frontier(lc->state, f[i].id, f[i].upper, f[i].since,
                                      f[i].flags & FRING_FRONTIER_FORGOTTEN) < 0)
                        log_warn_errno(-ENOMEM, "frontier_dropped", "gid=%llu",
                                       (unsigned long long)f[i].id);
}

static void lifecycle_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct lifecycle *lc = userdata;
        struct fring_reader *rd = node_ring(n);
        uint64_t p50, p99;

        lifecycle_follow(lc);
        lifecycle_lag_percentiles(lc, &p50, &p99);
        reply->catalog_seq = lc->loaded ? lc_state_seq(lc->state) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(lc->detail, sizeof(lc->detail),
                 "catalog=%s ring=%s items=%zu requirements=%zu publications=%llu "
                 "publication_errors=%llu last_records=%zu last_bounds=%zu last_requirements=%zu "
                 "last_bytes=%zu last_touched=%zu records_total=%llu bytes_total=%llu "
                 "last_commit_seq=%llu allow_sent=%llu applied=%llu lag_last_us=%llu "
                 "lag_p50_us=%llu lag_p99_us=%llu lag_samples=%zu "
                 "lag_max_us=%llu reloads=%llu catalog_generation=%llu catalog_ring=%s "
                 "ring_applied=%llu ring_fallbacks=%llu log_applied=%llu catalog_catchups=%llu "
                 "catalog_wait=%s catalog_loop_wakes=%llu catalog_catchup=%s "
                 "catalog_catchup_last_us=%llu catalog_catchup_max_us=%llu "
                 "frontier_wait=%s frontier_loop_wakes=%llu frontier_reads=%llu",
                 lc->catalog ? "secondary" : "waiting", rd ? "attached" : "waiting",
                 lc_state_n_items(lc->state), lc_state_n_requirements(lc->state),
                 (unsigned long long)lc->publications, (unsigned long long)lc->pub_errors,
                 lc->last_records, lc->last_bounds, lc->last_reqs, lc->last_bytes, lc->last_touched,
                 (unsigned long long)lc->records_total, (unsigned long long)lc->bytes_total,
                 (unsigned long long)lc->last_commit_seq, (unsigned long long)lc->allow_sent,
                 (unsigned long long)lc->applied_txns, (unsigned long long)lc->lag_last_us,
                 (unsigned long long)p50, (unsigned long long)p99,
                 lc->n_lag, (unsigned long long)lc->lag_max_us, (unsigned long long)lc->reloads,
                 (unsigned long long)lring_reader_generation(lc->ring),
                 lc->ring ? "attached" : "waiting", (unsigned long long)lc->ring_applied,
                 (unsigned long long)lc->ring_fallbacks, (unsigned long long)lc->log_applied,
                 (unsigned long long)lc->catchups, lc->wait_thread ? "thread" : "loop",
                 (unsigned long long)lc->loop_wakes, lc->catchup ? "thread" : "loop",
                 (unsigned long long)lc->catchup_last_us, (unsigned long long)lc->catchup_max_us,
                 node_ring_wait_mode(n), (unsigned long long)node_ring_loop_wakes(n),
                 (unsigned long long)node_ring_reads(n));
        reply->detail = lc->detail;
}

static const struct node_handler lifecycle_handler = {
        .on_message = lifecycle_message,
        .on_peer_up = lifecycle_peer_up,
        .on_peer_down = lifecycle_peer_down,
        .on_status = lifecycle_status,
        .on_frontiers = lifecycle_frontiers,
};

int main(int argc, char **argv)
{
        struct lifecycle lc = { .interval_ms = 1000, .start_ns = now_ns() };
        bool frontier_wait_thread = false;
        const struct conf_option extra[] = {
                { "publication-interval-ms", CONF_U64, &lc.interval_ms, 3600000,
                  "publish read protection this often (default 1000)" },
                { "catalog-wait-thread", CONF_BOOL, &lc.wait_thread, 0,
                  "sleep on the catalog log ring in a watcher thread, not in the event loop "
                  "(what happens anyway where the kernel lacks IORING_OP_FUTEX_WAIT)" },
                { "frontier-wait-thread", CONF_BOOL, &frontier_wait_thread, 0,
                  "sleep on the controller's frontier ring in a watcher thread, not in the "
                  "event loop (what happens anyway where the kernel lacks IORING_OP_FUTEX_WAIT)" },
                { "test-catchup-delay-ms", CONF_U64, &lc.test_catchup_delay_ms, 60000,
                  "TEST ONLY: every catch-up of the secondary but a reload's (the timer's and the log path's, on their thread, or on the loop without one) first sleeps this long" },
        };
        struct node_args a;
        struct node_config cfg;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_LIFECYCLE, extra, ELEMENTSOF(extra), &a, &ex))
                return ex;
        if (!lc.interval_ms)
                lc.interval_ms = 1;
        if (lc_state_new(&lc.state) < 0 || lc_state_protect_builtins(lc.state) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_LIFECYCLE, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
                .metrics_port = (uint16_t)a.metrics_port,
        };
        r = node_new(&cfg, &lifecycle_handler, &lc, &lc.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        (void)node_add_hist(lc.node, "publication_duration_seconds",
                            "a publication of read protection, sent to the adapter's Ok (its catalog commit)",
                            &lc.pub_hist);
        (void)node_add_hist(lc.node, "follower_lag_seconds",
                            "a catalog commit's publication on the catalog log ring to the follower's state applying it",
                            &lc.lag_hist);
        if (lc_enact_new(lc.node, &lc.enact) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        if (asprintf(&lc.primary_path, "%s/adapter/catalog", a.data_dir) < 0 ||
            asprintf(&lc.secondary_path, "%s/catalog-secondary", node_dir(lc.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        lifecycle_try_open(node_loop(lc.node), &lc);
        r = lifecycle_notify_start(&lc, a.instance);
        if (r < 0)
                goto out;
        r = node_follow_ring(lc.node, frontier_wait_thread);
        if (r < 0)
                goto out;
        tick_arm(&lc);
        log_info("publication_configured", "interval_ms=%llu", (unsigned long long)lc.interval_ms);
        r = node_run(lc.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=lifecycle");
        ex = 0;
out:
        if (lc.node) {
                lifecycle_notify_stop(&lc);
                loop_timer_cancel(node_loop(lc.node), lc.open_retry);
                loop_timer_cancel(node_loop(lc.node), lc.tick_timer);
        }
        lc.node = node_free(lc.node);
        lc.catalog = catalog_close(lc.catalog);
        lc.state = lc_state_free(lc.state);
        lc.enact = lc_enact_free(lc.enact);
        lc_publication_done(&lc.pub);
        free(lc.primary_path);
        free(lc.secondary_path);
        node_args_done(&a);
        return ex;
}
