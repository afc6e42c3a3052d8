/* coord-lifecycle -- the lifecycle follower (DESIGN section 1): follows the catalog,
 * keeps the maintained state, publishes read protection in batches.
 *
 * This file is main(), its options and the node's callbacks.  The rest is in
 * liblifecycle, with unit tests in tests/lifecycle: following the catalog
 * (lifecycle-follow.c notes 1, 4 and 6), publication (lifecycle-publish.c note 2), the
 * maintained state and its tick (lifecycle-state.c), enactment (lifecycle-enact.c), the
 * load in bulk (lifecycle-load.c); the handle they share is lifecycle-internal.h.
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
 * (1), (4) and (6), following the catalog, are lifecycle-follow.c's; (2), publication,
 * is lifecycle-publish.c's; (7), the fleet's duty lease (--instance-id, --duty-ttl-ms),
 * is lifecycle-duty.c's; (8), refresh leases, lifecycle-refresh.c's (they keep their
 * numbers).
 *
 * (3) Enactment (creating collections, installing dataflows) is this daemon's:
 *     lifecycle-enact.c follows the same transactions and sends EnsureCollections,
 *     CreateDataflows and DropCollections to the controller; a controller that
 *     (re)connects gets the complete set (a resync, sent in parts over loop turns,
 *     lifecycle-enact.c note 5, and installed in slices there:
 *     controller-server-install.c note 17); the permissions follow its last part
 *     (lifecycle_resync_done()).
 *
 * (5) A restart (issue 6: serving within 1 s of a kill -9 at 100,000 objects): main()
 *     opens the secondary and loads the state before the loop runs, and reports ready
 *     right after; the loop then connects, and the controller's connection brings the
 *     complete enactment set and every committed bound (lifecycle_peer_up()).  One log
 *     line, restart_timings, gives the phases once the controller has them: open_us
 *     (main() to the secondary opened: its WAL replay, mostly), load_us (scan_us on
 *     threads, link_us into the state), resync_us (the controller's connection to the
 *     permissions sent after the resync's last part), total_us (main() to then).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/catalog.h"
#include "conf.h"
#include "ring/fring.h"
#include "hist.h"
#include "lifecycle-enact.h"
#include "lifecycle-internal.h"
#include "lifecycle-load.h"
#include "lifecycle-state.h"
#include "log.h"
#include "loop/loop.h"
#include "ring/lring.h"
#include "node/node.h"
#include "util.h"

/* ---- node callbacks ---- */

static void lifecycle_message(struct node *n, node_peer_t from, const Coord__Envelope *env,
                              void *userdata)
{
        struct lifecycle *lc = userdata;

        if (from == COORD__ROLE__ROLE_ADAPTER && lifecycle_duty_reply(lc, env))
                return;
        if ((from == COORD__ROLE__ROLE_ADAPTER || from == COORD__ROLE__ROLE_CONTROLLER) &&
            lifecycle_refresh_reply(lc, env))
                return;
        if (from == COORD__ROLE__ROLE_ADAPTER && lc->in_flight && env->request_id == lc->pub_request_id)
                lifecycle_publish_reply(lc, env);
        if (from == COORD__ROLE__ROLE_CONTROLLER)
                (void)lc_enact_reply(lc->enact, env);
        /* The controller's Oks to AllowCompaction need nothing. */
}

/* The end of every resync (lifecycle-enact.c note 5): the permissions, which name
 * its dataflows, and the restart's timings once. */
static void lifecycle_resync_done(void *arg)
{
        struct lifecycle *lc = arg;

        lifecycle_send_allow_all(lc);
        if (lc->loaded && !lc->restart_logged && lc->resync_t0_ns) {
                /* (5): from main() to the controller holding what the catalog says. */
                lc->restart_logged = true;
                log_info("restart_timings", "open_us=%llu load_us=%llu scan_us=%llu link_us=%llu "
                         "resync_us=%llu total_us=%llu objects=%zu",
                         (unsigned long long)((lc->open_ns - lc->start_ns) / 1000),
                         (unsigned long long)((lc->loaded_ns - lc->open_ns) / 1000),
                         (unsigned long long)lc->first_load.scan_us,
                         (unsigned long long)lc->first_load.link_us,
                         (unsigned long long)((now_ns() - lc->resync_t0_ns) / 1000),
                         (unsigned long long)((now_ns() - lc->start_ns) / 1000),
                         lc_state_n_objects(lc->state));
        }
}

static void lifecycle_peer_up(struct node *n, node_peer_t peer, uint64_t incarnation, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (peer == COORD__ROLE__ROLE_ADAPTER)
                lifecycle_follow(lc);
        if (peer == COORD__ROLE__ROLE_CONTROLLER) {
                lc->resync_t0_ns = now_ns();
                lc_enact_resync(lc->enact);     /* then lifecycle_resync_done() */
        }
}

static void lifecycle_peer_down(struct node *n, node_peer_t peer, void *userdata)
{
        struct lifecycle *lc = userdata;

        if (peer == COORD__ROLE__ROLE_ADAPTER && lc->in_flight)
                lifecycle_publication_failed(lc, "adapter disconnected", false);
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
        char jobs[128];

        lifecycle_follow(lc);
        lifecycle_lag_percentiles(lc, &p50, &p99);
        lifecycle_refresh_jobs(lc, jobs, sizeof(jobs));
        reply->catalog_seq = lc->loaded ? lc_state_seq(lc->state) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        snprintf(lc->detail, sizeof(lc->detail),
                 "catalog=%s ring=%s items=%zu requirements=%zu holds=%zu publications=%llu "
                 "publication_errors=%llu last_records=%zu last_bounds=%zu last_requirements=%zu "
                 "last_bytes=%zu last_touched=%zu tick_left=%zu ticks_soon=%llu "
                 "records_total=%llu bytes_total=%llu "
                 "last_commit_seq=%llu allow_sent=%llu applied=%llu lag_last_us=%llu "
                 "lag_p50_us=%llu lag_p99_us=%llu lag_samples=%zu "
                 "lag_max_us=%llu reloads=%llu catalog_generation=%llu catalog_ring=%s "
                 "ring_applied=%llu ring_fallbacks=%llu log_applied=%llu catalog_catchups=%llu "
                 "catalog_wait=%s catalog_loop_wakes=%llu catalog_catchup=%s "
                 "catalog_catchup_last_us=%llu catalog_catchup_max_us=%llu "
                 "frontier_wait=%s frontier_loop_wakes=%llu frontier_reads=%llu "
                 "frontier_read_yields=%llu instance_id=%u "
                 "duty=%s duty_epoch=%llu duty_claims=%llu duty_takeovers=%llu "
                 "duty_lost=%llu duty_busy=%llu duty_fenced=%llu duty_holder_seen=%s "
                 "refresh_jobs=%s refresh_claims=%llu refresh_busy=%llu refresh_releases=%llu "
                 "refresh_committed=%llu refresh_reconciled=%llu refresh_fenced=%llu refresh_retries=%llu "
                 "refresh_errors=%llu",
                 lc->catalog ? "secondary" : "waiting", rd ? "attached" : "waiting",
                 lc_state_n_items(lc->state), lc_state_n_requirements(lc->state),
                 lc_state_n_holds(lc->state), (unsigned long long)lc->publications, (unsigned long long)lc->pub_errors,
                 lc->last_records, lc->last_bounds, lc->last_reqs, lc->last_bytes, lc->last_touched,
                 lc->tick_left, (unsigned long long)lc->ticks_soon,
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
                 (unsigned long long)node_ring_reads(n),
                 (unsigned long long)node_ring_yields(n), node_instance_id(n),
                 lc->duty_active ? "active" : lc->duty_epoch ? "claimed" : "standby",
                 (unsigned long long)lc->duty_epoch, (unsigned long long)lc->duty_claims,
                 (unsigned long long)lc->duty_takeovers, (unsigned long long)lc->duty_lost,
                 (unsigned long long)lc->duty_busy, (unsigned long long)lc->duty_fenced,
                 lc->duty_seen_holder[0] ? lc->duty_seen_holder : "-", jobs,
                 (unsigned long long)lc->rclaims, (unsigned long long)lc->rbusy,
                 (unsigned long long)lc->rreleases, (unsigned long long)lc->rcommitted,
                 (unsigned long long)lc->rreconciled, (unsigned long long)lc->rfenced,
                 (unsigned long long)lc->rretries, (unsigned long long)lc->rerrors);
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
        uint64_t instance_id = 0, duty_ttl_ms = 3000, part_items = LC_ENACT_PART_ITEMS;
        uint64_t frontier_budget = 0;
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
                { "frontier-read-budget", CONF_U64, &frontier_budget, 1u << 24,
                  "frontier ring records one turn of the event loop reads before it yields to "
                  "other work, as in a snapshot of every collection (default 0: 16384)" },
                { "instance-id", CONF_U64, &instance_id, NODE_FLEET_MAX - 1,
                  "this follower's id in a fleet on one catalog, 0-15 (default 0); its files are "
                  "<data-dir>/lifecycle-K/ and <run-dir>/lifecycle-K.{sock,pid} for K > 0" },
                { "duty-ttl-ms", CONF_U64, &duty_ttl_ms, 600000,
                  "the ttl of the fleet's duty lease (enactment and publication) this follower "
                  "claims (default 3000; another follower takes over within it after a death)" },
                { "resync-part-items", CONF_U64, &part_items, 1000000,
                  "a resync sends the complete set of dataflows to the controller in parts of at "
                  "most this many (and about 12 MB), one part per loop turn (default 100000)" },
                { "test-refresh-hold-ms", CONF_U64, &lc.test_refresh_hold_ms, 600000,
                  "TEST ONLY: hold each refresh lease this long between its claim and the release" },
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
        if (lc_state_new(&lc.state) == 0)
                lc_state_set_tick_limit(lc.state, TICK_LIMIT);
        if (!lc.state || lc_state_protect_builtins(lc.state) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_LIFECYCLE, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
                .metrics_port = (uint16_t)a.metrics_port, .instance_id = (uint32_t)instance_id,
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
        if (duty_ttl_ms < 100) {
                log_error("bad_option", "option=duty-ttl-ms value=%llu why=\"at least 100\"",
                          (unsigned long long)duty_ttl_ms);
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        lifecycle_duty_init(&lc, (uint32_t)instance_id, duty_ttl_ms);
        lc_enact_set_resync_done(lc.enact, lifecycle_resync_done, &lc);
        lc_enact_set_part_items(lc.enact, (size_t)part_items);
        if (asprintf(&lc.primary_path, "%s/adapter/catalog", a.data_dir) < 0 ||
            asprintf(&lc.secondary_path, "%s/catalog-secondary", node_dir(lc.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        lifecycle_try_open(node_loop(lc.node), &lc);
        r = lifecycle_notify_start(&lc, a.instance);
        if (r < 0)
                goto out;
        node_ring_set_read_budget(lc.node, (size_t)frontier_budget);
        r = node_follow_ring(lc.node, frontier_wait_thread);
        if (r < 0)
                goto out;
        lifecycle_tick_arm(&lc);
        lifecycle_duty_arm(&lc, 0);
        lifecycle_refresh_arm(&lc);
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
                lifecycle_timer_stop(&lc, &lc.duty_timer);
                lifecycle_timer_stop(&lc, &lc.refresh_timer);
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
