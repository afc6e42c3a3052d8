/* coord-adapter -- SQL front end, timestamp oracle and the only writer of the catalog
 * (DESIGN section 1).
 *
 * The daemon body (node); the catalog opened as the RocksDB primary, its writer epoch
 * (this incarnation) committed at start; the SQL executor (adapter-exec.c) serving the
 * PostgreSQL wire protocol; the frontier ring followed read-only; every committed
 * catalog transaction published on the catalog log ring for the lifecycle follower.
 *
 * NOTES
 * (1) The writer epoch is the adapter's incarnation, strictly above every epoch before
 *     it: the incarnation grows under the role's lock (node.c note 4), one adapter
 *     holding it at a time (a standby waits for it, node-standby.c note 1), and here it
 *     is raised above the catalog's last writer_epoch should the incarnation file not
 *     know of it (a data directory restored from another copy).  Committed durably as
 *     this life's first catalog transaction, before any SQL is served or any message
 *     sent (adapter_commit_epoch(); node_run() comes later); the peers fence older
 *     incarnations of the role (node.c note 1), so the controller and the lifecycle
 *     refuse an older epoch's messages.
 */
#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter-catalog.h"
#include "adapter-check.h"
#include "adapter-exec.h"
#include "adapter-lease.h"
#include "lease/lease.h"
#include "catalog/catalog.h"
#include "conf.h"
#include "ring/fring.h"
#include "hist.h"
#include "log.h"
#include "ring/lring.h"
#include "node/node.h"
#include "util.h"

struct adapter {
        struct node *node;
        struct catalog *catalog;
        struct exec *exec;
        struct lring *notify;           /* the catalog log ring (producer) */
        /* Written by the commit hook (any committing thread, one at a time), read by the
         * status handler in the loop thread. */
        atomic_uint_least64_t ring_records, ring_omitted, ring_wakes, ring_errors;
        struct check *check;
        struct lease_table *leases;
        uint64_t publications_fenced;   /* adapter_publication() */
        char detail[2048];
        char lease_detail[512];
        struct hist statement_hist, commit_hist;        /* reported by the node */
};

/* Entries per lring_publish() call: one wake-up check per call. */
#define NOTIFY_BATCH 64

/* The catalog's commit hook: publish every committed transaction -- its seq and its
 * log entry -- on the catalog log ring, which also wakes the lifecycle follower (DESIGN
 * section 7).  The catalog calls it after the group's synced write and before any
 * committer is answered, with its lock held, one call at a time: so the ring has one
 * writer and carries only durable transactions, in seq order without a gap (catalog.h,
 * lring.c note 1).  Nothing here may block: the ring overwrites, never waits. */
static void adapter_notify(const struct catalog_committed *txns, size_t n, void *userdata)
{
        struct adapter *ad = userdata;
        struct lring_entry e[NOTIFY_BATCH];
        struct lring_stats st;
        uint64_t us = now_ns() / 1000;

        for (size_t i = 0; i < n; ) {
                size_t k = 0;
                int r;

                for (; k < NOTIFY_BATCH && i < n; k++, i++) {
                        assert(i == 0 || txns[i].seq == txns[i - 1].seq + 1);
                        e[k] = (struct lring_entry){ .seq = txns[i].seq, .commit_us = us,
                                                     .payload = txns[i].entry, .len = txns[i].len };
                }
                r = lring_publish(ad->notify, e, k);
                /* -EINVAL would be a seq that does not grow: the catalog guarantees it
                 * does.  The follower notices the missing records and reads the log. */
                assert(r == 0);
                if (r < 0 && atomic_fetch_add(&ad->ring_errors, 1) == 0)
                        log_error_errno(r, "catalog_ring_publish_failed", "seq=%llu",
                                        (unsigned long long)e[0].seq);
        }
        lring_get_stats(ad->notify, &st);
        atomic_store_explicit(&ad->ring_records, st.records, memory_order_relaxed);
        atomic_store_explicit(&ad->ring_omitted, st.omitted, memory_order_relaxed);
        atomic_store_explicit(&ad->ring_wakes, st.wakes, memory_order_relaxed);
}

/* Create (or take over) "<instance>-catalog", stamped with this incarnation and the
 * catalog's last seq, and hook it to every commit.  Before anything commits: the first
 * record then carries last seq + 1. */
static int adapter_notify_setup(struct adapter *ad, const char *instance)
{
        char name[128];
        uint64_t seq;
        int r;

        r = lring_name(instance, name, sizeof(name));
        if (r < 0)
                return log_error_errno(r, "catalog_ring_name_failed", "instance=%s", instance);
        seq = catalog_last_seq(ad->catalog);
        r = lring_create(name, LRING_CAPACITY_DEFAULT, node_incarnation(ad->node), seq,
                         &ad->notify);
        if (r < 0)
                return log_error_errno(r, "catalog_ring_create_failed", "name=%s", name);
        catalog_set_commit_hook(ad->catalog, adapter_notify, ad);
        log_info("catalog_ring_created", "name=%s seq=%llu bytes=%llu generation=%llu", name,
                 (unsigned long long)seq, (unsigned long long)LRING_CAPACITY_DEFAULT,
                 (unsigned long long)node_incarnation(ad->node));
        return 0;
}

static void adapter_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct adapter *ad = userdata;
        struct fring_reader *rd = node_ring(n);

        if (ad->leases) {
                size_t k;

                lease_table_status(ad->leases, ad->lease_detail, sizeof(ad->lease_detail));
                k = strlen(ad->lease_detail);
                snprintf(ad->lease_detail + k, sizeof(ad->lease_detail) - k, " publications_fenced=%llu",
                         (unsigned long long)ad->publications_fenced);
        }
        reply->catalog_seq = ad->catalog ? catalog_last_seq(ad->catalog) : 0;
        reply->ring_generation = rd ? fring_reader_generation(rd) : 0;
        struct catalog_stats cs = { 0 };
        struct catalog_io_stats io = { 0 };
        uint64_t hwm_sync = 0, hwm_async = 0, mark = 0, reads = 0, chunks = 0, waits = 0, after = 0;
        size_t holds = 0, client_writes = 0;
        uint64_t read_holds = 0, split = 0, deferred = 0;
        uint64_t direct = 0;
        uint64_t sync_window_ns = 0;

        if (ad->catalog) {
                catalog_get_stats(ad->catalog, &cs);
                catalog_get_io_stats(ad->catalog, &io);
                /* Like window_stall_us: the longest since the previous status request;
                 * a metrics scrape starts no new window. */
                if (!node_status_is_scrape(n))
                        sync_window_ns = catalog_take_sync_window_max_ns(ad->catalog);
        }
        if (ad->exec) {
                exec_oracle_persists(ad->exec, &hwm_sync, &hwm_async);
                mark = exec_builtin_mark(ad->exec);
                reads = exec_builtin_reads(ad->exec);
                after = exec_ddl_after_publication(ad->exec);
                direct = exec_ddl_direct_replies(ad->exec);
                exec_stream_stats(ad->exec, &chunks, &waits);
                holds = exec_holds(ad->exec);
                client_writes = exec_client_writes_pending(ad->exec);
                split = exec_appends_split(ad->exec);
                deferred = exec_requests_deferred(ad->exec);
                read_holds = exec_read_holds_taken(ad->exec);
        }
        snprintf(ad->detail, sizeof(ad->detail),
                 "catalog=primary catalog_commits=%llu catalog_syncs=%llu ring=%s "
                 "catalog_wal_bytes=%llu catalog_synclog_bytes=%llu catalog_synclog_store_syncs=%llu "
                 "catalog_synclog_waits=%llu catalog_flush_bytes=%llu catalog_compact_bytes=%llu "
                 "catalog_state_sst_bytes=%llu catalog_state_mem_bytes=%llu "
                 "catalog_state_keys=%llu catalog_log_sst_bytes=%llu catalog_log_mem_bytes=%llu "
                 "catalog_log_keys=%llu oracle_hwm_sync=%llu oracle_hwm_async=%llu "
                 "catalog_ring_records=%llu catalog_ring_omitted=%llu catalog_ring_wakes=%llu "
                 "builtin_mark=%llu builtin_reads=%llu stream_chunks=%llu stream_waits=%llu holds=%zu read_holds=%llu "
                 "client_writes_pending=%zu appends_split=%llu requests_deferred=%llu "
                 "ddl_after_publication=%llu catalog_sync_max_us=%llu catalog_sync_window_max_us=%llu "
                 "ddl_direct_replies=%llu frontier_wait=%s frontier_loop_wakes=%llu "
                 "frontier_reads=%llu frontier_read_yields=%llu catalog_waits_yielded=%llu "
                 "catalog_waits_slept=%llu %s",
                 (unsigned long long)cs.commits, (unsigned long long)cs.groups,
                 rd ? "attached" : "waiting", (unsigned long long)io.wal_bytes,
                 (unsigned long long)io.synclog_bytes, (unsigned long long)io.synclog_store_syncs,
                 (unsigned long long)io.synclog_waits,
                 (unsigned long long)io.flush_bytes, (unsigned long long)io.compact_bytes,
                 (unsigned long long)io.state.sst_bytes, (unsigned long long)io.state.mem_bytes,
                 (unsigned long long)io.state.keys, (unsigned long long)io.log.sst_bytes,
                 (unsigned long long)io.log.mem_bytes, (unsigned long long)io.log.keys,
                 (unsigned long long)hwm_sync, (unsigned long long)hwm_async,
                 (unsigned long long)atomic_load_explicit(&ad->ring_records, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&ad->ring_omitted, memory_order_relaxed),
                 (unsigned long long)atomic_load_explicit(&ad->ring_wakes, memory_order_relaxed),
                 (unsigned long long)mark, (unsigned long long)reads,
                 (unsigned long long)chunks, (unsigned long long)waits, holds, (unsigned long long)read_holds,
                 client_writes, (unsigned long long)split, (unsigned long long)deferred,
                 (unsigned long long)after,
                 (unsigned long long)(cs.sync_max_ns / 1000), (unsigned long long)(sync_window_ns / 1000),
                 (unsigned long long)direct, node_ring_wait_mode(n),
                 (unsigned long long)node_ring_loop_wakes(n),
                 (unsigned long long)node_ring_reads(n),
                 (unsigned long long)node_ring_yields(n),
                 (unsigned long long)cs.waits_yielded, (unsigned long long)cs.waits_slept,
                 ad->lease_detail);
        reply->detail = ad->detail;
}

/* Only the live holder of the followers' duty lease publishes (lifecycle.md, "A fleet
 * of followers"): a publication of another epoch is refused with 55000, unread. */
static void adapter_publication(struct adapter *ad, node_peer_t from, const Coord__Envelope *env)
{
        Coord__Error e = COORD__ERROR__INIT;

        if (ad->leases && lease_table_fence_ok(ad->leases, LEASE_KEY_LIFECYCLE_DUTY, env->fence)) {
                exec_on_publication(ad->exec, from, env);
                return;
        }
        ad->publications_fenced++;
        e.sqlstate = (char *)"55000";
        e.message = (char *)"fenced: the publication's duty epoch is not the live one";
        (void)node_send(ad->node, from, COORD__MSG_TYPE__MSG_ERROR, env->request_id, &e.base);
}

static void adapter_message(struct node *n, node_peer_t from, const Coord__Envelope *env,
                            void *userdata)
{
        struct adapter *ad = userdata;

        if (!ad->exec)
                return;
        if (from == COORD__ROLE__ROLE_CONTROLLER)
                exec_on_message(ad->exec, env);
        else if (node_peer_role(from) == COORD__ROLE__ROLE_LIFECYCLE &&
                 env->type == COORD__MSG_TYPE__MSG_PUBLISH_PROTECTION)
                adapter_publication(ad, from, env);
        else if (node_peer_role(from) == COORD__ROLE__ROLE_LIFECYCLE && lease_table_handles((int)env->type) &&
                 ad->leases)
                lease_table_on_request(ad->leases, from, 0, env);
        else
                log_debug("unexpected_message", "role=%s type=%d", node_role_name(node_peer_role(from)), (int)env->type);
}

/* From coordctl (role CTL): the node serves status and ping itself and hands the rest
 * here, with the connection to answer on. */
static void adapter_ctl_message(struct node *n, uint64_t ctl_id, const Coord__Envelope *env,
                                void *userdata)
{
        struct adapter *ad = userdata;

        if (env->type == COORD__MSG_TYPE__MSG_CHECK_CATALOG && ad->check)
                check_on_request(ad->check, ctl_id, env);
        else if (lease_table_handles((int)env->type) && ad->leases)
                lease_table_on_request(ad->leases, COORD__ROLE__ROLE_CTL, ctl_id, env);
        else
                log_debug("unexpected_ctl_message", "type=%d", (int)env->type);
}

static void adapter_peer_up(struct node *n, node_peer_t peer, uint64_t incarnation, void *userdata)
{
        struct adapter *ad = userdata;

        if (peer == COORD__ROLE__ROLE_CONTROLLER && ad->exec)
                exec_controller_up(ad->exec);
}

static void adapter_peer_down(struct node *n, node_peer_t peer, void *userdata)
{
        struct adapter *ad = userdata;

        if (peer == COORD__ROLE__ROLE_CONTROLLER && ad->exec)
                exec_controller_down(ad->exec);
}

static void adapter_frontiers(struct node *n, const struct fring_frontier *f, size_t count,
                              bool resynced, void *userdata)
{
        struct adapter *ad = userdata;

        if (ad->exec)
                exec_on_frontiers(ad->exec);
}

static const struct node_handler adapter_handler = {
        .on_frontiers = adapter_frontiers,
        .on_status = adapter_status,
        .on_message = adapter_message,
        .on_ctl_message = adapter_ctl_message,
        .on_peer_up = adapter_peer_up,
        .on_peer_down = adapter_peer_down,
};

/* Raise the incarnation above the catalog's last writer_epoch (note 1). */
static int adapter_epoch_floor(struct adapter *ad)
{
        _cleanup_free_ void *v = NULL;
        size_t len = 0;
        int r;

        r = catalog_meta_get(ad->catalog, "writer_epoch", &v, &len);
        if (r == -ENOENT)
                return 0;
        if (r < 0 || len != 8)
                return log_error_errno(r < 0 ? r : -EBADMSG, "writer_epoch_read_failed", "len=%zu", len);
        r = node_raise_incarnation(ad->node, be64_get(v));
        if (r < 0)
                return log_error_errno(r, "incarnation_raise_failed", "epoch=%llu",
                                       (unsigned long long)be64_get(v));
        return 0;
}

/* The writer epoch: the incarnation of the adapter that writes the catalog now.  Made
 * durable before the adapter reports ready, through the same commit path as DDL (note
 * 1). */
static int adapter_commit_epoch(struct adapter *ad)
{
        uint8_t v[8];
        uint64_t seq = 0;
        struct catalog_op op = {
                .kind = CATALOG_OP_PUT, .cf = CATALOG_CF_META,
                .key = "writer_epoch", .key_len = strlen("writer_epoch"),
                .value = v, .value_len = sizeof(v),
        };
        int r;

        be64_put(v, node_incarnation(ad->node));
        r = catalog_commit(ad->catalog, &op, 1, &seq);
        if (r < 0)
                return r;
        log_info("writer_epoch_committed", "epoch=%llu seq=%llu",
                 (unsigned long long)node_incarnation(ad->node), (unsigned long long)seq);
        return 0;
}

int main(int argc, char **argv)
{
        struct adapter ad = { 0 };
        char *pg_host = NULL, *clock_offset = NULL;
        uint64_t pg_port = 6875, tick_ms = 100, peek_timeout_ms = 10000;
        uint64_t peek_chunk_bytes = EXEC_PEEK_CHUNK_BYTES_DEFAULT;
        bool test_check_corrupt = false, test_hold_builtin_rows = false, direct_reply = true;
        bool frontier_wait_thread = false, standby = false;
        uint64_t test_publication_delay_ms = 0, test_reply_wake_delay_ms = 0, test_lease_delay_ms = 0;
        uint64_t catalog_wait_spin_us = CATALOG_WAIT_SPIN_DEFAULT_NS / 1000, frontier_budget = 0;
        const struct conf_option extra[] = {
                { "pg-host", CONF_STR, &pg_host, 0, "SQL (PostgreSQL wire) address; empty: Unix socket only (default 127.0.0.1)" },
                { "pg-port", CONF_U64, &pg_port, 65535, "SQL port (default 6875; 0 picks a free one); the Unix socket is <run-dir>/.s.PGSQL.<port>" },
                { "tick-ms", CONF_U64, &tick_ms, 60000, "advance table uppers this often when idle (default 100)" },
                { "peek-timeout-ms", CONF_U64, &peek_timeout_ms, 3600000, "how long a read waits for its inputs (default 10000)" },
                { "peek-chunk-bytes", CONF_U64, &peek_chunk_bytes, 16u << 20, "a read's result comes from the controller in chunks of about this many bytes, each sent to the client before the next is fetched (default 65536; 0: in one piece)" },
                { "direct-reply", CONF_BOOL, &direct_reply, 0, "a DDL statement that ends a simple query is answered by its committer thread right after the catalog commit, not by the loop one wake-up later (default true)" },
                { "catalog-wait-spin-us", CONF_U64, &catalog_wait_spin_us, 100000, "a catalog committer that waits for its group to be written yields its vCPU this long at most before it sleeps (default 500; 0: sleeps at once; docs/catalog.md)" },
                { "standby", CONF_BOOL, &standby, 0, "when another adapter holds this data directory, wait (status: ready=no, detail standby) and take over when it exits, with a new writer epoch (docs/operations.md)" },
                { "frontier-wait-thread", CONF_BOOL, &frontier_wait_thread, 0, "sleep on the controller's frontier ring in a watcher thread, not in the event loop (what happens anyway where the kernel lacks IORING_OP_FUTEX_WAIT)" },
                { "frontier-read-budget", CONF_U64, &frontier_budget, 1u << 24, "frontier ring records one turn of the event loop reads before it yields to other work, as in a snapshot of every collection (default 0: 16384)" },
                { "test-clock-offset-ms", CONF_STR, &clock_offset, 0, "TEST ONLY: shift the oracle's wall clock by this many ms (may be negative)" },
                { "test-check-corrupt", CONF_BOOL, &test_check_corrupt, 0, "TEST ONLY: coordctl check sees one altered record (to show that it fails)" },
                { "test-hold-builtin-rows", CONF_BOOL, &test_hold_builtin_rows, 0, "TEST ONLY: never send the built-in rows of DDL and publications (so a kill -9 loses them)" },
                { "test-direct-reply-wake-delay-ms", CONF_U64, &test_reply_wake_delay_ms, 60000, "TEST ONLY: after a committer thread has answered a DDL itself, it waits this long before it tells the loop" },
                { "test-lease-commit-delay-ms", CONF_U64, &test_lease_delay_ms, 60000, "TEST ONLY: a lease's catalog commit waits this long on its committer thread first (adapter-lease.c note 4)" },
                { "test-publication-commit-delay-ms", CONF_U64, &test_publication_delay_ms, 60000, "TEST ONLY: a publication's catalog commit waits this long on its committer thread first (its values stay pending meanwhile)" },
        };
        struct exec_config ec;
        struct node_args a;
        struct node_config cfg;
        _cleanup_free_ char *cat_path = NULL;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_ADAPTER, extra, ELEMENTSOF(extra), &a, &ex))
                goto out_args;
        ec = (struct exec_config){
                .statement_hist = &ad.statement_hist, .commit_hist = &ad.commit_hist,
                .pg_host = pg_host ? pg_host : "127.0.0.1", .pg_port = (uint16_t)pg_port,
                .pg_unix_dir = a.run_dir, .tick_ms = tick_ms ? (uint32_t)tick_ms : 1,
                .peek_timeout_ms = (uint32_t)peek_timeout_ms,
                .peek_chunk_bytes = (uint32_t)peek_chunk_bytes,
                .no_direct_reply = !direct_reply,
                .test_hold_builtin_rows = test_hold_builtin_rows,
                .test_publication_delay_ms = (uint32_t)test_publication_delay_ms,
                .test_reply_wake_delay_ms = (uint32_t)test_reply_wake_delay_ms,
        };
        if (clock_offset) {
                char *end;
                errno = 0;
                ec.test_clock_offset_ms = strtoll(clock_offset, &end, 10);
                if (errno || *end || end == clock_offset) {
                        fprintf(stderr, "coord-adapter: --test-clock-offset-ms: bad value '%s'\n", clock_offset);
                        ex = NODE_EXIT_USAGE;
                        goto out;
                }
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_ADAPTER, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
                .metrics_port = (uint16_t)a.metrics_port, .standby = standby,
        };
        r = node_new(&cfg, &adapter_handler, &ad, &ad.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : r == -ECANCELED ? 0 : NODE_EXIT_FAILURE;
                goto out;
        }
        /* NODE_HISTS_MAX is far above these two. */
        (void)node_add_hist(ad.node, "statement_duration_seconds",
                            "a client request: a simple Query with all its statements, a Parse or an Execute",
                            &ad.statement_hist);
        (void)node_add_hist(ad.node, "catalog_commit_duration_seconds",
                            "a catalog commit on its committer thread: its group's write and sync",
                            &ad.commit_hist);
        if (asprintf(&cat_path, "%s/catalog", node_dir(ad.node)) < 0) {
                log_error("out_of_memory", "");
                goto out;
        }
        r = catalog_open(cat_path, &ad.catalog);
        if (r < 0) {
                log_error_errno(r, "catalog_open_failed", "path=%s", cat_path);
                goto out;
        }
        catalog_set_wait_spin(ad.catalog, catalog_wait_spin_us * 1000);
        log_info("catalog_opened", "path=%s last_seq=%llu", cat_path,
                 (unsigned long long)catalog_last_seq(ad.catalog));
        r = adapter_epoch_floor(&ad);
        if (r < 0)
                goto out;
        r = adapter_notify_setup(&ad, a.instance);
        if (r < 0)
                goto out;
        r = adapter_commit_epoch(&ad);
        if (r < 0) {
                log_error_errno(r, "catalog_commit_failed", "what=writer_epoch");
                goto out;
        }
        r = exec_new(ad.node, ad.catalog, &ec, &ad.exec);
        if (r < 0)
                goto out;
        r = lease_table_new(ad.node, ad.catalog, &ad.leases);
        if (r < 0) {
                log_error_errno(r, "leases_load_failed", "");
                goto out;
        }
        lease_table_set_test_delay(ad.leases, (uint32_t)test_lease_delay_ms);
        acat_set_leases(exec_catalog(ad.exec), lease_table_each, ad.leases);
        r = check_new(ad.node, ad.catalog, ad.exec, test_check_corrupt, &ad.check);
        if (r < 0) {
                log_error_errno(r, "check_failed", "");
                goto out;
        }
        node_ring_set_read_budget(ad.node, (size_t)frontier_budget);
        r = node_follow_ring(ad.node, frontier_wait_thread);
        if (r < 0)
                goto out;
        node_set_ready(ad.node, true);
        r = node_run(ad.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        log_info("daemon_stopped", "role=adapter");
        ex = 0;
out:
        /* Before the catalog closes: a replay in progress holds a log cursor. */
        ad.check = check_free(ad.check);
        ad.exec = exec_free(ad.exec);
        ad.leases = lease_table_free(ad.leases);
        ad.node = node_free(ad.node);
        if (ad.catalog)
                catalog_set_commit_hook(ad.catalog, NULL, NULL);
        ad.catalog = catalog_close(ad.catalog);
        ad.notify = lring_free(ad.notify);
        node_args_done(&a);
out_args:
        free(pg_host);
        free(clock_offset);
        return ex;
}
