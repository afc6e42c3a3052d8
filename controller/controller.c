/* coord-controller -- storage collections, compute, frontiers (DESIGN section 1).
 *
 * main() only wires things together:
 *   1. node_new(): role lock, incarnation, the socket the adapter and lifecycle dial;
 *   2. the shared-memory frontier ring, created with generation = this incarnation, so
 *      readers that keep their mapping across our restart see the generation change
 *      and resync;
 *   3. the server (controller-server.h): storage at <data-dir>/controller/storage,
 *      reopened as it was left (everything durable comes back), every collection's
 *      frontiers published to the ring, compaction of built-ins on a timer;
 *   4. ready, then the loop until SIGTERM/SIGINT.
 * The node is not ready until storage is open, so a peer that sees ready can use it.
 */
#include <stdio.h>
#include <stdlib.h>

#include "conf.h"
#include "controller-server.h"
#include "controller-storage.h"
#include "ring/fring.h"
#include "log.h"
#include "node/node.h"
#include "util.h"

struct controller {
        struct node *node;
        struct fring *ring;
        struct cserver *server;
        char ring_name[128];
        char detail[3072];
        uint64_t ring_slots, ring_records;
};

static void controller_status(struct node *n, Coord__StatusReply *reply, void *userdata)
{
        struct controller *c = userdata;
        char server[2048] = "starting";
        struct storage_io_stats io = { 0 };
        uint64_t sync_window_ns = 0;

        reply->ring_generation = node_incarnation(n);
        if (c->server) {
                cserver_describe(c->server, server, sizeof(server));
                storage_get_io_stats(cserver_storage(c->server), &io);
                /* Like window_stall_us: the longest since the previous status request;
                 * a metrics scrape starts no new window. */
                if (!node_status_is_scrape(n))
                        sync_window_ns = storage_take_sync_window_max_ns(cserver_storage(c->server));
        }
        snprintf(c->detail, sizeof(c->detail),
                 "ring=%s %s storage_wal_bytes=%llu storage_flush_bytes=%llu "
                 "storage_compact_bytes=%llu storage_sst_bytes=%llu storage_mem_bytes=%llu "
                 "storage_keys=%llu storage_sync_window_max_us=%llu",
                 c->ring ? c->ring_name : "none", server, (unsigned long long)io.wal_bytes,
                 (unsigned long long)io.flush_bytes, (unsigned long long)io.compact_bytes,
                 (unsigned long long)io.all.sst_bytes, (unsigned long long)io.all.mem_bytes,
                 (unsigned long long)io.all.keys, (unsigned long long)(sync_window_ns / 1000));
        reply->detail = c->detail;      /* valid until the next status request */
}

static void controller_message(struct node *n, node_peer_t from, const Coord__Envelope *env,
                               void *userdata)
{
        struct controller *c = userdata;

        if (c->server)
                cserver_on_message(c->server, from, env);
}

static void controller_peer_up(struct node *n, node_peer_t peer, uint64_t incarnation,
                               void *userdata)
{
        struct controller *c = userdata;

        if (c->server)
                cserver_on_peer_change(c->server, peer);
}

static void controller_peer_down(struct node *n, node_peer_t peer, void *userdata)
{
        struct controller *c = userdata;

        if (c->server)
                cserver_on_peer_change(c->server, peer);
}

static const struct node_handler controller_handler = {
        .on_message = controller_message,
        .on_peer_up = controller_peer_up,
        .on_peer_down = controller_peer_down,
        .on_status = controller_status,
};

int main(int argc, char **argv)
{
        struct controller c = { .ring_slots = 65536, .ring_records = 65536 };
        char *append_sync = NULL, *test_sync_hold_file = NULL;
        uint64_t test_install_slice_ms = 0, test_peek_bg_min_updates = 0, test_peek_bg_delay_ms = 0;
        uint64_t test_allow_slice = 0, test_frontier_rows = 0;
        uint64_t peek_memory_limit_mb = CSERVER_PEEK_MEMORY_LIMIT_DEFAULT_MB;
        uint64_t subscribe_snapshot_max_mb = CSERVER_SUBSCRIBE_SNAPSHOT_DEFAULT_MB;
        const struct conf_option extra[] = {
                { "ring-slots", CONF_U64, &c.ring_slots, 1u << 24, "frontier ring slot table capacity (collections)" },
                { "ring-records", CONF_U64, &c.ring_records, 1u << 24, "frontier ring change records" },
                { "peek-memory-limit-mb", CONF_U64, &peek_memory_limit_mb, 1u << 20, "what one query's evaluation may hold, in MB, then it fails with 53200 (default 1024)" },
                { "subscribe-snapshot-max-mb", CONF_U64, &subscribe_snapshot_max_mb, 1u << 20, "a SUBSCRIBE whose snapshot is larger, in MB, fails with 54000 (default 16): each of its batches reads the whole snapshot on the loop" },
                { "append-sync", CONF_STR, &append_sync, 0, "thread (default): appends are synced by a syncer thread, group commit, replies held until; loop: one synced write per append on the event loop" },
                { "test-sync-hold-file", CONF_STR, &test_sync_hold_file, 0, "TEST ONLY: the syncer holds every WAL sync while this file exists (replies and ring records of appends wait)" },
                { "test-install-slice-ms", CONF_U64, &test_install_slice_ms, 10000, "TEST ONLY: a bulk install of dataflows goes 8 per slice, this many ms apart" },
                { "test-allow-slice", CONF_U64, &test_allow_slice, UINT32_MAX, "TEST ONLY: an AllowCompaction of more collections is applied this many per loop turn (default 256)" },
                { "test-frontier-rows", CONF_U64, &test_frontier_rows, UINT32_MAX, "TEST ONLY: an append rewrites at most this many waiting rows of coord_frontiers (default 4096)" },
                { "test-peek-bg-min-updates", CONF_U64, &test_peek_bg_min_updates, UINT32_MAX, "TEST ONLY: a peek reading at least this many stored updates is evaluated in the peek thread (default 4096)" },
                { "test-peek-bg-delay-ms", CONF_U64, &test_peek_bg_delay_ms, 10000, "TEST ONLY: the peek thread sleeps this long before each evaluation" },
        };
        struct cserver_config scfg = { .append_sync = CSERVER_APPEND_SYNC_THREAD };
        struct node_args a;
        struct node_config cfg;
        char *storage_path = NULL;
        int r, ex = NODE_EXIT_FAILURE;

        if (node_args_parse(argc, argv, COORD__ROLE__ROLE_CONTROLLER, extra, ELEMENTSOF(extra), &a, &ex))
                return ex;
        if (append_sync) {
                enum cserver_append_sync m = cserver_append_sync_from_name(append_sync);

                if (m < 0) {
                        fprintf(stderr, "coord-controller: --append-sync must be thread or loop, not '%s'\n",
                                append_sync);
                        ex = NODE_EXIT_USAGE;
                        goto out;
                }
                scfg.append_sync = m;
        }
        if (peek_memory_limit_mb == 0) {
                fprintf(stderr, "coord-controller: --peek-memory-limit-mb must be at least 1\n");
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        scfg.peek_memory_limit_mb = peek_memory_limit_mb;
        scfg.subscribe_snapshot_max_mb = subscribe_snapshot_max_mb;
        scfg.test_sync_hold_file = test_sync_hold_file;
        scfg.test_install_slice_ms = (uint32_t)test_install_slice_ms;
        scfg.test_allow_slice = (uint32_t)test_allow_slice;
        scfg.test_frontier_rows = (uint32_t)test_frontier_rows;
        scfg.test_peek_bg_min_updates = test_peek_bg_min_updates;
        scfg.test_peek_bg_delay_ms = (uint32_t)test_peek_bg_delay_ms;
        if (c.ring_slots < 16 || c.ring_records < 16) {
                fprintf(stderr, "coord-controller: --ring-slots and --ring-records must be at least 16\n");
                ex = NODE_EXIT_USAGE;
                goto out;
        }
        cfg = (struct node_config){
                .role = COORD__ROLE__ROLE_CONTROLLER, .instance = a.instance,
                .data_dir = a.data_dir, .run_dir = a.run_dir, .max_frame = (uint32_t)a.max_frame,
                .metrics_port = (uint16_t)a.metrics_port,
        };
        r = node_new(&cfg, &controller_handler, &c, &c.node);
        if (r < 0) {
                ex = r == -EBUSY ? NODE_EXIT_RUNNING : NODE_EXIT_FAILURE;
                goto out;
        }
        r = fring_name(a.instance, c.ring_name, sizeof(c.ring_name));
        if (r < 0) {
                log_error_errno(r, "ring_name_failed", "instance=%s", a.instance);
                goto out;
        }
        /* Same shm object across restarts; the generation tells readers we restarted. */
        r = fring_create(c.ring_name, (uint32_t)c.ring_slots, (uint32_t)c.ring_records,
                         node_incarnation(c.node), &c.ring);
        if (r < 0) {
                log_error_errno(r, "ring_create_failed", "name=%s", c.ring_name);
                goto out;
        }
        log_info("ring_created", "name=%s generation=%llu slots=%llu records=%llu", c.ring_name,
                 (unsigned long long)node_incarnation(c.node), (unsigned long long)c.ring_slots,
                 (unsigned long long)c.ring_records);
        if (asprintf(&storage_path, "%s/storage", node_dir(c.node)) < 0) {
                storage_path = NULL;
                log_error_errno(-ENOMEM, "storage_path_failed", "");
                goto out;
        }
        /* Logs its own failure. */
        r = cserver_new(c.node, c.ring, storage_path, &scfg, &c.server);
        if (r < 0)
                goto out;
        (void)node_add_hist(c.node, "append_duration_seconds",
                            "an Append from its arrival to its Ok leaving, the WAL sync included",
                            cserver_append_hist(c.server));
        node_set_ready(c.node, true);
        r = node_run(c.node);
        if (r < 0) {
                log_error_errno(r, "loop_failed", "");
                goto out;
        }
        if (cserver_failed(c.server)) {
                log_error("daemon_stopped", "role=controller reason=storage_failed");
                goto out;
        }
        log_info("daemon_stopped", "role=controller");
        ex = 0;
out:
        /* The server's timers live on the node's loop: free it first. */
        c.server = cserver_free(c.server);
        c.ring = fring_free(c.ring);
        c.node = node_free(c.node);
        free(storage_path);
        free(append_sync);
        free(test_sync_hold_file);
        node_args_done(&a);
        return ex;
}
